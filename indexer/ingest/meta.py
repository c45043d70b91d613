"""Metadata a memory corpus deserves: doc type by layout, dates, tags, entities, stale markers.

Everything here is derived from the path, the front matter and the section text — never from
the index — so a rebuild always gives the same answer.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field

from remembrancer.indexer.dates import day_in_words, heading_day, iso_day, month_of, numeric_day, slash_order

DATE_RE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
# "(superseded 2031-05-02: see § X)", "**Obsolete:**", "> Deprecated" at the start of a section's body.
_STALE_WORDS = r"(superseded|obsolete|deprecated|outdated|no longer (?:true|valid|used))"
STALE_BODY_RE = re.compile(r"^\W{0,4}" + _STALE_WORDS + r"\b", re.IGNORECASE)
# A heading that files its section as the old way: "Older method: pg_basebackup", "Legacy setup".
STALE_HEADING_RE = re.compile(r"\b" + _STALE_WORDS + r"\b|^\W*(old|older|legacy|former|previous)\b", re.IGNORECASE)
# "- Status: **Superseded by ADR-009**", "**Status:** deprecated" among a document's first lines.
STATUS_LINE_RE = re.compile(r"^\W{0,6}status\b\W{0,8}" + _STALE_WORDS + r"\b", re.IGNORECASE | re.MULTILINE)
STATUS_LINES = 12
STALE_STATUS = {"superseded", "obsolete", "deprecated", "archived", "outdated", "abandoned"}


class Layout:
    """Path globs → doc type, first match wins.

    Globs are anchored at the root; `*` stays inside one folder (`hosts/*` is not
    `hosts/old/x.md`), `**` crosses folders, `[0-9]` is one of a class of characters (`[!x]` any
    but those); a bare `*` is the catch-all for any file.
    """

    def __init__(self, rules: tuple[tuple[str, str], ...]):
        # (pattern, doc type, named: a rule of its own, not the catch-all)
        self.rules = [(_glob_regex(g), t, g not in ("*", "**")) for g, t in rules]

    def type_of(self, rel: str) -> str:
        return self.typed(rel)[0]

    def typed(self, rel: str) -> tuple[str, bool]:
        """(doc type, named by a rule of its own): False when only the catch-all (`*`) or no rule
        matched — the type is then the notes' to say (`inferred_type`)."""
        for regex, doc_type, named in self.rules:
            if regex.fullmatch(rel):
                return doc_type, named
        return "doc", False


def _glob_regex(glob: str) -> re.Pattern:
    if glob in ("*", "**"):
        return re.compile(r".*")
    out, i = [], 0
    glob = glob.lstrip("/")
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append(r"(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(r".*")
            i += 2
        elif glob[i] == "*":
            out.append(r"[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append(r"[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) > 0:   # a class: `[0-9]`, `[!.]`
            inner = glob[i + 1:end]
            negate = inner.startswith("!")
            inner = inner[1:] if negate else inner
            out.append("[" + ("^/" if negate else "") + "".join(c if c == "-" else re.escape(c) for c in inner) + "]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out))


def parse_date(value: object) -> str | None:
    """A YYYY-MM-DD string from a front matter value (date, datetime or string), else None."""
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        m = DATE_RE.search(value)
        if m and _valid(m):
            return m.group(0)
    return None


def dates_in(text: str) -> list[str]:
    """Every day `text` writes as YYYY-MM-DD (real days only)."""
    return [m.group(0) for m in DATE_RE.finditer(text) if _valid(m)]


def date_in(text: str) -> str | None:
    m = DATE_RE.search(text)
    return m.group(0) if m and _valid(m) else None


# A week as ISO 8601 writes it, `2042-W44`: a weekly note's file name or heading (Obsidian's Periodic
# Notes name weekly notes so). It dates the note by its Monday, the day the week's notes begin.
WEEK_RE = re.compile(r"(?<![\dA-Za-z])(\d{4})-W(\d{2})(?![\dA-Za-z])")
WEEK_DATES = True   # for measurement only: bench/eval_all.py --ingest WEEK_DATES=False --fresh


def week_in(text: str) -> str | None:
    """The Monday of the ISO week `text` first names (`2042-W44` → 2042-10-27), else None."""
    m = WEEK_RE.search(text) if WEEK_DATES else None
    if not m:
        return None
    try:
        return dt.date.fromisocalendar(int(m.group(1)), int(m.group(2)), 1).isoformat()
    except ValueError:   # no such week (`2042-W54`, `2042-W00`)
        return None


def _valid(m: re.Match) -> bool:
    try:
        dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        return True
    except ValueError:
        return False


# A file named by its day alone: `2024-01-05.md`, Logseq's `2024_01_05.md` — a day of a log
# (`5 January 2024.md` and `05.01.2024.md` too: dates.day_in_words).
DAY_FILE_RE = re.compile(r"^(\d{4})[-_](\d{2})[-_](\d{2})\.[A-Za-z]+$")


def day_of_file(rel: str) -> str | None:
    """The day a file is named by, when its name is that day and nothing else (Obsidian's and
    Logseq's daily notes, `14 May 2031.md` and `14.05.2031.md` too); `2024-01-05-release-notes.md`
    is a dated document, not a day."""
    name = rel.rsplit("/", 1)[-1]
    m = DAY_FILE_RE.match(name)
    if m:
        return f"{m.group(1)}-{m.group(2)}-{m.group(3)}" if _valid(m) else None
    return day_in_words(name.rsplit(".", 1)[0]) if name.lower().endswith((".md", ".markdown")) else None


def document_date(rel: str, front_matter: dict) -> str | None:
    """Filename date first (a journal day, or a weekly note's week), then front matter
    updated/date/created."""
    name = rel.rsplit("/", 1)[-1]
    name_date = date_in(name) or day_of_file(rel) or week_in(name)
    if name_date:
        return name_date
    for key in ("updated", "date", "created"):
        d = parse_date(front_matter.get(key))
        if d:
            return d
    return None


# What places a heading's day written without its year (or month: dates.heading_day): a heading
# above it ("# May 2031", "## 2031"), the file's path (`journal/2031-05.md`, `2031/05/`), or the
# document's own date.
_YEAR_RE = re.compile(r"(?<!\d)((?:19|20)\d\d)(?!\d)")
_YEAR_MONTH_RE = re.compile(r"(?<!\d)((?:19|20)\d\d)[-_/](0[1-9]|1[0-2])(?!\d)")
_MONTH_TITLE_RE = re.compile(r"^\W*(?:(?:19|20)\d\d\W+)?([A-Za-z]{3,9})\.?(?:\W+(?:19|20)\d\d)?\W*$")


def heading_dates(heading_chain: list[str], rel: str = "", doc_date: str | None = None,
                  day_first: bool | None = None) -> str | None:
    """The date of the nearest dated heading in a breadcrumb: a `YYYY-MM-DD` anywhere in it
    (`## 2031-04-16 (session 1)`), a day in figures at its start (`## 14.05.2031`; `day_first`: how
    the document writes `03/04/2031`, dates.slash_order), or a day in words at its start
    (dates.heading_day), placed in its year and month by the headings above it, the path and then
    `doc_date` (a day that cannot be placed, or does not exist, dates nothing)."""
    for i in range(len(heading_chain) - 1, -1, -1):
        title = heading_chain[i]
        d = (date_in(title) or numeric_day(title, day_first) or _day_in_words(title, heading_chain[:i], rel, doc_date)
             or week_in(title))
        if d:
            return d
    return None


def heading_gives(date: str | None, heading_chain: list[str], rel: str, doc_date: str | None = None) -> bool:
    """Whether `date` is the day a section's own heading gives (a slashed day read either way round:
    the document said which, dates.slash_order), not the one it has from its document."""
    return bool(date) and date in {heading_dates(heading_chain, rel, doc_date, first) for first in (True, False)}


def _day_in_words(title: str, above: list[str], rel: str, doc_date: str | None) -> str | None:
    found = heading_day(title)
    if found is None:
        return None
    year, month, day = found
    path_ym = _YEAR_MONTH_RE.findall(rel)
    for t in reversed(above):
        if year is None and (y := _YEAR_RE.search(t)):
            year = int(y.group(1))
        if month is None and (mt := _MONTH_TITLE_RE.match(t)) and (mo := month_of(mt.group(1))):
            month = mo
    if year is None or month is None:
        if path_ym:
            year, month = year or int(path_ym[-1][0]), month or int(path_ym[-1][1])
        elif year is None and (ys := _YEAR_RE.findall(rel)):
            year = int(ys[-1])
    if (year is None or month is None) and doc_date:
        year, month = year or int(doc_date[:4]), month or int(doc_date[5:7])
    return iso_day(year, month, day) if year is not None and month is not None else None


def tags_of(front_matter: dict) -> list[str]:
    raw = front_matter.get("tags", front_matter.get("tag", []))
    if isinstance(raw, str):
        raw = re.split(r"[,\s]+", raw)
    if not isinstance(raw, list):
        return []
    return sorted({str(t).strip().lstrip("#").lower() for t in raw if str(t).strip()})


def document_is_stale(front_matter: dict, sections=()) -> bool:
    """A document that says it no longer holds: its front matter's `status`, or the status its
    opening states — a `Status: Superseded by ADR-009` line at the start of its first section, or a
    `Status` section that begins "Superseded" (the two ways decision records mark a replaced one)."""
    status = front_matter.get("status")
    if isinstance(status, str) and status.strip().lower() in STALE_STATUS:
        return True
    opening = next((s for s in sections if s.body.strip()), None)
    if opening is not None and STATUS_LINE_RE.search("\n".join(opening.body.split("\n")[:STATUS_LINES])):
        return True
    return any(s.title.strip().casefold() == "status" and s.level <= 2 and section_is_stale("", s.body)
               for s in sections)


def section_is_stale(title: str, body: str) -> bool:
    """A section marked stale by its heading ("obsolete") or by its first body line ("(superseded …")."""
    if STALE_HEADING_RE.search(title):
        return True
    first = body.lstrip().split("\n", 1)[0] if body else ""
    return bool(STALE_BODY_RE.match(first))


@dataclass
class Entity:
    """A host or service, by its canonical name and every name it goes by."""

    name: str
    path: str
    aliases: list[str] = field(default_factory=list)

    def names(self) -> list[str]:
        return [self.name, *self.aliases]


# A file no layout rule names is typed by what it says: the kind its tags or its folder name
# (Obsidian keeps a note's kind there: `tags: [snippet, howto]`, `Tools/Stripe.md`); a dated log
# (most sections under a dated heading, or a file named by its day) is a journal; front matter that
# gives a thing's other names (aliases) beside what a record states of it (its name, owners, repo,
# address) makes a record. Aliases alone do not: Obsidian lets any note have them ("people",
# "restore"), and a note on the people one knows, or a how-to, is no record of a service.
#
# A how-to tag makes a runbook, but a documentation site's `docs/how-to/` holds guides, not an
# operator's runbooks: a folder of that name says nothing of a note's kind.
DOCS_FOLDERS = frozenset("howto how-to howtos how-tos".split())
KIND_WORDS: dict[str, frozenset[str]] = {
    "runbook": DOCS_FOLDERS | frozenset("runbook runbooks snippet snippets procedure procedures "
                                        "playbook playbooks".split()),
    "host": frozenset("host hosts server servers".split()),
    "service": frozenset("tool tools service services component components".split()),
}
NAME_KEYS = ("host", "service", "name")   # a record's own name for the thing, as its front matter declares it
RECORD_KEYS = (*NAME_KEYS, "owner", "owners", "repo", "ip", "ips", "hostname", "hostnames")
JOURNAL_MIN_DATED = 3          # dated sections (headings carrying a date, or under one), at least
JOURNAL_DATED_SHARE = 0.6      # of the sections with a heading
INFER_TYPES = True             # for measurement only: bench/eval_all.py --ingest INFER_TYPES=False --fresh


# A document whose title calls it a plan or a roadmap ("Plan: JavaScript SDK 3.0", "Q4 2033 roadmap")
# states intentions, whatever folder it is kept in.
PLAN_TITLE_RE = re.compile(r"\b(plans?|roadmap)\b", re.IGNORECASE)


def inferred_type(front_matter: dict, heading_chains: list[list[str]], rel: str = "") -> str | None:
    """The doc type the notes' own shape says, for a file the layout leaves untyped (or None)."""
    if not INFER_TYPES:
        return None
    named = named_kind(front_matter, rel)
    if named:
        return named
    if any(front_matter.get(k) for k in ("aliases", "alias")) and any(front_matter.get(k) for k in RECORD_KEYS):
        return "service"
    if day_of_file(rel):   # a daily note: one day of a log kept a file a day
        return "journal"
    headed = [c for c in heading_chains if c]
    doc_date = document_date(rel, front_matter)
    day_first = slash_order(c[-1] for c in headed)
    dated = sum(1 for c in headed if heading_dates(c, rel, doc_date, day_first))
    if dated >= JOURNAL_MIN_DATED and dated >= JOURNAL_DATED_SHARE * len(headed):
        return "journal"
    if headed and PLAN_TITLE_RE.search(headed[0][0]):
        return "plan"
    return None


def named_kind(front_matter: dict, rel: str) -> str | None:
    """The kind a note's tags say (a how-to first: a how-to about a tool is a how-to), else the
    nearest folder that names one (`Snippets/`, `Tools/`)."""
    def kind_of(words: set[str]) -> str | None:
        return next((kind for kind, kind_words in KIND_WORDS.items() if words & kind_words), None)

    folders = [f for f in reversed(rel.lower().split("/")[:-1]) if f not in DOCS_FOLDERS]
    return kind_of(set(tags_of(front_matter))) or next(filter(None, (kind_of({f}) for f in folders)), None)


def stored_front_matter(doc: dict | None) -> dict:
    """A catalog row's front matter (stored as JSON), or {} when the row has none that is a mapping."""
    try:
        fm = json.loads((doc or {}).get("front_matter") or "{}")
    except (TypeError, ValueError):
        return {}
    return fm if isinstance(fm, dict) else {}


def declared_name(front_matter: dict) -> str | None:
    """The name a record's front matter gives the thing (`host: pg1`, `name: sbx-relay`), or None: a
    note titled by its file (an Obsidian note on a tool) declares none."""
    return next((str(front_matter[k]) for k in NAME_KEYS if front_matter.get(k)), None)


def entity_from(doc_type: str, rel: str, front_matter: dict, entity_types: tuple[str, ...]) -> Entity | None:
    if doc_type not in entity_types:
        return None
    stem = rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    name = declared_name(front_matter) or stem
    aliases: list[str] = []
    for key in ("aliases", "alias", "ips", "ip", "hostnames"):
        v = front_matter.get(key)
        if isinstance(v, (str, int, float)):
            v = [v]
        if isinstance(v, list):
            aliases.extend(str(a).strip() for a in v if str(a).strip())
    if str(stem) != str(name):
        aliases.append(stem)
    return Entity(str(name), rel, sorted(set(aliases) - {str(name)}))


def _trie_pattern(names: list[str]) -> str:
    """One alternation of `names` shaped as a prefix tree, longer names first at every branch.

    It matches what `a|b|c…` sorted longest-first matches (at each position the longest name
    whose boundary test passes), but the engine follows one branch per character instead of
    trying every name at every position: tagging costs the text's length, not length × the
    number of entities (a corpus with thousands of host records made indexing quadratic)."""
    trie: dict = {}
    for n in names:
        node = trie
        for ch in n:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if "" in node:
            branches.append("")   # this name ends here: tried after every longer one
        if len(branches) == 1:
            return branches[0]
        return "(?:" + "|".join(branches) + ")"

    return emit(trie)


class EntityMatcher:
    """Finds which entities a text mentions, by whole-word name, alias or IP."""

    def __init__(self, entities: list[Entity]):
        self.by_name: dict[str, str] = {}
        for e in entities:
            for n in e.names():
                if len(n) >= 2:
                    self.by_name.setdefault(n.lower(), e.name)
        self.names_of: dict[str, list[str]] = {}   # entity → the lower-cased names that find it
        for n, name in self.by_name.items():
            self.names_of.setdefault(name, []).append(n)
        self.regex = (
            re.compile(r"(?<![\w.-])(" + _trie_pattern(list(self.by_name)) + r")(?![\w-]|\.\d)", re.IGNORECASE)
            if self.by_name else None
        )

    def mentions(self, text: str) -> list[str]:
        if self.regex is None:
            return []
        return sorted({self.by_name[m.group(1).lower()] for m in self.regex.finditer(text)})
