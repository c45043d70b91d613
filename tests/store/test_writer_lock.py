"""One writer per index, enforced on the data dir and the index dir, not on a socket (issue 27);
the data dir private at every start (issue 31). Real daemons on real sockets, real CLI runs."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from remembrancer.indexer import writelock
from tests.support.cli import run_cli
from tests.support.corpus import write
from tests.support.daemon import DaemonProc, consistent, wait_for


def cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, env=env)


def big_corpus(root: Path, n: int = 400) -> Path:
    for i in range(n):
        write(root, f"d{i:03}.md", f"# Doc {i}\n\n" + "\n\n".join(
            f"Paragraph {j} of document {i} talks about topic{i % 17} and item{j}." for j in range(12)))
    return root


def index_dir_of(d: DaemonProc) -> Path:
    return Path(d.call("status")["index_dir"])


@pytest.mark.slow
def test_a_second_daemon_on_another_socket_is_refused_and_its_clients_use_the_first(tmp_path, notes, tiny_model_dir):
    first = DaemonProc(tmp_path, [notes], tiny_model_dir).start()
    try:
        pid = first.call("status")["daemon"]["pid"]
        other_sock = tmp_path / "run2" / "d.sock"   # a client whose environment names another socket
        env2 = {**first.env, "REMEMBRANCER_SOCKET": str(other_sock)}
        second = subprocess.Popen(first.cmd, env=env2, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: second.poll() is not None or other_sock.exists(), timeout=60)
            assert not other_sock.exists(), "a second daemon serves the same data dir"
            err = second.communicate(timeout=30)[1]
        finally:
            if second.poll() is None:
                second.kill()
                second.wait()
        assert second.returncode == 2
        assert "already serves the data dir" in err and f"pid {pid}" in err and str(first.sock) in err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        # that environment's clients are answered by the first daemon, not by a second writer
        before = first.call("status")["daemon"]["requests"]
        p = cli(env2, "search", "pgBackRest", "--root", str(notes), "--json")
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout)
        assert out["results"] and out["index"]["verdict"] == "fresh"
        assert out["index"]["detail"] != "re-checked against the files just now"   # the in-process engine's words
        assert first.call("status")["daemon"]["requests"] >= before + 2   # this status, and the search
        holder = writelock.holder(index_dir_of(first) / writelock.WRITER_LOCK)
        assert holder["pid"] == pid and holder["by"] == "daemon"
        # and `stop` from that environment stops the daemon it was answered by
        s = cli(env2, "stop")
        assert s.returncode == 0 and f"stopped daemon pid {pid}" in s.stdout, s.stdout + s.stderr
        wait_for(lambda: first.proc.poll() is not None, timeout=30)
    finally:
        first.stop()
    assert "LockBusy" not in first.log.read_text()


@pytest.mark.slow
def test_index_while_the_daemon_ingests_is_done_by_the_daemon(tmp_path, tiny_model_dir):
    root = big_corpus(tmp_path / "big")
    d = DaemonProc(tmp_path, [root], tiny_model_dir)
    d.start(wait=False)
    try:
        wait_for(lambda: (lambda st: st and st["daemon"]["ingesting"])(d.ping()), timeout=60, step=0.02)
        pid = d.call("status")["daemon"]["pid"]
        p = cli(d.env, "index", "--root", str(root))
        assert p.returncode == 0, p.stderr
        assert f"indexed by the running daemon (pid {pid})" in p.stderr
        assert "400 files:" in p.stdout and "Traceback" not in p.stderr
        st = d.wait_fresh(60)
        assert st["documents"] == 400
        assert consistent(d)["documents"] == 400
        assert not list(index_dir_of(d).glob("damaged-*"))
    finally:
        d.stop()
    log = d.log.read_text()
    assert "LockBusy" not in log
    assert not re.search(r"rebuilt from the catalog \((?!0 )", log)   # only the empty index's first open


def test_index_reembed_with_a_daemon_running_says_to_stop_it_first(tmp_path, notes, tiny_model_dir):
    d = DaemonProc(tmp_path, [notes], tiny_model_dir).start()
    try:
        pid = d.call("status")["daemon"]["pid"]
        p = cli(d.env, "index", "--reembed", "--root", str(notes))
    finally:
        d.stop()
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert f"while the daemon (pid {pid}) writes the index" in p.stderr and "`remembrancer stop`" in p.stderr


@pytest.mark.slow
def test_index_waits_while_another_index_run_writes(tmp_path, notes, tiny_model_dir):
    """No daemon: a second `index` waits for the first one's lock and says who it waits for."""
    d = DaemonProc(tmp_path, [notes], tiny_model_dir)   # for its environment only: no daemon runs
    p = cli(d.env, "index", "--root", str(notes))
    assert p.returncode == 0, p.stderr
    index_dir = next((tmp_path / "data" / "indexes").iterdir())
    held = writelock.acquire(index_dir / writelock.WRITER_LOCK, "the index", info={"by": "index"})
    released, waiting = False, None
    try:
        errf = tmp_path / "index.err"
        with open(errf, "w") as err:
            waiting = subprocess.Popen([sys.executable, "-m", "remembrancer", "index", "--root", str(notes)],
                                       env=d.env, stdout=subprocess.PIPE, stderr=err, text=True)
        wait_for(lambda: "waiting for it to finish" in errf.read_text() or waiting.poll() is not None, timeout=60)
        assert waiting.poll() is None, errf.read_text()   # it did not write beside the holder
        assert f"`remembrancer index` (pid {os.getpid()})" in errf.read_text()
        held.release()
        released = True
        out = waiting.communicate(timeout=60)[0]
        assert waiting.returncode == 0, errf.read_text()
        assert "files:" in out
    finally:
        if not released:
            held.release()
        if waiting is not None and waiting.poll() is None:
            waiting.kill()


@pytest.mark.slow
def test_search_while_another_process_writes_answers_from_the_last_index(tmp_path, notes, tiny_model_dir):
    """No daemon, and `index` holds the writer lock: a search does not become a second writer."""
    d = DaemonProc(tmp_path, [notes], tiny_model_dir)
    assert cli(d.env, "index", "--root", str(notes)).returncode == 0
    index_dir = next((tmp_path / "data" / "indexes").iterdir())
    held = writelock.acquire(index_dir / writelock.WRITER_LOCK, "the index", info={"by": "index"})
    try:
        p = cli(d.env, "search", "pgBackRest", "--root", str(notes), "--json")
    finally:
        held.release()
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["results"] and out["index"]["verdict"] == "stale"
    assert f"being written by `remembrancer index` (pid {os.getpid()})" in out["index"]["reason"]


def test_search_while_another_run_builds_the_first_index_says_so(tmp_path, notes, tiny_model_dir, data_env):
    """No index yet and `index` building it: the search neither builds a second one beside it nor
    calls the half-made catalog damaged."""
    from remembrancer.indexer.config import Config, make_roots

    d = DaemonProc(tmp_path, [notes], tiny_model_dir)   # its environment (the same data dir); no daemon runs
    index_dir = Config(roots=make_roots([notes])).index_dir()
    index_dir.mkdir(parents=True)
    held = writelock.acquire(index_dir / writelock.WRITER_LOCK, "the index", info={"by": "index"})
    try:
        p = cli(d.env, "search", "pgBackRest", "--root", str(notes))
    finally:
        held.release()
    assert p.returncode == 3 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert f"`remembrancer index` (pid {os.getpid()}) is building it" in p.stderr
    assert not (index_dir / "catalog.sqlite3").exists()


def _loose_data_dir(tmp_path: Path) -> Path:
    """A data dir made by a user or a tool: 0755 folders, 0644 files."""
    data = tmp_path / "data"
    idx = data / "indexes" / "old-corpus"
    idx.mkdir(parents=True)
    (idx / "catalog.sqlite3").write_bytes(b"")
    (data / "daemon.log").write_text("an old log\n")
    (data / "logs").mkdir()
    (data / "logs" / "queries.jsonl").write_text("{}\n")
    for p in (data, data / "indexes", idx, data / "logs"):
        p.chmod(0o755)
    for p in (idx / "catalog.sqlite3", data / "daemon.log", data / "logs" / "queries.jsonl"):
        p.chmod(0o644)
    return data


def _modes(data: Path) -> dict[str, str]:
    out = {".": oct(stat.S_IMODE(data.stat().st_mode))}
    for here, dirs, files in os.walk(data):
        for name in dirs + files:
            p = Path(here, name)
            out[str(p.relative_to(data))] = oct(stat.S_IMODE(p.lstat().st_mode))
    return out


def test_a_loose_data_dir_is_made_private_when_the_daemon_starts(tmp_path, notes, tiny_model_dir):
    data = _loose_data_dir(tmp_path)
    d = DaemonProc(tmp_path, [notes], tiny_model_dir).start()
    try:
        modes = _modes(data)
    finally:
        d.stop()
    loose = {k: v for k, v in modes.items() if v not in ("0o700", "0o600")}
    assert not loose
    assert modes["."] == modes["indexes"] == modes["indexes/old-corpus"] == modes["logs"] == "0o700"
    assert modes["daemon.log"] == modes["indexes/old-corpus/catalog.sqlite3"] == modes["logs/queries.jsonl"] == "0o600"


def test_a_loose_data_dir_is_made_private_by_a_cli_run(tmp_path, notes, tiny_model_dir):
    data = _loose_data_dir(tmp_path)
    d = DaemonProc(tmp_path, [notes], tiny_model_dir)   # its environment; no daemon runs
    p = cli(d.env, "status", "--root", str(notes))
    assert "Traceback" not in p.stderr
    modes = _modes(data)
    assert modes["."] == modes["indexes/old-corpus"] == "0o700"
    assert modes["daemon.log"] == modes["indexes/old-corpus/catalog.sqlite3"] == modes["logs/queries.jsonl"] == "0o600"


def _catalog_being_created(tmp_path: Path, notes: Path, stage: str):
    """The index dir as a writer leaves it between creating its catalog and writing its schema."""
    import sqlite3

    from remembrancer.indexer.config import Config, make_roots

    config = Config(roots=make_roots([notes]))
    index_dir = config.index_dir()
    index_dir.mkdir(parents=True)
    catalog = index_dir / "catalog.sqlite3"
    if stage == "empty file":
        catalog.write_bytes(b"")
    else:   # WAL on, the first table made, no schema_version yet
        db = sqlite3.connect(catalog)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE documents (id INTEGER PRIMARY KEY)")
        db.commit()
        db.close()
    return config, index_dir


@pytest.mark.parametrize("stage", ["empty file", "no schema version"])
def test_a_reader_while_the_first_index_is_created_hears_no_index_yet_not_damaged(tmp_path, notes, data_env, stage):
    from remembrancer.indexer.engine import Engine
    from remembrancer.indexer.errors import UserError

    config, index_dir = _catalog_being_created(tmp_path, notes, stage)
    held = writelock.acquire(index_dir / writelock.WRITER_LOCK, "the index", info={"by": "index"})
    try:
        with pytest.raises(UserError) as got:
            Engine(config, readonly=True)
    finally:
        held.release()
    assert got.value.code == "no_index" and "is building it" in got.value.message
    assert f"(pid {os.getpid()})" in got.value.message


def test_an_empty_catalog_without_a_writer_is_still_damaged(tmp_path, notes, data_env):
    from remembrancer.indexer.engine import Engine
    from remembrancer.indexer.errors import UserError

    config, _ = _catalog_being_created(tmp_path, notes, "empty file")
    with pytest.raises(UserError) as got:
        Engine(config, readonly=True)
    assert got.value.code == "index_broken" and "the file is empty" in got.value.message


@pytest.mark.slow
def test_an_mcp_server_whose_environment_names_another_socket_uses_the_running_daemon(tmp_path, notes, tiny_model_dir):
    """Claude Desktop launches the MCP server with a bare environment: another socket path, same
    data dir. It must answer through the daemon that writes the index, not start a second one."""
    import anyio
    from mcp import Client as McpClient
    from mcp.client.stdio import StdioServerParameters

    first = DaemonProc(tmp_path, [notes], tiny_model_dir).start()
    try:
        pid = first.call("status")["daemon"]["pid"]
        data = tmp_path / "data"
        data.chmod(0o755)   # loosened by a tool after the daemon started: the MCP server's start tightens it
        (data / "daemon.lock").chmod(0o644)
        other_sock = tmp_path / "run2" / "d.sock"
        env = {k: v for k, v in first.env.items() if k != "XDG_RUNTIME_DIR"}
        params = StdioServerParameters(command=sys.executable, env={**env, "REMEMBRANCER_SOCKET": str(other_sock)},
                                       args=["-m", "remembrancer", "mcp", "--root", str(notes), "--idle-exit", "5"])

        async def main():
            async with McpClient(params, read_timeout_seconds=120) as c:
                st = await c.call_tool("index_status", {})
                r = await c.call_tool("search", {"query": "pgBackRest"})
                return st.structured_content, r.structured_content

        st, out = anyio.run(main)
        assert st["daemon"]["pid"] == pid and st["daemon"]["socket"] == str(first.sock)
        assert out["results"] and out["index"]["verdict"] == "fresh"
        assert not other_sock.exists()
        assert _modes(data)["."] == "0o700" and _modes(data)["daemon.lock"] == "0o600"
    finally:
        first.stop()
