"""The keyword leg of the team store: tantivy's BM25, computed in SQL from stored term statistics.

Terms are produced by tantivy's own analyzers (the same `default`, `en_stem` and `whitespace`
pipelines the local index uses, run from Python), so a chunk has the same terms in both stores;
the query has the same fields and boosts as `FullText.build_query`. Scores use tantivy's BM25
(k1 1.2, b 0.75, idf ln(1 + (N − n + 0.5)/(n + 0.5)), per-field N and average length). Field lengths
are quantised to tantivy's one-byte code. Known difference: a query word its analyzer splits in
two (`max_connections`) is a phrase there and two terms here.

Every posting of the query's terms is scored, as tantivy does (no term is skipped for being
common): the store streams them in binary (`POSTING_ROW`) from its primary key's leaves, and
`top_chunks` sums them with numpy — a common word's tens of thousands of postings cost
milliseconds there, where summing them in SQL cost seconds. A term's document frequency is
the number of its postings the reader received, so it cannot disagree with them.
"""

from __future__ import annotations

import bisect
from collections import Counter

import numpy as np
import tantivy

from . import terms
from .fulltext import HEADING_BOOST, IDENT_BOOST, STEM_BOOST

K1, B = 1.2, 0.75
HEADING, BODY, STEM, IDENT = 0, 1, 2, 3
FIELDS = (HEADING, BODY, STEM, IDENT)
# One row of `COPY (SELECT query term ordinal::int2, chunk_id, section_id, tf, dl) TO STDOUT
# (FORMAT BINARY)`: a field count, then each value after its byte length, big-endian.
POSTING_ROW = np.dtype([("n", ">i2"), ("l0", ">i4"), ("qi", ">i2"), ("l1", ">i4"), ("chunk", ">i8"),
                        ("l2", ">i4"), ("section", ">i8"), ("l3", ">i4"), ("tf", ">i4"), ("l4", ">i4"), ("dl", ">i4")])
COPY_HEADER, COPY_TRAILER = 19, 2   # PGCOPY signature, flags, extension length … the -1 field count


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


def _analyzer(tokenizer, stem: bool = False):
    b = tantivy.TextAnalyzerBuilder(tokenizer).filter(tantivy.Filter.remove_long(40)).filter(tantivy.Filter.lowercase())
    if stem:
        b = b.filter(tantivy.Filter.stemmer("english"))
    return b.build()


_DEFAULT = _analyzer(tantivy.Tokenizer.simple())
_STEM = _analyzer(tantivy.Tokenizer.simple(), stem=True)
_WHITESPACE = _analyzer(tantivy.Tokenizer.whitespace())


def chunk_terms(heading: str, text: str) -> dict[int, Counter]:
    """field → term frequencies of one chunk, as tantivy indexes it (fulltext.FullText._doc)."""
    return {
        HEADING: Counter(_DEFAULT.analyze(heading.replace(" > ", " "))),
        BODY: Counter(_DEFAULT.analyze(text)),
        STEM: Counter(_STEM.analyze(text)),
        IDENT: Counter(_WHITESPACE.analyze(" ".join(terms.identifier_terms(heading + "\n" + text)))),
    }


def query_terms(text: str) -> dict[tuple[int, str], float]:
    """(field, term) → boost for a question, the clauses of `FullText.build_query`."""
    out: dict[tuple[int, str], float] = {}

    def add(field: int, term: str, boost: float) -> None:
        out[(field, term)] = out.get((field, term), 0.0) + boost

    plain = " ".join(w for w in terms.words(text) if w.isascii() or w.isalnum())
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


def posting_rows(copy_data: bytes) -> np.ndarray:
    """The rows of a binary COPY of postings (POSTING_ROW), without a per-row Python object."""
    body = memoryview(copy_data)[COPY_HEADER:len(copy_data) - COPY_TRAILER]
    return np.frombuffer(body, dtype=POSTING_ROW)


def top_chunks(rows: np.ndarray, boosts: list[float], fields: list[int], field_stats: dict[int, tuple[int, int]],
               limit: int, allowed: set[int] | None) -> dict[int, float]:
    """Best chunk score per section among the `limit` best chunks: tantivy's BM25 summed over the
    query terms (`boosts[i]`, `fields[i]`: query term i), df counted from `rows` (every posting of
    each term, so corpus-wide, as tantivy's statistics are when a filter applies), the per-field
    chunk count and token total from `field_stats`. `allowed`: the sections a filter keeps."""
    if not len(rows):
        return {}
    qi = rows["qi"].astype(np.int64)
    nq = len(boosts)
    df = np.bincount(qi, minlength=nq).astype(np.float64)
    docs = np.array([max(field_stats.get(f, (0, 0))[0], 1) for f in fields], dtype=np.float64)
    avgdl = np.array([max(field_stats.get(f, (0, 0))[1] / max(field_stats.get(f, (0, 0))[0], 1), 1e-9)
                      for f in fields], dtype=np.float64)
    weight = np.asarray(boosts, dtype=np.float64) * np.log1p((docs - df + 0.5) / (df + 0.5))
    chunk, section = rows["chunk"].astype(np.int64), rows["section"].astype(np.int64)
    tf, dl = rows["tf"].astype(np.float64), rows["dl"].astype(np.float64)
    score = weight[qi] * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl[qi]))
    if allowed is not None:
        keep = np.isin(section, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
        chunk, section, score = chunk[keep], section[keep], score[keep]
        if not len(chunk):
            return {}
    lo = int(chunk.min())
    totals = np.bincount(chunk - lo, weights=score)
    section_of = np.zeros(len(totals), dtype=np.int64)
    section_of[chunk - lo] = section
    found = np.flatnonzero(totals)
    if len(found) > limit:   # the `limit` best, ties to the older chunk (tantivy's document order)
        kth = np.partition(totals[found], len(found) - limit)[len(found) - limit]
        found = found[totals[found] >= kth]
    best = found[np.lexsort((found, -totals[found]))][:limit]
    out: dict[int, float] = {}
    for c in best.tolist():
        sid = int(section_of[c])
        out[sid] = max(out.get(sid, 0.0), float(totals[c]))
    return out
