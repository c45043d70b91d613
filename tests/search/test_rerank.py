"""The optional reranker (`[rerank]`): a cross-encoder re-orders the best few candidates.

The cross-encoder is the tiny one of tests/support/tiny_model.py (its logit is the overlap of the
question's and the passage's words, so its order is one a test can read); over HTTP it is served by
tests/support/model_server.py, a separate process implementing the Jina/Cohere and TEI rerank APIs
(no real rerank server installs here without downloading a model).
"""

from __future__ import annotations

import json
import time

import pytest

from remembrancer.indexer.api import do_search
from remembrancer.indexer.config import Config, make_roots
from remembrancer.indexer.engine import Engine
from remembrancer.indexer.models.rerank import load_reranker
from remembrancer.indexer.models.spec import Endpoint, RerankSpec
from tests.support.cli import sandboxed_cli
from tests.support.corpus import write_tree
from tests.support.model_server import ModelServer
from tests.support.tiny_model import build_tiny_reranker

DOCS = {
    "a.md": "# Restore\n\n## Database\n\nRestore the postgres database from the nightly backup dump.\n\n"
            "## Files\n\nRestore the files folder from the backup.\n",
    "b.md": "# Backup\n\n## Schedule\n\nThe backup of the database server runs at night.\n\n"
            "## Keys\n\nThe backup key is in the password store.\n",
    "c.md": "# Server\n\n## Disk\n\nThe database server disk fills when the backup dump stays.\n",
}
QUERY = "restore database backup"


@pytest.fixture(scope="module")
def reranker_dir(tmp_path_factory):
    return build_tiny_reranker(tmp_path_factory.mktemp("tiny-reranker"))


@pytest.fixture
def notes(tmp_path):
    return write_tree(tmp_path / "notes", DOCS)


@pytest.fixture
def index(notes, data_env, tiny_embedder):
    """One index, searched with whatever [rerank] a test sets on its config."""
    e = Engine(Config(roots=make_roots([notes])), embedder=tiny_embedder)
    e.refresh()
    yield e
    e.close()


def order(e: Engine, rerank: RerankSpec | None, query: str = QUERY, limit: int = 5) -> tuple[list[str], dict]:
    e.core.config.rerank = rerank
    out = do_search(e.view(), {"query": query, "limit": limit, "explain": True})
    return [f"{r['path'].split('/')[-1]}#{r['heading']}" for r in out["results"]], out


def test_the_reranker_reorders_the_best_candidates_by_its_scores(index, reranker_dir):
    plain, _ = order(index, None)
    spec = RerankSpec(path=str(reranker_dir), top=5)
    got, out = order(index, spec)
    assert sorted(got) == sorted(plain)   # the same candidates, in its order
    assert got != plain, "the fixture's question is one where the cross-encoder disagrees with the hybrid"
    sections = {f"{row.path.split('/')[-1]}#{row.heading}": row for row in index.catalog.sections()}
    scores = load_reranker(spec).score(QUERY, [f"{sections[k].title}\n{sections[k].content}" for k in got])
    assert scores == sorted(scores, reverse=True), list(zip(got, scores))
    assert any("reranker" in w for r in out["results"] for w in r.get("why", []))


def test_off_is_the_hybrid_exactly(index, reranker_dir):
    before, _ = order(index, None)
    order(index, RerankSpec(path=str(reranker_dir), top=5))
    after, out = order(index, None)
    assert after == before and not any("reranker" in w for r in out["results"] for w in r.get("why", []))


@pytest.mark.parametrize("shape", ["cohere", "tei"])
def test_a_rerank_server_orders_as_the_local_cross_encoder(index, reranker_dir, tiny_model_dir, shape):
    local, _ = order(index, RerankSpec(path=str(reranker_dir), top=5))
    with ModelServer("--model", str(tiny_model_dir), "--rerank", str(reranker_dir), "--rerank-shape", shape,
                     "--name", "tiny-rerank") as srv:
        got, out = order(index, RerankSpec(server=Endpoint(url=srv.url, name="tiny-rerank", timeout=5), top=5))
    assert got == local and not out.get("notes"), out.get("notes")


def test_a_rerank_server_is_sent_the_question_redacted(index, reranker_dir, tiny_model_dir):
    """The question goes to a rerank server as it goes to an embedding server: redacted (the
    passages it reads were stored redacted)."""
    password = "Zz9#kQ2mZr91ghpx"
    with ModelServer("--model", str(tiny_model_dir), "--rerank", str(reranker_dir)) as srv:
        got, out = order(index, RerankSpec(server=Endpoint(url=srv.url, timeout=5), top=5),
                         query=f"restore database backup, the password is {password}")
        sent = srv.inputs()
    assert not out.get("notes"), out.get("notes")
    assert "restore database backup, the password is [REDACTED:prose_secret]" in sent, sent
    assert not any(password in t for t in sent), sent


def test_a_rerank_server_down_or_slow_keeps_the_order_and_says_why(index, reranker_dir, tiny_model_dir):
    plain, _ = order(index, None)
    got, out = order(index, RerankSpec(server=Endpoint(url="http://127.0.0.1:9/v1", timeout=1), top=5))
    assert got == plain and any(n.startswith("reranker skipped:") and "did not answer" in n for n in out["notes"])
    with ModelServer("--model", str(tiny_model_dir), "--rerank", str(reranker_dir)) as srv:
        srv.control(delay=2)
        t0 = time.monotonic()
        got, out = order(index, RerankSpec(server=Endpoint(url=srv.url, timeout=0.2), top=5, budget_ms=200))
        assert time.monotonic() - t0 < 1.5
    assert got == plain and any("no answer within 0.2 s" in n for n in out["notes"]), out["notes"]


def test_a_broken_reranker_folder_is_a_note_not_a_failure(index, tmp_path):
    (tmp_path / "empty").mkdir()
    plain, _ = order(index, None)
    got, out = order(index, RerankSpec(path=str(tmp_path / "empty"), top=5))
    assert got == plain and any("lacks model.onnx, tokenizer.json" in n for n in out["notes"])


def test_eval_compare_rerank_scores_the_users_cases_both_ways(tmp_path, tiny_model_dir, reranker_dir):
    run = sandboxed_cli(tmp_path, tiny_model_dir)
    write_tree(tmp_path / "corpus", DOCS)
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n".join(json.dumps({"id": f"q{i}", "query": q, "expect": [{"path": p, "heading": h, "grade": 3}]})
                               for i, (q, p, h) in enumerate([
                                   (QUERY, "a.md", "Restore > Database"),
                                   ("backup key password", "b.md", "Backup > Keys"),
                                   ("disk fills", "c.md", "Server > Disk")])) + "\n")
    r = run("eval", str(cases), "--root", str(tmp_path / "corpus"), "--compare", "rerank")
    assert r.returncode == 2 and "needs a reranker configured" in r.stderr and "Traceback" not in r.stderr
    run.config.write_text(run.config.read_text() + f'[rerank]\npath = "{reranker_dir}"\ntop = 5\n')
    r = run("eval", str(cases), "--root", str(tmp_path / "corpus"), "--compare", "rerank")
    assert r.returncode == 0, r.stderr
    assert "reranker off:" in r.stdout and f"reranker {reranker_dir} (top 5) on:" in r.stdout
    assert "right first (T1≥2):" in r.stdout and "took it away from" in r.stdout
    r = run("eval", str(cases), "--root", str(tmp_path / "corpus"), "--compare", "rerank", "--json")
    report = json.loads(r.stdout)
    assert set(report) == {"reranker", "off", "on", "helped", "hurt"}
    assert report["off"]["queries_total"] == report["on"]["queries_total"] == 3
