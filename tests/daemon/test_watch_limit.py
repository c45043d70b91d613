"""inotify's watch limit reached: the daemon keeps serving, watches what it can, says which
folders it does not watch and which limit to raise, rescans those folders (periodically, and before
every answer, so no answer is called fresh over a change it could not see) — and inotify's ENOSPC
("No space left on device") is never reported as a full disk.

The daemon test lowers the limit for real: `serve` runs in a user namespace of its own
(`unshare -Ur`) whose /proc/sys/user/max_inotify_watches it sets below the corpus's folder count;
the kernel then refuses inotify_add_watch with ENOSPC exactly as on a machine whose
fs.inotify.max_user_watches is too small. Where user namespaces are not allowed it is skipped, and
says why."""

from __future__ import annotations

import errno
import glob
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remembrancer.daemon import inotify
from remembrancer.daemon.inotify import PartialWatch, WatchLimit, is_watch_limit
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
    """inotify_add_watch's ENOSPC (watchdog words it "inotify watch limit reached"; our own watcher
    raises WatchLimit) is its watch limit: store_fault, which words every "disk is full" the CLI and
    the daemon print, must not take it for a disk — `serve` exited 2 telling the user to free disk
    space. A real ENOSPC from a write still is one."""
    for limit in (OSError(errno.ENOSPC, "inotify watch limit reached"), WatchLimit(errno.ENOSPC, str(tmp_path))):
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
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_a_partial_watch_watches_what_the_limit_allows_and_names_the_rest(tmp_path, monkeypatch):
    """Real inotify; the limit is injected at the one seam every watch goes through
    (inotify.add_watch, which calls inotify_add_watch(2)): past `budget` watches it raises the
    kernel's ENOSPC, as a lowered fs.inotify.max_user_watches would. The folders nearest the root
    are watched (breadth first), the rest are named top-most; a folder created in a watched one is
    watched; ignored folders cost no watch; raising the limit watches the rest at the next retry."""
    root = tmp_path / "notes"
    for i in range(6):
        write(root, f"d{i}/sub/n.md", f"# Note {i}\n")
    write(root, "node_modules/x/readme.md", "# Not a note\n")
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "objects" / "ab").mkdir(parents=True)
    real, budget, added = inotify.add_watch, {"left": 6}, []

    def limited(fd, path, mask=inotify.MASK):
        if budget["left"] <= 0:
            raise WatchLimit(errno.ENOSPC, path)
        budget["left"] -= 1
        added.append(path)
        return real(fd, path, mask)

    monkeypatch.setattr(inotify, "add_watch", limited)
    seen: list[tuple[str, bool]] = []
    overflows = []
    pw = PartialWatch(root, lambda p, is_dir: seen.append((p, is_dir)), lambda: overflows.append(1),
                      skip=frozenset({"node_modules", ".git"}))
    try:
        # root, .git/info, d0..d3 — then the limit: d4, d5 and every sub/ are left, each named once
        assert added == [str(root), str(root / ".git" / "info"), *(str(root / f"d{i}") for i in range(4))]
        assert pw.unwatched() == sorted([str(root / "d4"), str(root / "d5"), *(str(root / f"d{i}" / "sub") for i in range(4))])
        assert pw.error is not None and pw.error.errno == errno.ENOSPC
        assert not any("node_modules" in p or "objects" in p for p in added)

        write(root, "d1/edited.md", "# Edited\n")            # a watched folder: its event arrives
        wait_for(lambda: (str(root / "d1" / "edited.md"), False) in seen, 5)
        write(root, "d5/sub/unseen.md", "# Unseen\n")        # an unwatched one: no event (the rescan's job)
        time.sleep(0.3)
        assert not any("unseen" in p for p, _ in seen)

        budget["left"] = 1
        (root / "d2" / "new").mkdir()                        # created in a watched folder: watched at once
        wait_for(lambda: (str(root / "d2" / "new"), True) in seen, 5)
        wait_for(lambda: str(root / "d2" / "new") in added, 5)
        write(root, "d2/new/n.md", "# New\n")
        wait_for(lambda: (str(root / "d2" / "new" / "n.md"), False) in seen, 5)

        budget["left"] = 100                                 # the limit raised: the retry watches the rest
        pw.retry()
        assert pw.unwatched() == [] and pw.error is None
        write(root, "d5/sub/seen.md", "# Seen\n")
        wait_for(lambda: (str(root / "d5" / "sub" / "seen.md"), False) in seen, 5)
        assert not overflows
    finally:
        pw.stop()


# -- the daemon, for real ---------------------------------------------------------------------------
def _documents(index_dir: str) -> set[str]:
    db = sqlite3.connect(f"file:{index_dir}/catalog.sqlite3?mode=ro", uri=True)
    try:
        return {r[0] for r in db.execute("SELECT path FROM documents")}
    finally:
        db.close()


@pytest.mark.slow
def test_a_daemon_past_the_watch_limit_keeps_serving_and_says_which_folders_it_rescans(tmp_path, tiny_model_dir):
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
        assert "not watched, as the inotify watch limit is reached" in log
        assert f"{NS_LIMIT_FILE} = {limit}" in log and "fs.inotify.max_user_watches" in log

        st = d.call("status")
        unwatched = st["daemon"]["unwatched"]
        # breadth first: the root and the first d… folders are watched; the rest are named top-most
        # (d11 … d29, and the sub/ of each watched one: 30 with these 12 watches)
        assert 61 - limit - 31 <= unwatched["count"] <= 61 - limit
        listed = [Path(f) for f in unwatched["folders"]]
        assert not any(a != b and a.is_relative_to(b) for a in listed for b in listed)
        assert f"{NS_LIMIT_FILE} = {limit}" in unwatched["reason"]
        assert "sudo sysctl fs.inotify.max_user_watches=" in unwatched["fix"] and NS_LIMIT_FILE in unwatched["fix"]
        assert st["freshness"]["verdict"] == "fresh"   # its unwatched folders were walked for this answer
        assert str(notes / "d29") in unwatched["folders"] or unwatched["count"] > len(unwatched["folders"])
        assert [c["unwatched"]["count"] for c in st["corpora"]] == [unwatched["count"]]

        # a change in an unwatched folder is in the very next answer, and that answer is fresh
        folder = Path(unwatched["folders"][-1])
        write(folder, "wombat.md", "# Wombat\n\nThe wombat-zebra runbook says restart twice.\n")
        got = d.search("wombat-zebra", exact=True)
        assert got["results"] and got["results"][0]["path"].endswith("wombat.md"), got
        assert got["index"]["verdict"] == "fresh" and "unwatched folders rescanned" in got["index"]["detail"]

        # the watched part still reports its changes by itself (no request made meanwhile)
        write(notes, "top.md", "# Top\n\nThe echidna-spine note.\n")
        wait_for(lambda: "top.md" in _documents(st["index_dir"]), 10)

        # status says which folders and which limit; doctor, in the same kind of namespace, compares
        # the limit with the folders needed and names the namespace's own limit
        out = run_cli("status", "--root", str(notes), env=d.env)
        assert out.returncode == 0, out.stderr
        assert "not watched: " in out.stdout and str(folder) in out.stdout and "fix: raise the inotify" in out.stdout
        doc = subprocess.run(in_namespace(limit, [sys.executable, "-m", "remembrancer", "doctor", "--root", str(notes)]),
                             env=d.env, capture_output=True, text=True, timeout=120)
        said = doc.stdout + doc.stderr
        assert "[FAIL] inotify: " in said and f"{NS_LIMIT_FILE} = {limit}" in said, said
        assert "the roots need 61" in said, said
        assert "[WARN] watching " in said and "not watched" in said, said
        outside = run_cli("doctor", "--root", str(notes), env=d.env)   # the machine's limit is enough here
        assert "[  OK] inotify: " in outside.stdout + outside.stderr
        assert d.proc.poll() is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_a_folder_watchdog_cannot_watch_after_the_start_is_rescanned_then_watched_folder_by_folder(tmp_path, monkeypatch):
    """The limit reached after the start: watchdog logs that it cannot watch a new folder and goes
    on, which would leave that folder's changes unseen. The watcher hears it (watchdog's log), counts
    the folder as unwatched at once, and at its next check watches the root folder by folder.
    The limit is injected where watchdog calls inotify_add_watch(2) (its ctypes binding): ENOSPC
    past a budget, as the kernel returns it."""
    import ctypes

    inotify_c = pytest.importorskip("watchdog.observers.inotify_c")
    if not hasattr(inotify_c, "inotify_add_watch"):
        pytest.skip("this watchdog calls inotify_add_watch elsewhere")
    from remembrancer.daemon.watch import ChangeQueue, Watcher

    root = tmp_path / "notes"
    write(root, "a/n.md", "# A\n")
    real, budget = inotify_c.inotify_add_watch, {"left": 1_000}

    def limited(fd, path, mask):
        if budget["left"] <= 0:
            ctypes.set_errno(errno.ENOSPC)
            return -1
        budget["left"] -= 1
        return real(fd, path, mask)

    monkeypatch.setattr(inotify_c, "inotify_add_watch", limited)
    queue = ChangeQueue()
    w = Watcher([root], queue)
    w.start()
    try:
        assert root in w.watched and w.unwatched() == []
        budget["left"] = 0
        (root / "b").mkdir()
        new = str(root / "b")
        wait_for(lambda: w.unwatched() == [Path(new)], 5)   # named at once: the verdict stops being fresh
        budget["left"] = 1_000
        w.ensure()                                             # its next check: folder by folder
        assert root in w.partial and root not in w.watched and w.unwatched() == []
        while queue.wait_batch(timeout=0.3) is not None:
            pass
        write(root, "b/n.md", "# B\n")
        batch = wait_for(lambda: queue.wait_batch(timeout=0.3), 5)
        assert str(root / "b" / "n.md") in batch[0]
    finally:
        w.stop()
