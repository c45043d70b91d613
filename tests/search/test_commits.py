"""Commit messages as a corpus of their own: each commit of the notes' repositories one section,
read from a real git history (made with the git CLI), indexed incrementally from HEAD to HEAD,
redacted, searched with `corpus: "commits"` and `"all"` — with the real engine (tantivy, hnswlib,
the tiny ONNX model)."""

from __future__ import annotations

import json
import subprocess

import pytest

from remembrancer.indexer import api
from remembrancer.indexer.answers import Freshness, SearchAnswer
from remembrancer.indexer.config import Config, make_roots
from remembrancer.indexer.engine import Engine
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.ingest import commit_log
from tests.support.commit_history import build
from tests.support.corpus import git, git_init, write

FRESH = lambda view: Freshness(verdict="fresh")  # noqa: E731


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """The fixture history, built once: (repository, subject → full hash)."""
    repo = tmp_path_factory.mktemp("history") / "tollgate"
    return repo, build(repo)


@pytest.fixture
def repo(history, tmp_path):
    """A private clone of the fixture history that a test may commit to (hashes unchanged)."""
    clone = tmp_path / "tollgate"
    subprocess.run(["git", "clone", "-q", str(history[0]), str(clone)], check=True)
    return clone


@pytest.fixture
def open_engines(engine_of):
    return engine_of


def notes_config(root) -> Config:
    return Config(roots=make_roots([root]))


def reader(engine: Engine):
    return lambda m, p: api.dispatch_read(engine, m, p, FRESH)


def commits_engine(make, root) -> Engine:
    cfg = commit_log.commits_config(notes_config(root))
    assert cfg is not None and cfg.kind == "commits"
    return make(cfg)


def test_every_commit_is_a_section_and_a_second_pass_reads_none(repo, history, open_engines):
    e = commits_engine(open_engines, repo / "notes")   # the notes folder: its repository's commits
    first = e.refresh()
    assert first.added == len(history[1]) == 57 and not first.removed
    again = e.refresh()
    assert (again.added, again.updated, again.unchanged) == (0, 0, 57)
    docs = e.catalog.documents()
    oid = history[1]["limits: token bucket for burst traffic"]
    assert oid[:12] in docs
    [section] = e.catalog.sections(oid[:12])
    assert section.heading == "limits: token bucket for burst traffic"
    assert "A token bucket keeps two numbers per key" in section.content
    assert f"commit {oid} · Priya Raman · 2033-05-06T16:45:00+02:00" in section.content
    assert "changed: README.md, tests/test_limits.py, tollgate/limits.py" in section.content


def test_a_search_names_the_commit_that_did_it(repo, history, open_engines):
    e = commits_engine(open_engines, repo)
    e.refresh()
    out = SearchAnswer.parse(api.read_across("search", {"query": "SUP-2231", "corpus": "commits"},
                                             reader(e), None, reader(e)))
    best = out.results[0]
    oid = history[1]["retry: never retry after the upstream has started responding"]
    assert (best.path, best.commit, best.author, best.type) == (oid[:12], oid, "Priya Raman", "commit")
    assert best.date == "2033-05-17" and "applied twice" in best.content


def test_a_secret_in_a_message_never_reaches_the_index(repo, history, open_engines):
    e = commits_engine(open_engines, repo)
    report = e.refresh()
    oid = history[1]["deploy: move secrets to the external secrets operator"][:12]
    [section] = e.catalog.sections(oid)
    assert "hunter2-tollgate-9f8e7d" not in section.content and "[REDACTED" in section.content
    assert any(w.startswith(f"{oid}: 1 secret(s) redacted") for w in report.warnings)
    out = api.read_across("search", {"query": "REDIS_PASSWORD values.yaml", "corpus": "commits"},
                          reader(e), None, reader(e))
    assert oid in json.dumps(out) and "hunter2-tollgate-9f8e7d" not in json.dumps(out)


def test_a_password_named_earlier_in_a_message_leaves_the_index_the_answer_and_the_query_log(
        repo, open_engines, tmp_path):
    """"Rotate db password: new one is X": the value is named by a word earlier in the subject; it is
    redacted before the commit is stored, so the heading a search answers with — and the query log
    keeps as the top result — never holds it."""
    from remembrancer.indexer.redact_policy import RedactionPolicy, RedactorSource
    from remembrancer.indexer.search.querylog import QueryLog

    pw = "Pr0dDbPw2031x"
    write(repo, "notes/db.md", "# DB\n\nThe database password was rotated.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"Rotate db password: new one is {pw}")
    e = commits_engine(open_engines, repo)
    e.refresh()
    oid = git(repo, "rev-parse", "HEAD")[:12]
    [section] = e.catalog.sections(oid)
    assert pw not in section.heading + section.content and "[REDACTED:prose_secret]" in section.heading
    params = {"query": "rotate db password", "corpus": "commits"}
    out = api.read_across("search", params, reader(e), None, reader(e))
    mine = [r for r in out["results"] if r["heading"].startswith("Rotate db password")]
    assert mine and pw not in json.dumps(out)
    log = QueryLog(tmp_path / "queries.jsonl", RedactorSource(RedactionPolicy()))
    log.record("search", params, {**out, "results": mine}, 12.0, client="cli")
    logged = json.loads((tmp_path / "queries.jsonl").read_text())
    assert logged["top"].endswith("§ Rotate db password: new one is [REDACTED:prose_secret]")
    # the log redacts what it stores itself, whatever an answer carried
    log.record("search", {"query": f"db password: new one is {pw}"},
               {"results": [{"path": oid, "heading": f"db password: new one is {pw}"}]})
    assert pw not in (tmp_path / "queries.jsonl").read_text()


def test_a_moved_head_reads_only_the_commits_it_gained_and_a_rewritten_history_drops_the_lost(
        repo, open_engines):
    e = commits_engine(open_engines, repo)
    e.refresh()
    write(repo, "tollgate/limits.py", "BURST = 2\n")
    git(repo, "commit", "-qam", "limits: allow bursts of twice the per-second rate\n\nA mobile client sends "
        "its queued requests at once after reconnecting.")
    gained = e.writer.refresh_paths([])   # what a git hook's notify runs: HEAD to HEAD
    assert (gained.scanned, gained.added, gained.removed) == (1, 1, 0)
    new = git(repo, "rev-parse", "HEAD")
    assert new[:12] in e.catalog.documents()
    # A rewritten history: the two newest commits are gone, another takes their place.
    lost = git(repo, "rev-parse", "HEAD~1")
    git(repo, "reset", "-q", "--hard", "HEAD~2")
    write(repo, "tollgate/limits.py", "BURST = 3\n")
    git(repo, "commit", "-qam", "limits: bursts of three times the rate")
    rewritten = e.writer.refresh_paths([])
    assert (rewritten.added, rewritten.removed) == (1, 2)
    docs = e.catalog.documents()
    assert new[:12] not in docs and lost[:12] not in docs and git(repo, "rev-parse", "HEAD")[:12] in docs
    assert len(docs) == 57


def test_odd_messages_are_indexed_and_said(tmp_path, open_engines):
    repo = tmp_path / "odd"
    git_init(repo)
    write(repo, "a.md", "# A\n")
    git(repo, "add", "-A")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9: the na\xefve cache is gone\n".encode("latin-1"))
    git(repo, "-c", "i18n.commitEncoding=latin1", "commit", "-q", "-F", str(tmp_path / "latin1.txt"))
    # A message of bytes that are not UTF-8, naming no encoding (written as the object itself).
    raw = (f"tree {git(repo, 'rev-parse', 'HEAD^{tree}')}\nparent {git(repo, 'rev-parse', 'HEAD')}\n"
           "author t <t@example.com> 2000000000 +0000\ncommitter t <t@example.com> 2000000000 +0000\n\n").encode() \
        + b"cache: drop the \xff\xfe bytes\n"
    (tmp_path / "raw").write_bytes(raw)
    odd = git(repo, "hash-object", "-t", "commit", "-w", "--literally", str(tmp_path / "raw"))
    git(repo, "update-ref", "HEAD", odd)
    (tmp_path / "huge.txt").write_text("log: a pasted build log\n\n" + "frobnicate the widget\n" * 5000)
    git(repo, "commit", "-q", "--allow-empty", "-F", str(tmp_path / "huge.txt"))
    git(repo, "commit", "-q", "--allow-empty", "--allow-empty-message", "-m", "")
    e = commits_engine(open_engines, repo)
    report = e.refresh()
    assert report.added == 4
    docs = e.catalog.documents()
    by_title = {e.catalog.sections(p)[0].heading: p for p in docs}
    assert "café: the naïve cache is gone" in by_title and "(no subject)" in by_title   # its encoding honoured
    bad = by_title["cache: drop the \ufffd\ufffd bytes"]
    assert f"{bad}: invalid UTF-8 at byte 16; bad bytes replaced" in report.warnings, report.warnings
    huge = e.catalog.sections(by_title["log: a pasted build log"])[0]
    assert "(message cut at 65,536 bytes)" in huge.content and len(huge.content) < 70_000
    assert any("is over 65,536 bytes; indexed up to there" in w for w in report.warnings)


def test_no_repository_no_commits_corpus_and_an_unborn_head_has_none(tmp_path, open_engines):
    plain = tmp_path / "plain"
    write(plain, "a.md", "# A\n")
    assert commit_log.commits_config(notes_config(plain)) is None
    with pytest.raises(UserError) as err:
        api.read_across("search", {"query": "x", "corpus": "commits"}, lambda m, p: {}, None, None)
    assert err.value.param == "corpus" and "no git repository" in err.value.message
    unborn = tmp_path / "unborn"
    git_init(unborn)
    e = commits_engine(open_engines, unborn)
    assert e.refresh().added == 0 and not e.catalog.documents()
    with pytest.raises(UserError) as err:   # a commit has no file to read
        api.read_across("read", {"path": "abc", "corpus": "commits"}, lambda m, p: {}, None, reader(e))
    assert err.value.param == "corpus"


def test_verify_repos_and_the_notes_repository_are_one_corpus(repo, tmp_path, open_engines):
    other = tmp_path / "infra"
    git_init(other)
    write(other, "main.tf", "x\n")
    git(other, "add", "-A")
    git(other, "commit", "-qm", "terraform: pin the aws provider to 5.x")
    cfg = notes_config(repo / "notes")
    cfg.verify_repos = [other, repo]   # the notes' own repository named again: once
    commits = commit_log.commits_config(cfg)
    assert [r.path for r in commits.roots] == [repo.resolve(), other.resolve()]
    e = open_engines(commits)
    e.refresh()
    out = SearchAnswer.parse(api.dispatch_read(e, "search", {"query": "terraform aws provider", "limit": 10}, FRESH))
    hit = next(r for r in out.results if r.path.startswith("infra/"))
    assert hit.heading == "terraform: pin the aws provider to 5.x" and hit.commit == git(other, "rev-parse", "HEAD")


def test_all_answers_from_notes_and_commits_apart(repo, open_engines, tiny_embedder):
    notes = open_engines(notes_config(repo / "notes"))
    notes.refresh()
    log = commits_engine(open_engines, repo)
    log.refresh()
    out = SearchAnswer.parse(api.read_across("search", {"query": "tollgate API gateway rate limits", "corpus": "all"},
                                             reader(notes), None, reader(log)))
    assert {r.corpus for r in out.results} == {"notes", "commits"}
    assert out.commits_index is not None and out.index is not None
    assert "no conversation folder is configured: they were not searched" in out.notes
    only_notes = api.read_across("search", {"query": "tollgate API gateway rate limits"}, reader(notes), None,
                                 reader(log))
    assert {r["type"] for r in only_notes["results"]} == {"doc"}   # a notes search never reads commits
    latest = api.read_across("latest", {"terms": ["Retry-After"], "corpus": "commits"}, reader(notes), None,
                             reader(log))
    assert latest["results"][0]["heading"] == "fix: Retry-After was in milliseconds"
    from remembrancer.indexer.answers import LatestAnswer
    from remembrancer.mcp_server.render import latest_text

    assert "`git show <commit>` shows its diff" in latest_text(LatestAnswer.parse(latest))   # no file to read


def test_a_commits_index_is_never_taken_for_a_notes_corpus(repo, open_engines):
    """An MCP session started in the repository serves a notes corpus only when one was indexed
    there: the repository's commits index (its root is the work tree) is no such corpus."""
    from remembrancer.indexer import indexes

    commits_engine(open_engines, repo / "notes").refresh()
    [index] = indexes.known()
    assert index.kind == "commits" and index.roots == [repo.resolve()]
    assert indexes.corpus_for([repo.resolve()]) is None and indexes.corpus_for([(repo / "notes").resolve()]) is None
    assert indexes.describe(index)["kind"] == "commits"


def test_a_scoped_session_never_reads_commits(repo, open_engines):
    """A scope is a wall around some notes; a commit's message may speak of anything in the
    repository, so a scoped request is refused the commits (and `all` searches the notes alone)."""
    notes = open_engines(notes_config(repo))
    write(repo, "notes/limits.md", "# Limits\n\nThe token bucket holds the per-second rate.\n")
    notes.refresh()
    log = commits_engine(open_engines, repo)
    log.refresh()
    with pytest.raises(UserError) as err:
        api.read_across("search", {"query": "token bucket", "corpus": "commits", "scope": ["notes/"]},
                        reader(notes), None, reader(log))
    assert err.value.code == "out_of_scope" and err.value.param == "corpus"
    out = api.read_across("search", {"query": "token bucket", "corpus": "all", "scope": ["notes/"]},
                          reader(notes), None, reader(log))
    assert out["results"] and all(r["path"].startswith("notes/") for r in out["results"])
    assert "a scoped session does not search commits" in out["notes"]


def test_the_labelled_questions_are_scored_by_eval_over_the_commits(history, tmp_path, data_env, tiny_embedder):
    """`remembrancer eval --corpus commits`: the labelled set of tests/data/commits, each label a
    commit; the report's figures are the benchmark's (bench/eval_all.py --sets commits), not asserted."""
    from tests.support.commit_history import cases
    from remembrancer.indexer.search.evaluate import run_eval

    queries = tmp_path / "commits.jsonl"
    queries.write_text("".join(json.dumps(c) + "\n" for c in cases(history[1])))
    report = run_eval(str(queries), [str(history[0])], embedder=tiny_embedder, corpus="commits")
    assert report["overall"]["n"] == 27 and report["abstention"]["unanswerable"] == 4
    assert set(report["strata"]) == {"why", "when", "which", "paraphrase", "identifier"}
    assert report["index"]["added"] == 57
    with pytest.raises(UserError) as err:
        run_eval(str(queries), [str(tmp_path)], embedder=tiny_embedder, corpus="commits")
    assert "no git repository" in err.value.message
