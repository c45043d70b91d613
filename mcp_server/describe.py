"""Tool descriptions written at start-up from the live index: a map an agent can plan with.

The map (150–300 tokens) says what is in the memory — doc types with counts and how to weigh
them, top folders and tags, the date range, sizes — and how to use the tools. When the index
cannot be read, the descriptions stay plain and carry the warning instead.
"""

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from remembrancer.indexer.errors import UserError

log = logging.getLogger(__name__)

TYPE_GUIDE = {
    "journal": "what was seen on a day; newest wins",
    "host": "a machine's current state; beats older journal entries",
    "service": "a service's current state; beats older journal entries",
    "runbook": "procedures to follow",
    "lesson": "short lessons learned",
    "plan": "intentions, not facts; check the journal",
    "doc": "general notes",
}
TAG_PROBE = "~remembrancer-tag-probe~"
MAX_TAG_COUNTS = 50


@dataclass
class IndexFacts:
    documents: int = 0
    sections: int = 0
    types: Counter = field(default_factory=Counter)
    folders: Counter = field(default_factory=Counter)
    tags: list[tuple[str, str]] = field(default_factory=list)   # (tag, count label)
    first_date: str | None = None
    last_date: str | None = None
    roots: list[str] = field(default_factory=list)
    freshness: dict = field(default_factory=dict)
    warning: str | None = None

    @property
    def empty(self) -> bool:
        return self.documents == 0


def gather(call) -> IndexFacts:
    """Facts from `call("list")`, `call("status")` and the tag filter's valid options."""
    facts = IndexFacts()
    try:
        st = call("status")
        docs = call("list", limit=5000)
    except UserError as e:
        facts.warning = f"the index cannot be read: {e}"
        return facts
    except Exception as e:  # a broken index must not stop the server from starting
        log.warning("reading the index for the tool descriptions failed", exc_info=True)
        facts.warning = f"the index cannot be read: {type(e).__name__}: {e}"
        return facts
    facts.roots = [r.get("path", "?") for r in st.get("roots", [])]
    facts.freshness = st.get("freshness") or {}
    facts.sections = int(st.get("sections") or 0)
    rows = docs.get("documents") or []
    facts.documents = int(docs.get("total") or len(rows))
    multi = len(facts.roots) > 1
    dates = []
    for d in rows:
        facts.types[d.get("type") or "doc"] += 1
        parts = d["path"].split("/")
        depth = 2 if multi else 1
        facts.folders[("/".join(parts[:depth]) + "/") if len(parts) > depth else "(top level)"] += 1
        if d.get("date"):
            dates.append(d["date"])
    if dates:
        facts.first_date, facts.last_date = min(dates), max(dates)
    facts.tags = _tags(call, rows)
    fr = facts.freshness
    if facts.empty:
        facts.warning = ("the index is empty" + (" (still being built)" if fr.get("verdict") == "catching_up" else "")
                         + "; search will find nothing until documents are indexed")
    elif fr.get("verdict") == "stale":
        facts.warning = f"the index is STALE: {fr.get('reason')}"
    elif st.get("warnings"):
        facts.warning = f"{len(st['warnings'])} indexing warnings (see index_status)"
    return facts


def _tags(call, rows: list[dict]) -> list[tuple[str, str]]:
    """Tags by number of documents. Documents listed with tags are counted directly; otherwise the
    tag names come from the tag filter's valid options and each is counted with a filter search."""
    if any("tags" in d for d in rows):
        c = Counter(t for d in rows for t in (d.get("tags") or []))
        return [(t, str(n)) for t, n in c.most_common()]
    try:
        call("search", query="", tags=[TAG_PROBE], limit=1)
        return []
    except UserError as e:
        names = list(e.options or []) if e.param == "tags" else []
    except Exception:
        log.debug("tag probe failed", exc_info=True)
        return []
    counted = []
    for t in names[:MAX_TAG_COUNTS]:
        try:
            out = call("search", query="", tags=[t], limit=50, budget_tokens=50_000)
        except Exception:
            log.debug("counting tag %r failed", t, exc_info=True)
            continue
        hits = out.get("results") or []
        n = len({r["path"] for r in hits})
        counted.append((t, n, len(hits) >= 50))
    counted.sort(key=lambda x: (-x[1], x[0]))
    return [(t, f"{n}+" if more else str(n)) for t, n, more in counted]


def _top(counter: Counter, n: int) -> str:
    return ", ".join(f"{k} ({v})" for k, v in counter.most_common(n))


def index_map(facts: IndexFacts) -> str:
    """The search tool's description: what is in the memory and how to weigh it."""
    intro = ("Search the Markdown working memory (keyword + semantic): the best section in full, short "
             "runners-up in full too, then pointers (path, heading, lines, tokens, snippet).")
    if facts.warning and facts.empty:
        return (f"{intro}\nWARNING: {facts.warning}.\nAn empty result is not proof of absence. Use search to "
                f"find sections; use read to open a path from a result.\n{WHICH_TOOL}")   # an index built later keeps its tools
    span = f", dated {facts.first_date} to {facts.last_date}" if facts.first_date else ""
    lines = [intro, f"Holds {facts.documents} documents, {facts.sections} sections{span}.",
             "Doc types (type=) and how to weigh them:"]
    for t, n in facts.types.most_common():
        lines.append(f"- {t} ({n}): {TYPE_GUIDE.get(t, 'a custom type from the layout config')}")
    if facts.folders:
        lines.append(f"Top folders (path=): {_top(facts.folders, 6)}.")
    if facts.tags:
        lines.append("Top tags (tags=): " + ", ".join(f"{t} ({n})" for t, n in facts.tags[:8]) + ".")
    if facts.warning:
        lines.append(f"WARNING: {facts.warning}.")
    lines.append("An empty or weak result is not proof of absence: rephrase (alternates=[...] searches up to 3 "
                 "rephrasings with the question), drop filters, or use exact=true for "
                 "error strings and IDs. Search to find; read(path, heading) to open a pointer, "
                 "read(path, outline=true) for a document's map.")
    lines.append(WHICH_TOOL)
    return "\n".join(lines)


def conversations_note(folders) -> str:
    """What the search description adds when the session also has conversation folders."""
    names = ", ".join(Path(str(getattr(f, "path", f))).name for f in folders)
    return (f"Also searchable: this project's past Claude Code sessions ({names}) — corpus=\"conversations\" for "
            "'did we …', 'last time …', 'which session fixed …', 'what did we decide about …' (each result is one "
            "exchange with its session_id, uuid and timestamp; read(path, uuid=…, around=1) shows its neighbours), "
            "corpus=\"all\" for both.")


def commits_note(repositories) -> str:
    """What the search description adds when the notes are in git repositories."""
    names = ", ".join(Path(str(r)).name for r in repositories)
    return (f"Also searchable: the commits of {names} — corpus=\"commits\" for 'why / when did we change …' "
            "(each result one commit, with its hash).")


def code_note(folders) -> str:
    """What the search description adds when the session has source folders."""
    names = ", ".join(Path(str(getattr(f, "path", f))).name for f in folders)
    return (f"Also searchable: the source code of {names} — corpus=\"code\" for 'where is … done', 'what does … "
            "do' (each result one function, class or method).")


# The search tool's `alternates` parameter: when a rephrasing helps a small embedding model, and how.

# One line every memory tool's description shares: which axis each tool answers.
WHICH_TOOL = ("Search ranks by relevance (what do we know about X). Other axes: history = one host/service "
              "over time; latest = exact strings, newest first; neighbors = links; verify = cited commits.")


def history_description(facts: IndexFacts) -> str:
    return ("TIME, for one host or service: everything the memory says about it — its journal entries and "
            "its own record's sections — newest first by the section's date, NOT by relevance. Use it for "
            "'what have we already done on db1', 'what changed on X since Tuesday'. `entity` is a name, alias or "
            "IP from the host/service records (an unknown one returns the close names); `topic` keeps only the "
            "sections about it (still in date order); since/until bound the dates. Rows citing commit SHAs carry "
            "verified_commits. For 'what do we know about X' use search; for exact strings use latest."
            + (" " + _entities_hint(facts) if facts.documents else ""))


def _entities_hint(facts: IndexFacts) -> str:
    n = facts.types.get("host", 0) + facts.types.get("service", 0)
    return f"{n} host/service records are indexed." if n else "No host/service records are indexed yet."


def latest_description(facts: IndexFacts) -> str:
    return ("EXACT TERMS, newest first: the sections that contain ALL the given terms — identifiers, commit "
            "SHAs (any abbreviation matches), --flags, error strings, numbers — ordered by date, no ranking. Use "
            "it for 'did the migration finish', 'where did we see this error last', 'what mentions 6432'. "
            "`terms` is a list (each kept verbatim) or one string (quote phrases: '\"lock timeout\" 0042'). Case-"
            "insensitive, whole words at the edges (db1 is not db10). When no section has them all it relaxes "
            "and names the dropped terms, and says which term occurs nowhere. For meaning use search.")


def neighbors_description(facts: IndexFacts) -> str:
    return ("LINKS of one document: what it links to ([[wikilinks]] and relative Markdown links), what links to "
            "it (backlinks), its broken links, and the sections closest in meaning that nobody linked yet. Use it "
            "to follow a runbook's references, to see what depends on a record before changing it, or to find "
            "notes that should be linked. `path` as search prints it.")


def verify_description(facts: IndexFacts) -> str:
    return ("COMMITS: finds commit-SHA-shaped tokens (7-40 hex, or repo@sha) in a document/section (path, "
            "heading) or in given text, and checks each in git: exists? landed on the default branch? date, "
            "subject, files touched. Existence and landing are separate answers; an amended-away or unmerged "
            "commit 'exists, NOT landed'; hex that is no commit says so; a repository that cannot be read gives "
            "UNKNOWN, never 'absent'. Use it before trusting 'fixed in abc1234' from the journal.")


def read_description(facts: IndexFacts) -> str:
    return ("Open what search pointed at, verbatim from the file on disk: one section (path + heading: the "
            "breadcrumb or a unique last part of it), a line range (lines=[start, end]), outline=true for the "
            "document's sections with line ranges and token sizes, or the whole document paged with "
            "offset/max_chars (the answer gives total_chars, returned_chars, truncated, next_offset). Paths are "
            "relative to the corpus exactly as search prints them; nothing outside the indexed roots is read."
            + (f" {facts.documents} documents are readable." if facts.documents else ""))


def list_description(facts: IndexFacts, doc_types: tuple[str, ...]) -> str:
    base = ("List indexed documents (path, type, date, title, sections, tokens), filtered by path prefix "
            f"and/or type (one of: {', '.join(doc_types)}).")
    if facts.documents:
        base += f" {facts.documents} documents; folders: {_top(facts.folders, 6)}."
    return base


def status_description() -> str:
    return ("How fresh the index is (fresh / catching up / STALE with the reason), what is indexed (documents, "
            "sections, roots and their git HEAD), which embedding model, and the daemon's state. Call it when "
            "results look outdated or a search answer says STALE.")
