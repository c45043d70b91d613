"""Finding a corpus's repository must not take references from None.

pygit2 1.21's `discover_repository` returns None on a miss without a reference: each call on a
plain folder lowers None's reference count by one, and the daemon (which asks on every status
and search) died with `Fatal Python error: none_dealloc` after some thousands of requests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from remembrancer.indexer.memory.commits import CommitChecker
from remembrancer.indexer.ingest.corpus import discover_repo, open_repo
from tests.support.corpus import git, git_init, write

CALLS = 2000


def _none_refs_lost(fn) -> int:
    """References to None lost over CALLS calls: the least of three tries, since None's count is
    process-wide and a thread an earlier test left running moves it too (by tens or hundreds,
    either way); the bug loses exactly CALLS on every try. Other threads are held off meanwhile."""
    fn()
    lost = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(30.0)   # other threads wait while we count (unless a call releases the GIL)
    try:
        for _ in range(3):
            before = sys.getrefcount(None)
            for _ in range(CALLS):
                fn()
            lost.append(before - sys.getrefcount(None))
    finally:
        sys.setswitchinterval(interval)
    return min(lost, key=abs)


def test_a_plain_folder_takes_no_reference_from_none(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert open_repo(plain) is None
    assert discover_repo(plain) is None
    assert _none_refs_lost(lambda: open_repo(plain)) < CALLS // 10   # was exactly CALLS


def test_commit_lookup_on_a_plain_folder_takes_no_reference_from_none(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert CommitChecker._open(plain).repo is None
    assert _none_refs_lost(lambda: CommitChecker._open(plain)) < CALLS // 10


def test_discovery_still_searches_upward(tmp_path):
    repo = tmp_path / "repo"
    git_init(repo)
    write(repo, "sub/dir/a.md", "# A\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a")
    found = open_repo(repo / "sub" / "dir")
    assert found is not None and Path(found.workdir).resolve() == repo.resolve()
    assert CommitChecker._open(repo / "sub").repo is not None


STATUS_CALLS = 12_000   # the daemon starts with ~17k references to None; each status took 3 before


@pytest.mark.slow
def test_daemon_on_a_plain_folder_survives_many_requests(tmp_path, tiny_model_dir):
    """The real daemon, a plain (non-git) folder, one client asking `status` over and over: before
    the fix the daemon died of `none_dealloc` after ~5,500 requests (bench_robustness `latency`)."""
    from tests.support.daemon import DaemonProc

    root = tmp_path / "notes"
    for i in range(3):
        write(root, f"n{i}.md", f"# Note {i}\n\nabout restoring the database, part {i}\n")
    d = DaemonProc(tmp_path, [root], tiny_model_dir).start()
    try:
        from remembrancer.wire import Client

        with Client(d.sock, timeout=30) as c:
            for _ in range(STATUS_CALLS):
                c.call("status")
            assert c.call("search", query="restoring the database")["results"]
        assert d.proc.poll() is None
    finally:
        d.stop()
    assert "Fatal Python error" not in d.log.read_text()
