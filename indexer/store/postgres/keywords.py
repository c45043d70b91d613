"""The keyword leg of the team store: tantivy's BM25, computed in SQL from stored term statistics.

Terms are produced by tantivy's own analyzers (the same `default`, `en_stem` and `whitespace`
pipelines the local index uses, run from Python), so a chunk has the same terms in both stores;
the query has the same fields and boosts as `FullText.build_query`. Scores use tantivy's BM25
(k1 1.2, b 0.75, idf ln(1 + (N − n + 0.5)/(n + 0.5)), per-field N and average length). Field lengths
are quantised to tantivy's one-byte code. Known difference: a query word its analyzer splits in
two (`max_connections`) is a phrase there and two terms here.

Every live posting of the query's terms is scored, as tantivy does (no term is skipped for being
common). The writer keeps each term's postings compacted (pg_schema migration 9): one bytea of
packed int8s (PACK_SQL) and one of their sections, rebuilt when enough has changed since; a
reader takes that copy, drops the chunks deleted since and adds the postings written since (read
from the postings' key, packed the same way), and `top_sections` sums them with numpy, one term's
postings at a time — a common word's tens of thousands of postings are a few TOAST pages and a
few milliseconds. A term's document frequency is the number of its live postings the reader
received, so it cannot disagree with them.
"""

from __future__ import annotations

import bisect
from collections import Counter

import numpy as np
import tantivy

from remembrancer.indexer import terms
from remembrancer.indexer.store.common import HEADING_BOOST, IDENT_BOOST, STEM_BOOST

K1, B = 1.2, 0.75
HEADING, BODY, STEM, IDENT = 0, 1, 2, 3
FIELDS = (HEADING, BODY, STEM, IDENT)
POSTING, SECTION = ">i8", ">i4"   # a packed bytea's values: postings (PACK_SQL) and their section ids
# A posting sent as one int8: chunk id · 2³² + tf · 2²⁰ + field length (tf below 4096 and lengths
# below 2²⁰ are exact — a chunk is a few hundred tokens; chunk ids below 2³¹).
PACK_SQL = "p.chunk_id * 4294967296 + least(p.tf, 4095) * 1048576 + least(p.dl, 1048575)"
# A term's postings (and their sections, int4: section ids below 2³¹) as one bytea each, in chunk
# order: a few TOAST pages read, not a row per posting, and nothing to parse on either side.
PACKED_POSTINGS_SQL = f"string_agg(int8send({PACK_SQL}), ''::bytea ORDER BY p.chunk_id)"
PACKED_SECTIONS_SQL = "string_agg(int4send(p.section_id::int), ''::bytea ORDER BY p.chunk_id)"


def _fieldnorm_table() -> list[int]:
    """tantivy's one-byte field lengths (fieldnorm/code.rs): exact to 40, then 8 steps per doubling."""
    table, v, step = list(range(41)), 40, 2
    while len(table) < 256:
        for _ in range(8):
            v += step
            table.append(v)
        step *= 2
    return table[:256]


FIELDNORMS = _fieldnorm_table()


def quantized_length(n: int) -> int:
    """The length tantivy's BM25 sees for a field of `n` tokens (the largest table value ≤ n)."""
    return FIELDNORMS[bisect.bisect_right(FIELDNORMS, n) - 1]


TERM_LIMIT = 40   # tantivy's analyzers drop a token of this many bytes or more


def _analyzer(tokenizer, stem: bool = False):
    b = tantivy.TextAnalyzerBuilder(tokenizer).filter(tantivy.Filter.remove_long(TERM_LIMIT)).filter(tantivy.Filter.lowercase())
    if stem:
        b = b.filter(tantivy.Filter.stemmer("english"))
    return b.build()


_DEFAULT = _analyzer(tantivy.Tokenizer.simple())
_STEM = _analyzer(tantivy.Tokenizer.simple(), stem=True)
_WHITESPACE = _analyzer(tantivy.Tokenizer.whitespace())


def chunk_terms(heading: str, text: str) -> dict[int, Counter]:
    """field → term frequencies of one chunk, as tantivy indexes it (fulltext.FullText._doc)."""
    words = terms.keyword_text(text)
    return {
        HEADING: Counter(_DEFAULT.analyze(terms.keyword_text(heading.replace(" > ", " ")))),
        BODY: Counter(_DEFAULT.analyze(words)),
        STEM: Counter(_STEM.analyze(words)),
        IDENT: Counter(_WHITESPACE.analyze(" ".join(terms.identifier_terms(heading + "\n" + text)))),
    }


def query_terms(text: str) -> dict[tuple[int, str], float]:
    """(field, term) → boost for a question, the clauses of `FullText.build_query`."""
    out: dict[tuple[int, str], float] = {}

    def add(field: int, term: str, boost: float) -> None:
        out[(field, term)] = out.get((field, term), 0.0) + boost

    plain = terms.keyword_text(" ".join(w for w in terms.words(text) if w.isascii() or w.isalnum()))
    for word in dict.fromkeys(plain.split()):   # tantivy's parser counts a repeated word once
        for t in _DEFAULT.analyze(word):
            add(HEADING, t, HEADING_BOOST)
            add(BODY, t, 1.0)
        for t in _STEM.analyze(word):
            add(STEM, t, STEM_BOOST)
    for t in dict.fromkeys(terms.identifier_terms(text)):
        if len(t) < 40:
            add(IDENT, t, IDENT_BOOST)
    return out


def packed(data: bytes | None, element: str) -> np.ndarray:
    """A packed bytea (big-endian values end to end: `string_agg(int8send(…))`) as numpy."""
    if not data:
        return np.zeros(0, dtype=np.int64)
    return np.frombuffer(data, dtype=element).astype(np.int64)


def merge_postings(packed_rows: list[tuple], delta_rows: list[tuple], dead: np.ndarray) -> dict[int, tuple]:
    """query ordinal → (postings, sections) of each term, live only: the compacted copy
    (`postings_packed`, chunks up to its mark) without the chunks deleted since (`dead`), then
    the postings written since (chunk ids above the mark). Each row is (ordinal, postings bytea,
    sections bytea)."""
    out: dict[int, tuple] = {}
    for qi, data, secs in packed_rows:
        v, s = packed(data, POSTING), packed(secs, SECTION)
        if len(dead):
            live = ~np.isin(v >> 32, dead)
            v, s = v[live], s[live]
        out[qi] = (v, s)
    for qi, data, secs in delta_rows:
        v, s = packed(data, POSTING), packed(secs, SECTION)
        if qi in out:
            v, s = np.concatenate([out[qi][0], v]), np.concatenate([out[qi][1], s])
        out[qi] = (v, s)
    return out


def top_sections(per_term: dict[int, tuple], boosts: list[float], fields: list[int],
                 field_stats: dict[int, tuple[int, int]], limit: int,
                 allowed: set[int] | None = None) -> dict[int, float]:
    """Best chunk score per section among the `limit` best chunks (ties to the older chunk,
    tantivy's document order), from each query term's live (postings, sections)
    (`merge_postings`): the score sums boost · idf · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))
    over the terms, idf from the term's df (all its live postings, so corpus-wide even when a
    filter keeps only some, as in tantivy), N and avgdl per field from `field_stats`. With
    `allowed`, only postings of those sections are scored."""
    docs = np.array([max(field_stats.get(f, (0, 0))[0], 1) for f in fields], dtype=np.float64)
    avgdl = np.maximum(np.array([field_stats.get(f, (0, 0))[1] for f in fields], dtype=np.float64) / docs, 1e-9)
    keep = None if allowed is None else np.fromiter(allowed, dtype=np.int64, count=len(allowed))
    chunks, sections, scores = [], [], []
    for qi, (v, s) in per_term.items():
        df = len(v)
        if keep is not None:
            inside = np.isin(s, keep)
            v, s = v[inside], s[inside]
        if not len(v):
            continue
        # one term's postings at once, its weight and length norm as scalars (no gathers)
        weight = boosts[qi] * float(np.log1p((docs[qi] - df + 0.5) / (df + 0.5)))
        tf, dl = ((v >> 20) & 4095).astype(np.float64), (v & 1048575).astype(np.float64)
        norm = tf + dl * (K1 * B / avgdl[qi]) + K1 * (1 - B)
        scores.append(tf * (weight * (K1 + 1)) / norm)
        chunks.append(v >> 32)
        sections.append(s)
    if not chunks:
        return {}
    chunk, sec, score = np.concatenate(chunks), np.concatenate(sections), np.concatenate(scores)
    lo = int(chunk.min())
    totals = np.bincount(chunk - lo, weights=score)
    found = np.flatnonzero(totals)
    if len(found) > limit:
        kth = np.partition(totals[found], len(found) - limit)[len(found) - limit]
        found = found[totals[found] >= kth]
    best = found[np.lexsort((found, -totals[found]))][:limit]
    section_of = np.zeros(len(totals), dtype=np.int64)
    section_of[chunk - lo] = sec   # a chunk is in one section: every posting of it says the same
    out: dict[int, float] = {}
    for c in best:
        sid, score_ = int(section_of[c]), float(totals[c])
        if score_ > out.get(sid, -1.0):
            out[sid] = score_
    return out
