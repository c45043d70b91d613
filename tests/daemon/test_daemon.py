"""The real daemon process on a real Unix socket (the tiny model keeps it fast)."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remembrancer.wire import DaemonError
from tests.support.corpus import git, git_init, write
from tests.support.daemon import DaemonProc, consistent, wait_for


@pytest.fixture
def daemon(tmp_path, notes, tiny_model_dir):
    d = DaemonProc(tmp_path, [notes], tiny_model_dir).start()
    yield d
    d.stop()


def test_socket_is_private_and_a_second_daemon_is_refused(daemon, tmp_path, notes, tiny_model_dir):
    assert oct(daemon.sock.stat().st_mode & 0o777) == "0o600"
    assert oct(daemon.sock.parent.stat().st_mode & 0o777) == "0o700"
    second = DaemonProc(tmp_path, [notes], tiny_model_dir)
    p = subprocess.run(second.cmd, env=second.env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "already serves" in p.stderr and "Traceback" not in p.stderr


def test_stale_socket_is_replaced(tmp_path, notes, tiny_model_dir):
    d = DaemonProc(tmp_path, [notes], tiny_model_dir)
    d.sock.parent.mkdir(parents=True, mode=0o700)
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(d.sock))
    s.close()  # a socket file nobody listens on, as after a crash
    d.start()
    try:
        assert d.search("pgBackRest")["results"]
    finally:
        d.stop()


@pytest.mark.slow
def test_malformed_requests_get_errors_and_the_daemon_keeps_serving(daemon):
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(daemon.sock))
    f = s.makefile("rwb")
    for bad in (b"not json\n", b"[1,2]\n", b'{"method": "drop_tables"}\n', b'{"method": "search", "params": 5}\n',
                b"\xff\xfe\n", b"x" * 1_100_000 + b"\n"):
        f.write(bad)
        f.flush()
        resp = json.loads(f.readline())
        assert resp["ok"] is False and resp["error"]["code"] in ("malformed", "unknown_method", "too_large")
    s.close()
    with pytest.raises(DaemonError) as ei:
        daemon.call("search", query="x", limit=0)
    assert ei.value.error["param"] == "limit"
    assert daemon.search("pgBackRest restore")["results"]


def test_a_question_over_the_cap_and_a_lone_surrogate_are_refused_by_name(daemon):
    """The socket's own checks (the MCP tool's schema refuses the long question before it asks)."""
    from remembrancer.indexer.requests import MAX_QUERY_CHARS

    with pytest.raises(DaemonError) as ei:
        daemon.call("search", query="q" * (MAX_QUERY_CHARS + 1))
    assert ei.value.error["param"] == "query" and ei.value.error["code"] == "bad_input"
    assert f"the most is {MAX_QUERY_CHARS}" in ei.value.error["message"]
    with pytest.raises(DaemonError) as ei:
        daemon.call("search", query="restore", type={"\ud800": ["x"]})   # a key, nested: the parameter is named
    assert ei.value.error["param"] == "type" and "not valid Unicode text" in ei.value.error["message"]
    out = daemon.search("q" * MAX_QUERY_CHARS)   # one word at the cap: answered like any other
    assert out["results"] or out["best_weak"]


@pytest.mark.slow
def test_atomic_save_becomes_searchable_without_commit(daemon, notes):
    target = notes / "memory/zebra.md"
    tmp = notes / "memory/.zebra.md.tmp"
    tmp.write_text("# Zebra crossings\n\nThe quokka protocol needs xylophone tuning.\n")
    os.replace(tmp, target)
    hit = wait_for(lambda: [r for r in daemon.search("quokka xylophone")["results"] if r["path"] == "memory/zebra.md"])
    assert hit
    # vim-style save: move original away, write new, delete backup
    os.rename(target, notes / "memory/zebra.md~")
    target.write_text("# Zebra crossings\n\nThe wombat protocol replaced it.\n")
    (notes / "memory/zebra.md~").unlink()
    wait_for(lambda: any(r["path"] == "memory/zebra.md" for r in daemon.search("wombat protocol")["results"]))
    st = daemon.wait_fresh()
    assert not any(r.startswith("memory/zebra.md~") for r in json.dumps(st))
    assert st["freshness"]["detail"] == "at the on-disk state"   # a plain folder: no HEAD to be at
    consistent(daemon)


def _repo_under_daemon(tmp_path, tiny_model_dir):
    """A git repo with one committed note (on `main`), and a daemon serving it."""
    repo = tmp_path / "repo"
    git_init(repo)
    write(repo, "a.md", "# Alpha\n\nThe capybara runbook.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "one")
    return repo, DaemonProc(tmp_path, [repo], tiny_model_dir).start()


@pytest.mark.slow
def test_git_commit_checkout_and_hooks(tmp_path, tiny_model_dir):
    repo, d = _repo_under_daemon(tmp_path, tiny_model_dir)
    try:
        from remembrancer.hooks.install import install_hooks
        install_hooks(repo)
        git(repo, "checkout", "-qb", "feature")
        write(repo, "b.md", "# Beta\n\nThe pangolin procedure.\n")
        git(repo, "add", ".")
        git(repo, "commit", "-qm", "two")
        wait_for(lambda: any(r["path"] == "b.md" for r in d.search("pangolin procedure")["results"]))
        git(repo, "checkout", "-q", "main")
        def equal_to_tree():
            st = d.wait_fresh()
            docs = {x["path"] for x in d.call("list")["documents"]}
            return docs == {"a.md"} and st
        st = wait_for(equal_to_tree)
        assert st["roots"][0]["head_indexed"] == git(repo, "rev-parse", "HEAD")
        assert st["freshness"]["detail"] == "at HEAD and on-disk state"
        consistent(d)
    finally:
        d.stop()


@pytest.mark.slow
def test_a_fresh_verdict_agrees_with_the_figures_beside_it(tmp_path, tiny_model_dir):
    """A status is one reading: while branches are switched and committed under the daemon (its
    hooks and its watcher both at work), every answer whose verdict is `fresh` shows the indexed
    HEAD equal to the current one, nothing queued and no ingest running. (The verdict was once
    judged on a second reading, taken after the figures: "fresh" beside a HEAD not yet indexed —
    a race this test caught in 2 runs of 6, and test_git_commit_checkout_and_hooks in ~1 of 20.)"""
    import threading

    repo, d = _repo_under_daemon(tmp_path, tiny_model_dir)
    seen, wrong, done = [], [], threading.Event()

    def watch():
        while not done.is_set():
            st = d.ping()
            if st and st["freshness"]["verdict"] == "fresh":
                seen.append(st)
                r = st["roots"][0]
                if r["head_indexed"] != r["head_current"] or st["daemon"]["ingesting"] or st["daemon"]["queued_changes"]:
                    wrong.append((r, st["daemon"]["ingesting"], st["daemon"]["queued_changes"]))

    try:
        from remembrancer.hooks.install import install_hooks
        install_hooks(repo)
        watcher = threading.Thread(target=watch)
        watcher.start()
        for i in range(25):
            git(repo, "checkout", "-qb", f"b{i}")
            write(repo, f"b{i}.md", f"# Beta {i}\n\nThe pangolin procedure {i}.\n")
            git(repo, "add", ".")
            git(repo, "commit", "-qm", f"b{i}")
            git(repo, "checkout", "-q", "main")
        d.wait_fresh()
        done.set()
        watcher.join(10)
        assert seen and wrong == []
    finally:
        done.set()
        d.stop()


def test_sigterm_exits_cleanly(daemon):
    daemon.proc.send_signal(signal.SIGTERM)
    assert daemon.proc.wait(10) == 0
    assert not daemon.sock.exists()


@pytest.mark.slow
def test_root_that_vanishes_and_returns(tmp_path, notes, tiny_model_dir):
    d = DaemonProc(tmp_path, [notes], tiny_model_dir, extra=("--rescan", "1")).start()
    try:
        n = d.call("status")["documents"]
        away = notes.with_name("away")
        notes.rename(away)
        time.sleep(2.5)
        st = d.call("status")
        assert st["documents"] == n  # an unreadable root keeps its documents
        away.rename(notes)
        write(notes, "new.md", "# New\n\nThe okapi arrived.\n")
        wait_for(lambda: any(r["path"] == "new.md" for r in d.search("okapi arrived")["results"]), timeout=30)
    finally:
        d.stop()


@pytest.mark.slow
def test_idle_exit(tmp_path, notes, tiny_model_dir):
    d = DaemonProc(tmp_path, [notes], tiny_model_dir, extra=("--idle-exit", "1.5")).start()
    assert d.proc.wait(30) == 0
    assert not d.sock.exists()


@pytest.mark.slow
def test_kill_9_during_reindex_then_restart_is_consistent(tmp_path, tiny_model_dir):
    root = tmp_path / "big"
    for i in range(400):
        write(root, f"d{i:03}.md", f"# Doc {i}\n\n" + "\n\n".join(
            f"Paragraph {j} of document {i} talks about topic{i % 17} and item{j}." for j in range(12)))
    d = DaemonProc(tmp_path, [root], tiny_model_dir)
    d.start(wait=False)
    db_path = None

    def some_indexed():
        nonlocal db_path
        st = d.ping()
        if st and 20 < st["documents"] < 400:
            db_path = Path(st["index_dir"]) / "catalog.sqlite3"
            return True
        return False

    wait_for(some_indexed, timeout=60, step=0.02)
    d.proc.kill()
    d.proc.wait()
    db = sqlite3.connect(db_path)
    done_docs = db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    done_vecs = db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    db.close()
    assert 0 < done_docs < 400
    d.start()
    st = d.wait_fresh(60)
    assert st["documents"] == 400
    counts = consistent(d)
    assert counts["documents"] == 400
    assert st["daemon"]["last_ingest"]["embedded"] == counts["passages"] - done_vecs
    d.stop()


def test_a_cli_search_the_daemon_answers_imports_no_engine(daemon, notes):
    """The CLI's daemon path is a socket client: its answer costs the daemon's work, not the
    engine's imports (markdown-it, pathspec, psutil, rich, tantivy, the model's runtime, …: ~1 s of
    start-up under load for a 9 ms answer). The engine is imported only to answer in-process."""
    heavy = ("markdown_it", "pathspec", "psutil", "rich", "tantivy", "onnxruntime", "numpy", "hnswlib", "tokenizers",
             "pygit2", "watchdog", "yaml", "mcp", "pydantic", "psycopg")
    code = ("import sys; from remembrancer.cli.main import main; rc = main(sys.argv[1:]); "
            f"print('loaded:', sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r} "
            "or m.startswith(('remembrancer.indexer.engine', 'remembrancer.indexer.search.answer', 'remembrancer.indexer.api'))))")
    r = subprocess.run([sys.executable, "-c", code, "search", "--root", str(notes), "restore", "backup"],
                       env=daemon.env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Index fresh") and "1. " in r.stdout, r.stdout
    assert r.stdout.splitlines()[-1] == "loaded: []", r.stdout.splitlines()[-1]


def test_path_and_topic_over_their_bounds_are_refused_on_the_socket_by_name(daemon):
    """The MCP schema's bounds on `path` and `topic` were not the socket's: a client of the socket
    (any script, the CLI through the daemon) passed a 100 KB path on to the engine."""
    for method, params, name in (("list", {"path": "p" * 1001}, "path"),
                                 ("search", {"query": "restore", "path": "p" * 1001}, "path"),
                                 ("read", {"path": "p" * 1001}, "path"),
                                 ("history", {"entity": "db1", "topic": "t" * 1001}, "topic")):
        with pytest.raises(DaemonError) as ei:
            daemon.call(method, **params)
        err = ei.value.error
        assert err["code"] == "bad_input" and err["param"] == name, (method, err)
        assert f"{name} is 1001 characters, the most is 1000" in err["message"], err
    assert daemon.call("list", path="p" * 1000)["total"] == 0   # at the bound: answered


def test_an_exact_search_with_no_hit_says_no_strong_match_on_the_socket(daemon):
    out = daemon.call("search", query="zzqqxx-never-written", exact=True)
    assert out["results"] == [] and out["no_strong_match"] is True and out["why_no_strong_match"], out


def test_a_root_moved_away_is_unavailable_and_never_fresh(daemon, notes, tmp_path):
    """A daemon serving a folder that was then moved away (or deleted) said "fresh" in `status` and
    in every answer: it answers from the index as it was, and says the root is gone."""
    from tests.support.cli import run_cli

    notes.rename(tmp_path / "moved-away")
    st = daemon.call("status")
    assert st["roots"][0]["unavailable"] == "is missing (moved or deleted)", st["roots"]
    fr = st["freshness"]
    assert fr["verdict"] == "stale" and "root notes" in fr["reason"] and "missing" in fr["reason"], fr
    assert [c["freshness"]["verdict"] for c in st["corpora"]] == ["stale"]
    out = daemon.search("restore the database")
    assert out["index"]["verdict"] == "stale" and "missing" in out["index"]["reason"], out["index"]
    p = run_cli("status", env=daemon.env, cwd=tmp_path)   # the daemon's corpus, as a person reads it
    assert p.returncode == 0, p.stderr
    assert "freshness: stale — root notes" in p.stdout and "UNAVAILABLE: it is missing" in p.stdout, p.stdout
    assert "fresh," not in p.stdout


def test_a_root_replaced_by_a_link_to_another_folder_is_not_listed_fresh(daemon, notes, tmp_path):
    """The served folder renamed and a symlink to another folder put in its place: `--root PATH`
    now means the other folder (a root is its resolved path) and is answered from its own index,
    while the daemon's corpus of the old folder said "fresh, 9 documents" in `status` and
    `corpora`. It says the path resolves elsewhere now, and is never fresh."""
    from tests.support.cli import run_cli

    other = tmp_path / "other"
    write(other, "o1.md", "# Other\n\nThe wombat shed is behind the garage.\n")
    notes.rename(tmp_path / "notes.real")
    notes.symlink_to(other)
    out = json.loads(run_cli("search", "wombat shed", "--root", str(notes), "--json", env=daemon.env,
                             cwd=tmp_path).stdout)
    assert out["results"][0]["path"] == "o1.md" and out["index"]["verdict"] == "fresh"   # the link is followed
    st = daemon.call("status")   # the daemon's own root, named by its path, follows the link as well
    assert [r["path"] for r in st["roots"]] == [str(other)] and not st["roots"][0].get("unavailable"), st["roots"]
    corpora = {tuple(c["roots"]): c["freshness"] for c in st["corpora"]}
    assert corpora[(str(notes),)]["verdict"] == "stale" and "now resolves to" in corpora[(str(notes),)]["reason"]
    assert corpora[(str(other),)]["verdict"] == "fresh" and corpora[(str(other),)]["documents"] == 1
    p = run_cli("status", env=daemon.env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    line = next(x for x in p.stdout.splitlines() if x.startswith(f"  {notes}:"))
    assert "fresh" not in line and line.startswith(f"  {notes}: stale"), p.stdout
    assert f"now resolves to {other}" in p.stdout
    listed = run_cli("corpora", env=daemon.env, cwd=tmp_path).stdout
    assert f"[{notes} now resolves to {other}: not the folder indexed]" in listed, listed


def test_in_process_answers_over_a_root_that_vanished_are_not_fresh(notes, tmp_path, data_env, tiny_embedder):
    """The engine in the client's process (no daemon): it re-read the files before the answer, found
    the root gone, kept the documents — and called them fresh."""
    from remembrancer.daemon.connect import LocalBackend
    from remembrancer.indexer.config import Config, make_roots

    b = LocalBackend(Config(roots=make_roots([notes])), readonly=False, embedder=tiny_embedder)
    try:
        assert b.call("search", query="restore the database")["index"]["verdict"] == "fresh"
        notes.rename(tmp_path / "moved-away")
        out = b.call("search", query="restore the database")
        assert out["results"] and out["index"]["verdict"] == "stale", out["index"]
        assert "root notes" in out["index"]["reason"] and "missing" in out["index"]["reason"]
        st = b.call("status")
        assert st["freshness"]["verdict"] == "stale" and st["roots"][0]["unavailable"]
    finally:
        b.close()


def test_an_index_whose_root_became_a_link_keeps_what_it_read_and_is_not_fresh(notes, tmp_path, data_env,
                                                                               tiny_embedder):
    """An engine open over a folder that a link to another folder then replaced: a re-read would have
    walked the link and filled this index with the other folder's files under the old folder's name.
    It keeps the documents it read and says why it is stale."""
    from remembrancer.daemon.connect import LocalBackend
    from remembrancer.indexer.config import Config, make_roots

    other = tmp_path / "other"
    write(other, "o1.md", "# Other\n\nThe wombat shed is behind the garage.\n")
    b = LocalBackend(Config(roots=make_roots([notes])), readonly=False, embedder=tiny_embedder)
    try:
        assert b.call("search", query="restore the database")["index"]["verdict"] == "fresh"
        before = b.call("status")["documents"]
        notes.rename(tmp_path / "notes.real")
        notes.symlink_to(other)
        out = b.call("search", query="restore the database")
        assert out["results"] and out["index"]["verdict"] == "stale", out["index"]
        assert f"now resolves to {other}" in out["index"]["reason"]
        st = b.call("status")
        found = b.call("search", query="wombat shed")
        assert st["documents"] == before and "o1.md" not in {r["path"] for r in found["results"] + found.get("best_weak", [])}
    finally:
        b.close()


@pytest.mark.slow
def test_status_and_list_of_a_folder_never_indexed_create_nothing_while_a_daemon_runs(daemon, tmp_path):
    """`status` and `list` write nothing: with a daemon they answer as without one (exit 3, "no
    index yet") instead of the daemon opening, creating and indexing the folder (a mistyped
    `--root ~/code` started a whole tree's first pass). `status` of a folder the daemon is
    indexing right now (opened by a search) still answers."""
    never = tmp_path / "never"
    write(never, "a.md", "# Never\n\nNever indexed.\n")
    without_daemon = {**daemon.env, "REMEMBRANCER_SOCKET": str(tmp_path / "no-daemon.sock"),
                      "REMEMBRANCER_DATA_DIR": str(tmp_path / "other-data")}
    for env in (daemon.env, without_daemon):
        for command in ("status", "list"):
            p = subprocess.run([sys.executable, "-m", "remembrancer", command, "--root", str(never)], env=env,
                               capture_output=True, text=True, timeout=60)
            assert p.returncode == 3, (command, p.stdout, p.stderr)
            assert "no index yet" in p.stderr and "Traceback" not in p.stderr
    roots = [c["roots"] for c in daemon.call("status")["corpora"]]
    assert [str(never)] not in roots and [str(never.resolve())] not in roots
    for data in (tmp_path / "data", tmp_path / "other-data"):
        assert not list(data.glob("indexes/never-*"))


@pytest.mark.slow
def test_a_serve_refused_by_a_daemon_still_starting_says_what_is_known(tmp_path, notes, tiny_model_dir):
    """Two `serve` started at once: the loser arrives while the winner holds the locks but has not
    written who it is, or does not answer yet. It said `(pid ?)`; now it names the pid when the
    lock file has it and otherwise says that a daemon is starting. The winner here is this test
    holding the real lock files (a real daemon leaves that window after a few milliseconds)."""
    import fcntl

    d = DaemonProc(tmp_path, [notes], tiny_model_dir)
    d.sock.parent.mkdir(parents=True, mode=0o700)
    (tmp_path / "data").mkdir()

    def refused() -> str:
        p = subprocess.run(d.cmd, env=d.env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, p.stderr
        assert "Traceback" not in p.stderr and "?" not in p.stderr, p.stderr
        return p.stderr

    with open(str(d.sock) + ".lock", "a+") as socket_lock:   # the socket's: its pid not written yet
        fcntl.flock(socket_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert "a daemon is starting on" in refused()
        socket_lock.write(str(os.getpid()))   # written, not answering yet
        socket_lock.flush()
        said = refused()
        assert f"pid {os.getpid()}" in said and "does not answer yet" in said
    with open(tmp_path / "data" / "daemon.lock", "a+") as data_lock:   # the data dir's: nothing written yet
        fcntl.flock(data_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        said = refused()
        assert "a daemon is starting on the data dir" in said and "second writer" in said
