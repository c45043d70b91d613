"""A question → the one section that answers, plus pointers to the next few.

query → legs (BM25, dense, literal) → fusion → rerank → one result per section → verdicts.
Each step is a small function so it can be measured and explained on its own; docs/ranking.md
records the figures behind every constant.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import posixpath
import re
import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from remembrancer.indexer.config import CODE, NOTES
from remembrancer.indexer.answers import CARRY_SECTION_TOKENS, CARRY_TOKENS, FilterCheck, Result, Scores, SearchAnswer
from remembrancer.indexer.store import filters as flt
from remembrancer.indexer.store.local import fulltext
from remembrancer.indexer.search import answer_types, commit_results, conversations, definitions, rank
from remembrancer.indexer import dates, terms
from remembrancer.indexer.ingest import links, meta
from remembrancer.indexer.ingest.chunks import estimate_tokens, whole_lines
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.requests import MAX_ALTERNATE_CHARS, MAX_ALTERNATES, TOO_LONG_HINTS
from remembrancer.indexer.models.spec import ModelError
from remembrancer.indexer.engine.view import Pointer, ReadView

log = logging.getLogger(__name__)

BM25_CANDIDATES = 200
DENSE_CANDIDATES = 300
LITERAL_CANDIDATES = 200
W_DENSE = 0.7          # min-max weighted sum, 0.7 dense (beat RRF k=60 on the dev sets: docs/ranking.md)
# A long question — a story of what was seen, then the question — is embedded as one mean of all its
# words, its point diluted by its setting, while BM25 counts each of its rare words: from this many
# words on the dense leg's share is W_DENSE_LONG (docs/ranking.md, "The legs": chosen on
# memory-dev-3, 12–16 words and 0.55–0.65 alike; checked on the others).
LONG_QUESTION_WORDS = 14
W_DENSE_LONG = 0.65
W_LITERAL = 0.3        # the literal leg's share when the question has a probe or names an entity
SNIPPET_CHARS = 240
SNIPPET_WINDOW = 16 * SNIPPET_CHARS   # past this a section's snippet is cut from a window around its first match
# A section's heading embedded alone names its topic ("Graceful Shutdown" for "stop the server
# without dropping requests") but says less than a passage of its text: its similarity counts at
# this share (docs/ranking.md: 0.85–0.9 measured alike; 1.0 cost memory-dev 4.5 points).
HEADING_PASSAGE_WEIGHT = 0.88
ABSTAIN_DENSE = 0.45         # one absent name (see _no_strong_match and docs/ranking.md)
ABSTAIN_DENSE_STRONG = 0.5   # several absent words, or an absent word about an entity the corpus knows
ABSTAIN_DENSE_RARE_NAME = 0.6  # an absent name that is a term of art too (`Traefik`, `Ceph`; not `April`, `Intel`)
ABSTAIN_DENSE_TERM = 0.3    # an absent term of art, no name: below every answerable dev row with one
ABSTAIN_DENSE_NO_WORD = 0.2  # no word of the question occurs: below the one answerable dev row so (0.24)
ABSTAIN_ALTERNATE_MARGIN = 0.1  # a rephrasing overturns an abstention only this far above the bar
ABSTAIN_POOL = 5             # the semantic match is judged on the sections an answer would show
MAX_LIMIT = 50
# Switches for measurement only (bench/eval_all.py turns each off alone, and all of them for the
# plain weighted hybrid baseline row); the product always runs with them on.
LITERAL_LEG = True
EVENT_CREDIT = True       # an event or outcome question: a section whose heading names the entity, alike
DAY_CREDIT = True         # a day the question names: the sections dated that day are its evidence, and first
YEARLESS_DAY_YEARS = 5    # a day named without its year is looked for this many years back from the newest note
SPLIT_WORDS = True        # abstention: "failover" occurs when the notes write "fail over"
ANSWER_TYPE_ABSTENTION = True   # abstention: a phone number, a price, an IP address none of the best sections writes
ABSTENTION = True
DEFINITIONS_FIRST = True   # a code corpus: a symbol's definition before its uses (search/definitions.py)
CODE_BETWEEN_WEIGHT = 0.8  # a code corpus: the code between definitions (a preamble), its score times this
# A pointer's words (a MEMORY.md hook) speak for the document it names (_credit_pointers): read
# for the best few candidates of each phrasing. Off only to measure it.
POINTER_CREDIT = True
POINTER_POOL = 10
# An entity's nickname read with its record's name by the dense leg (_with_entity_names). Off only
# to measure it.
ALIAS_NAMES = True
# A question that is its identifiers and at most this many other words ("What is commit d1fe89d?",
# "What are MLP-447 and MLP-448?") is answered where they are written (_identifiers_first).
IDENTIFIER_ONLY_WORDS = 1
IDENTIFIERS_FIRST = True   # off only to measure it
# "When was wren last rebooted?" asks for the newest occurrence: the newest near tie answers, as for
# an outcome (rank.LATEST_RE, rank._newest_of_near_ties).
LATEST_OCCURRENCE = True   # off only to measure it
NEWEST_ENTRY = True        # "the latest X" landing on a log of X's: its newest entry (off only to measure it)
NEWEST_ENTRY_READ = 400    # a document with more sections than this is not read for its entries' days
TEMPLATE_LINES_BACK = True  # a short section whose text is the same in several documents steps back
TEMPLATE_LOOK = 10         # of the first results
TEMPLATE_LINES = 8         # "short": its lines, heading included
TEMPLATE_COPIES = 3        # in this many documents or more
TEMPLATE_FACTOR = 0.5
SUCCESSOR_FIRST = True     # a superseded document among the first: the one it names as its successor, above it
SUCCESSOR_LOOK = 3         # how many of the first results are looked at for one
RECORD_LOG = True          # "when did X last …" landing on a record that keeps a log of X: the log (off only to measure it)
RECORD_LOG_DOCUMENTS = 3   # the records looked at: the first documents of the ranking
FRONT_MATTER_FIRST = True  # a question naming a key of the best document's front matter ("who owns …": owner): its preamble
FRONT_MATTER_REACH = 0.3   # when the preamble scores within this share of the best
NEWEST_OF_KIND = True      # "the latest release", "the agent's latest session": the newest of that kind of note
KIND_REACH = 0.35          # among the kind's candidates scoring within this share of its best
KIND_UNITS = 3             # a kind: a folder, or a one-word heading, of this many dated documents or more
LAST_ACCOUNT_FIRST = True  # "when did we last …" landing on a section that writes no day: the newest account of it
LAST_ACCOUNT_REACH = 0.35  # among the accounts scoring within this share of the best account
DECISION_FIRST = True      # a decision record's Context matched best: its Decision part (not for a why question)
REASON_FIRST = True        # a why question landing on a document that says why in a part of its own: that part
REASON_REACH = 0.3         # a part headed by what it explains ("Why nobody noticed"): only this near the best
# Among the near ties the newest account settles, a section is as new as the newest day its text
# writes (rank._days_written). Off only to measure it.
DAYS_WRITTEN = True
ALTERNATES_HINT = TOO_LONG_HINTS["alternates"]
# Each rephrasing adds ALTERNATE_WEIGHT / MAX_ALTERNATES (a third) of its fused score: three
# together weigh as much as the question, fewer weigh less, so the question always weighs most
# (docs/ranking.md: chosen on memory-dev-2, the mildest value of its plateau 1.0–2.0, checked on
# the other five; before, 0.75 × the rephrasings' mean).
ALTERNATE_WEIGHT = 1.0
# Only a trailing "(Part N)" is a split suffix (the eval label checker's rule): memory headings
# such as "2031-04-02 (Wed)" or "(session 1)" are real titles.
PART_SUFFIX_RE = re.compile(r"(?<!\s)\s*\(part \d+(?:\s*(?:/|of)\s*\d+)?\)\s*$", re.I)


@dataclass
class SearchRequest:
    query: str = ""
    limit: int = 5
    filters: flt.Filters = field(default_factory=flt.Filters)
    exact: bool = False
    explain: bool = False
    alternates: list[str] = field(default_factory=list)  # the caller's rephrasings of `query` (≤ MAX_ALTERNATES)
    # The most of the first result's content the answer can carry (its token budget's worth): cut
    # before the answer is redacted and measured, so a 5 MB section costs its cut, not its size.
    content_chars: int | None = None


@dataclass(slots=True)   # ~500 per phrasing: slots make them cheaper to build and read
class Candidate:
    section_id: int
    bm25: float = 0.0
    dense: float = 0.0
    literal: float = 0.0
    score: float = 0.0
    why: list[str] = field(default_factory=list)   # the rules that moved it (explain)
    alt: float = 0.0    # the best fused score a rephrasing gave it (alternates only)
    found_by: int = 0   # which phrasing gave it its best evidence: 0 the question, i the i-th alternate
    # What `explain` says of the fusion, kept as numbers: formatting a line for each of ~500
    # candidates per phrasing cost ~0.5 ms a search, and only an explained result shows it.
    fused: float | None = None   # the question's own fused score (None: not fused, or not found by it)
    by_question: bool = True     # found by the question itself (alternates: a rephrasing may nominate)
    alt_bonus: float = 0.0       # what the rephrasings' evidence added
    passage: int = -1            # the passage behind `dense` (-1: none)

    def explanation(self) -> list[str]:
        head = []
        if self.fused is not None:
            head.append(f"bm25={self.bm25:.2f} dense={self.dense:.3f} literal={self.literal:.2f} fused={self.fused:.3f}")
        elif not self.by_question:
            head.append("not found by the question itself")
        if self.alt_bonus:
            head.append(f"rephrasings +{self.alt_bonus:.3f}")
        return head + self.why

    @property
    def provenance(self) -> str:
        kw = self.bm25 > 0 or self.literal > 0
        if kw and self.dense > 0:
            return "both"
        return "keyword" if kw else "semantic"


def search(view: ReadView, req: SearchRequest) -> SearchAnswer:
    """Run one search; returns its SearchAnswer, redacted."""
    t0 = time.perf_counter()
    redactor = view.redaction.current()  # fail closed (indexer/redact.py): RedactionError if the policy is broken
    if not isinstance(req.limit, int) or not 1 <= req.limit <= MAX_LIMIT:
        raise UserError(f"limit must be between 1 and {MAX_LIMIT}, got {req.limit!r}", param="limit")
    query = (req.query or "").strip()
    alternates = validate_alternates(req.alternates, query)
    f = flt.validate(req.filters, view.catalog, view.config.doc_types)
    allowed = _allowed_sections(view, f) if query and (f.active() or view.scope) else None
    notes: list[str] = []
    rows: dict = {}  # section rows already read (the hybrid rerank reads every candidate's)
    if not query:
        if not f.active():
            raise UserError("query is empty", param="query", hint="ask a question, or give filters to list sections")
        cands = _newest(view, f, req.limit)
        allowed = None if cands else set()   # nothing listed: the filters matched nothing (said below)
        mode = "filters"
    elif req.exact:
        if alternates:   # an agent passing them would believe they were used
            raise UserError("`alternates` does not apply to `exact`: an exact search finds the text as given",
                            param="alternates", hint="drop `exact` to search with rephrasings, or drop `alternates`")
        cands = _literal_leg(view, query, allowed, case_insensitive=True)
        mode = "exact"
    elif not _searchable(query):
        raise UserError(f"the query has no word to search for: {terms.elide(query, 40)!r}", param="query",
                        hint="ask in words; for a symbol or operator use an exact search (`exact`); "
                             "to list sections give filters and no query")
    else:
        # filters that let no section through: no leg can find anything (said below, filter by filter)
        legs = Hybrid({}, [], {}, set()) if allowed == set() else _hybrid(view, query, allowed, alternates)
        cands, rows = legs.cands, legs.rows
        notes += legs.notes
        mode = "hybrid"
    # Equal scores are ordered by section id (document order of a fresh index), never by which
    # leg happened to add a candidate first: equal inputs give equal rankings.
    ranked = sorted(cands.values(), key=lambda c: (-c.score, c.section_id))
    shown_at_most = max(req.limit * 4, 20)   # results, their `also` pointers and abstention read no further
    top_ids = [c.section_id for c in ranked[:shown_at_most]]
    missing = [i for i in top_ids if i not in rows]
    if missing:
        rows = {**rows, **view.catalog.sections_by_id(missing)}
    if view.config.kind == CODE and mode == "hybrid" and CODE_BETWEEN_WEIGHT != 1.0:
        ranked = definitions.weigh_between([c for c in ranked if c.section_id in rows], rows, CODE_BETWEEN_WEIGHT)
    ranked = one_per_section([c for c in ranked if c.section_id in rows], rows, shown_at_most)
    if view.config.kind == CODE and mode != "filters" and DEFINITIONS_FIRST:
        ranked = definitions.definitions_first(ranked, rows, query)   # a symbol's definition before its uses
    ranked, rows = _shown_with_text(view, ranked, rows, req.limit)
    # Filters that let no section through are said as such (below), not as "nothing matches the question".
    no_strong, reasons = (_abstains(view, query, ranked, rows, legs) if mode == "hybrid" and ABSTENTION
                          and allowed != set() else (False, []))
    results = _results(view, ranked, rows, req, query, mode)
    best_dense = max((c.dense for c in ranked[:ABSTAIN_POOL]), default=0.0)
    if mode == "hybrid" and best_dense > 0 and not no_strong:
        if not _any_word_occurs(view, [query, *alternates]):
            notes.append(f"no word of the question occurs in the notes: these results rest on meaning alone "
                         f"(best semantic match {best_dense:.2f})")
            for r in results:   # a keyword score here is stop words ("the", "with"): not keyword evidence
                r.provenance = "semantic"
        elif f.active() and not _any_word_in(view, [query, *alternates], allowed):
            notes.append(f"no word of the question occurs in the sections the filters let through ({f.describe()}), "
                         f"only outside them: these results rest on meaning alone (best semantic match "
                         f"{best_dense:.2f})")
    # Nothing found at all is no strong match too, whatever the mode (exact, filters): a caller that
    # reads only the flag must never take an empty answer for a confident one.
    out = SearchAnswer(query=query, mode=mode, results=[] if no_strong else results,
                       no_strong_match=no_strong or not results, took_ms=round((time.perf_counter() - t0) * 1000, 1))
    if no_strong:
        out.best_weak, out.why_no_strong_match = results, reasons
    if not results:
        out.message = (f"0 matches for filters: {f.describe()}" if f.active() and allowed == set()
                       else "no section matches" + (f" with filters: {f.describe()}" if f.active() else ""))
        if f.active() and allowed == set():  # say which filter emptied it: each one dropped in turn
            checks, why = flt.emptied_by(f, view.catalog.count_sections)
            out.emptied_by = [FilterCheck(**c) for c in checks]
            out.message += f" — {why}"
        if not no_strong:   # the why is the message (never a word/meaning verdict the legs did not reach)
            out.why_no_strong_match = [out.message]
    if mode == "filters" and results:   # a listing says that it left sections out, as `latest` and `history` do
        out.truncated = len(ranked) > len(results)
    if alternates and mode == "hybrid" and results:
        phrasings = [query, *alternates]
        out.found_by = phrasings[ranked[0].found_by]   # which phrasing found the best result
    if notes:
        out.notes = notes
    conversations.annotate(view, out)   # a conversation's results say which session and prompt they are
    commit_results.annotate(view, out)  # a commit's say its full hash and author
    # served text is redacted again, with the policy in force now (the whole answer, as the wire has it)
    return SearchAnswer.parse(redactor.redact_obj(out.to_json()))


def _shown_with_text(view, ranked: list[Candidate], rows: dict, limit: int) -> tuple[list[Candidate], dict]:
    """The rerank read the candidates without their text; the shown ones are read whole. A section
    deleted in between (a writer committed) is dropped, and the next one is read in its place."""
    while textless := [c.section_id for c in ranked[:limit] if rows[c.section_id].content is None]:
        rows = {**rows, **view.catalog.sections_by_id(textless)}
        gone = {i for i in textless if rows[i].content is None}
        ranked = [c for c in ranked if c.section_id not in gone]
    return ranked, rows


def _allowed_sections(view, f: flt.Filters) -> set[int]:
    return view.catalog.filtered_section_ids(f)


def _newest(view, f: flt.Filters, limit: int) -> dict[int, Candidate]:
    """Filters without a query: matching sections newest first, nothing embedded (ordered and
    limited in the catalog: the cost follows the limit, not the corpus)."""
    ids = view.catalog.newest_sections(f, max(limit * 4, 20))
    return {sid: Candidate(sid, score=1.0 / (1 + i)) for i, sid in enumerate(ids)}


def _literal_leg(view, query: str, allowed: set[int] | None, case_insensitive: bool) -> dict[int, Candidate]:
    """Sections containing the literal string; more occurrences and newer dates first."""
    needle = query.lower() if case_insensitive else query
    out = {}
    for sid, date, n in view.catalog.literal_counts(needle, case_insensitive):
        if allowed is not None and sid not in allowed:
            continue
        # More occurrences first; among equals the newer section (a date adds < 1).
        out[sid] = Candidate(sid, literal=int(n), score=float(n) + (rank.date_value(date) or 0) / 1e7)
    return out


class Hybrid(NamedTuple):
    cands: dict[int, Candidate]
    notes: list[str]
    rows: dict            # section rows the rerank read
    probes_found: set[str]  # literal probes that occur in some visible section (abstention asks)
    alternates: tuple = ()  # each rephrasing's own evidence (abstention judges them too)
    intent: rank.Intent | None = None   # what the question asks for, read once (abstention asks it too)


class Phrasing(NamedTuple):
    """One phrasing's evidence: its fused candidates (before the memory rules), the probes found,
    the days it names that the notes hold (read as dates) and the records of the entities it names."""
    text: str
    cands: dict[int, Candidate]
    probes_found: set[str]
    days: tuple[str, ...] = ()
    records: frozenset[str] = frozenset()


def validate_alternates(alternates, query: str) -> list[str]:
    """The caller's rephrasings: a list of up to MAX_ALTERNATES non-empty strings, each bounded;
    repeats of the question (or of each other) are dropped, since they add no evidence."""
    if alternates is None or alternates == []:
        return []
    hint = ALTERNATES_HINT
    if not isinstance(alternates, list) or not all(isinstance(a, str) for a in alternates):
        raise UserError("`alternates` must be a list of strings", param="alternates", hint=hint)
    if len(alternates) > MAX_ALTERNATES:
        raise UserError(f"`alternates` takes at most {MAX_ALTERNATES} phrasings, got {len(alternates)}",
                        param="alternates", hint=hint)
    out: list[str] = []
    for a in alternates:
        text = a.strip()
        if not text:
            raise UserError("`alternates`: a phrasing is empty", param="alternates", hint=hint)
        if len(text) > MAX_ALTERNATE_CHARS:
            raise UserError(f"`alternates`: a phrasing is {len(text)} chars, the most is {MAX_ALTERNATE_CHARS}",
                            param="alternates", hint=hint)
        if not query:
            raise UserError("`alternates` need a query to rephrase", param="alternates",
                            hint="give the question in `query`")
        if not _searchable(text):   # as the question itself is refused
            raise UserError(f"`alternates` {terms.elide(text, 40)!r} has no word to search for",
                            param="alternates", hint=hint)
        if text.casefold() != query.casefold() and text.casefold() not in {o.casefold() for o in out}:
            out.append(text)
    return out


def _searchable(text: str) -> bool:
    """A word or an identifier to search for (not `*`, `???`, emoji)."""
    return bool(terms.words(text) or terms.literal_probes(text))


def _query_vectors(view, query: str, alternates: list[str]):
    """The question's vector alone (so it is the same with or without alternates: the int8 model
    quantises a batch as a whole), the rephrasings' in one batch. Each phrasing is embedded redacted
    (_for_a_model)."""
    question, *rephrasings = _for_a_model(view, [_with_entity_names(view, t) for t in (query, *alternates)])
    vecs = [view.embedder.embed_query(question)]
    if rephrasings:
        vecs.extend(view.embedder.embed_queries(rephrasings))
    return vecs


def _for_a_model(view, texts: list[str]) -> list[str]:
    """Phrasings as a model reads them: redacted, as the passages were. With `[model] url` or a
    `[rerank]` server the text leaves the machine (a hosted API, maybe), and a token pasted into a
    search must not. The local model reads them redacted too: a question is short (the query log
    redacts it anyway), the passages it is compared with were embedded redacted, so the redacted
    question compares like with like, and one path keeps a served index ranking as the local one."""
    redactor = view.redaction.current()
    return [redactor.redact_text(t) for t in texts]


def _with_entity_names(view, text: str) -> str:
    """The phrasing as the dense leg reads it: a host's or service's alias that shares no word with
    the name its record declares is followed by that name — "the lighthouse (sbx-relay) pods",
    "analytics-1 (ch1)". The record's passages carry its name in their header, and the model cannot
    know that a nickname means it; "relay" for `sbx-relay` already says it and is left alone. A note
    that declares no name (`Tools/Postmark.md`, its aliases `email`, `Mailgun`) keeps its aliases as
    its author's synonyms: "send email" is no nickname of Postmark's."""
    if not ALIAS_NAMES:
        return text
    matcher = view.entities()[0]
    if matcher.regex is None:
        return text

    def named(m: re.Match) -> str:
        said = m.group(1)
        name = matcher.by_name[said.lower()]
        words = terms.WORD_RUN_RE.findall
        if set(words(said.lower())) & set(words(name.lower())) or not view.declares_name(name):
            return m.group(0)
        return f"{m.group(0)} ({name})"
    return matcher.regex.sub(named, text)


def _hybrid(view, query: str, allowed: set[int] | None, alternates: list[str] = ()) -> Hybrid:
    notes: list[str] = []
    problem = view.contract_problem()
    dense_ok = problem is None and view.vectors is not None and len(view.vectors)
    if problem:
        notes.append(f"keyword search only: {problem}")
    phrasings = [query, *alternates]
    vecs = [None] * len(phrasings)
    if dense_ok:
        try:
            vecs = _query_vectors(view, query, list(alternates))
        except ModelError as e:   # an embedding server that is down or slow: keywords answer, saying why
            notes.append(f"keyword search only: {e}")
        waiting = view.vectors_waiting()
        if waiting:
            notes.append(f"{waiting} passages have no vector yet (the model was unavailable when they were "
                         "indexed): they are found by keywords only until an index run embeds them")
    it = rank.intent(query, latest=LATEST_OCCURRENCE)   # read once: the question's wording decides what kind of answer it wants
    shared = Lookups(view, allowed)
    evidence = [_phrasing(view, text, vec, shared, it) for text, vec in zip(phrasings, vecs)]
    if it.current:   # the memory rules ask whether the question names a thing the notes keep a record of
        it = dataclasses.replace(it, of_record=bool(evidence[0].records))
    cands = evidence[0].cands if not alternates else _combine(evidence)
    if view.config.rerank is not None:
        _cross_encoded(view, query, cands, notes)
    rows = _rerank(view, it, cands)
    if NEWEST_ENTRY and view.config.ranking.enabled and (it.latest or it.current) and view.config.kind != CODE:
        _newest_entry_first(view, cands, rows, shared)
    if TEMPLATE_LINES_BACK and view.config.ranking.enabled:
        _template_lines_back(view, cands, rows)
    if SUCCESSOR_FIRST and view.config.ranking.enabled and not (it.past or it.history) and view.config.kind != CODE:
        _successor_first(view, cands, rows, shared)
    if RECORD_LOG and view.config.ranking.enabled and it.latest and view.config.kind != CODE:
        _record_log_first(view, cands, rows, shared)
    if LAST_ACCOUNT_FIRST and view.config.ranking.enabled and it.last_time and view.config.kind == NOTES:
        _last_account_first(view, cands, rows)
    if NEWEST_OF_KIND and view.config.ranking.enabled and it.latest and not it.last_time and view.config.kind == NOTES:
        _newest_of_kind_first(view, cands, rows, query)
    if DECISION_FIRST and view.config.ranking.enabled and not it.why and view.config.kind == NOTES:
        _decision_first(cands, rows, shared)
    if REASON_FIRST and view.config.ranking.enabled and it.why and view.config.kind == NOTES:
        _reason_first(view, cands, rows, shared)
    if FRONT_MATTER_FIRST and view.config.ranking.enabled and view.config.kind == NOTES and not (it.howto or it.latest):
        _front_matter_first(view, cands, rows, shared, query)
    if IDENTIFIERS_FIRST:
        _identifiers_first(cands, query, evidence[0].probes_found)
    _named_day_first(view, cands, shared.dated(evidence[0].days))
    return Hybrid(cands, notes, rows, evidence[0].probes_found, tuple(evidence[1:]), it)


def _ranked(cands: dict[int, "Candidate"]) -> list[int]:
    """The candidates' ids best first (ties by section id, as the answer orders them)."""
    return sorted(cands, key=lambda sid: (-cands[sid].score, sid))


def _lift(cands: dict[int, "Candidate"], rows: dict, sid: int, row, above: float, why: str) -> None:
    """Put section `sid` (a candidate or not: `row` is its row) right above the score `above`,
    saying why — the rules below that name the section that answers in place of the one matched."""
    c = cands.get(sid) or cands.setdefault(sid, Candidate(sid))
    rows.setdefault(sid, row)
    if c.score <= above:
        c.why.append(f"{why} +{above - c.score + 1e-6:.3f}")
        c.score = above + 1e-6


def _newest_entry_first(view, cands: dict[int, Candidate], rows: dict, shared: Lookups) -> None:
    """"The latest X", "X as it stands now", when the best match is the document that lists the
    X's — a decision log, a notebook, an estimate redone over the months — is its newest entry, not
    its title and introduction: those name the topic in the question's words, the entries do not.
    When the best section encloses two or more entries of different days (rank.entry_day), the
    newest goes first. (A question about whether something happened is left to the newest of the
    near ties: the newest entry of a log need not be about it.)"""
    best = min(cands, key=lambda sid: (-cands[sid].score, sid))
    top = rows.get(best)
    if top is None:
        return
    entries = {sid: s for sid, s in shared.visible_heads_of(top.path).items()
               if rank.encloses(top, s)}
    if len(entries) < 2 or len(entries) > NEWEST_ENTRY_READ:
        return
    # an entry its heading dates needs no text; the others are read for the days they write
    entries.update(view.catalog.sections_by_id([sid for sid, s in entries.items() if not rank.written_that_day(s)]))
    present = rank.present_day(rows.values())
    when = {sid: d for sid, s in entries.items() if (d := rank.entry_day(s, present)) is not None}
    if len(set(when.values())) < 2:
        return
    newest = max(when, key=lambda sid: (when[sid], entries[sid].start_line))
    _lift(cands, rows, newest, entries[newest], cands[best].score,
          f"the newest entry of {top.heading or top.path}, the best match, for a question about the latest")


def _template_lines_back(view, cands: dict[int, Candidate], rows: dict) -> None:
    """A line a template repeats in every note ("## Next week — Follow up on open incidents.", "No
    incidents.") is short, so it matches a question's word closely on both legs, and the same in
    every copy: "latest incident" got five weeks' copies of it and none of the incidents. Of the
    first TEMPLATE_LOOK results, short sections (TEMPLATE_LINES lines at most) of one heading in
    TEMPLATE_COPIES documents or more are read; those whose text is the same in as many documents
    step back (×TEMPLATE_FACTOR). Only those are read: a question that meets no such heading pays
    nothing."""
    top = _ranked(cands)[:TEMPLATE_LOOK]
    by_heading: dict[str, list[int]] = {}
    for sid in top:
        s = rows.get(sid)
        if s is not None and s.end_line - s.start_line <= TEMPLATE_LINES:
            by_heading.setdefault(rank.own_heading(s).casefold(), []).append(sid)
    read = [sid for ids in by_heading.values() if len({rows[x].doc_id for x in ids}) >= TEMPLATE_COPIES for sid in ids]
    copies: dict[str, list] = {}
    for s in _with_text(view, read, rows) if read else ():
        body = " ".join((s.body or "").split()).casefold()
        if body:
            copies.setdefault(body, []).append(s)
    for same in copies.values():
        if len({s.doc_id for s in same}) >= TEMPLATE_COPIES:
            for s in same:
                cands[s.id].score *= TEMPLATE_FACTOR
                cands[s.id].why.append(f"the same text in {len(same)} documents, a template's line ×{TEMPLATE_FACTOR}")


def _successor_first(view, cands: dict[int, Candidate], rows: dict, shared: Lookups) -> None:
    """"Which message queue do we use now?" matches the superseded decision in the question's words
    (its file is `0003-message-queue-rabbitmq.md`); the decision that replaced it speaks of Kafka
    and ranks out of sight, and stepping the stale one back (rank: `stale_factor`) does not bring it
    in. A superseded document among the first SUCCESSOR_LOOK results that names its successor —
    "Superseded by ADR-0007", "superseded by [D-010](decisions.md#d-010)" (rank.successor_named) —
    puts the successor right above it: its section of the same heading ("Decision") or its title for
    a title, else its best match, else its opening. Not for a question about the past: the superseded
    decision is its answer."""
    for sid in _ranked(cands)[:SUCCESSOR_LOOK]:
        s = rows.get(sid)
        if s is None or not (s.stale or s.doc_stale):
            continue
        path = _successor_of(view, shared, s)
        theirs = shared.visible_sections_of(path) if path else []
        if not theirs:
            continue
        heads = shared.visible_heads_of(path)
        # the same part ("Decision"), or, for the title, the title
        same = [x for x in theirs if s.heading and (rank.own_heading(heads[x]) == rank.own_heading(s) or
                                                    (" > " not in s.heading and heads[x].heading and " > " not in heads[x].heading))]
        matched = sorted((x for x in theirs if x in cands), key=lambda x: (-cands[x].score, x))
        target = (same or matched or theirs)[0]
        _lift(cands, rows, target, heads[target], cands[sid].score, f"supersedes {s.path}, which ranked here")
        return


def _successor_of(view, shared: Lookups, s) -> str | None:
    """The path of the document a superseded one names as its successor: a link's target, else the
    document whose title holds the name ("ADR-0007" → "ADR 0007: Move order events to Kafka")."""
    inside = shared.sections_of(s.path)[:20]
    texts = view.catalog.sections_by_id(inside)
    named = next((n for x in inside if (n := rank.successor_named(texts[x].content or ""))), None)
    if named is None:
        return None
    name, target = named
    if target:
        path = posixpath.normpath(posixpath.join(posixpath.dirname(s.path), target))
        if path != s.path and shared.sections_of(path):
            return path
    forms = list(dict.fromkeys(f.lower() for f in (name, name.replace("-", " "), name.replace(" ", "-"), name.replace("_", " "))))
    return next((path for _, head, _, path in view.literal_rows(forms)
                 if path != s.path and any(f in head for f in forms)), None)


def _record_log_first(view, cands: dict[int, Candidate], rows: dict, shared: Lookups) -> None:
    """"When did we last roll back / rotate / drain …?" matches a record's procedure or description
    in the question's words; the record's log ("Rotation log", "Change history", rank.is_log) keeps
    one occurrence a line, in words of its own, and ranks far below. Of the first
    RECORD_LOG_DOCUMENTS documents of the ranking, the first that keeps a log puts it first when its
    lines write a day (of several logs, the one that writes the newest)."""
    ranked = _ranked(cands)
    if not ranked:
        return
    best = cands[ranked[0]].score
    present = rank.present_day(rows.values())
    paths: list[str] = []
    for sid in ranked:
        s = rows.get(sid)
        if s is None or s.path in paths:
            continue
        paths.append(s.path)
        if len(paths) > RECORD_LOG_DOCUMENTS:
            return
        logs = [x for x, h in shared.visible_heads_of(s.path).items()
                if rank.is_log(h)]
        if not logs:
            continue
        texts = view.catalog.sections_by_id(logs)
        written = [(day, x) for x in logs if (day := rank.newest_day_written(texts[x], present)) is not None]
        if not written:
            return   # the first record that keeps a log does not date it: another record's log is of another thing
        log = max(written)[1]
        _lift(cands, rows, log, texts[log], best, f"the log of {s.path}, for a question about the last time")
        return


def _last_account_first(view, cands: dict[int, Candidate], rows: dict) -> None:
    """"When did we last replay webhooks for a customer?" matches the runbook and the product page
    that say how, in the question's words; neither writes a day, so neither can say when. The day's
    account of doing it ("2026-11-04 — Parcelhop replay") tells it in words of its own and ranks far
    below. When the first result is dated by no heading of its own and writes no day (a section that
    does, a record's "rotation log: - 2026-11-12 …", is left to the rules above), the newest of the
    accounts — sections dated by their heading or a daily note's name (rank.written_that_day) — that
    score within LAST_ACCOUNT_REACH of the best account goes first. A day still to come is a plan's,
    not an account's (when the notes are not dated wholly ahead of the clock)."""
    ranked = _ranked(cands)
    top = rows.get(ranked[0]) if ranked else None
    if top is None or rank.written_that_day(top):
        return
    if rank.newest_day_written(_with_text(view, [top.id], rows)[0], rank.present_day(rows.values())) is not None:
        return
    accounts = [sid for sid in cands if (s := rows.get(sid)) is not None and s.date and rank.written_that_day(s)]
    today = rank.date_value(dates.today().isoformat())
    accounts = [sid for sid in accounts if rank.date_value(rows[sid].date) <= today] or accounts
    if not accounts:
        return
    newest = _newest_within(cands, {sid: rows[sid].date for sid in accounts}, LAST_ACCOUNT_REACH)
    _lift(cands, rows, newest, rows[newest], cands[ranked[0]].score,
          "the newest account of it, for a question about the last time")


def _newest_within(cands: dict[int, Candidate], dated: dict[int, str], reach: float) -> int:
    """The newest of the `dated` candidates (id → day) that score within `reach` of the best of them;
    of one day, the better scored."""
    near = max(cands[sid].score for sid in dated) * (1 - reach)
    return max((sid for sid in dated if cands[sid].score >= near),
               key=lambda sid: (rank.date_value(dated[sid]), cands[sid].score))


def _newest_of_kind_first(view, cands: dict[int, Candidate], rows: dict, query: str) -> None:
    """"What did we triage most recently?", "What did the agent work on in its latest session?": the
    question names a kind of note the notes keep many of, dated — a folder (`triage/`, `releases/`,
    `escalations/`) or a one-word heading repeated in dated notes (each daily note's "## Agent") — and
    the newest of them answers, though an older one, or a page about the kind, matches the question's
    words as well or better. Of the candidates of the kind the question's words name (by base forms;
    KIND_UNITS dated documents or more, dated as the notes date them: answer._own_date), the newest of
    those within KIND_REACH of the kind's best goes first; of two kinds, the one with the better
    match."""
    asked = {f for w in terms.content_words(query) if len(w) >= 4 for f in terms.base_forms(w)}
    own = _own_date(view)

    def kind_of(s) -> str | None:
        folder = posixpath.basename(posixpath.dirname(s.path))
        if folder and terms.base_forms(folder) & asked:
            return "folder " + folder
        title = rank.own_heading(s)
        if title and " " not in title.strip() and terms.base_forms(title.strip()) & asked:
            return "heading " + title.strip().lower()
        return None

    units: dict[str, list[int]] = {}
    for sid in cands:
        s = rows.get(sid)
        if s is not None and (k := kind_of(s)) is not None:
            units.setdefault(k, []).append(sid)
    best_kind = None
    for k, sids in units.items():
        dated = {sid: d for sid in sids if (d := own(rows[sid])) is not None}
        docs = {rows[sid].path for sid in dated}
        if len(docs) < KIND_UNITS:
            continue
        top = max(cands[sid].score for sid in dated)
        if best_kind is None or top > best_kind[0]:
            best_kind = (top, k, dated)
    if best_kind is None:
        return
    _, kind, dated = best_kind
    newest = _newest_within(cands, dated, KIND_REACH)
    ranked = _ranked(cands)
    if ranked[0] == newest:
        return
    _lift(cands, rows, newest, rows[newest], cands[ranked[0]].score, f"the newest of its kind ({kind}), for a question about the latest")


def _decision_first(cands: dict[int, Candidate], rows: dict, shared: Lookups) -> None:
    """"What's our rule for adding a new secrets backend?", "How do we decide which users fall inside
    a percentage rollout?": a decision record's Context tells the problem in the question's words and
    matches best; its Decision says what was decided, the rule the question asks for, in words of its
    own. When the first result is a part headed "Context", "Background" or "Problem" and its document
    keeps a part headed "Decision" (or "Decision outcome"), that part goes first. Not for a why
    question: the context is why."""
    ranked = _ranked(cands)
    top = rows.get(ranked[0]) if ranked else None
    if top is None or not rank.is_context(top):
        return
    heads = shared.visible_heads_of(top.path)
    parts = [x for x, h in heads.items() if rank.is_decision(h)]
    if parts:
        part = min(parts, key=lambda x: heads[x].start_line)
        _lift(cands, rows, part, heads[part], cands[ranked[0]].score, f"the decision {top.path} records, over its context")


def _reason_first(view, cands: dict[int, Candidate], rows: dict, shared: Lookups) -> None:
    """"Why did the dashboard show too many active shoppers in March?" matches the postmortem's
    summary, which tells the story in the question's words; its "Root cause" says why in words of
    its own and ranks far below. When the best match is not itself a reason and its document keeps
    a part headed as one ("Why two points", "Root cause", "Rationale": rank.is_reason), that part
    goes first (of several, the best-scored). The best match's document only: another document's
    reason is another thing's. A part headed by what it explains ("Why nobody noticed for 9 hours")
    may explain another thing than the question asks ("why did someone have to run indexer:reset?"):
    it goes first only when it scores within REASON_REACH of the best."""
    ranked = _ranked(cands)
    top = rows.get(ranked[0]) if ranked else None
    if top is None or rank.is_reason(top):
        return
    heads = shared.visible_heads_of(top.path)
    parts = [x for x, h in heads.items() if rank.is_reason(h)]
    best = cands[ranked[0]].score
    parts = [x for x in parts if not rank.names_its_reason(heads[x]) or (x in cands and cands[x].score >= best * (1 - REASON_REACH))]
    if parts:
        part = min(parts, key=lambda x: (-cands[x].score if x in cands else 0.0, heads[x].start_line))
        _lift(cands, rows, part, heads[part], best, f"the reason {top.path} gives, for a why question")


# A front matter's `key: value` lines, as the preamble's text holds them; the keys that name, type or
# date the note itself say what it is, not a fact about its subject.
_FRONT_MATTER_KEY_RE = re.compile(r"^\s*([A-Za-z][\w.-]*)\s*:\s*\S", re.MULTILINE)
_NOTE_KEYS = frozenset("name title aka alias aliases description summary type kind tags tag id slug date created "
                       "updated layout category categories".split())


def _front_matter_first(view, cands: dict[int, Candidate], rows: dict, shared: Lookups, query: str) -> None:
    """"Who owns the push gateway?", "What port does push-gateway listen on?", "When does the
    RevenueCat contract renew?": the record keeps the answer in its front matter (`owner:`, `port:`,
    `contract_renewal:`), its preamble's text; the record's opening names the thing in the
    question's words and wins, and the detail rule puts it above the preamble that encloses it.
    When the best match's document has a front matter with a key the question names (a word of the
    key, by its base forms: "owns" names `owner`, "account owner" `account_owner`) and its preamble
    scores within FRONT_MATTER_REACH of the best, the preamble goes first. Keys about the note
    itself (`name`, `type`, `tags`, `updated` …) name no fact."""
    ranked = _ranked(cands)
    top = rows.get(ranked[0]) if ranked else None
    if top is None or top.heading == "":
        return
    best = cands[ranked[0]].score
    # the preamble must be a candidate near the best: found among the candidates' rows, read already
    pre = next((x for x in ranked if rows.get(x) is not None and rows[x].doc_id == top.doc_id and rows[x].heading == ""
                and cands[x].score >= best * (1 - FRONT_MATTER_REACH)), None)
    if pre is None:
        return
    asked = {f for w in terms.content_words(query) if len(w) >= 3 for f in terms.base_forms(w)}
    keys = [k for k in _FRONT_MATTER_KEY_RE.findall(_with_text(view, [pre], rows)[0].content or "")
            if k.lower() not in _NOTE_KEYS]
    named = next((k for k in keys if any(f in asked for part in re.split(r"[._-]", k.lower()) if len(part) >= 3
                                         for f in terms.base_forms(part))), None)
    if named:
        _lift(cands, rows, pre, rows[pre], best, f"its front matter's {named}, which the question names")


def _identifiers_first(cands: dict[int, Candidate], query: str, probes_found: set[str]) -> None:
    """A question that is only identifiers the notes hold ("What is commit d1fe89d?") has nothing
    else to mean: the model reads `d1fe89d` as noise and finds the sections most like "what is
    commit", which hold no word of the answer. The sections with literal evidence — a probe, a named
    entity's record — go first, in their order; the rest follow in theirs. A question with more
    words than IDENTIFIER_ONLY_WORDS besides its identifiers is left to relevance."""
    if not probes_found:
        return
    said = {w for probe in probes_found for w in terms.words(probe)}
    if len([w for w in terms.content_words(query) if w not in said]) > IDENTIFIER_ONLY_WORDS:
        return
    holders = [c for c in cands.values() if c.literal > 0]
    others = [c for c in cands.values() if c.literal <= 0]
    if not holders or not others:
        return
    low, high = min(c.score for c in holders), max(c.score for c in others)
    if high < low or high <= 0:
        return
    scale = low / high * (1 - 1e-6)   # every other section just below the last holder, its order kept
    for c in others:
        if c.score >= low:
            c.why.append(f"holds none of the identifiers the question is made of ×{scale:.2f}")
        c.score *= scale


def _named_day_first(view, cands: dict[int, Candidate], dated: dict[int, str]) -> None:
    """A day the question names ("what happened on 2024-01-05?", "on 5 January 2024") is the day to
    look in, as a `since`/`until` filter of that day would say: the sections dated that day go first,
    in their own order, the rest after them (a note that mentions the day keeps its place among those).
    Those with text of their own lead: a daily note's bare `# 2024-01-05` says only which day it is."""
    ours = [sid for sid in dated if sid in cands]
    if not ours:
        return
    rows = view.catalog.sections_by_id(ours)
    with_text = [sid for sid in ours if sid in rows and (rows[sid].body or "").strip()]
    bare = [sid for sid in ours if sid not in with_text]
    for group, below in ((ours, list(cands)), (with_text, bare)):
        if not group or not below:
            continue
        lead = max(cands[sid].score for sid in below) - min(cands[sid].score for sid in group) + 1e-6
        for sid in group:
            cands[sid].score += max(lead, 0.0)
    for sid in ours:
        cands[sid].why.append(f"dated {dated[sid]}, the day the question names")


def _combine(evidence: list[Phrasing]) -> dict[int, Candidate]:
    """The question's fused score plus ALTERNATE_WEIGHT × the rephrasings' fused scores summed over
    MAX_ALTERNATES (0 where a rephrasing did not find the section, or was not given: with three,
    their mean). Rephrasings nominate candidates and add evidence — agreement among them counts,
    one jargon-rich rephrasing alone counts little — the question keeps the most weight, and the
    memory rules (applied after) read the question's own wording. (Measured and not kept: the best
    rephrasing's score instead; their median; the evidence pooled per document — docs/ranking.md.)"""
    out: dict[int, Candidate] = {}
    for sid, c in evidence[0].cands.items():
        out[sid] = Candidate(sid, c.bm25, c.dense, c.literal, c.score, list(c.why), fused=c.fused)
    sums: dict[int, float] = {}
    for i, ph in enumerate(evidence[1:], 1):
        for sid, c in ph.cands.items():
            o = out.get(sid)
            if o is None:
                o = out[sid] = Candidate(sid, by_question=False)
            sums[sid] = sums.get(sid, 0.0) + c.score
            if c.score > o.alt:
                o.alt = c.score
                if c.score > evidence[0].cands.get(sid, o).score:
                    o.found_by = i
    for sid, o in out.items():
        evidence_alt = sums.get(sid, 0.0) / MAX_ALTERNATES
        if evidence_alt:
            o.alt_bonus = ALTERNATE_WEIGHT * evidence_alt
            o.score += o.alt_bonus
    return out


class Lookups:
    """Catalog lookups the phrasings of one request share: a filter's passages, which section each
    vector hit is a passage of, and where each literal probe occurs (rephrasings hit mostly the
    same passages as the question, and name the same identifiers)."""

    def __init__(self, view, allowed: set[int] | None):
        self.view, self.allowed = view, allowed
        self._labels: set[int] | None = None
        self._passages: dict[int, tuple[int, bool]] = {}
        self._probes: dict[str, list[tuple[int, bool]]] = {}
        self._pointers: dict[int, Pointer | None] = {}
        self._landing: dict[tuple[str, str | None], int | None] = {}
        self._sections: dict[str, list[int]] = {}
        self._heads: dict[str, dict] = {}
        self._days: dict[str, list[int]] = {}
        self._titled: dict[str, set[int]] = {}
        self._newest: tuple[int | None] | None = None

    def allowed_labels(self) -> set[int] | None:
        if self.allowed is not None and self._labels is None:
            self._labels = self.view.catalog.passage_ids_in(self.allowed)
        return self._labels

    def passages(self, labels: list[int]) -> dict[int, tuple[int, bool]]:
        """passage id → (section id, heading only?), as catalog.passages_by_id, each read once."""
        new = [label for label in labels if label not in self._passages]
        if new:
            self._passages.update(self.view.catalog.passages_by_id(new))
        return self._passages

    def pointers(self, labels: list[int]) -> dict[int, Pointer]:
        """passage id → Pointer for the pointers among these passages."""
        new = [label for label in labels if label not in self._pointers]
        if new:
            found = self.view.pointers(new)
            self._pointers.update({label: found.get(label) for label in new})
        return {label: self._pointers[label] for label in labels if self._pointers[label] is not None}

    def sections_of(self, path: str) -> list[int]:
        """Every section id of a document (a pointer's target), read once per request."""
        if path not in self._sections:
            self._sections[path] = self.view.catalog.section_ids_of([path])
        return self._sections[path]

    def visible_sections_of(self, path: str) -> list[int]:
        """The section ids of a document that the request's filters let through."""
        return [sid for sid in self.sections_of(path) if self.allowed is None or sid in self.allowed]

    def visible_heads_of(self, path: str) -> dict:
        """Those sections' rows without their text, by id, read once per request: the rules that
        look inside the best document (its entries, its log, its reason, its successor's parts) share them."""
        if path not in self._heads:
            self._heads[path] = self.view.catalog.section_heads_by_id(self.visible_sections_of(path))
        return self._heads[path]

    def section_of(self, path: str, anchor: str | None) -> int | None:
        """The section a link lands on: the one its anchor names, else the document's first."""
        key = (path, anchor)
        if key not in self._landing:
            heads = self.view.catalog.section_heads_by_id(self.view.catalog.section_ids_of([path]))
            ordered = sorted(heads.values(), key=lambda s: (s.start_line, s.id))
            named = [s for s in ordered if anchor and links.anchor_matches(s.title or "", anchor)]
            self._landing[key] = next((s.id for s in named or ordered), None)
        return self._landing[key]

    def dated(self, days: list[str]) -> dict[int, str]:
        """section id → its day, for the visible sections dated one of `days` (within the request's
        filters), each day read once."""
        out: dict[int, str] = {}
        for day in days:
            if day not in self._days:
                self._days[day] = sorted(self.view.catalog.filtered_section_ids(flt.Filters(since=day, until=day)))
            out.update({sid: day for sid in self._days[day] if self.allowed is None or sid in self.allowed})
        return out

    def held_days(self, query: str) -> list[str]:
        """The days the question names that the notes hold sections of (within the request's
        filters), those written in full first."""
        named = sorted(dates.named_days(query), key=lambda d: d.year is None)
        return list(dict.fromkeys(d for d in map(self._held, named) if d))

    def unheld_days(self, query: str, near: Callable[[], list[str]] = list) -> list[str]:
        """The words of each day the question names that no visible section is dated and no text
        writes (dates.written_forms), nor falls in a span of days one of the `near()` texts (the best
        sections') writes ("From 2026-12-18 to 2027-01-04 main is frozen"): the notes have nothing of
        that day. A pasted log line's timestamp is not the day the question is about: what it logged
        may be anywhere."""
        out = []
        spans = None
        for day in dates.named_days(query):
            if day.stamped or self._held(day):
                continue
            forms = dates.written_forms(day)
            if any(f in text for _, _, text, _ in self.view.literal_rows(forms) for f in forms):
                continue
            spans = [sp for text in near() for sp in dates.spans_in(text)] if spans is None else spans
            if not any(dates.within(day, *sp) for sp in spans):
                out.append(day.words)
        return out

    def _held(self, day: dates.NamedDay) -> str | None:
        """The day as the notes hold it, or None: written in full, that day if some section is dated
        it; without its year ("on 14 May"), the newest such day in the YEARLESS_DAY_YEARS years up to
        the newest note's."""
        if day.year is not None:
            iso = dates.iso_day(day.year, day.month, day.day)
            return iso if iso and self.dated([iso]) else None
        newest = self._newest_year()
        for year in range(newest, newest - YEARLESS_DAY_YEARS, -1) if newest else ():
            iso = dates.iso_day(year, day.month, day.day)   # None: 29 February of a common year
            if iso and self.dated([iso]):
                return iso
        return None

    def _newest_year(self) -> int | None:
        if self._newest is None:
            newest = self.view.catalog.newest_sections(flt.Filters(), 1)
            date = self.view.catalog.section_heads_by_id(newest)[newest[0]].date if newest else None
            self._newest = (int(date[:4]) if date else None,)
        return self._newest[0]

    def titled(self, names: list[str]) -> set[int]:
        """The visible sections (within the request's filters) whose heading names one of these
        entities, by any of its names as a whole word, each entity read once."""
        out: set[int] = set()
        matcher = self.view.entities()[0]
        for name in names:
            if name not in self._titled:
                said = matcher.names_of[name]
                # (a name too short for the literal index reads every section: the substring test
                # first spares most headings the whole-word regex)
                self._titled[name] = {sid for sid, heading, _, _ in self.view.literal_rows(said)
                                      if any(n in heading for n in said) and name in matcher.mentions(heading)}
            out |= {sid for sid in self._titled[name] if self.allowed is None or sid in self.allowed}
        return out

    def probe_rows(self, probe: str) -> list[tuple[int, bool]]:
        """(section id, in its heading?) of every visible section whose content holds `probe`
        (lower-cased), filters aside."""
        if probe not in self._probes:
            self._probes[probe] = [(sid, probe in head) for sid, head, content, _
                                   in self.view.literal_rows([probe], content_only=True) if probe in content]
        return self._probes[probe]


def _phrasing(view, query: str, qvec, shared: Lookups, it: rank.Intent) -> Phrasing:
    """One phrasing through the three legs, fused (the memory rules come after, once), within the
    request's filter and with its shared lookups (`shared`); `it` is what the question asks for."""
    allowed = shared.allowed
    cands: dict[int, Candidate] = {}

    def cand(sid: int) -> Candidate:
        c = cands.get(sid)
        if c is None:
            c = cands[sid] = Candidate(sid)
        return c

    # the dense leg started first: the team store answers it beside the keyword leg
    dense = view.vectors.search_soon(qvec, DENSE_CANDIDATES, shared.allowed_labels()) if qvec is not None else None
    # A day the question names ("on 2024-01-05", "on 14 May") that the notes hold sections of is a
    # date, not the words 2024, 01 and 05 (a note titled "Roadmap 2024" would win on them): the
    # literal leg finds it, by the sections' dates and verbatim in their text, and the keyword leg
    # reads the rest of the question (DAY_CREDIT). A day the notes hold nothing of is left as the
    # question's words.
    days = shared.held_days(query) if LITERAL_LEG and DAY_CREDIT else []
    keywords = dates.without_days(query, days) if days else query
    for sid, score in view.keyword_index().search(keywords, BM25_CANDIDATES, allowed).items():
        cand(sid).bm25 = score

    if dense is not None:
        hits = dense()
        info = shared.passages([label for label, _ in hits])
        for label, sim in hits:
            if label not in info:   # written to the vector file, not yet (or no longer) in the catalog
                continue
            sid, heading_only = info[label]
            if heading_only:
                sim *= HEADING_PASSAGE_WEIGHT
            c = cand(sid)
            if sim > c.dense:
                c.dense, c.passage = sim, label

    # An entity's name, alias or IP (`pg1`, `pg-primary`, `10.40.1.12`) is literal evidence for its
    # own record only (its front matter defines it; elsewhere it is a passing mention). Names are
    # found as whole words, so an alias that is a plain word counts too.
    matcher, entity_paths = view.entities()
    named = matcher.mentions(query)
    records = own = frozenset(entity_paths.get(name) for name in named) - {None}
    probes = [p for p in terms.literal_probes(query) if p.lower() not in matcher.by_name] + days
    literal, probes_found = _probe_leg(view, probes, shared, shared.dated(days))
    if not LITERAL_LEG:
        literal, own = {}, frozenset()
    # Like the other legs, the literal leg nominates its best sections only: a probe found in
    # thousands of sections (`item1`) would otherwise make every one of them a candidate to rank.
    for sid, weight in sorted(literal.items(), key=lambda kv: (-kv[1], kv[0]))[:LITERAL_CANDIDATES]:
        cand(sid).literal = weight
    credited: set[int] = set()
    if it.howto:
        # A record states what the thing is, not how to do something with it: the procedure is
        # wherever it is written down (a runbook, a how-to, an alert's mitigation), and the record's
        # every section credited alike outweighed it ("how do I force caddy to get a fresh certificate?").
        own = frozenset()
    if own:
        credited = {sid for sid in view.catalog.section_ids_of(sorted(own)) if allowed is None or sid in allowed}
        for sid in credited:
            cand(sid).literal += 1.0
    # A question about an event or an outcome ("what happened to kf3?", "are the ClickHouse part
    # counts back to normal?") is answered where it was written down: a section whose heading
    # names the entity (the journal's "14:00 ClickHouse back to (near) defaults", a runbook titled
    # "Kafka broker disk full") is about it as much as its record is, and is credited alike — else
    # the record's sections win on the name alone (EVENT_CREDIT).
    titled = (shared.titled(named) - credited if named and LITERAL_LEG and EVENT_CREDIT
              and (it.past or it.outcome) else set())
    # ... and the sections dated that day are its evidence too: a daily note holds its day in its
    # name only, no word of its text. Like the probes, the day and the titled sections nominate at
    # most LITERAL_CANDIDATES sections the other legs did not find (a busy day of a conversations
    # corpus has thousands, a busy host as many entries).
    for found in (titled, shared.dated(days)):
        for sid in [s for s in found if s in cands] + sorted(s for s in found if s not in cands)[:LITERAL_CANDIDATES]:
            cand(sid).literal += 1.0
    _fuse(cands, identifier_query=bool(probes or own or titled),
          long_question=len(query.split()) >= LONG_QUESTION_WORDS)
    if POINTER_CREDIT:
        _credit_pointers(cands, shared)
    return Phrasing(query, cands, probes_found, tuple(days), records)


def _credit_pointers(cands: dict[int, Candidate], shared: "Lookups") -> None:
    """A pointer — a list item opening with a link, the rest saying what the linked document holds
    (Claude Code's MEMORY.md: `- [Title](file.md) — hook`) — speaks for the document it names: when
    one of the best candidates is best matched by such an item, the document it points at goes just
    above it — the section its `#anchor` names, else the document's best candidate (a map of
    content points at a long note whose opening is not what the question asks), else its first
    section. The index card says where the answer is; the file holds it."""
    top = sorted((c for c in cands.values() if c.passage >= 0),
                 key=lambda c: (-c.score, c.section_id))[:POINTER_POOL]
    pointers = shared.pointers([c.passage for c in top])
    for c in top:
        p = pointers.get(c.passage)
        sid = None if p is None else _landing(cands, shared, p, c.section_id)
        if sid is None or (shared.allowed is not None and sid not in shared.allowed) or sid == c.section_id:
            continue
        t = cands.get(sid)
        if t is None:
            t = cands[sid] = Candidate(sid)
        if t.score <= c.score:
            t.score = c.score + 1e-6
            t.why.append(f"pointed at by a list item of {p.source} that matches the question best")


def _landing(cands: dict[int, Candidate], shared: "Lookups", p: Pointer, source: int) -> int | None:
    """The section a pointer's credit goes to: the one its anchor names; else the pointed
    document's best-scored candidate, if any; else the document's first section."""
    if p.anchor is None:
        own = [cands[sid] for sid in shared.sections_of(p.target) if sid in cands and sid != source]
        if own:
            return min(own, key=lambda o: (-o.score, o.section_id)).section_id
    return shared.section_of(p.target, p.anchor)


def one_per_section(ranked: list[Candidate], rows: dict, keep: int | None = None) -> list[Candidate]:
    """Each section once: parts of a split section (`X (Part 2)`) and a breadcrumb that occurs
    twice in a document are one section to the reader — the best-scored of them stands for it.
    `keep`: stop after that many (the rest of ~500 candidates would only be keyed and dropped)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for c in ranked:
        s = rows[c.section_id]
        key = (s.path, section_key(s.heading))
        if key not in seen:
            seen.add(key)
            out.append(c)
            if len(out) == keep:
                break
    return out


def section_key(heading: str | None) -> str:
    """A breadcrumb's comparable form: a split suffix dropped, whitespace collapsed, casefolded."""
    return re.sub(r"\s+", " ", PART_SUFFIX_RE.sub("", heading or "")).strip().casefold()


def _probe_leg(view, probes: list[str], shared: Lookups,
               dated: dict[int, str]) -> tuple[dict[int, float], set[str]]:
    """Literal evidence for identifier-shaped probes: each probe found in a section adds its
    IDF (a probe in every section says nothing), doubled when it is in the section's heading.
    A day written in a section dated that day (`dated`: a daily note's bare `# 2024-01-05`) says
    nothing its date does not: the day's credit is its evidence, once.
    Also returns the probes found in any visible section (filters aside): the scan abstention
    would otherwise repeat."""
    found: set[str] = set()
    if not probes:
        return {}, found
    total = view.section_count() or 1
    out: dict[int, float] = {}
    for probe in probes:
        rows = shared.probe_rows(probe.lower())
        if not rows:
            continue
        found.add(probe)
        idf = math.log(1 + total / len(rows))
        for sid, in_heading in rows:
            if (shared.allowed is None or sid in shared.allowed) and dated.get(sid) != probe:
                out[sid] = out.get(sid, 0.0) + idf * (2.0 if in_heading else 1.0)
    return out, found


def _fuse(cands: dict[int, Candidate], identifier_query: bool, long_question: bool = False) -> None:
    """Min-max weighted sum of the legs (the dense leg's share smaller for a long question); a
    literal identifier hit adds a fixed share."""
    if not cands:
        return
    bm_max = max(c.bm25 for c in cands.values()) or 1.0
    dense_vals = [c.dense for c in cands.values() if c.dense > 0]
    d_min, d_max = (min(dense_vals), max(dense_vals)) if dense_vals else (0.0, 1.0)
    span = (d_max - d_min) or 1.0
    w_dense = (W_DENSE_LONG if long_question else W_DENSE) if dense_vals else 0.0
    lit_max = max(c.literal for c in cands.values()) or 1
    for c in cands.values():
        bm = c.bm25 / bm_max
        dn = (c.dense - d_min) / span if c.dense > 0 else 0.0
        score = w_dense * dn + (1 - w_dense) * bm
        if identifier_query:
            score = (1 - W_LITERAL) * score + W_LITERAL * (c.literal / lit_max)
        c.score = c.fused = score


def _cross_encoded(view, query: str, cands: dict[int, Candidate], notes: list[str]) -> None:
    """`[rerank]`: the cross-encoder re-orders the best `top` candidates. Their fused scores stay
    the same set of numbers, handed out again in the reranker's order, so what reads scores after it
    (the memory rules, the "clearly ahead" margin) sees the scale it always saw; abstention still
    judges the retrieval's own evidence. A reranker that fails or is slow leaves the order as it was."""
    from remembrancer.indexer.models.rerank import load_reranker

    spec = view.config.rerank
    top = sorted(cands.values(), key=lambda c: (-c.score, c.section_id))[:spec.top]
    if len(top) < 2:
        return
    rows = view.catalog.sections_by_id([c.section_id for c in top])
    texts = [f"{rows[c.section_id].title}\n{rows[c.section_id].content}" if c.section_id in rows else ""
             for c in top]
    t0 = time.perf_counter()
    try:
        scores = load_reranker(spec).score(_for_a_model(view, [query])[0], texts)
    except ModelError as e:
        notes.append(f"reranker skipped: {e}")
        return
    took = (time.perf_counter() - t0) * 1000
    if took > spec.budget_ms:
        notes.append(f"reranker took {took:.0f} ms, over its {spec.budget_ms} ms budget: lower [rerank] top")
    slots = [c.score for c in top]
    for new_rank, i in enumerate(sorted(range(len(top)), key=lambda i: (-scores[i], i))):
        c = top[i]
        c.score = slots[new_rank]
        if new_rank != i:
            c.why.append(f"reranker {scores[i]:.3f}: #{i + 1} → #{new_rank + 1}")


def _rerank(view, it: rank.Intent, cands: dict[int, Candidate]) -> dict:
    """Apply the memory rules (rank.py) for the question's intent; returns the section rows it
    read, for the results — without their text, but for the few sections the rules read."""
    if not cands:
        return {}
    cfg = view.config.ranking
    rows = view.catalog.section_heads_by_id(list(cands))
    texts = [sid for sid, s in rows.items() if s.content is None and rank.reads_text(s, it, cfg)]
    if texts:
        rows.update(view.catalog.sections_by_id(texts))
    rank.rerank(cands, rows, it, cfg, read_texts=(lambda ids: _with_text(view, ids, rows)) if DAYS_WRITTEN else None,
                own_date=_own_date(view) if view.config.kind == NOTES else None)   # a commit's, an exchange's date is its own
    return rows


def _own_date(view) -> Callable:
    """A section's date as the notes give it — a journal's file name, the front matter's `updated:`,
    a dated heading — or None when its only date is its file's last commit (ingest's fallback for an
    undated file in git, kept for `since`, `latest` and the listing). Each document is looked up once."""
    docs: dict[str, tuple[str | None, bool]] = {}

    def own(s) -> str | None:
        if s.date is None:
            return None
        if s.path not in docs:
            doc = view.catalog.document(s.path)
            fm = json.loads(doc["front_matter"] or "{}") if doc else {}
            docs[s.path] = (doc["date"] if doc else None, bool(doc and meta.document_date(doc["rel"], fm)))
        doc_date, dated = docs[s.path]
        return s.date if dated or s.date != doc_date or meta.heading_dates(s.heading.split(" > "), s.path) else None

    return own


def _with_text(view, ids: list[int], rows: dict) -> list:
    """The rows of these sections with their text: those `rows` holds whole, the rest read."""
    whole = [rows[i] for i in ids if i in rows and rows[i].content is not None]
    textless = [i for i in ids if i not in rows or rows[i].content is None]
    return whole + list(view.catalog.sections_by_id(textless).values()) if textless else whole


def _abstains(view, query: str, ranked: list[Candidate], rows: dict, legs: Hybrid) -> tuple[bool, list[str]]:
    """Abstention judges every phrasing: the question's own verdict stands unless a rephrasing,
    judged the same way, finds a section that means what it says — its best semantic match in the
    top five clears the bar the question missed by ABSTAIN_ALTERNATE_MARGIN (a rephrasing written in
    the notes' own terms matches more closely than the question whatever the corpus holds, so its
    evidence must be clearly above the bar) — a question whose rephrasing finds a strong section is
    not "nothing strong"."""
    lookups = Lookups(view, None)   # filters aside, shared by every phrasing's verdict
    # How to do a thing does not hang on the day it is needed ("get back a file I deleted yesterday"):
    # the question says whether it asks how, for each of its phrasings.
    days = not legs.intent.howto
    no_strong, reasons, bar, lacking = _no_strong_match(view, lookups, query, ranked, legs.probes_found, days)
    if not no_strong and ranked and ANSWER_TYPE_ABSTENTION:
        unwritten = _value_unwritten(view, query, ranked[:ABSTAIN_POOL], rows)
        if unwritten:   # judged on the final ranking, rephrasings' sections in it: none overturns it
            return True, [unwritten]
    if not no_strong or not ranked or lacking:
        return no_strong, reasons   # a rephrasing cannot make an identifier or a day the corpus lacks exist
    for ph in legs.alternates:
        alt_ranked = sorted(ph.cands.values(), key=lambda c: (-c.score, c.section_id))
        weak, _, _, _ = _no_strong_match(view, lookups, ph.text, alt_ranked, ph.probes_found, days)
        top_dense = max((c.dense for c in alt_ranked[:ABSTAIN_POOL]), default=0.0)
        if not weak and top_dense >= bar + ABSTAIN_ALTERNATE_MARGIN:
            return False, []
    return no_strong, reasons


def _value_unwritten(view, query: str, best: list[Candidate], rows: dict) -> str:
    """Why nothing answers a question asking for a value of a shape text shows (a phone number, an
    amount of money, an IP address: answer_types) that none of the sections an answer would show
    writes — the notes describe the thing, not that detail — or "" when one does or it asks none.
    The shown sections' text is in `rows` already (_shown_with_text); only the rest is read."""
    kind = answer_types.asked(query)
    if kind is None:
        return ""
    if any(answer_types.holds(kind, s.content or "") for s in _with_text(view, [c.section_id for c in best], rows)):
        return ""
    return f"the question asks for {kind.name}; none of the {len(best)} best sections writes one"


def _no_strong_match(view, lookups: Lookups, query: str, ranked: list[Candidate],
                     probes_found: set[str], days: bool) -> tuple[bool, list[str], float, bool]:
    """Whether nothing really answers, with the reasons, the semantic bar it applied and whether the
    question names something the corpus lacks outright (an identifier or a day: no rephrasing makes
    it exist). docs/ranking.md derives the constants.

    Two signals, because no single score threshold separates answerable from unanswerable
    questions (their score distributions overlap):
    - an identifier the question is about (`--enable-tls`, `kf4`) occurs nowhere in the corpus, or
      a day it places itself on has no note (no section dated it, no text writes it);
    - a name the question uses (a capitalised or all-caps word: `Okta`, `Stripe`, `SLA`) occurs
      nowhere, and the best semantic match is weak too (a paraphrase can miss every word of the
      corpus; it rarely also misses on meaning). When the question is that specific — it uses an
      absent name, or names an entity the corpus keeps a record of — its other words count too
      ("the hardware *lease* on pg1"), and several absent words, or one about a known entity,
      are stronger evidence: the semantic bar is higher.
    """
    reasons = []
    # A day the notes hold sections of ("5 January 2024", "14 May") is known: its month is no absent
    # name. A day they have nothing of ("the week of 9 January 2034" in notes that end in December)
    # is what the question is about, and absent, like an identifier.
    covered = lookups.held_days(query)
    best = [c.section_id for c in ranked[:ABSTAIN_POOL]]
    unheld = lookups.unheld_days(query, lambda: [s.content or "" for s in view.catalog.sections_by_id(best).values()]
                                 ) if days else []   # `days`: a day the notes lack counts (_abstains)
    if unheld:
        reasons.append("no note of " + _listed(view, unheld))
    if covered:
        query = dates.without_days(query, covered)
    missing = _missing_identifiers(view, query, probes_found)
    if missing:
        reasons.append("not in the corpus: " + _listed(view, missing))
    names = [w for w in terms.name_words(query) if w.lower() not in {m.lower() for m in missing}]
    absent = [w for w in names if not _word_occurs(view, w)]
    absent_names = list(absent)
    vocabulary = _common_words(view)   # the model's everyday words (read from the catalog: once)
    entity_named = bool(view.entities()[0].mentions(query))
    if absent or entity_named:
        # A question about an absent name counts its other absent words too; one about a known
        # entity only its absent terms of art: an everyday word a small corpus lacks ("towards",
        # "serve") says nothing about whether the entity's record answers.
        common = vocabulary if not absent else None
        seen = {w.lower() for w in absent} | {m.lower() for m in missing}
        absent += [w for w in dict.fromkeys(terms.content_words(query))
                   if len(w) >= 4 and w not in seen and terms.is_rare(w, common) and not _word_occurs(view, w)]
    bar = ABSTAIN_DENSE_STRONG if len(absent) >= 2 or (entity_named and absent) else ABSTAIN_DENSE
    if any(terms.is_rare(w, vocabulary) for w in absent_names):
        # A name that is no everyday word either (`Traefik`, `Datadog`; not `April`, `European`,
        # `Intel`) is what the question is about, and the notes never write it: a question about
        # something else the notes do cover matches them closely all the same.
        bar = max(bar, ABSTAIN_DENSE_RARE_NAME)
    top_dense = max((c.dense for c in ranked[:ABSTAIN_POOL]), default=0.0)
    if not absent and not entity_named and not missing:
        # Plain English with no name: a term of art the corpus never uses ("kubernetes", "terraform")
        # is evidence whatever the corpus's size; an everyday word's absence is not. Weaker evidence
        # than a name, so the semantic bar is lower.
        absent = [w for w in dict.fromkeys(terms.content_words(query))
                  if len(w) >= 4 and terms.is_rare(w, vocabulary) and not _word_occurs(view, w)]
        bar = ABSTAIN_DENSE_TERM
    if absent and top_dense < bar:
        reasons.append(f"not in the corpus: {_listed(view, absent)}; best semantic match {top_dense:.2f} < {bar}")
    if not reasons and ranked and top_dense < ABSTAIN_DENSE_NO_WORD and not _any_word_occurs(view, [query]):
        # No word of the question in the notes and next to no meaning in common: "who is on call"
        # over notes that never say so, "best hiking trails nearby" (0.09–0.15). A terse paraphrase
        # the notes answer in other words keeps more meaning ("hooking it up to my editor": 0.24).
        bar = ABSTAIN_DENSE_NO_WORD
        reasons.append(f"no word of the question occurs in the notes; best semantic match {top_dense:.2f} < {bar}")
    if not ranked:
        reasons.append("no section shares a word or meaning with the question")
    return bool(reasons), reasons, bar, bool(missing or unheld)


def _listed(view, words: list[str]) -> str:
    """The question's words for a reason, each redacted whole before it is cut short: a cut secret
    would no longer have the shape the answer's redaction recognises."""
    redactor = view.redaction.current()
    return terms.shown([redactor.redact_text(w) for w in words])


def _missing_identifiers(view, query: str, probes_found: set[str]) -> list[str]:
    """Identifiers the question is about that occur nowhere (an entity's name or alias is present:
    front matter is not text); call names and expressions are not asked about on their own, an
    ordinal ("the 16th", "a 3rd replica") or a number hyphened to words ("the 16-GPUs-per-group
    rule") is English the notes may write another way, a product's name in mixed case ("JavaScript")
    is judged as a name (the notes may say "JS"), a log line's level (`ERROR`) is its severity, and a moment
    (`10:00`, a pasted log line's `2031-06-04T10:00:12Z`) is when, not what: a day the notes lack
    is judged as a day (Lookups.unheld_days). Nor is what the question asks a counterpart of ("is
    there an equivalent of requests' `response.ok`?"): another tool's name for the thing, which
    these notes, about their own, need not write."""
    by_name = view.entities()[0].by_name
    elsewhere = {p for m in _COUNTERPART_RE.finditer(query) for p in terms.literal_probes(m.group(1) or m.group(2))}
    return [p for p in terms.literal_probes(query)
            if p not in elsewhere and terms.is_identifier(p) and not any(c in p for c in "([ ") and not terms.ORDINAL_RE.match(p)
            and not terms.NUMBER_COMPOUND_RE.match(p) and not terms.BRAND_RE.match(p) and not dates.TIMESTAMP_RE.match(p)
            and not terms.is_log_level(p) and p not in probes_found and p.lower() not in by_name]


# "an equivalent of X", "an alternative to X", "a replacement for X", "instead of X": X (up to the
# next few words) is another thing's name, asked about for its counterpart here.
_COUNTERPART_RE = re.compile(r"\b(?:equivalents?|alternatives?|replacements?|substitutes?|counterparts?|analogues?)"
                             r"\s+(?:of|to|for)\s+((?:\S+\s+){0,3}\S+)|\binstead of\s+((?:\S+\s+){0,3}\S+)",
                             re.IGNORECASE)


def _common_words(view) -> frozenset[str] | None:
    """The model's everyday words, or None (keyword-only: every word counts, as before)."""
    emb = view.embedder if view.contract_problem() is None else None
    return emb.common_words() if emb is not None else None


def _any_word_occurs(view, phrasings: list[str]) -> bool:
    """Whether a content word of any phrasing occurs in some visible section (a phrasing holding an
    identifier counts as one that does: abstention judges identifiers). When none does, an answer
    rests on meaning alone — worth saying, and an abstention only when that meaning is next to none
    (ABSTAIN_DENSE_NO_WORD): a terse paraphrase ("hooking it up to my editor") shares no word with
    the notes that answer it, and neither does nonsense ("foo"); only the semantic match can tell
    them apart, and only at its low end."""
    for text in phrasings:
        if terms.literal_probes(text) or any(_word_occurs(view, w) for w in dict.fromkeys(terms.content_words(text))):
            return True
    return False


def _any_word_in(view, phrasings: list[str], allowed: set[int] | None) -> bool:
    """Whether a content word (or identifier) of any phrasing is in one of the allowed sections: one
    keyword search of those words alone, stop words left out (they match nearly every section)."""
    text = " ".join(w for p in phrasings for w in [*terms.content_words(p), *terms.literal_probes(p)])
    return bool(text) and bool(view.keyword_index().search(text, 1, allowed))


def _word_occurs(view, word: str) -> bool:
    """The word, whole, in some visible section (or an entity's name), or a word it is inflected
    from (the notes' "prune" is the question's "pruning"), or written as two words: the notes' "fail
    over" or "roll-back" is the question's "failover" or "rollback" (SPLIT_WORDS)."""
    return (_whole_word_occurs(view, word) or any(_whole_word_occurs(view, f) for f in terms.inflected_from(word))
            or (SPLIT_WORDS and _split_form_occurs(view, word.lower())))


def _split_form_occurs(view, w: str) -> bool:
    """Whether a long plain word occurs split in two, each part three letters or more, by a space or
    a hyphen ("failover" as "fail over"): read from the literal index, so the cost follows the matches.
    Only a word the keyword index could hold whole (shorter than fulltext.TERM_BYTES) is looked for
    split: no note writes a longer one in two, and its forms grow with the square of its length (a
    pasted 5,000-letter "word" was some 50 million characters of needles)."""
    if not (w.isascii() and w.isalpha() and 6 <= len(w) < fulltext.TERM_BYTES):
        return False
    forms = [f"{w[:i]}{sep}{w[i:]}" for i in range(3, len(w) - 2) for sep in (" ", "-")]
    contents = [content for _, _, content, _ in view.literal_rows(forms, content_only=True)]
    return bool(contents) and any(terms.uses_whole(f, contents) for f in forms)


def _whole_word_occurs(view, word: str) -> bool:
    """The word, whole, in some visible section (or an entity's name). A run of CJK characters is
    a phrase, not a word (nothing marks where its words end): it occurs when most of its bigrams
    do, as the keyword leg reads it (terms.keyword_text)."""
    w = word.lower()
    pieces = terms.keyword_text(w).split()   # [w] itself unless it holds a CJK run
    if pieces != [w]:
        return sum(_whole_word_occurs(view, p) for p in pieces) * 2 >= len(pieces)
    if w in view.entities()[0].by_name:
        return True
    used = view.uses_word(w)   # the keyword index's term dictionary
    if used is None:
        used = view.catalog.uses_word(w)   # the literal index: only sections that may hold it
    if used is not None:
        return used
    if terms.WORD_RUN_RE.fullmatch(w):
        return w in view.corpus_words()
    return terms.uses_whole(w, (content for _, _, content, _ in view.lowered_sections()))


def _snippet_words(query: str) -> list[str]:
    """What a snippet is centred on: the question's content words of 3 letters or more, and a CJK
    run's bigrams (its words are inside it: terms.keyword_text)."""
    out = []
    for w in terms.content_words(query):
        if terms.has_cjk(w):
            out += terms.keyword_text(w).split()
        elif len(w) > 2:
            out.append(w)
    return out


def _snippet(text: str, query: str) -> str:
    if len(text) > SNIPPET_WINDOW:
        # A long section (a 5 MB one-line log): only the text around the first match is flattened,
        # so a result's snippet costs the window, not the section (it cost ~100 ms per result).
        low = text.lower()
        found = [i for i in (low.find(w) for w in _snippet_words(query)) if i >= 0]
        start = max(0, min(found, default=0) - SNIPPET_WINDOW // 2)
        end = start + SNIPPET_WINDOW
        inner = _snippet(text[start:end], query)
        return (("…" if start and not inner.startswith("…") else "") + inner
                + ("…" if end < len(text) and not inner.endswith("…") else ""))
    flat = re.sub(r"\s+", " ", text).strip()
    if len(flat) <= SNIPPET_CHARS:
        return flat
    words = _snippet_words(query)
    low = flat.lower()
    pos = min((low.find(w) for w in words if low.find(w) >= 0), default=0)
    start = max(0, pos - SNIPPET_CHARS // 3)
    piece = flat[start:start + SNIPPET_CHARS]
    return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(flat) else "")


def _evidence_at(view, c: Candidate, content: str, query: str) -> int:
    """Where in a section's text its evidence stands: the passage the dense leg matched, else the
    first of the question's words found (as a snippet is centred), else its start."""
    if c.passage >= 0:
        text = view.catalog.passage_texts([c.passage]).get(c.passage, (0, 0, "", ""))[3]
        block = text.split("\n", 1)[1] if "\n" in text else ""
        probe = next((line.strip() for line in block.split("\n") if len(line.strip()) >= 12), "")[:80]
        at = content.find(probe) if probe else -1
        if at >= 0:
            return at
    low = content.lower()
    return min((i for i in (low.find(w) for w in _snippet_words(query)) if i >= 0), default=0)


def _window_start(content: str, at: int, size: int) -> int:
    """Where the cut of a section too long to carry whole begins: its start when the evidence is in
    its first three quarters, else the line a quarter of the cut before the evidence — so the part
    that matched is in the agent's hands, with what leads to it (a 200 KB log's line, not its head)."""
    if at < size * 3 // 4:
        return 0
    cut = at - size // 4
    line = content.rfind("\n", 0, cut) + 1
    return line if at - line < size * 3 // 4 else cut   # a line far longer than the cut is cut inside


def shown_scale(ranked: list[Candidate]) -> float:
    """What the scores an answer shows are divided by: the best one, when it is over 1. A fused
    score is 0–1, but the memory rules (up to `rule_swing` of the best), rephrasings
    (`ALTERNATE_WEIGHT`) and an exact search's counts take it over; shown divided by the best,
    every score is 0–1 in any store, and the order and the ratios are the ranking's."""
    return max([1.0, *(c.score for c in ranked)])


def _results(view, ranked: list[Candidate], rows, req: SearchRequest, query: str, mode: str) -> list[Result]:
    shown = ranked[: req.limit]
    shown_ids = {c.section_id for c in shown}
    carry_left = CARRY_TOKENS
    results = []
    scale = shown_scale(ranked)
    for i, c in enumerate(shown):
        s = rows[c.section_id]
        r = Result(path=s.path, heading=s.heading, lines=[s.start_line, s.end_line], score=round(c.score / scale, 4),
                   type=s.doc_type, date=s.date, snippet=_snippet(s.body or s.content or s.heading, query),
                   provenance=c.provenance if mode == "hybrid" else ("keyword" if mode == "exact" else "filter"),
                   tokens=estimate_tokens(s.content), stale=True if s.stale or s.doc_stale else None)
        r.also = [o.heading for o in (rows[x.section_id] for x in ranked[: req.limit * 4])
                  if o.doc_id == s.doc_id and o.id not in shown_ids][:3] or None
        if mode == "hybrid":
            r.scores = Scores(bm25=round(c.bm25, 3), dense=round(c.dense, 4), literal=round(c.literal, 3))
        if req.explain:
            r.why = c.explanation()
        if i == 0:
            r.content = s.content
            if req.content_chars is not None and len(s.content) > req.content_chars:
                start = _window_start(s.content, _evidence_at(view, c, s.content, query), req.content_chars)
                r.content = whole_lines(s.content[start:start + req.content_chars])
                r.content_truncated = True
                r.content_total_chars = len(s.content)
                first = s.start_line + s.content.count("\n", 0, start)
                r.content_lines = [first, first + r.content.rstrip("\n").count("\n")]
        elif r.tokens <= min(CARRY_SECTION_TOKENS, carry_left):
            r.content = s.content   # a short runner-up, carried whole (CARRY_TOKENS)
            carry_left -= r.tokens
        results.append(r)
    return results
