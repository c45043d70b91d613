"""A real `remembrancer serve` process on a real Unix socket, and the waits around it — one copy for
every test that needs a daemon (it is started, asked, and stopped at teardown the same way)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from remembrancer.wire import Client, ping
from tests.support.env import remembrancer_env


def poll_until(pred, timeout: float, step: float = 0.2):
    """`pred()`'s first truthy value within `timeout`, else its last (falsy) one: for a caller that
    decides what running out of time means (an assert with its own message, or nothing at teardown)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def stop_process(proc: subprocess.Popen, grace: float = 10) -> None:
    """SIGTERM, as a service manager stops a daemon; killed if it has not exited after `grace` s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_for(pred, timeout=20.0, step=0.1):
    """`pred()`'s first truthy value; fails the test when there is none within `timeout`."""
    v = poll_until(pred, timeout, step)
    if not v:
        raise AssertionError("condition not met in time")
    return v


class DaemonProc:
    def __init__(self, tmp: Path, roots: list[Path], model_dir: Path, extra=()):
        self.sock = tmp / "run" / "d.sock"
        self.env = remembrancer_env(data=tmp / "data", socket=self.sock, config=tmp / "config.toml")
        (tmp / "config.toml").write_text(f'[model]\npath = "{model_dir}"\n')
        self.cmd = [sys.executable, "-m", "remembrancer", "serve", *extra]
        for r in roots:
            self.cmd += ["--root", str(r)]
        self.log = tmp / "daemon.log"
        self.proc = None

    def start(self, wait=True):
        self.proc = subprocess.Popen(self.cmd, env=self.env, stdout=open(self.log, "ab"), stderr=subprocess.STDOUT)
        if wait:
            wait_for(lambda: self.sock.exists() and self.ping())
            self.wait_fresh()
        return self

    def ping(self):
        try:
            return self.call("status")
        except Exception:
            return None

    def call(self, method, **params):
        with Client(self.sock, timeout=30) as c:
            return c.call(method, **params)

    def wait_fresh(self, timeout=30.0):
        def fresh():
            st = self.ping()
            return st if st and st["freshness"]["verdict"] == "fresh" and not st["daemon"]["ingesting"] else None
        return wait_for(fresh, timeout)

    def search(self, q, **kw):
        return self.call("search", query=q, **kw)

    def stop(self):
        if self.proc:
            stop_process(self.proc)

    def __enter__(self) -> "DaemonProc":
        return self

    def __exit__(self, kind, *_) -> None:
        """Stopped; a daemon that logged a traceback fails the test (unless it failed already)."""
        self.stop()
        if kind is None:
            assert "Traceback" not in self.log.read_text()


def consistent(d: DaemonProc) -> dict:
    """Catalog, tantivy and hnswlib agree: same sections, same passages, no duplicates."""
    st = d.call("status")
    db = sqlite3.connect(f"file:{st['index_dir']}/catalog.sqlite3?mode=ro", uri=True)
    paths = [r[0] for r in db.execute("SELECT path FROM documents")]
    assert len(paths) == len(set(paths))
    passages = {r[0] for r in db.execute("SELECT id FROM passages")}
    chunks = db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    missing_vec = db.execute("SELECT COUNT(*) FROM passages p LEFT JOIN embeddings e ON e.text_sha=p.text_sha"
                             " WHERE e.text_sha IS NULL").fetchone()[0]
    gen = int(db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0])
    # After a targeted update the vector file is written once the daemon is quiet (daemon/updates.py)
    meta_file = Path(st["index_dir"], "vectors/vectors.json")
    meta = wait_for(lambda: (lambda m: m if m["generation"] == gen else None)(json.loads(meta_file.read_text())), 20)
    assert set(meta["live"]) == passages
    assert missing_vec == 0
    assert st["fulltext_generation"] == st["vectors_generation"] == gen
    import tantivy
    idx = tantivy.Index.open(str(Path(st["index_dir"]) / "fulltext"))
    assert idx.searcher().num_docs == chunks
    db.close()
    return {"documents": len(paths), "passages": len(passages)}


def stop_daemon_at(sock: Path, timeout: float = 10) -> None:
    """Stop the daemon serving `sock` (one a test's clients started on demand) and wait for its
    socket to go."""
    st = ping(sock)
    if st is not None and st.get("daemon"):
        os.kill(st["daemon"]["pid"], signal.SIGTERM)
        poll_until(lambda: not sock.exists(), timeout)


def stdio_mcp(tmp: Path, model_dir: Path, *args: str):
    """(server parameters, socket) of a real `remembrancer mcp --idle-exit 5 ARGS…` over stdio, with a
    data dir, config (the given model) and socket of its own under `tmp`; stop its daemon with
    stop_daemon_at(socket)."""
    from mcp.client.stdio import StdioServerParameters

    sock = tmp / "r" / "d.sock"
    (tmp / "config.toml").write_text(f'[model]\npath = "{model_dir}"\n')
    env = remembrancer_env(data=tmp / "data", socket=sock, config=tmp / "config.toml")
    return StdioServerParameters(command=sys.executable, args=["-m", "remembrancer", "mcp", "--idle-exit", "5", *args],
                                 env=env, cwd=str(tmp)), sock


def mcp_calls(server, sock: Path, calls: list[tuple[str, dict]]):
    """(the tools by name, each call's result) of one stdio MCP session with the real SDK client;
    the daemon it started is stopped after."""
    import anyio
    from mcp import Client

    async def main():
        async with Client(server, read_timeout_seconds=120) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            return tools, [await c.call_tool(name, args) for name, args in calls]
    try:
        return anyio.run(main)
    finally:
        stop_daemon_at(sock)


MCP_HELLO = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]


def raw_mcp(server, sock: Path, messages: list[dict], timeout: float = 60) -> tuple[dict, str]:
    """(each request's reply by id, stderr) of one real stdio MCP session (stdio_mcp's parameters)
    spoken to in raw JSON-RPC — for what the SDK's client cannot send, such as a lone surrogate
    (json.dumps writes it as its escape). After the handshake the messages go one at a time, each
    request's reply awaited `timeout` s: one never answered has no entry (and the session goes on).
    The daemon it started is stopped after."""
    import queue
    import tempfile
    import threading

    err = tempfile.TemporaryFile()
    proc = subprocess.Popen([server.command, *server.args], env=server.env, cwd=server.cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=err)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    replies: dict = {}
    try:
        for m in [*MCP_HELLO, *messages]:
            proc.stdin.write((json.dumps(m) + "\n").encode())
            proc.stdin.flush()
            deadline = time.monotonic() + timeout
            while "id" in m and m["id"] not in replies and deadline > time.monotonic():
                try:
                    reply = json.loads(lines.get(timeout=deadline - time.monotonic()))
                except queue.Empty:
                    break
                replies[reply.get("id")] = reply
        proc.stdin.close()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stop_daemon_at(sock)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        err.close()
    return replies, stderr
