"""The team store's BM25 arithmetic (indexer/store/postgres/keywords.py) on postings made up in memory: no
server needed, the same function the PostgreSQL keyword leg calls."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from remembrancer.indexer.store.postgres import keywords as kw


def _postings(rng, n_chunks: int, terms: int):
    """Per term: (packed postings, their sections); a chunk is in one section, chunk i in i // 3."""
    out = {}
    for qi in range(terms):
        chunks = np.sort(rng.choice(n_chunks, size=rng.integers(1, n_chunks + 1), replace=False)).astype(np.int64)
        tf, dl = rng.integers(1, 6, len(chunks)), rng.integers(5, 200, len(chunks))
        out[qi] = ((chunks << 32) | (tf << 20) | dl, chunks // 3)
    return out


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), limit=st.integers(1, 40), share=st.floats(0.0, 1.0))
def test_a_filter_scores_exactly_the_allowed_sections_postings(seed, limit, share):
    """With `allowed`, the answer is the unfiltered scoring of the allowed sections' chunks alone
    (idf still corpus-wide), best `limit` kept — ids past the last allowed one included."""
    rng = np.random.default_rng(seed)
    n_chunks = int(rng.integers(3, 120))
    per_term = _postings(rng, n_chunks, int(rng.integers(1, 4)))
    stats = {0: (n_chunks, n_chunks * 60)}
    fields, boosts = [0] * len(per_term), [1.0] * len(per_term)
    sections = np.arange(n_chunks // 3 + 1)
    allowed = {int(s) for s in sections if rng.random() < share}
    everything = kw.top_sections(per_term, boosts, fields, stats, 10**6)
    expected = sorted(((sid, score) for sid, score in everything.items() if sid in allowed),
                      key=lambda kv: -kv[1])
    got = kw.top_sections(per_term, boosts, fields, stats, 10**6, allowed)
    assert sorted(got.items()) == sorted(expected)
    limited = kw.top_sections(per_term, boosts, fields, stats, limit, allowed)
    assert set(limited) <= allowed and len(limited) <= limit
    assert all(abs(got[sid] - score) < 1e-12 for sid, score in limited.items())
    if allowed:
        assert limited or not got
