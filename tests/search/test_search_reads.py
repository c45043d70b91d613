"""What a search reads, and that reading less changes no answer: the rerank reads candidates
without their text (the shown ones, and the sections a rule reads, are read whole), the phrasings
of one request share their catalog lookups, and `explain` still says how each result was fused."""

from __future__ import annotations

from remembrancer.indexer.search import answer as S
from remembrancer.indexer.search.answer import SearchRequest, search
from tests.support.corpus import write_tree

RUNBOOK = {
    "runbooks/failover.md": "---\ntype: runbook\n---\n# Fail over db1\n\nFail over db1 when db1 dies: promote "
                            "the replica.\n\n## Steps\n\n1. Stop writes to db1.\n2. Promote the replica.\n"
                            "3. Point the app at the replica.\n",
    "notes/dns.md": "# DNS\n\n## Resolver\n\nThe host uses the local resolver on port 53.\n",
    "notes/backup.md": "# Backups\n\n## Restore a database\n\nRestore the postgres dump with pg_restore.\n",
}


def corpus(root, files):
    return write_tree(root, files)


def test_a_how_to_question_still_reads_the_runbooks_steps(tmp_path, tiny_engine):
    """The procedure rule reads a runbook's text: those candidates are read whole even though the
    rerank reads the others without it (without the text the steps would not count as a procedure)."""
    e = tiny_engine(corpus(tmp_path / "notes", RUNBOOK))
    out = search(e.view(), SearchRequest("how do I fail over db1?", limit=5, explain=True)).to_json()
    steps = [r for r in out["results"] if r["heading"] == "Fail over db1 > Steps"]
    assert steps and any("a runbook's procedure" in w for w in steps[0]["why"])
    # Every shown result carries its text: the snippet is the body's, the first result has content.
    first = out["results"][0]
    assert first["content"] and first["tokens"] > 0
    with_body = [r for r in out["results"] if r["heading"].endswith(("Resolver", "Restore a database", "Steps"))]
    assert with_body and all(r["snippet"] and r["snippet"] != r["heading"] for r in with_body)


def test_a_section_deleted_before_the_results_are_read_is_not_shown(tmp_path, tiny_engine):
    """Between the rerank's reading and the shown results' a writer may delete a section: it is
    dropped and the next one is read in its place (never a result without its text)."""
    root = corpus(tmp_path / "notes", RUNBOOK)
    e = tiny_engine(root)
    ids = sorted(e.catalog.section_heads_by_id(list(range(1, 100))))
    heads = e.catalog.section_heads_by_id(ids)
    assert all(r.content is None and r.body is None for r in heads.values())
    gone = [i for i in ids if heads[i].path == "notes/dns.md"]
    (root / "notes/dns.md").unlink()
    e.refresh()
    ranked = [S.Candidate(i) for i in gone + [i for i in ids if i not in gone]]
    shown, rows = S._shown_with_text(e.view(), ranked, heads, limit=2)
    assert [c.section_id for c in shown[:2]] == [i for i in ids if i not in gone][:2]
    assert all(rows[c.section_id].content is not None for c in shown[:2])
    assert not set(gone) & {c.section_id for c in shown}


def test_explain_says_how_each_result_was_fused_and_what_the_rephrasings_added(tmp_path, tiny_engine):
    e = tiny_engine(corpus(tmp_path / "notes", RUNBOOK))
    alone = search(e.view(), SearchRequest("restore the postgres dump", limit=5, explain=True)).to_json()["results"]
    assert all(r["why"][0].startswith("bm25=") and "fused=" in r["why"][0] for r in alone)
    plain = search(e.view(), SearchRequest("restore the postgres dump", limit=5)).to_json()["results"]
    assert all("why" not in r for r in plain)
    both = search(e.view(), SearchRequest("restore the postgres dump", limit=5, explain=True,
                                   alternates=["dns resolver port 53"])).to_json()
    why = {r["heading"]: r["why"] for r in both["results"] + both.get("best_weak", [])}
    assert all(w[0] == "not found by the question itself" or w[0].startswith("bm25=") for w in why.values())
    assert any(x.startswith("rephrasings +") for x in why["DNS > Resolver"])   # what the rephrasing found


def test_the_phrasings_of_one_request_read_each_passage_and_probe_once(tmp_path, tiny_engine, monkeypatch):
    """Rephrasings hit mostly the question's passages and name its identifiers: each passage's
    section and each probe's sections are read once per request (a spy on the real catalog)."""
    e = tiny_engine(corpus(tmp_path / "notes", RUNBOOK))
    asked: list = []
    probes: list = []
    view = e.view()
    real_passages, real_rows = e.catalog.passages_by_id, view.literal_rows
    monkeypatch.setattr(e.catalog, "passages_by_id", lambda ids: asked.append(list(ids)) or real_passages(ids))
    monkeypatch.setattr(view, "literal_rows", lambda needles, **kw: probes.append(needles) or real_rows(needles, **kw))
    search(view, SearchRequest("pg_restore the dump", limit=5, alternates=["pg_restore a database", "pg_restore"])).to_json()
    flat = [p for batch in asked for p in batch]
    assert len(asked) >= 1 and len(flat) == len(set(flat))
    assert probes.count(["pg_restore"]) == 1


def test_one_result_per_section_stops_at_what_can_be_shown():
    rows = {i: type("Row", (), {"path": f"{i % 3}.md", "heading": "A"})() for i in range(10)}
    ranked = [S.Candidate(i) for i in range(10)]
    assert [c.section_id for c in S.one_per_section(ranked, rows)] == [0, 1, 2]
    assert [c.section_id for c in S.one_per_section(ranked, rows, keep=2)] == [0, 1]


def test_a_long_question_leans_on_its_words_more_than_on_its_one_embedding(tmp_path, tiny_engine, monkeypatch):
    """A story of what was seen, then the question, is embedded as one mean of all its words; BM25
    counts each of them. From LONG_QUESTION_WORDS words on, the dense leg's share is W_DENSE_LONG:
    a section the words find beats one the embedding barely prefers — each phrasing judged by its
    own length."""
    def fused(long_question: bool) -> list[int]:
        cands = {1: S.Candidate(1, bm25=10.0, dense=0.55), 2: S.Candidate(2, bm25=0.5, dense=0.80),
                 3: S.Candidate(3, bm25=0.5, dense=0.30)}
        S._fuse(cands, identifier_query=False, long_question=long_question)
        return sorted(cands, key=lambda i: -cands[i].score)

    assert fused(False)[0] == 2 and fused(True)[0] == 1
    e = tiny_engine(corpus(tmp_path / "notes", RUNBOOK))
    seen: list[bool] = []
    real = S._fuse
    monkeypatch.setattr(S, "_fuse", lambda cands, identifier_query, long_question=False:
                        seen.append(long_question) or real(cands, identifier_query, long_question))
    short = "restore the postgres dump"
    long = "the nightly job failed again this morning and the dashboards were empty, how do I restore the postgres dump"
    assert len(long.split()) >= S.LONG_QUESTION_WORDS > len(short.split())
    search(e.view(), SearchRequest(short, limit=3))
    search(e.view(), SearchRequest(long, limit=3, alternates=[short]))
    assert seen == [False, True, False]
