"""Stopping the daemon by a signal. A signal handler runs on the main thread between two of its
steps, possibly while that thread holds a lock: the handler must take none. It used to call stop(),
whose Event.set() waited for the lock of the very Event.wait() the signal had interrupted — a daemon
told to stop at that instant never exited and kept its corpora's writer locks (found left over
after a test run, 24 minutes after its SIGTERM, in `Event.set` under `Condition._is_owned`)."""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
import time

import pytest

from remembrancer.daemon.server import Daemon, Waker
from remembrancer.indexer.config import Config
from remembrancer.indexer.engine.report import UNFINISHED_PASS


def test_the_signal_handler_completes_while_the_main_thread_holds_its_locks(data_env):
    d = Daemon(Config(roots=[]), sock=data_env / "r" / "d.sock")
    try:
        done = threading.Event()

        def main_thread_at_a_bad_moment():
            # the locks the main loop may hold when a signal lands: an Event's condition (waiting
            # on it, or checking it), the daemon's own lock (the idle check)
            with d._lock, d.stopping._cond:
                d._on_signal()
            done.set()

        t = threading.Thread(target=main_thread_at_a_bad_moment, daemon=True)
        t.start()
        assert done.wait(10), "the signal handler waited for a lock its own thread holds"
        d._wake.wait(0)          # the main loop's next look: it stops
        assert d._signalled and not d.stopping.is_set()
    finally:
        d._shutdown()


def test_a_wake_ends_a_wait_and_wakes_do_not_pile_up():
    w = Waker()
    try:
        done = threading.Event()

        def waiter():
            w.wait(60)
            done.set()

        threading.Thread(target=waiter, daemon=True).start()
        w.set()
        assert done.wait(10), "a wake did not end the wait"
        for _ in range(10_000):   # more than the pipe holds: a full pipe is a pending wake
            w.set()
        w.wait(0)                 # all of them used up at once
        ended = threading.Event()
        threading.Thread(target=lambda: (w.wait(0.05), ended.set()), daemon=True).start()
        assert ended.wait(10)     # a wait with no wake pending ends at its timeout
    finally:
        w.close()


@pytest.mark.slow
def test_a_daemon_stopped_by_sigterm_mid_pass_leaves_its_head_unindexed_and_the_next_start_finishes(
        tmp_path, tiny_model_dir):
    """A real `remembrancer serve` catching up with a commit that added 400 notes gets SIGTERM half-way
    through its pass. The model is behind an embedding server (tests/support/model_server.py) that keeps
    the request embedding any note from note200 on waiting, so the daemon is inside its pass when the
    signal lands — no timing involved; the request is released after the signal, the pass stops at its
    next file and the daemon exits. The stopped pass used to record the new HEAD and the time as
    indexed; it must leave the HEAD of the last whole pass and its unfinished mark, and the next
    start must finish the work. Git via the git CLI."""
    from tests.support.cli import run_cli
    from tests.support.corpus import git, git_init, write
    from tests.support.daemon import DaemonProc, wait_for
    from tests.support.model_server import ModelServer

    repo = tmp_path / "repo"
    git_init(repo)
    write(repo, "first.md", "# First\n\nThe first note.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "one")
    first = git(repo, "rev-parse", "HEAD")
    with ModelServer("--model", str(tiny_model_dir), "--name", "tiny") as server:
        d = DaemonProc(tmp_path, [repo], tiny_model_dir)
        (tmp_path / "config.toml").write_text(f'[model]\nurl = "{server.url}"\nname = "tiny"\n')
        assert run_cli("index", "--root", str(repo), env=d.env).returncode == 0   # a whole pass at `first`
        total = 401
        for i in range(400):   # 4,000 passages: several embedding groups (writer.EMBED_GROUP), each written whole
            held = " (held)" if i >= 200 else ""
            body = "\n\n".join(f"## Part {j} of note {i}\n\nFact {j} about service s{i}: port {i * 10 + j} serves "
                               f"shard {j}{held}." for j in range(10))
            write(repo, f"notes/note{i:03d}.md", f"# Note {i}\n\n{body}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-qm", "four hundred more")
        second = git(repo, "rev-parse", "HEAD")
        catalog = next((tmp_path / "data").glob("indexes/repo-*/catalog.sqlite3"))

        def meta() -> dict:
            db = sqlite3.connect(f"file:{catalog}?mode=ro", uri=True)
            try:
                return {**dict(db.execute("SELECT key, value FROM meta")),
                        "documents": db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]}
            finally:
                db.close()

        server.control(hold="(held)")
        d.start(wait=False)
        try:
            wait_for(lambda: server.stats()["held"] and meta().get(UNFINISHED_PASS), 90)
            d.proc.send_signal(signal.SIGTERM)
            time.sleep(0.5)   # the handler has run: the pass stops at its next file
            server.control(hold="")
            assert d.proc.wait(60) == 0
        finally:
            d.stop()
        after = meta()
        assert 1 < after["documents"] < total, after["documents"]
        assert json.loads(after["heads"]) == {"repo": first}, after["heads"]   # it said `second`
        assert after[UNFINISHED_PASS]
        p = run_cli("status", "--root", str(repo), "--json", env=d.env)   # no daemon: judged in-process
        fr = json.loads(p.stdout)["freshness"]
        assert fr["verdict"] == "stale" and "the last indexing pass did not finish" in fr["reason"], fr
        d.start()   # the next start: its pass finishes the work
        try:
            st = d.call("status")
            assert st["documents"] == total and st["roots"][0]["head_indexed"] == second, st
        finally:
            d.stop()
        assert not meta()[UNFINISHED_PASS]
