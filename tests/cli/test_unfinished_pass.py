"""An index pass that never finished is never called fresh: `status` answered in-process (no daemon)
re-checks the index against the files — files never indexed included — and `list`, `read` and
`outline` finish the pass first, as `search` does, instead of answering from part of the corpus."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.support.cli import sandboxed_cli
from tests.support.corpus import engine_for, git, git_init, write


class Interrupted(Exception):
    """Stands for the end of the indexing process half-way through its pass."""


def _interrupted_pass(run, embedder, monkeypatch, after: int) -> None:
    """An index pass through the engine that ends (an exception out of its progress callback) when
    it reaches file `after + 1`, each document before it committed as soon as it was read."""
    from remembrancer.indexer.engine import writer

    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", run.env["REMEMBRANCER_DATA_DIR"])
    monkeypatch.setattr(writer, "EMBED_GROUP", 1)   # a document is written as soon as it is read

    def progress(done: int, total: int, path: str) -> None:
        if done > after:
            raise Interrupted

    e = engine_for([run.notes], embedder)
    try:
        with pytest.raises(Interrupted):
            e.refresh(progress=progress)
    finally:
        e.close()


def _status(run) -> dict:
    p = run("status", "--root", str(run.notes), "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_a_pass_that_did_not_finish_is_stale_and_list_finishes_it(tmp_path, tiny_model_dir, tiny_embedder,
                                                                    monkeypatch):
    run = sandboxed_cli(tmp_path, tiny_model_dir)
    total = len(list(run.notes.rglob("*.md")))
    _interrupted_pass(run, tiny_embedder, monkeypatch, after=4)

    st = _status(run)
    assert st["documents"] == 4 and st["last_indexed_at"] is None
    assert st["freshness"]["verdict"] == "stale", st["freshness"]   # it said "fresh — re-checked … just now"
    assert f"the first indexing pass did not finish: 4 of {total} files indexed" in st["freshness"]["reason"]
    assert "remembrancer index --root" in st["freshness"]["reason"]
    text = run("status", "--root", str(run.notes))
    assert "freshness: stale — the first indexing pass did not finish" in text.stdout, text.stdout

    listed = run("list", "--root", str(run.notes), "--json")   # it listed the 4 documents, exit 0
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["total"] == total
    assert "did not finish: finishing it now" in listed.stderr
    st = _status(run)
    assert st["documents"] == total and st["freshness"]["verdict"] == "fresh", st["freshness"]
    assert st["freshness"]["detail"] == "re-checked against the files just now"


def test_a_pass_stopped_before_its_first_document_is_stale_and_read_finishes_it(tmp_path, tiny_model_dir,
                                                                               tiny_embedder, monkeypatch):
    """Killed earlier: an index with no document at all was "fresh", `read` found nothing."""
    run = sandboxed_cli(tmp_path, tiny_model_dir)
    total = len(list(run.notes.rglob("*.md")))
    _interrupted_pass(run, tiny_embedder, monkeypatch, after=0)
    st = _status(run)
    assert st["documents"] == 0 and st["freshness"]["verdict"] == "stale", st["freshness"]
    assert f"0 of {total} files indexed" in st["freshness"]["reason"]
    p = run("read", "hosts/db1.md", "--root", str(run.notes))
    assert p.returncode == 0, p.stderr
    assert "db1" in p.stdout
    assert _status(run)["freshness"]["verdict"] == "fresh"


def test_status_never_builds_an_empty_index_it_then_calls_fresh(tmp_path, tiny_model_dir):
    """`status` on a folder never indexed made an empty index, called it fresh, and `list` then
    answered "0 documents" with exit 0."""
    run = sandboxed_cli(tmp_path, tiny_model_dir)
    for args in (["status"], ["list"], ["status", "--json"]):
        p = run(*args, "--root", str(run.notes))
        assert p.returncode == 3, (args, p.returncode, p.stdout)
        assert "no index yet" in p.stderr and "remembrancer index" in p.stderr, p.stderr
        assert "fresh" not in p.stdout
    assert not list((tmp_path / "data").rglob("catalog.sqlite3"))


def test_status_in_process_counts_the_files_the_index_has_not_read(tmp_path, tiny_model_dir):
    run = sandboxed_cli(tmp_path, tiny_model_dir)
    assert run("index", "--root", str(run.notes)).returncode == 0
    assert _status(run)["freshness"]["verdict"] == "fresh"
    write(run.notes, "runbooks/kettle.md", "# Kettle\n\nBoil the kettle before the tea.\n")
    db1 = run.notes / "hosts/db1.md"
    db1.write_text(db1.read_text() + "\nA new line about db1.\n")
    (run.notes / "hosts/db2.md").unlink()
    fr = _status(run)["freshness"]
    assert fr["verdict"] == "stale", fr   # it said "fresh — re-checked against the files just now"
    assert "3 files differ from the index (1 new, 1 changed, 1 removed)" in fr["reason"], fr
    assert run("index", "--root", str(run.notes)).returncode == 0
    assert _status(run)["freshness"]["verdict"] == "fresh"


def test_a_file_whose_name_holds_a_secret_is_not_counted_as_waiting_to_be_indexed(tmp_path, tiny_model_dir):
    """Such a file is never indexed, by design (indexer/redact.py, redact_path): the re-check must
    not count it as new, or the index would be stale for ever."""
    run = sandboxed_cli(tmp_path, tiny_model_dir)
    write(run.notes, "memory/ghp_FileNameTokenZZZZyyyyXXXXwwwwVVVV1234.md", "# Scratch\n\nA note.\n")
    assert run("index", "--root", str(run.notes)).returncode == 0
    fr = _status(run)["freshness"]
    assert fr["verdict"] == "fresh", fr


@pytest.mark.slow
def test_a_daemon_killed_in_its_first_pass_leaves_an_index_no_answer_calls_fresh(tmp_path, tiny_model_dir):
    """`kill -9` of a real daemon half-way through its first pass over 400 files. The model is behind
    an embedding server (tests/support/model_server.py) that keeps the request embedding any note from
    note200 on waiting: the daemon is stuck there, the notes before it committed, when it is killed —
    no timing involved."""
    from tests.support.daemon import DaemonProc, wait_for
    from tests.support.model_server import ModelServer

    notes = tmp_path / "notes"
    notes.mkdir()
    total = 400
    for i in range(total):
        held = " (held)" if i >= 200 else ""
        body = "\n\n".join(f"## Part {j} of note {i}\n\nFact {j} about service s{i}: port {i * 10 + j} serves "
                           f"shard {j}{held}." for j in range(10))
        (notes / f"note{i:03d}.md").write_text(f"# Note {i}\n\n{body}\n")
    with ModelServer("--model", str(tiny_model_dir), "--name", "tiny") as server:
        server.control(hold="(held)")
        d = DaemonProc(tmp_path, [notes], tiny_model_dir)
        (tmp_path / "config.toml").write_text(f'[model]\nurl = "{server.url}"\nname = "tiny"\n')
        d.start(wait=False)

        def committed() -> int:
            found = list((tmp_path / "data").glob("indexes/notes-*/catalog.sqlite3"))
            if not found:
                return 0
            db = sqlite3.connect(f"file:{found[0]}?mode=ro", uri=True)
            try:
                return db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
            except sqlite3.Error:
                return 0
            finally:
                db.close()

        try:
            wait_for(lambda: committed() and server.stats()["held"], 90)
            docs = committed()
            d.proc.kill()   # SIGKILL: nothing of the daemon runs after this
            d.proc.wait()
        finally:
            d.stop()
        assert 0 < docs < 200
        server.control(hold="")

        def cli(*args: str):
            from tests.support.cli import run_cli

            return run_cli(*args, "--root", str(notes), env=d.env)

        p = cli("status")
        assert p.returncode == 0, p.stderr
        assert "daemon: not running" in p.stdout
        assert (f"freshness: stale — the first indexing pass did not finish: {docs} of {total} files indexed"
                in p.stdout), p.stdout
        listed = cli("list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert json.loads(listed.stdout)["total"] == total, listed.stdout   # it listed the committed ones
        p = cli("read", "note399.md")
        assert p.returncode == 0 and "Fact 9 about service s399" in p.stdout, p.stderr
        st = json.loads(cli("status", "--json").stdout)
        assert st["documents"] == total and st["freshness"]["verdict"] == "fresh", st["freshness"]


def test_a_pass_stopped_half_way_records_neither_head_nor_time_and_the_next_update_finishes_it(
        tmp_path, data_env, tiny_embedder):
    """A stop request (the SIGTERM handlers of `serve` and of the team writer set this very event)
    ended the pass at its next file, and the pass then wrote the new HEAD and time as indexed: a
    targeted update after it (a git hook's notify, a watcher event) diffed HEAD against itself and
    never read the files the stopped pass had not reached. Git via the git CLI."""
    repo = tmp_path / "repo"
    git_init(repo)
    write(repo, "first.md", "# First\n\nThe first note.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "one")
    e = engine_for([repo], tiny_embedder)
    e.refresh()
    indexed = json.loads(e.catalog.get_meta("heads"))
    indexed_at = e.catalog.get_meta("last_indexed_at")
    e.close()
    for i in range(20):
        write(repo, f"more/n{i:02d}.md", f"# Note {i}\n\nThe quokka count is {i}.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "twenty more")

    e = engine_for([repo], tiny_embedder)

    def progress(done: int, total: int, path: str) -> None:
        if done == 5:
            e.stop_requested.set()   # as the signal handler does, mid-pass: the pass ends at the next file

    try:
        e.refresh(progress=progress)
        assert len(e.catalog.documents()) < 21
        assert json.loads(e.catalog.get_meta("heads")) == indexed   # it wrote the HEAD it had not read
        assert e.catalog.get_meta("last_indexed_at") == indexed_at
        assert e.unfinished_pass()
    finally:
        e.close()
    e = engine_for([repo], tiny_embedder)   # the next start: a targeted update (a hook's notify) comes first
    try:
        e.refresh_paths([])
        assert len(e.catalog.documents()) == 21 and not e.unfinished_pass()
        assert json.loads(e.catalog.get_meta("heads")) == {r.name: git(repo, "rev-parse", "HEAD")
                                                             for r in e.config.roots}
    finally:
        e.close()
