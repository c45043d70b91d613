"""Embeddings from a server: `[model] url` against a real HTTP server process.

The server (tests/support/model_server.py) implements the OpenAI-compatible embeddings API over the
tiny test model — no Ollama, llama.cpp or TEI installs here without downloading a model, so this
stands in for them over real HTTP, in a process of its own. Its faults are switched on by the test:
down, slow, failing, another dimension, another model behind the same name.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pytest

from remembrancer.indexer.api import do_search
from remembrancer.indexer.config import Config, make_roots
from remembrancer.indexer.engine import Engine
from remembrancer.indexer.models import server as served
from remembrancer.indexer.models.embed import load_embedder, load_embedder_from_dir
from remembrancer.indexer.models.spec import Endpoint, ModelError, ServerModel, ServerUnavailable
from remembrancer.indexer.redact import MARKER_RE
from tests.support.corpus import write, write_tree
from tests.support.model_server import ModelServer
from tests.support.tiny_model import build_tiny_model

DOCS = {
    "runbooks/restore.md": "# Restore\n\n## Steps\n\nRestore the postgres database from the nightly backup dump.\n",
    "hosts/web3.md": "# web3\n\n## Role\n\nThe web server behind the nginx frontend; logs rotate daily.\n",
    "notes/bikes.md": "# Bikes\n\n## Brakes\n\nThe mountain bike brakes need new pads before the road ride.\n",
    "notes/garden.md": "# Garden\n\n## Tomato\n\nWater the tomato seed in the sun; the soil dries after rain.\n",
}
QUERIES = ["restore the database from a backup", "bike brakes", "tomato garden water", "nginx web server logs"]


@pytest.fixture(scope="module")
def other_model_dir(tmp_path_factory):
    """Another model of the same shape and name (other weights): what a server swapped behind a name."""
    return build_tiny_model(tmp_path_factory.mktemp("other-model"), seed=7)


@pytest.fixture(scope="module")
def server(tiny_model_dir, other_model_dir):
    with ModelServer("--model", str(tiny_model_dir), "--other", str(other_model_dir), "--name", "tiny") as srv:
        yield srv


@pytest.fixture(autouse=True)
def healthy(server, monkeypatch):
    """Each test starts with a well server and a short memory of failures."""
    server.control(delay=0, fail=0, dim=0, swapped=False)
    monkeypatch.setattr(served, "RETRY_AFTER_S", 0.3)
    monkeypatch.setattr(served, "BACKOFF_S", 0.01)


@pytest.fixture
def notes(tmp_path):
    return write_tree(tmp_path / "notes", DOCS)


@pytest.fixture
def indexed(server, notes, data_env):
    """The notes indexed through the server (as its model is at the start of the test)."""
    e = engine(notes, spec(server.url))
    e.refresh()
    yield e
    e.close()


def spec(url: str, **kw) -> ServerModel:
    endpoint = {k: kw.pop(k) for k in ("name", "api_key_env", "timeout") if k in kw}
    return ServerModel(documents=Endpoint(url=url, **({"name": "tiny"} | endpoint)), **kw)


def engine(notes: Path, model) -> Engine:
    return Engine(Config(roots=make_roots([notes]), model=model))


def ranked(e: Engine, query: str) -> list[tuple[str, str, float]]:
    out = do_search(e.view(), {"query": query, "limit": 4, "explain": True})
    return [(r["path"], r["heading"], round(r["scores"]["dense"], 6)) for r in out["results"]]


def test_the_servers_vectors_are_the_local_models_bit_for_bit(server, tiny_model_dir):
    local, remote = load_embedder_from_dir(tiny_model_dir), load_embedder(spec(server.url, batch=7))
    texts = [f"restore the database number {i}" for i in range(40)] + ["bike"]
    assert np.array_equal(remote.embed_passages(texts), local.embed_passages(texts))   # 6 requests, 2 at a time
    assert np.array_equal(remote.embed_query("bike brakes"), local.embed_query("bike brakes"))
    assert np.array_equal(remote.embed_queries(["a", "bike"]), local.embed_queries(["a", "bike"]))
    c = remote.contract
    assert (c.name, c.dim, len(c.probe)) == ("tiny", 32, 32)
    assert c.matches(c.to_dict()) and not c.matches(local.contract.to_dict())
    assert "from an embedding server" in c.describe()


def test_a_served_index_ranks_exactly_like_the_local_one(server, tiny_model_dir, notes, data_env):
    remote = engine(notes, spec(server.url))
    remote.refresh()
    remote_ranks = [ranked(remote, q) for q in QUERIES]
    remote.close()
    data_env.joinpath("data").rename(data_env / "data-remote")
    local = engine(notes, str(tiny_model_dir))
    local.refresh()
    assert [ranked(local, q) for q in QUERIES] == remote_ranks
    assert all(r[0][2] > 0 for r in remote_ranks)   # the vector leg answered
    local.close()


def test_the_question_and_its_rephrasings_reach_the_server_redacted(server, indexed):
    """What the server embeds leaves the machine (a hosted API, maybe): a password or a token pasted
    into a search is sent redacted, as the passages were; the rest of the question is sent as typed."""
    token, password = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "Zz9#kQ2mZr91ghpx"
    before = len(server.inputs())
    out = do_search(indexed.view(), {"query": f"cache2 admin login password {password}",
                                     "alternates": [f"restore the database with token {token}"], "limit": 3})
    assert not any(n.startswith("keyword search only") for n in out.get("notes", [])), out.get("notes")
    sent = server.inputs()[before:]
    assert len(sent) == 2, sent   # the question, then its rephrasing
    assert not any(password in t or token in t or "Zz9#kQ2m" in t for t in sent), sent
    assert [MARKER_RE.sub("[REDACTED]", t) for t in sent] == [
        "cache2 admin login password [REDACTED]", "restore the database with token [REDACTED]"], sent


def test_a_server_down_while_indexing_leaves_passages_waiting_and_they_are_filled_when_it_returns(
        tiny_model_dir, notes, data_env):
    down = ModelServer("--model", str(tiny_model_dir), "--name", "tiny").start()
    port = down.port
    down.stop()   # nothing listens on the port now
    e = engine(notes, spec(f"http://127.0.0.1:{port}/v1", timeout=2))
    t0 = time.monotonic()
    report = e.refresh()
    assert time.monotonic() - t0 < 10
    waiting = report.waiting
    assert report.added == 4 and waiting >= 4 and report.embedded == 0   # every section's texts
    assert any(w.startswith("vectors skipped: embedding server unavailable") for w in report.warnings), report.warnings
    out = do_search(e.view(), {"query": "restore the database", "limit": 3})
    assert out["results"][0]["path"].endswith("restore.md")   # keywords answer
    assert any(n.startswith("keyword search only: embedding server unavailable") and str(port) in n
               for n in out["notes"]), out["notes"]
    with ModelServer("--model", str(tiny_model_dir), "--name", "tiny", port=port):
        time.sleep(0.35)   # past the failure's back-off
        report = e.refresh()   # nothing changed on disk: only the waiting passages are embedded
        assert (report.added, report.updated, report.embedded, report.waiting) == (0, 0, waiting, 0)
        out = do_search(e.view(), {"query": "restore the database", "limit": 3, "explain": True})
        assert not any("keyword search only" in n or "no vector" in n for n in out.get("notes") or [])
        assert out["results"][0]["scores"]["dense"] > 0
    e.close()


def test_a_server_failing_mid_run_keeps_the_text_and_counts_what_waits(server, notes, data_env):
    e = engine(notes, spec(server.url, batch=1))
    e.refresh()   # probed and embedded: the index holds the server's contract
    write(notes, "notes/more.md", "# More\n\n## Dogs\n\nWalk the dog before the coffee.\n")
    server.control(ok_first=1, fail=100)   # the run's probe answers, then every batch fails
    report = e.refresh()
    assert report.added == 1 and report.waiting == 3   # the document's preamble, heading, section
    assert any(w.startswith("vectors waiting:") and "HTTP 503" in w for w in report.warnings), report.warnings
    out = do_search(e.view(), {"query": "walk the dog", "limit": 2})
    assert out["results"][0]["path"].endswith("more.md")
    assert any("3 passages have no vector yet" in n for n in out.get("notes") or []), out
    server.control(fail=0)
    time.sleep(0.35)
    assert e.refresh().waiting == 0
    e.close()


def test_a_targeted_run_counts_waiting_passages_only_after_one_went_without(server, notes, data_env, monkeypatch):
    """Counting the passages without a vector reads every passage: a file change (a targeted run)
    asks only once one may wait — and the next targeted run fills what a failure left."""
    e = engine(notes, spec(server.url))
    e.refresh()   # counted: none wait
    counted = []
    real = type(e.catalog).waiting_count
    monkeypatch.setattr(type(e.catalog), "waiting_count", lambda self: counted.append(1) or real(self))
    write(notes, "notes/more.md", "# More\n\nWalk the dog before the coffee.\n")
    assert e.refresh_paths([notes / "notes" / "more.md"]).waiting == 0 and not counted
    server.control(ok_first=1, fail=100)   # the run's probe answers, then the batch fails
    write(notes, "notes/more.md", "# More\n\nWalk the cat before the tea.\n")
    assert e.refresh_paths([notes / "notes" / "more.md"]).waiting > 0 and counted
    server.control(fail=0)
    time.sleep(0.35)
    write(notes, "notes/other.md", "# Other\n\nFeed the fish.\n")
    assert e.refresh_paths([notes / "notes" / "other.md"]).waiting == 0   # and the cat's passages filled
    out = do_search(e.view(), {"query": "walk the cat", "limit": 1, "explain": True})
    assert out["results"][0]["scores"]["dense"] > 0
    e.close()


def test_a_slow_server_costs_a_search_one_bounded_wait_then_none(server, notes, data_env):
    e = engine(notes, spec(server.url, timeout=0.5))
    e.refresh()
    server.control(delay=3)
    t0 = time.monotonic()
    out = do_search(e.view(), {"query": "bike brakes pads", "limit": 2})
    first = time.monotonic() - t0
    t0 = time.monotonic()
    again = do_search(e.view(), {"query": "tomato soil", "limit": 2})
    second = time.monotonic() - t0
    assert first < 2.5 and second < 0.4, (first, second)
    assert out["results"][0]["path"].endswith("bikes.md") and again["results"][0]["path"].endswith("garden.md")
    assert any("no answer within 0.5 s" in n for n in out["notes"]), out["notes"]
    assert any("not asked again for" in n for n in again["notes"]), again["notes"]
    e.close()


def test_a_server_back_with_another_model_is_refused_before_its_vector_is_used(server, notes, indexed):
    e = indexed
    server.control(fail=1)
    out = do_search(e.view(), {"query": "bike", "limit": 1})
    assert any("HTTP 503" in n for n in out["notes"])
    # The same name, other weights: found when the server comes back (its probe answer changed).
    server.control(swapped=True)
    time.sleep(0.35)
    out = do_search(e.view(), {"query": "restore database", "limit": 2, "explain": True})
    assert any("came back with another model" in n for n in out["notes"]), out["notes"]
    assert out["results"][0]["scores"]["dense"] == 0   # its question vector was not used either
    out = do_search(e.view(), {"query": "restore database", "limit": 2})
    assert any("index was embedded with tiny" in n and "--reembed" in n for n in out["notes"]), out["notes"]
    write(notes, "notes/new.md", "# New\n\n## Tea\n\nCook the tea.\n")
    report = e.refresh()
    assert report.embedded == 0 and report.waiting > 0   # never a vector of the other model in this index
    report = e.refresh(reembed=True)
    assert report.waiting == 0 and report.embedded > 12
    out = do_search(e.view(), {"query": "tea", "limit": 1, "explain": True})
    assert not out.get("notes") and out["results"][0]["scores"]["dense"] != 0


def test_a_restarted_process_finds_a_swapped_model_at_once(server, notes, data_env):
    e = engine(notes, spec(server.url))
    e.refresh()
    e.close()
    server.control(swapped=True)
    e = engine(notes, spec(server.url))
    problem = e.view().contract_problem()
    assert problem and "index was embedded with tiny" in problem
    e.close()


def test_the_api_key_is_read_from_its_variable_and_never_shown(tiny_model_dir, notes, data_env, monkeypatch, caplog):
    secret = "sk-test-4f1d2e3c9b8a7f6e5d4c3b2a"
    with ModelServer("--model", str(tiny_model_dir), "--name", "tiny", "--key-env", "SERVER_KEY",
                     env={"SERVER_KEY": secret}) as srv:
        caplog.set_level(logging.DEBUG)
        monkeypatch.delenv("EMBED_KEY", raising=False)
        e = engine(notes, spec(srv.url, api_key_env="EMBED_KEY"))
        report = e.refresh()
        assert report.waiting >= 4 and any("$EMBED_KEY" in w and "not set" in w for w in report.warnings)
        monkeypatch.setenv("EMBED_KEY", "sk-wrong-key")
        time.sleep(0.35)
        assert any("HTTP 401" in w for w in e.refresh().warnings)
        monkeypatch.setenv("EMBED_KEY", secret)
        time.sleep(0.35)
        report = e.refresh()
        assert report.waiting == 0 and report.embedded >= 4
        out = do_search(e.view(), {"query": "bike", "limit": 1})
        e.close()
    shown = str(out) + str(report.to_dict()) + caplog.text
    stored = "".join(p.read_bytes().decode("latin-1") for p in (data_env / "data").rglob("*") if p.is_file())
    assert secret not in shown and secret not in stored and "sk-wrong-key" not in shown


def test_a_separate_query_server_must_embed_like_the_document_server(server, tiny_model_dir, other_model_dir,
                                                                     notes, data_env):
    with ModelServer("--model", str(tiny_model_dir), "--name", "tiny") as queries:
        same = ServerModel(documents=Endpoint(url=server.url, name="tiny"), queries=Endpoint(url=queries.url, name="tiny"))
        e = engine(notes, same)
        e.refresh()
        before = queries.stats()["texts"]
        out = do_search(e.view(), {"query": "tomato garden", "limit": 1, "explain": True})
        assert out["results"][0]["scores"]["dense"] > 0 and queries.stats()["texts"] == before + 1
        e.close()
    with ModelServer("--model", str(other_model_dir), "--name", "tiny") as wrong:
        emb = load_embedder(ServerModel(documents=Endpoint(url=server.url, name="tiny"),
                                        queries=Endpoint(url=wrong.url, name="tiny")))
        with pytest.raises(ModelError, match="does not embed like the document server"):
            emb.contract


@pytest.mark.parametrize("answer", [
    {"data": [{"index": 0, "embedding": [0.1, "x"]}]},
    {"data": [{"index": 0, "embedding": [0.1, 0.2]}, {"index": 1, "embedding": [0.3]}]},
    {"data": []},
    {"object": "list"},
    [1, 2, 3],
    {"data": [{"index": 0, "embedding": [float("nan"), 1.0]}]},
])
def test_a_malformed_answer_is_a_one_line_error(answer):
    with pytest.raises(ServerUnavailable) as e:
        served._vectors(answer, 1, "http://h/v1")
    assert "\n" not in str(e.value)


def test_a_server_that_is_not_there_is_a_one_line_error_not_a_hang():
    emb = load_embedder(ServerModel(documents=Endpoint(url="http://127.0.0.1:9/v1", timeout=2)))
    t0 = time.monotonic()
    with pytest.raises(ServerUnavailable, match=r"127\.0\.0\.1:9/v1/embeddings did not answer"):
        emb.contract
    assert time.monotonic() - t0 < 8


@pytest.mark.slow
def test_a_team_store_holds_the_servers_vectors_and_a_reader_of_another_model_is_refused(
        server, notes, data_env, pg_url, tiny_model_dir, other_model_dir):
    from remembrancer.indexer.store.postgres.store import PgStore
    from remembrancer.indexer.team import Writer

    writer = Writer(Config(roots=make_roots([notes]), model=spec(server.url)), pg_url)
    server.control(fail=100)   # down during the first pass: the text is stored, its passages wait
    report = writer.pass_once()
    assert report.waiting > 0
    assert writer.store.open_ledger(readonly=True).consistency_problems() == []
    server.control(fail=0)
    time.sleep(0.35)
    assert writer.pass_once().waiting == 0
    reader = Engine(Config(roots=make_roots([notes]), model=spec(server.url)), readonly=True,
                    store=PgStore(pg_url, readonly=True))
    local = engine(notes, str(tiny_model_dir))
    local.refresh()
    try:
        assert [ranked(reader, q) for q in QUERIES] == [ranked(local, q) for q in QUERIES]
    finally:
        reader.close()
        local.close()
    stranger = Engine(Config(roots=make_roots([notes]), model=str(other_model_dir)), readonly=True,
                      store=PgStore(pg_url, readonly=True))
    try:
        problem = stranger.view().contract_problem()
        assert problem and "the store was embedded with tiny" in problem
    finally:
        stranger.close()
        writer.close()


@pytest.mark.slow
def test_doctor_asks_the_server_and_checks_the_reranker(server, tmp_path, tiny_model_dir):
    import json as jsonlib

    from tests.support.cli import sandboxed_cli
    from tests.support.tiny_model import build_tiny_reranker

    run = sandboxed_cli(tmp_path, tiny_model_dir)

    def checks():
        d = run("doctor", "--json", "--root", str(run.notes))
        return d.returncode, {c["check"]: c for c in jsonlib.loads(d.stdout)}

    reranker = build_tiny_reranker(tmp_path / "reranker")
    run.config.write_text(f'[model]\nurl = "{server.url}"\nname = "tiny"\n[rerank]\npath = "{reranker}"\n')
    code, c = checks()
    assert c["model"]["status"] == "OK" and "tiny (32d, from an embedding server)" in c["model"]["detail"]
    assert server.url.removeprefix("http://") in c["model"]["detail"]
    assert c["reranker"]["status"] == "OK" and "ONNX cross-encoder" in c["reranker"]["detail"]
    run.config.write_text('[model]\nurl = "http://127.0.0.1:9/v1"\nname = "tiny"\ntimeout = 2\n'
                          '[rerank]\nurl = "http://127.0.0.1:9/v1"\nbudget_ms = 500\n')
    code, c = checks()
    assert code == 2 and c["model"]["status"] == "FAIL" and "did not answer" in c["model"]["detail"]
    assert "start the embedding server" in c["model"]["fix"] and "keywords" in c["model"]["fix"]
    assert c["reranker"]["status"] == "FAIL" and "did not answer" in c["reranker"]["detail"]


def test_a_model_swapped_behind_a_healthy_server_adds_nothing_to_the_index(server, notes, data_env):
    """No failure in between: the next index run's probe finds the other model before embedding."""
    e = engine(notes, spec(server.url))
    e.refresh()
    server.control(swapped=True)
    write(notes, "notes/new.md", "# New\n\n## Tea\n\nCook the tea.\n")
    report = e.refresh()
    assert report.embedded == 0 and report.waiting > 0
    assert any("index was embedded with tiny" in w for w in report.warnings), report.warnings


def test_a_new_dimension_is_refused_until_a_reembed_in_the_same_process(server, notes, indexed):
    e = indexed
    server.control(dim=16)
    out = do_search(e.view(), {"query": "restore database", "limit": 1})
    assert any("now answers 16-dimensional vectors" in n for n in out["notes"])
    time.sleep(0.35)
    assert "index was embedded with tiny" in e.view().contract_problem()
    report = e.refresh(reembed=True)   # as a daemon would run it: no new process
    assert report.waiting == 0 and report.embedded > 0
    out = do_search(e.view(), {"query": "restore database", "limit": 1, "explain": True})
    assert out["results"][0]["scores"]["dense"] != 0 and not out.get("notes")


def test_a_server_that_takes_smaller_batches_gets_halves(tiny_model_dir, notes, data_env):
    with ModelServer("--model", str(tiny_model_dir), "--name", "tiny", "--max-batch", "5") as srv:
        emb = load_embedder(spec(srv.url, batch=64))
        texts = [f"text number {i}" for i in range(23)]
        assert np.array_equal(emb.embed_passages(texts), load_embedder_from_dir(tiny_model_dir).embed_passages(texts))
        requests = srv.stats()["requests"]
        emb.embed_passages(texts)
        assert srv.stats()["requests"] - requests <= 6   # the smaller size is kept: no refused request again


@pytest.mark.slow
def test_the_command_line_says_what_waits_and_calls_it_stale_until_an_index_run(server, tmp_path, tiny_model_dir):
    import json as jsonlib

    from tests.support.cli import sandboxed_cli

    run = sandboxed_cli(tmp_path, tiny_model_dir)
    run.config.write_text(f'[model]\nurl = "{server.url}"\nname = "tiny"\n')
    server.control(fail=1000)
    r = run("index", "--root", str(run.notes))
    assert r.returncode == 0 and "wait for their vectors" in r.stdout and "HTTP 503" in r.stderr
    st = jsonlib.loads(run("status", "--json", "--root", str(run.notes)).stdout)
    assert st["vectors_waiting"] > 0 and st["freshness"]["verdict"] == "stale"
    assert "have no vector yet" in st["freshness"]["reason"]
    server.control(fail=0)
    r = run("index", "--root", str(run.notes))
    assert r.returncode == 0 and "wait for" not in r.stdout
    st = jsonlib.loads(run("status", "--json", "--root", str(run.notes)).stdout)
    assert "vectors_waiting" not in st and st["freshness"]["verdict"] == "fresh"
