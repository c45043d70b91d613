"""Section rows and a rerank of them without an index: the ranking rules' unit tests' inputs."""

from __future__ import annotations

from remembrancer.indexer.search import rank
from remembrancer.indexer.search.answer import Candidate
from remembrancer.indexer.store.local.catalog import SectionRow


_DOC_IDS: dict[str, int] = {}


def row(sid, path, heading, *, doc_type="doc", date=None, stale=False, level=2, content="text"):
    doc_id = _DOC_IDS.setdefault(path, len(_DOC_IDS) + 1)   # sections of one path share a document
    return SectionRow(sid, doc_id, path, heading, heading.split(" > ")[-1], level, 1, 2, date, stale, doc_type,
                      False, [], [], content, content)


def ranked(rows, scores, query, cfg=None):
    cands = {r.id: Candidate(r.id, score=scores[r.id]) for r in rows}
    by_id = {r.id: r for r in rows}
    rank.rerank(cands, by_id, rank.intent(query), cfg or rank.RankingConfig(),
                read_texts=lambda ids: [by_id[i] for i in ids])
    return [sid for sid, _ in sorted(cands.items(), key=lambda kv: -kv[1].score)]


def fused_by_heading(monkeypatch, view, scores: dict[str, float], default: float = 0.1) -> None:
    """Fix the fusion through a spy on the real `answer._fuse`: each candidate scores what `scores`
    (read at every search: a test may change it) gives its heading (the tiny test model's vectors
    are random, so a rule's test sets the order the rule starts from)."""
    from remembrancer.indexer.search import answer

    real = answer._fuse

    def fixed(cs, *args, **kwargs):
        real(cs, *args, **kwargs)
        heads = view.catalog.section_heads_by_id(list(cs))
        for sid, c in cs.items():
            c.score = c.fused = scores.get(heads[sid].heading, default)

    monkeypatch.setattr(answer, "_fuse", fixed)


def first_heading(view, query: str) -> str:
    """The heading of the first result (or of the best weak one) of a search through the MCP path."""
    from remembrancer.indexer import api

    out = api.do_search(view, {"query": query, "limit": 3})
    return (out["results"] or out["best_weak"])[0]["heading"]
