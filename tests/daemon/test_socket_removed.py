"""The daemon's socket deleted under it (a cleaner of /tmp or of the runtime folder, a user): the
daemon listens again at the same path within a few seconds (daemon/server.py SOCKET_CHECK_S), or —
when another process took the path over — exits, releasing the data dir for a daemon that can be
reached. It used to live on unreachable until its idle exit, holding the data dir's lock, so no new
daemon could start and every search failed meanwhile."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket

import pytest

from remembrancer.wire import ping
from tests.support.daemon import DaemonProc, wait_for

BACK_S = 20.0   # generous on a loaded 2-core machine: the daemon looks every SOCKET_CHECK_S


@pytest.fixture
def daemon(tmp_path, notes, tiny_model_dir):
    with DaemonProc(tmp_path, [notes], tiny_model_dir).start() as d:
        yield d


def _back_again(d: DaemonProc, pid: int) -> dict:
    """The status of the same daemon, answering at its socket path again."""
    return wait_for(lambda: (lambda st: st if st and st["daemon"]["pid"] == pid else None)(ping(d.sock)), BACK_S)


@pytest.mark.slow
def test_a_deleted_socket_file_is_bound_again_by_the_same_daemon(daemon):
    pid = daemon.call("status")["daemon"]["pid"]
    with socket.socket(socket.AF_UNIX) as open_before:   # raw: a Client would reconnect by itself
        open_before.connect(str(daemon.sock))
        f = open_before.makefile("rwb")
        daemon.sock.unlink()
        _back_again(daemon, pid)
        f.write(b'{"id": 1, "method": "search", "params": {"query": "pgBackRest"}}\n')
        f.flush()
        assert json.loads(f.readline())["result"]["results"]   # a connection open before went on
    assert daemon.search("pgBackRest restore")["results"]
    assert oct(daemon.sock.stat().st_mode & 0o777) == "0o600"
    wait_for(lambda: "was removed; listening again" in daemon.log.read_text(), BACK_S)   # the log is flushed by the daemon


@pytest.mark.slow
def test_a_deleted_socket_folder_is_made_again(daemon):
    pid = daemon.call("status")["daemon"]["pid"]
    shutil.rmtree(daemon.sock.parent)
    _back_again(daemon, pid)
    assert daemon.search("pgBackRest restore")["results"]
    assert oct(daemon.sock.parent.stat().st_mode & 0o777) == "0o700"
    assert (daemon.sock.parent / (daemon.sock.name + ".lock")).read_text() == str(pid)


@pytest.mark.slow
def test_a_socket_path_another_process_took_over_makes_the_daemon_exit(tmp_path, notes, tiny_model_dir):
    """Another process locks the path's new lock file and binds a socket of its own there (the
    daemon's lock file and socket replaced, each in one rename): the daemon cannot listen there
    again, so it exits — leaving that socket alone — and a new daemon can take the data dir."""
    d = DaemonProc(tmp_path, [notes], tiny_model_dir).start()
    try:
        pid = d.call("status")["daemon"]["pid"]
        lock = d.sock.parent / (d.sock.name + ".lock")
        spare = d.sock.parent / "other.lock"
        with open(spare, "a+") as held, socket.socket(socket.AF_UNIX) as theirs:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.rename(spare, lock)
            theirs.bind(str(d.sock.parent / "other.sock"))
            os.rename(d.sock.parent / "other.sock", d.sock)
            assert d.proc.wait(BACK_S) == 0
            assert d.sock.exists()   # not the daemon's to delete
            assert "another process holds its lock" in d.log.read_text()
        d.sock.unlink()
        lock.unlink()
        with DaemonProc(tmp_path, [notes], tiny_model_dir).start() as new:
            assert new.call("status")["daemon"]["pid"] != pid
            assert new.search("pgBackRest restore")["results"]
    finally:
        d.stop()
