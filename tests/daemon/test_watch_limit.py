"""inotify's watch limit reached: the daemon keeps serving, polls the root it cannot watch
(watchdog's polling observer), says which root it polls and which limit to raise, walks that root
before every answer (so no answer is called fresh over a change it could not see), goes back to
inotify when the limit allows — and inotify's ENOSPC ("No space left on device") is never reported
as a full disk.

The daemon test lowers the limit for real: `serve` runs in a user namespace of its own
(`unshare -Ur`) whose /proc/sys/user/max_inotify_watches it sets below the corpus's folder count;
the kernel then refuses inotify_add_watch with ENOSPC exactly as on a machine whose
fs.inotify.max_user_watches is too small. Where user namespaces are not allowed it is skipped, and
says why. The watcher tests inject the limit where watchdog calls inotify_add_watch(2)."""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from remembrancer.daemon import watch
from remembrancer.daemon.watch import ChangeQueue, Watcher
from remembrancer.daemon.watch_limit import is_watch_limit
from remembrancer.indexer.store.local.catalog import store_fault
from tests.support.cli import run_cli
from tests.support.corpus import write
from tests.support.daemon import DaemonProc, wait_for

NS_LIMIT_FILE = "/proc/sys/user/max_inotify_watches"


def _namespace_problem() -> str | None:
    """Why the watch limit cannot be lowered here (None: it can)."""
    if not sys.platform.startswith("linux"):
        return "inotify is Linux's"
    if shutil.which("unshare") is None:
        return "no `unshare` command (util-linux) on PATH"
    try:
        p = subprocess.run(["unshare", "-Ur", "sh", "-c", f"echo 64 > {NS_LIMIT_FILE}"], capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"`unshare -Ur` failed: {e}"
    if p.returncode != 0:
        return (f"cannot lower {NS_LIMIT_FILE} in a user namespace of its own (unprivileged user namespaces "
                f"disabled?): {p.stderr.strip()}")
    return None


def in_namespace(limit: int, argv: list[str]) -> list[str]:
    """`argv` run in a user namespace whose inotify watch limit is `limit`."""
    return ["unshare", "-Ur", "sh", "-c", f'echo {limit} > {NS_LIMIT_FILE} && exec "$@"', "sh", *argv]


# -- the words ------------------------------------------------------------------------------------
def test_inotify_enospc_is_never_called_a_full_disk(tmp_path):
    """inotify_add_watch's ENOSPC (watchdog words it "inotify watch limit reached"; EMFILE "inotify
    instance limit reached") is its limit: store_fault, which words every "disk is full" the CLI
    and the daemon print, must not take it for a disk — `serve` exited 2 telling the user to free
    disk space. A real ENOSPC from a write still is one."""
    for limit in (OSError(errno.ENOSPC, "inotify watch limit reached"),
                  OSError(errno.EMFILE, "inotify instance limit reached")):
        assert is_watch_limit(limit) is limit
        assert store_fault(limit, tmp_path) is None
        try:
            try:
                raise limit
            except OSError as e:
                raise RuntimeError("opening the corpus failed") from e
        except RuntimeError as wrapped:
            assert store_fault(wrapped, tmp_path) is None
    disk = store_fault(OSError(errno.ENOSPC, "No space left on device"), tmp_path)
    assert disk is not None and disk.code == "store_full"
    assert is_watch_limit(OSError(errno.ENOSPC, "No space left on device")) is None


# -- the watcher of a root past the limit -------------------------------------------------------
@pytest.fixture
def limited_inotify(monkeypatch):
    """A watch budget: past it, watchdog's inotify_add_watch(2) call fails with the kernel's ENOSPC,
    as a lowered fs.inotify.max_user_watches makes it (real inotify below the budget). Injected at
    watchdog's ctypes binding, the one call every watch it adds goes through. The poller walks
    every 0.2 s here (10 s in the daemon), so a test need not wait for it."""
    inotify_c = pytest.importorskip("watchdog.observers.inotify_c")
    if not hasattr(inotify_c, "inotify_add_watch"):
        pytest.skip("this watchdog calls inotify_add_watch elsewhere")
    real, budget = inotify_c.inotify_add_watch, {"left": 1_000}

    def limited(fd, path, mask):
        if budget["left"] <= 0:
            ctypes.set_errno(errno.ENOSPC)
            return -1
        budget["left"] -= 1
        return real(fd, path, mask)

    monkeypatch.setattr(inotify_c, "inotify_add_watch", limited)
    monkeypatch.setattr(watch, "POLL_S", 0.2)
    return budget


def _watches_held() -> int:
    """The inotify watches this process holds now (its fdinfo)."""
    held = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify":
                with open(f"/proc/self/fdinfo/{fd}") as f:
                    held += sum(1 for line in f if line.startswith("inotify wd:"))
        except OSError:
            continue
    return held


def _drain(queue: ChangeQueue) -> None:
    while queue.wait_batch(timeout=0.5) is not None:
        pass


def _changed(queue: ChangeQueue, path: Path) -> bool:
    batch = queue.wait_batch(timeout=0.3)
    return batch is not None and str(path) in batch[0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_a_root_past_the_limit_is_polled_then_watched_again_when_the_limit_allows(tmp_path, limited_inotify):
    """ENOSPC (injected: see limited_inotify) before the root's recursive watch is complete: the root
    is polled instead, named with the limit and its fix; an edit there is reported by the poller;
    an ignored folder's is not (the poller does not walk it). A retry still past the limit keeps it
    polled and holds no watch it added; once the budget allows, the next check moves the root back
    to inotify and stops polling it."""
    root = tmp_path / "notes"
    for i in range(4):
        write(root, f"d{i}/sub/n.md", f"# Note {i}\n")
    write(root, "node_modules/x/readme.md", "# Not a note\n")
    limited_inotify["left"] = 3   # the root and two folders: then the limit
    queue = ChangeQueue()
    w = Watcher([root], queue)
    w.start()
    try:
        assert root in w.polling and root not in w.watched and w.polled() == [root]
        pr = w.problem()
        assert pr["count"] == 1 and pr["roots"] == [str(root)] and pr["poll_s"] == 0.2
        assert "inotify watch limit is reached" in pr["reason"] and "polled, not watched" in pr["message"]
        assert "sudo sysctl fs.inotify.max_user_watches=" in pr["fix"]
        _drain(queue)
        write(root, "d3/sub/edited.md", "# Edited\n")                      # found by the poller
        wait_for(lambda: _changed(queue, root / "d3" / "sub" / "edited.md"), 5)
        write(root, "node_modules/x/other.md", "# Not a note either\n")   # not walked at all
        assert queue.wait_batch(timeout=1.0) is None

        held = _watches_held()
        limited_inotify["left"] = 3   # still past the limit: polled on, the partial watches given back
        w.ensure()
        assert root in w.polling and root not in w.watched and _watches_held() == held

        limited_inotify["left"] = 1_000   # the limit raised: the next check watches it with inotify
        w.ensure()
        assert root in w.watched and not w.polling and w.polled() == [] and w.problem() is None
        _drain(queue)
        write(root, "d2/sub/later.md", "# Later\n")
        wait_for(lambda: _changed(queue, root / "d2" / "sub" / "later.md"), 5)
    finally:
        w.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_a_folder_inotify_cannot_watch_after_the_start_makes_its_root_polled(tmp_path, limited_inotify):
    """The limit reached after the start (injected: see limited_inotify, the budget emptied once
    the root is watched): watchdog logs that it cannot watch a new folder and goes on, which would
    leave that folder's changes unseen. The watcher hears it (watchdog's log) and counts the root
    as polled at once — answers walk it, so none is called fresh over them — and its next check
    polls the root; a change in the new folder is then reported."""
    root = tmp_path / "notes"
    write(root, "a/n.md", "# A\n")
    queue = ChangeQueue()
    w = Watcher([root], queue)
    w.start()
    try:
        assert root in w.watched and w.polled() == []
        limited_inotify["left"] = 0
        (root / "b").mkdir()
        wait_for(lambda: w.polled() == [root], 5)   # named at once: the verdict stops being fresh
        w.ensure()                                   # its next check: polled
        assert root in w.polling and root not in w.watched and w.polled() == [root]
        _drain(queue)
        write(root, "b/n.md", "# B\n")
        wait_for(lambda: _changed(queue, root / "b" / "n.md"), 5)
    finally:
        w.stop()


# -- the daemon, for real ---------------------------------------------------------------------------
def _documents(index_dir: str) -> set[str]:
    db = sqlite3.connect(f"file:{index_dir}/catalog.sqlite3?mode=ro", uri=True)
    try:
        return {r[0] for r in db.execute("SELECT path FROM documents")}
    finally:
        db.close()


@pytest.mark.slow
def test_a_daemon_past_the_watch_limit_keeps_serving_and_says_which_root_it_polls(tmp_path, tiny_model_dir):
    problem = _namespace_problem()
    if problem:
        pytest.skip(problem)
    notes = tmp_path / "notes"
    for i in range(30):
        write(notes, f"d{i:02d}/sub/n.md", f"# Dir note {i}\n\nThe koala-{i} value is {i}.\n")
    limit = 12   # 61 folders need 61 watches
    d = DaemonProc(tmp_path, [notes], tiny_model_dir, extra=["--rescan", "600"])
    d.cmd = in_namespace(limit, d.cmd)
    with d:
        d.start()   # it used to exit 2: "the index cannot be written: the disk holding … is full"
        log = d.log.read_text()
        assert "is full" not in log and "free some space" not in log
        assert "polled, not watched, as the inotify watch limit is reached" in log
        assert f"{NS_LIMIT_FILE} = {limit}" in log and "fs.inotify.max_user_watches" in log

        st = d.call("status")
        polled = st["daemon"]["polled"]
        assert polled["count"] == 1 and polled["roots"] == [str(notes)]
        assert f"{NS_LIMIT_FILE} = {limit}" in polled["reason"]
        assert "sudo sysctl fs.inotify.max_user_watches=" in polled["fix"] and NS_LIMIT_FILE in polled["fix"]
        assert st["freshness"]["verdict"] == "fresh"   # the polled root was walked for this answer
        assert [c["polled"]["roots"] for c in st["corpora"]] == [[str(notes)]]

        # a change deep in the polled root is in the very next answer, and that answer is fresh
        write(notes / "d29" / "sub", "wombat.md", "# Wombat\n\nThe wombat-zebra runbook says restart twice.\n")
        got = d.search("wombat-zebra", exact=True)
        assert got["results"] and got["results"][0]["path"].endswith("wombat.md"), got
        assert got["index"]["verdict"] == "fresh" and "polled root walked just now" in got["index"]["detail"]

        # the poller reports a change by itself (no request made meanwhile): one walk every 10 s
        write(notes, "d00/top.md", "# Top\n\nThe echidna-spine note.\n")
        wait_for(lambda: "d00/top.md" in _documents(st["index_dir"]), 30)

        # status says which root and which limit; doctor, in the same kind of namespace, compares
        # the limit with the folders needed and names the namespace's own limit
        out = run_cli("status", "--root", str(notes), env=d.env)
        assert out.returncode == 0, out.stderr
        assert "polled: 1 root is polled" in out.stdout and f"  {notes}\n" in out.stdout
        assert "fix: raise the inotify" in out.stdout
        doc = subprocess.run(in_namespace(limit, [sys.executable, "-m", "remembrancer", "doctor", "--root", str(notes)]),
                             env=d.env, capture_output=True, text=True, timeout=120)
        said = doc.stdout + doc.stderr
        assert "[FAIL] inotify: " in said and f"{NS_LIMIT_FILE} = {limit}" in said, said
        assert "the roots need 61" in said and "polls each root it cannot watch" in said, said
        assert "[WARN] watching " in said and "polled, not watched" in said, said
        outside = run_cli("doctor", "--root", str(notes), env=d.env)   # the machine's limit is enough here
        assert "[  OK] inotify: " in outside.stdout + outside.stderr
        assert d.proc.poll() is None


def test_doctor_asks_the_daemon_once_and_reads_the_limits_once_per_report(tmp_path, data_env, monkeypatch):
    """`doctor` pings the daemon once: its socket check and its polled-roots check read one answer.
    A polled-roots report reads the limits (/proc) once: its reason and its fix name one reading."""
    from remembrancer.daemon import doctor, watch_limit

    monkeypatch.setenv("REMEMBRANCER_CONFIG", str(tmp_path / "config.toml"))   # none: the defaults
    polled = {"message": "1 root is polled, not watched", "roots": [str(tmp_path)], "fix": "raise it"}
    pings = []
    monkeypatch.setattr(doctor, "socket_path", lambda: tmp_path / "sock")
    monkeypatch.setattr(doctor, "check_socket_owner", lambda sock: None)
    from remembrancer.daemon.connect import this_build

    monkeypatch.setattr(doctor, "ping", lambda sock: pings.append(sock) or {
        "daemon": {"pid": 1, "build": this_build()}, "corpora": [{"roots": [str(tmp_path)], "polled": polled}]})
    (tmp_path / "sock").touch(mode=0o600)
    monkeypatch.setattr(doctor, "_model_check", lambda cfg, err: doctor._check("model", "OK", "not loaded here"))
    checks = {c["check"]: c for c in doctor.run_checks([str(tmp_path)])}
    assert len(pings) == 1, pings
    assert checks["daemon"]["status"] == "OK" and "pid 1" in checks["daemon"]["detail"]
    if sys.platform.startswith("linux"):
        assert checks[f"watching {tmp_path}"]["status"] == "WARN"

    reads = []
    real = watch_limit.limits
    monkeypatch.setattr(watch_limit, "limits", lambda: reads.append(1) or real())
    w = Watcher([tmp_path], ChangeQueue())
    w.polling[tmp_path] = None   # as a root past the limit is held (no observer started here)
    pr = w.problem()
    assert pr["roots"] == [str(tmp_path)] and "inotify watch limit is reached" in pr["reason"]
    assert len(reads) == 1, reads
