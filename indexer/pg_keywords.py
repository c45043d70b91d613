"""The keyword leg of the team store: tantivy's BM25, computed in SQL from stored term statistics.

Terms are produced by tantivy's own analyzers (the same `default`, `en_stem` and `whitespace`
pipelines the local index uses, run from Python), so a chunk has the same terms in both stores;
the query has the same fields and boosts as `FullText.build_query`. Scores use tantivy's BM25
(k1 1.2, b 0.75, idf ln(1 + (N − n + 0.5)/(n + 0.5)), per-field N and average length). Field lengths
are quantised to tantivy's one-byte code. Known difference: a query word its analyzer splits in
two (`max_connections`) is a phrase there and two terms here.
"""

from __future__ import annotations

import bisect
from collections import Counter

import tantivy

from . import terms
from .fulltext import HEADING_BOOST, IDENT_BOOST, STEM_BOOST

K1, B = 1.2, 0.75
HEADING, BODY, STEM, IDENT = 0, 1, 2, 3
FIELDS = (HEADING, BODY, STEM, IDENT)
# A term in more than this share of chunks only adds to chunks a rarer term found (its idf is
# small: it reorders, it does not nominate) — what keeps a common word from scanning the corpus.
COMMON_SHARE = 0.05
COMMON_MIN_DF = 5000   # …and in at least this many: below it every term is scored everywhere (exact BM25)


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
