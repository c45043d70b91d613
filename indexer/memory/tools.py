"""Memory-native questions, beside relevance search: time, exact terms, links and commits.

- `history(entity, topic?, since?, until?)` — everything the record says about one host or
  service, newest first by the section's date (not by relevance);
- `latest(terms, …)` — sections containing ALL the terms, newest first, no ranking; relaxed (and
  saying so) when nothing has them all;
- `neighbors(path)` — outbound links, backlinks, unresolved links and the nearest unlinked
  sections by meaning;
- `verify(path | text)` — commit SHAs cited in a section checked against git (indexer/memory/commits.py).

Pure functions of a read view (indexer/engine/view.py): parameters in, a JSON-ready dict out (redacted with the policy in force),
`UserError` with `param`/`options` for bad input. indexer/api.py maps requests onto them.
"""

from __future__ import annotations

import difflib
import re
import shlex
from datetime import datetime, timezone

from remembrancer.indexer.memory import commits as cm
from remembrancer.indexer.ingest import corpus, links
from remembrancer.indexer.ingest import meta
from remembrancer.indexer.search import reader
from remembrancer.indexer.store import filters as flt
from remembrancer.indexer.requests import MAX_TERM_CHARS, MAX_TERMS
from remembrancer.indexer.terms import indexed_spelling
from remembrancer.indexer.ingest.chunks import estimate_tokens
from remembrancer.indexer.errors import UserError, echo
from remembrancer.indexer.requests import HISTORY_LIMIT, LATEST_LIMIT, MAX_LIMIT, NEIGHBOR_LIMIT
from remembrancer.indexer.answers import HistoryAnswer, LatestAnswer, NeighborsAnswer, VerifyAnswer
from remembrancer.indexer.engine.view import ReadView

SNIPPET_CHARS = 240
TOPIC_BM25_SHARE = 0.25   # a topic match holds the topic's words: BM25 at least this share of the best …
TOPIC_DENSE = 0.5         # … or matches it by meaning this strongly (cosine; search abstains below 0.45)
SIMILAR_PER_PASSAGE = 40
MAX_VERIFY_TEXT = 200_000


# -- shared helpers --------------------------------------------------------------------------------

def _limit(value, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise UserError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {echo(repr(value))}", param="limit")
    return value


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def snippet(text: str, needles: list[str]) -> str:
    """The text around the first occurrence of any needle (case-insensitive), else its start."""
    flat = _flat(text)
    if len(flat) <= SNIPPET_CHARS:
        return flat
    low = flat.lower()
    hits = [low.find(n.lower()) for n in needles if n and low.find(n.lower()) >= 0]
    pos = min(hits, default=0)
    start = max(0, pos - SNIPPET_CHARS // 3)
    piece = flat[start:start + SNIPPET_CHARS]
    return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(flat) else "")


def _base_row(s) -> dict:
    r = {"path": s.path, "heading": s.heading, "lines": [s.start_line, s.end_line], "type": s.doc_type,
         "date": s.date, "tokens": estimate_tokens(s.content)}
    if s.stale or s.doc_stale:
        r["stale"] = True
    return r


def _attach_commits(rows: list[dict], sections: dict, checker: cm.CommitChecker | None) -> None:
    """`verified_commits` (the cited commit exists; `landed` says whether it is on the default
    branch) and `unverified_commits` (absent, not a commit, or unknown) on each row citing a SHA."""
    for r in rows:
        s = sections[r["_sid"]]
        cites = cm.find_shas(s.content, s.start_line)
        if not cites or checker is None:
            continue
        verified, unverified = cm.split_verified(cm.check_citations(checker, cites))
        if verified:
            r["verified_commits"] = verified
        if unverified:
            r["unverified_commits"] = unverified


def _finish(view, out: dict, rows: list[dict]) -> dict:
    """The answer as the tool built it, redacted whole with the policy in force (its rows' section
    ids, kept while building, dropped)."""
    for r in rows:
        r.pop("_sid", None)
    return view.redaction.current().redact_obj(out)


# -- history ---------------------------------------------------------------------------------------

def resolve_entity(view: ReadView, name: str) -> tuple[str, list[str], list[str], str]:
    """(canonical name, record paths, aliases, what matched) for a name, alias or IP."""
    key = (name or "").strip()
    if not key:
        raise UserError("entity is required: a host or service name, alias or IP", param="entity")
    rows = view.catalog.entities()
    found = [(n, p, a) for n, p, a in rows if n.casefold() == key.casefold()]
    how = "name"
    if not found:
        found = [(n, p, a) for n, p, a in rows if key.casefold() in {x.casefold() for x in a}]
        how = "alias"
    if not found:
        names = sorted({n for n, _, _ in rows} | {x for _, _, a in rows for x in a}, key=str.casefold)
        by_fold = {n.casefold(): n for n in names}
        close = difflib.get_close_matches(key.casefold(), list(by_fold), n=8, cutoff=0.5)
        canon = sorted({n for n, _, _ in rows}, key=str.casefold)
        raise UserError(
            f"unknown entity {echo(repr(name))}" + ("" if rows else " (no host or service records are indexed)"),
            param="entity", options=[by_fold[c] for c in close] or canon[:30], code="not_found",
            hint="entities come from host/service records (front matter host/service, aliases, ips); "
                 "for anything else use search or latest")
    canonical = found[0][0]
    paths = sorted({p for n, p, _ in rows if n == canonical})
    aliases = sorted({x for n, _, a in rows if n == canonical for x in a})
    return canonical, paths, aliases, how


class _Dates:
    """A section's date for time ordering, and where it came from: its heading, its document
    (file name or front matter), the file's last commit, or the file's modification time."""

    def __init__(self, view):
        self.view = view
        self.docs: dict[str, tuple[dict, str, str | None]] = {}
        self.commit: dict[str, str | None] = {}

    def _doc(self, path: str) -> tuple[dict, str, str | None]:
        """The document's row, its path in its root and its own date (name or front matter), read once."""
        if path not in self.docs:
            doc = self.view.catalog.document(path) or {}
            rel = doc.get("rel", path)
            self.docs[path] = (doc, rel, meta.document_date(rel, meta.stored_front_matter(doc)))
        return self.docs[path]

    def of(self, s) -> tuple[str | None, str | None]:
        doc, rel, doc_date = self._doc(s.path)
        chain = s.heading.split(" > ") if s.heading else []
        # the date its heading gives, read either way round (`03/04/2031`: the document said which)
        if meta.heading_gives(s.date, chain, rel, doc_date):
            return s.date, "heading"
        if doc_date:
            return s.date, "document"
        if s.date:
            return s.date, "commit"   # ingest's fallback for an undated file: its last commit
        d = self._commit_date(s.path, doc)
        return d if d else (None, None)

    def _commit_date(self, path: str, doc: dict) -> tuple[str, str] | None:
        if path not in self.commit:
            self.commit[path] = None
            root = next((r for r in self.view.config.roots if r.name == doc.get("root")), None)
            if root is not None and doc.get("rel"):
                got = corpus.last_commit_dates(root, {doc["rel"]}).get(doc["rel"])
                if got:
                    self.commit[path] = ("c", got)
                else:
                    try:
                        mtime = (root.path / doc["rel"]).stat().st_mtime
                        self.commit[path] = ("m", datetime.fromtimestamp(mtime, timezone.utc).strftime("%Y-%m-%d"))
                    except OSError:
                        pass
        got = self.commit[path]
        if got is None:
            return None
        return got[1], ("commit" if got[0] == "c" else "modified")


def _topic_matches(ranked: list) -> list:
    """The candidates that are really about the topic: those holding its words (BM25 at least
    TOPIC_BM25_SHARE of the best, or a literal identifier hit), and those that match by meaning
    strongly (dense similarity >= TOPIC_DENSE), best first."""
    top_bm25 = max((c.bm25 for c in ranked), default=0.0)
    return [c for c in ranked if c.literal > 0 or (top_bm25 > 0 and c.bm25 >= TOPIC_BM25_SHARE * top_bm25)
            or c.dense >= TOPIC_DENSE]


def history(view: ReadView, entity: str, topic: str | None = None, since: str | None = None,
            until: str | None = None, limit: int | None = None, check_commits: bool = True) -> HistoryAnswer:
    """Everything the memory says about one entity, newest first by section date."""
    view.redaction.current()  # fail closed
    limit = _limit(limit, HISTORY_LIMIT)
    f = flt.validate(flt.Filters(since=since, until=until), view.catalog, view.config.doc_types)
    name, record_paths, aliases, how = resolve_entity(view, entity)
    # Every name a section's mention of it can come from (the index-time matcher saw all records)
    needles = sorted({n.lower() for e, p, a in view.catalog.entities(unscoped=True) if e == name
                      for n in meta.Entity(e, p, a).names() if len(n) >= 2})
    ids = view.catalog.section_ids_about(record_paths, name, needles)
    rows = view.catalog.sections_by_id(ids)
    dates = _Dates(view)
    dated = {sid: dates.of(s) for sid, s in rows.items()}
    if f.since or f.until:
        rows = {sid: s for sid, s in rows.items() if dated[sid][0]
                and (not f.since or dated[sid][0] >= f.since) and (not f.until or dated[sid][0] <= f.until)}
    notes: list[str] = []
    scores: dict[int, tuple[float, str]] = {}
    topic = (topic or "").strip()
    if topic and rows:
        from remembrancer.indexer.search.answer import _hybrid

        legs = _hybrid(view, topic, set(rows))
        cands = legs.cands
        notes += legs.notes
        ranked = sorted((c for c in cands.values() if c.section_id in rows), key=lambda c: -c.score)
        keep = _topic_matches(ranked)[:limit]
        if keep and not any(c.bm25 > 0 or c.literal > 0 for c in keep):
            notes.append(f"no section about {name} shares a word with {echo(repr(topic))}; these match by meaning only")
        scores = {c.section_id: (c.score, c.provenance) for c in keep}
        rows = {sid: s for sid, s in rows.items() if sid in scores}
    records = set(record_paths)
    # Newest first; on one date the record (current state) before other evidence, live sections
    # before superseded ones, a record in reading order, and later entries of a day first.
    # A heading with no text of its own (its subsections hold it) says nothing: left out.
    order = sorted((s for s in rows.values() if (s.body or "").strip()),
                   key=lambda s: (dated[s.id][0] or "", s.path in records, not (s.stale or s.doc_stale), s.path,
                                  -s.start_line if s.path in records else s.start_line), reverse=True)
    names = [name, *aliases]
    out_rows = []
    for s in order[:limit]:
        r = _base_row(s)
        r["date"], r["dated_by"] = dated[s.id]
        r["record"] = s.path in records
        r["snippet"] = snippet(s.body or s.heading, [] if r["record"] else names)
        if s.id in scores:
            r["score"] = round(scores[s.id][0], 4)
            r["provenance"] = scores[s.id][1]
        r["_sid"] = s.id
        out_rows.append(r)
    if check_commits:
        _attach_commits(out_rows, rows, cm.checker_for(view.config, view.scope))
    out = {
        "entity": {"name": name, "records": record_paths, "aliases": aliases, "matched_by": how},
        "order": "newest first by section date",
        "results": out_rows, "total": len(order), "truncated": len(order) > limit,
    }
    if topic:
        out["topic"] = topic
    if f.since or f.until:
        out["since"], out["until"] = f.since, f.until
    if not out_rows:
        window = " ".join(x for x in (f"since={f.since}" if f.since else "", f"until={f.until}" if f.until else "") if x)
        out["message"] = (f"nothing about {name}" + (f" matches topic {echo(repr(topic))}" if topic else "")
                          + (f" within {window}" if window else ""))
    if notes:
        out["notes"] = notes
    return HistoryAnswer.parse(_finish(view, out, out_rows))


# -- latest ----------------------------------------------------------------------------------------

def parse_terms(terms) -> list[str]:
    """A list of strings (each a term, verbatim) or one string split like a shell line, so
    `"too many clients" 6432` is two terms. Unbalanced quotes fall back to whitespace."""
    if terms is None or terms == "" or terms == []:
        raise UserError("terms are required: identifiers, SHAs, flags, error strings or numbers", param="terms")
    if isinstance(terms, str):
        try:
            items = shlex.split(terms)
        except ValueError:
            items = terms.split()
    elif isinstance(terms, list) and all(isinstance(t, str) for t in terms):
        items = terms
    else:
        raise UserError("terms must be a string or a list of strings", param="terms")
    items = [_unquote(t.strip()) for t in items if t and t.strip()]
    items = list(dict.fromkeys(t for t in items if t))
    if not items:
        raise UserError("terms are required: identifiers, SHAs, flags, error strings or numbers", param="terms")
    if len(items) > MAX_TERMS:
        raise UserError(f"at most {MAX_TERMS} terms, got {len(items)}", param="terms")
    long = [t for t in items if len(t) > MAX_TERM_CHARS]
    if long:   # a pasted log, not a term: and the answer would echo it back whole
        raise UserError(f"a term is at most {MAX_TERM_CHARS} characters, got one of {len(long[0])}", param="terms",
                        hint="give the distinctive part (an error code, an identifier, a short phrase), or use "
                             "search for a longer text")
    return items


def _unquote(term: str) -> str:
    """`"lock timeout"` → `lock timeout`: one pair of quotes around the whole term is not part of it."""
    if len(term) >= 2 and term[0] == term[-1] and term[0] in "\"'`" and term[0] not in term[1:-1]:
        return term[1:-1].strip()
    return term


class _Term:
    """Case-insensitive literal match; a term that starts/ends with a letter or digit must not
    continue a longer word there (`db1` is not `db10`, `300` is not `3000`); a SHA matches any
    cited abbreviation of it (or a longer SHA it abbreviates)."""

    _HEX_RE = re.compile(r"(?<![0-9a-z])[0-9a-f]{7,40}(?![0-9a-z])")

    def __init__(self, term: str):
        self.term = term
        self.low = term.lower()
        self.sha = cm.is_sha_like(self.low)
        left = r"(?<![a-z0-9_])" if re.match(r"\w", self.low[0]) else ""
        right = r"(?![a-z0-9_])" if re.match(r"\w", self.low[-1]) else ""
        self.regex = re.compile(left + re.escape(self.low) + right)

    def matches(self, text_low: str) -> bool:
        if self.sha:
            if self.low[:7] not in text_low:
                return False
            return any(t.startswith(self.low) or self.low.startswith(t) for t in self._HEX_RE.findall(text_low))
        return self.low in text_low and self.regex.search(text_low) is not None


def latest(view: ReadView, terms, since: str | None = None, until: str | None = None, types=None,
           path: str | None = None, limit: int | None = None, check_commits: bool = True) -> LatestAnswer:
    """Sections containing ALL the terms, newest first — a filter, not a ranking."""
    view.redaction.current()  # fail closed
    limit = _limit(limit, LATEST_LIMIT)
    items = parse_terms(terms)
    types = [types] if isinstance(types, str) else list(types or [])
    f = flt.validate(flt.Filters(types=types, path=path, since=since, until=until), view.catalog,
                     view.config.doc_types)
    allowed = None
    if f.active():
        allowed = view.catalog.filtered_section_ids(f)
    matchers = [_Term(t) for t in items]
    anywhere = [False] * len(items)
    in_scope = [False] * len(items)
    matched: dict[int, list[int]] = {}
    needles = [m.low[:7] if m.sha else m.low for m in matchers]   # what a match must contain
    for sid, head, content, _ in view.literal_rows(needles):
        hit = [i for i, m in enumerate(matchers) if m.matches(content) or m.matches(head)]
        if not hit:
            continue
        for i in hit:
            anywhere[i] = True
        if allowed is not None and sid not in allowed:
            continue
        for i in hit:
            in_scope[i] = True
        matched[sid] = hit
    n = len(items)
    best = max((len(h) for h in matched.values()), default=0)
    chosen = [sid for sid, h in matched.items() if len(h) == best] if best else []
    rows = view.catalog.sections_by_id(chosen)
    order = sorted(rows.values(), key=lambda s: (s.date or "", s.path, s.start_line), reverse=True)
    out_rows = []
    relaxed = 0 < best < n
    for s in order[:limit]:
        r = _base_row(s)
        hit = matched[s.id]
        r["snippet"] = snippet(s.body or s.heading, [items[i] for i in hit])
        if relaxed:
            r["matched_terms"] = [items[i] for i in hit]
            r["missing_terms"] = [items[i] for i in range(n) if i not in hit]
        r["_sid"] = s.id
        out_rows.append(r)
    if check_commits:
        _attach_commits(out_rows, rows, cm.checker_for(view.config, view.scope))
    nowhere = [items[i] for i in range(n) if not anywhere[i]]
    outside = [items[i] for i in range(n) if anywhere[i] and not in_scope[i]]
    out = {"terms": items, "order": "newest first by section date", "results": out_rows,
           "total": len(order), "truncated": len(order) > limit, "relaxed": relaxed}
    if f.active():
        out["filters"] = f.describe()
    if nowhere:
        out["not_in_corpus"] = nowhere
    if outside:
        out["only_outside_filters"] = outside
    why = []
    if nowhere:
        why.append(", ".join(repr(t) for t in nowhere) + (" occurs" if len(nowhere) == 1 else " occur")
                   + " nowhere in the corpus")
    if outside:
        why.append(", ".join(repr(t) for t in outside) + " only outside the filters " + f.describe())
    if relaxed:
        dropped = [t for t in items if any(t in r["missing_terms"] for r in out_rows)]
        out["dropped_terms"] = dropped
        out["message"] = (f"no section contains all {n} terms" + (f" ({'; '.join(why)})" if why else "")
                          + f"; relaxed to sections with {best} of {n}, dropping {', '.join(map(repr, dropped))}"
                          " (each row lists its missing_terms)")
    elif not out_rows:
        out["message"] = ("no section contains " + ("the term" if n == 1 else f"all {n} terms")
                          + (f": {'; '.join(why)}" if why else ""))
    return LatestAnswer.parse(_finish(view, out, out_rows))


# -- neighbors -------------------------------------------------------------------------------------

def _document(view, path: str) -> dict:
    clean = (path or "").strip().replace("\\", "/")
    while clean.startswith("./"):
        clean = clean[2:]
    if not clean:
        raise UserError("path is required", param="path")
    doc = view.catalog.document(clean)
    if doc is None:   # typed in another Unicode spelling than the file system's (terms.indexed_spelling)
        spelled = indexed_spelling(clean, view.catalog.document_paths())
        doc = view.catalog.document(spelled) if spelled else None
    if doc is None:
        close = reader.close_paths(clean, view.catalog.document_paths())
        raise UserError(f"no indexed document {echo(repr(path))}", param="path", options=close or None, code="not_found",
                        hint="paths are relative to the corpus root, as search results print them")
    return doc


def _section_at(sections: list, line: int):
    for s in sections:
        if s.start_line <= line <= s.end_line:
            return s
    return None


def _anchor_found(sections: list, anchor: str) -> bool:
    return any(links.anchor_matches(s.title or "", anchor) for s in sections)


def neighbors(view: ReadView, path: str, limit: int | None = None) -> NeighborsAnswer:
    """Outbound links, backlinks, unresolved links, and the nearest sections nobody linked."""
    view.redaction.current()  # fail closed
    limit = _limit(limit, NEIGHBOR_LIMIT)
    doc = _document(view, path)
    me = doc["path"]
    cat = view.catalog
    try:
        out_links = view.outbound_links(doc["id"], me)
        if view.scope:   # links resolved as a corpus of only the scope's files resolves them
            in_links = [lk for lk in view.links_in_scope() if lk["resolved"] == me and lk["source"] != me]
        else:
            in_links = cat.link_rows(resolved_to=me)
    except Exception as e:  # a read-only index built before links existed
        raise UserError(f"the index has no link table yet ({e})", code="index_broken",
                        hint="run `remembrancer index` once with this version") from None
    my_sections = cat.sections(me)
    section_cache: dict[str, list] = {me: my_sections}

    def sections_of(p: str) -> list:
        if p not in section_cache:
            section_cache[p] = cat.sections(p)
        return section_cache[p]

    outbound, unresolved = [], []
    for lk in out_links:
        src = _section_at(my_sections, lk["line"])
        row = {"target": lk["target"], "anchor": lk["anchor"], "kind": lk["kind"], "line": lk["line"],
               "text": lk["text"], "from_heading": src.heading if src else ""}
        if lk["resolved"]:
            row["path"] = lk["resolved"]
            if lk["anchor"]:
                row["anchor_found"] = _anchor_found(sections_of(lk["resolved"]), lk["anchor"])
            outbound.append(row)
        else:
            row["suggestions"] = _suggest(view, lk["target"])
            unresolved.append(row)
    inbound = []
    for lk in in_links:
        src = _section_at(sections_of(lk["source"]), lk["line"])
        inbound.append({"source": lk["source"], "line": lk["line"], "kind": lk["kind"], "anchor": lk["anchor"],
                        "text": lk["text"], "heading": src.heading if src else "",
                        "type": src.doc_type if src else None, "date": src.date if src else None})
    linked = {me} | {r["path"] for r in outbound} | {r["source"] for r in inbound}
    similar, notes = _similar(view, doc, linked, limit)
    out = {"path": me, "title": doc["title"], "type": doc["doc_type"],
           "outbound": outbound, "inbound": inbound, "unresolved": unresolved, "similar": similar,
           "counts": {"outbound": len(outbound), "inbound": len(inbound), "unresolved": len(unresolved)}}
    if notes:
        out["notes"] = notes
    return NeighborsAnswer.parse(view.redaction.current().redact_obj(out))


def _suggest(view, target: str) -> list[str]:
    keys: dict[str, str] = {}
    for p, rel, _, title in view.catalog.document_names():
        keys.setdefault(p.casefold(), p)
        keys.setdefault(rel.rsplit("/", 1)[-1].rsplit(".", 1)[0].casefold(), p)
        if title:
            keys.setdefault(title.casefold(), p)
    t = target.rsplit("/", 1)[-1].rsplit(".", 1)[0].casefold() if target.lower().endswith((".md", ".markdown")) \
        else target.casefold()
    close = difflib.get_close_matches(t, list(keys), n=3, cutoff=0.6)
    return list(dict.fromkeys(keys[c] for c in close))


def _similar(view, doc: dict, linked: set[str], limit: int) -> tuple[list[dict], list[str]]:
    """Sections of other documents closest in meaning to this one's passages, excluding every
    document already linked either way: the links nobody wrote yet."""
    # Stored passage vectors only: nothing is embedded, so no model is needed here.
    if view.vectors is None or not len(view.vectors):
        return [], ["no vectors in the index: similar sections need an index built with the embedding model"]
    pids = view.catalog.passage_ids_of_document(doc["id"])
    labels, vecs = view.catalog.passage_vectors(pids)
    if not len(labels):
        return [], []
    mine_info = view.catalog.passages_by_id(labels)
    visible = view.catalog.passage_ids() if view.scope else None
    hits = [(int(label), view.vectors.search(vec, SIMILAR_PER_PASSAGE, visible)) for label, vec in zip(labels, vecs)
            if not mine_info.get(int(label), (0, True))[1]]   # similar text, not similar titles
    own = set(int(x) for x in labels)
    info = view.catalog.passages_by_id({o for _, found in hits for o, _ in found if o not in own})
    best: dict[int, tuple[float, int]] = {}
    for label, found in hits:
        for other, sim in found:
            if other not in info or info[other][1]:
                continue
            sid = info[other][0]
            if sim > best.get(sid, (-2.0, 0))[0]:
                best[sid] = (sim, mine_info[label][0])
    rows = view.catalog.sections_by_id(list(best))
    mine = view.catalog.sections_by_id([s for _, s in best.values() if s is not None])
    out, seen_docs = [], set()
    for sid, (sim, from_sid) in sorted(best.items(), key=lambda kv: -kv[1][0]):
        s = rows.get(sid)
        if s is None or s.path in linked or s.path in seen_docs:
            continue
        seen_docs.add(s.path)
        r = _base_row(s)
        r["similarity"] = round(float(sim), 4)
        r["closest_to"] = mine[from_sid].heading if from_sid in mine else ""
        r["snippet"] = snippet(s.body or s.heading, [])
        out.append(r)
        if len(out) >= limit:
            break
    return out, []


# -- verify ----------------------------------------------------------------------------------------

def verify(view: ReadView, path: str | None = None, heading: str | None = None,
           text: str | None = None) -> VerifyAnswer:
    """Commit SHAs cited in a document/section (or in `text`), each checked against git."""
    redactor = view.redaction.current()  # fail closed
    if (path is None or path == "") == (text is None or text == ""):
        raise UserError("give path (optionally with heading) or text, exactly one of them", param="path",
                        hint="verify(path='journal/2030/2030-02-10.md') or verify(text='landed in 4f2a9c1')")
    checker = cm.checker_for(view.config, view.scope)
    results: list[dict] = []
    if text:
        if len(text) > MAX_VERIFY_TEXT:
            raise UserError(f"text is over {MAX_VERIFY_TEXT} characters", param="text")
        source = {"text_chars": len(text)}
        results = cm.check_citations(checker, cm.find_shas(redactor.redact_text(text)))
    else:
        doc, parsed = reader._load(view, path)
        sections = parsed.sections
        if heading is not None and heading != "":
            s = reader.find_section(sections, heading)
            if s is None:
                close = difflib.get_close_matches(heading, [x.heading for x in sections], n=5, cutoff=0.3)
                raise UserError(f"no section {echo(repr(heading))} in {doc['path']}", param="heading",
                                options=close or [x.heading for x in sections][:20], code="not_found")
            sections = [s]
        source = {"path": doc["path"]}
        if heading:
            source["heading"] = sections[0].heading
        seen: dict[tuple, dict] = {}
        for s in sections:
            for r in cm.check_citations(checker, cm.find_shas(s.text, s.start_line)):
                key = (r["cited_as"].split("@")[0].casefold() if "@" in r["cited_as"] else None, r["sha"])
                if key in seen:
                    seen[key]["lines"] += r["lines"]
                    continue
                r["heading"] = s.heading
                seen[key] = r
                results.append(r)
    summary: dict[str, int] = {}
    for r in results:
        summary[r["verdict"]] = summary.get(r["verdict"], 0) + 1
    out = {"source": source, "repos": checker.describe(), "commits": results, "summary": summary}
    if not results:
        out["message"] = ("no commit-SHA-shaped token (7-40 lower-case hex digits with a digit and a letter, "
                          "optionally repo@sha)")
    return VerifyAnswer.parse(redactor.redact_obj(out))

