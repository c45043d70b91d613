"""The MCP tools over HTTP (`remembrancer serve-http`), driven by the SDK's streamable-HTTP client
against a real server process, with real bearer tokens: the same answers as over stdio, nothing
without a valid token, a revoked token refused at its next request, a scoped token seeing what a
`--scope` session sees, and every call logged under its token's name."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys

import anyio
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.support.cli import run_cli
from tests.support.daemon import poll_until, stop_process
from tests.support.mcp_world import indexed, params, session, world  # noqa: F401  (fixtures)
from tests.support.paths import PROJECT

CALLS = [("search", {"query": "how do I restore the database from a backup"}),
         ("search", {"query": "pgbouncer", "type": ["journal"]}),
         ("read", {"path": "runbooks/postgres/restore.md"}),
         ("read", {"path": "runbooks/postgres/restore.md", "outline": True}),
         ("list_documents", {}),
         ("latest", {"terms": ["postgres"]}),
         ("neighbors", {"path": "hosts/db1.md"}),
         ("history", {"entity": "db1"})]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _token(world, *args: str) -> str:
    r = run_cli("team", "token", *args, "--json", env=world["env"], cwd=PROJECT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["token"]


@pytest.fixture(scope="module")
def http(indexed):
    """Tokens, and `serve-http` over the indexed corpus on a port of its own."""
    tokens = {"alice": _token(indexed, "create", "alice"), "bob": _token(indexed, "create", "bob", "--scope", "runbooks/")}
    port = _free_port()
    log = indexed["base"] / "serve-http.log"
    proc = subprocess.Popen([sys.executable, "-m", "remembrancer", "serve-http", "--root", str(indexed["corpus"]),
                             "--port", str(port)], env=indexed["env"], cwd=str(PROJECT),
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/mcp"
    assert poll_until(lambda: _up(url), 60, 0.2), log.read_text()
    yield {"url": url, "tokens": tokens, "log": log, "world": indexed}
    stop_process(proc)


def _up(url: str) -> bool:
    try:
        return httpx2.post(url, json={}, timeout=2).status_code in (400, 401, 406)
    except httpx2.HTTPError:
        return False


def over_http(url: str, token: str | None, fn):
    async def main():
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with create_mcp_http_client(headers=headers) as client:
            async with streamable_http_client(url, http_client=client) as streams:
                async with ClientSession(streams[0], streams[1]) as s:
                    await s.initialize()
                    return await fn(s)
    return anyio.run(main)


def _answers(results) -> list:
    """Each answer's structured content, less what differs between two calls (timings)."""
    out = []
    for r in results:
        body = dict(r.structured_content or {})
        body.pop("took_ms", None)
        out.append((r.is_error, json.dumps(body, sort_keys=True)))
    return out


def _calls(c):
    async def go():
        return [await c.call_tool(name, args) for name, args in CALLS]
    return go()


def test_http_answers_equal_stdio_answers_for_every_tool(http):
    over_stdio = session(params(http["world"]), _calls)
    got = over_http(http["url"], http["tokens"]["alice"], _calls)
    assert _answers(got) == _answers(over_stdio)
    assert not any(r.is_error for r in got)
    tools = over_http(http["url"], http["tokens"]["alice"], lambda s: s.list_tools())
    assert {t.name for t in tools.tools} == {"search", "read", "list_documents", "index_status", "history",
                                             "latest", "neighbors", "verify"}
    # one description for every token: no warning (it was "the index cannot be read: no valid bearer
    # token", asked before any request), and nothing of the corpus a scoped token may not see
    assert not any("the index cannot be read" in (t.description or "") for t in tools.tools)
    assert "the index cannot be read" not in http["log"].read_text()
    started = [line for line in http["log"].read_text().splitlines() if "MCP over HTTP on" in line]
    assert len(started) == 1 and "WARNING" not in started[0] and "INFO" in started[0], started   # news, not a warning


def test_a_scoped_token_sees_what_a_scoped_session_sees_and_nothing_else(http):
    scoped = params(http["world"])
    scoped.args += ["--scope", "runbooks/"]
    over_stdio = session(scoped, _calls)
    got = over_http(http["url"], http["tokens"]["bob"], _calls)
    assert _answers(got) == _answers(over_stdio)
    out = over_http(http["url"], http["tokens"]["bob"], lambda s: s.call_tool("read", {"path": "hosts/db1.md"}))
    assert out.is_error and "db1" not in json.dumps(out.structured_content).replace("hosts/db1.md", "")
    found = over_http(http["url"], http["tokens"]["bob"], lambda s: s.call_tool("search", {"query": "db1 primary"}))
    assert all(r["path"].startswith("runbooks/") for r in found.structured_content["results"])


def test_without_a_valid_token_nothing_is_answered(http):
    for auth in ({}, {"Authorization": "Bearer rmb_not-a-token"}, {"Authorization": f"Basic {http['tokens']['alice']}"}):
        r = _initialize(http["url"], auth)
        assert r.status_code == 401, (auth, r.status_code)
        assert "restore" not in r.text and "runbooks" not in r.text


def test_a_revoked_token_is_refused_at_its_next_request_without_a_restart(http):
    token = _token(http["world"], "create", "carol")
    assert not over_http(http["url"], token, lambda s: s.call_tool("search", {"query": "backup"})).is_error
    r = run_cli("team", "token", "revoke", "carol", env=http["world"]["env"], cwd=PROJECT)
    assert r.returncode == 0 and "revoked carol" in r.stdout
    assert _initialize(http["url"], {"Authorization": f"Bearer {token}"}).status_code == 401
    assert _initialize(http["url"], {"Authorization": f"Bearer {http['tokens']['alice']}"}).status_code == 200


def _initialize(url: str, auth: dict) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    return httpx2.post(url, json=body, headers={"Accept": "application/json, text/event-stream", **auth}, timeout=10)


def test_each_call_is_logged_under_its_tokens_name(http):
    over_http(http["url"], http["tokens"]["bob"], lambda s: s.call_tool("search", {"query": "restore"}))
    assert poll_until(lambda: "token bob: search" in http["log"].read_text(), 10, 0.2)
    qlog = http["world"]["base"] / "data" / "logs" / "queries.jsonl"
    entries = [json.loads(line) for line in qlog.read_text().splitlines()]
    assert any(e.get("client") == "http:bob" and e.get("tool") == "search" for e in entries)
    assert all(http["tokens"][n] not in http["log"].read_text() + qlog.read_text() for n in ("alice", "bob"))


def test_the_token_file_keeps_hashes_only_and_the_list_never_shows_a_token(http):
    path = http["world"]["base"] / "data" / "http-tokens.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert all(t not in text for t in http["tokens"].values())
    r = run_cli("team", "token", "list", env=http["world"]["env"], cwd=PROJECT)
    assert r.returncode == 0 and "bob: runbooks" in r.stdout and "rmb_" not in r.stdout


def test_serve_http_without_tokens_refuses_to_start(tmp_path, world):
    env = {**world["env"], "REMEMBRANCER_DATA_DIR": str(tmp_path / "data")}
    r = run_cli("serve-http", "--root", str(world["corpus"]), "--port", str(_free_port()), env=env, cwd=PROJECT,
                timeout=60)
    assert r.returncode == 2 and "no tokens" in r.stderr and "team token create" in r.stderr


def test_a_token_file_that_cannot_be_written_is_a_clear_error_and_loses_nothing(tmp_path, world):
    """The file is written whole beside itself, then put in place: when that fails (here its
    temporary file's name is taken by a folder, as a full or read-only disk would fail it) the
    command says so in one line, the token is not created, and the earlier tokens still work."""
    env = {**world["env"], "REMEMBRANCER_DATA_DIR": str(tmp_path / "data")}
    r = run_cli("team", "token", "create", "first", env=env, cwd=PROJECT)
    assert r.returncode == 0, r.stderr
    token = r.stdout.splitlines()[1]
    # shown on stdout alone: stderr goes to logs, which keep no secret
    assert token.startswith("rmb_") and token not in r.stderr and f"Bearer {token}" in r.stdout
    path = tmp_path / "data" / "http-tokens.json"
    before = path.read_text()
    (tmp_path / "data" / "http-tokens.tmp").mkdir()
    r = run_cli("team", "token", "create", "second", env=env, cwd=PROJECT)
    assert r.returncode == 2 and "cannot write the token file" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "nothing was changed" in r.stderr and path.read_text() == before
    r = run_cli("team", "token", "list", env=env, cwd=PROJECT)
    assert r.returncode == 0 and "first" in r.stdout and "second" not in r.stdout


def test_the_http_units_command_serves_the_tools(indexed, tmp_path):
    """`service install --http` writes a unit of its own; what its ExecStart runs (systemd is not
    running here: the line is run as systemd would, `%%` read as `%`, with its Environment=) serves
    the tools to a token, and `service uninstall` removes it with the others."""
    import shlex

    token = _token(indexed, "create", "unit-holder")
    port = _free_port()
    env = {**indexed["env"], "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    r = run_cli("service", "install", "--http", "--root", str(indexed["corpus"]), "--port", str(port),
                "--public-url", "https://memory.example.com", "--no-start", env=env, cwd=PROJECT)
    assert r.returncode == 0, r.stderr
    units = tmp_path / "cfg" / "systemd" / "user"
    text = (units / "remembrancer-http.service").read_text()
    assert "Restart=on-failure" in text and "over HTTP" in text and not (units / "remembrancer.service").exists()
    argv = shlex.split(next(line for line in text.splitlines() if line.startswith("ExecStart="))[len("ExecStart="):])
    argv = [a.replace("%%", "%") for a in argv]
    assert argv[0].startswith("/") and "serve-http" in argv and "https://memory.example.com" in argv
    unit_env = dict(shlex.split(line[len("Environment="):])[0].split("=", 1)
                    for line in text.splitlines() if line.startswith("Environment="))
    log = tmp_path / "unit.log"
    proc = subprocess.Popen(argv, env={**env, **unit_env}, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        assert poll_until(lambda: _up(url), 60, 0.2), log.read_text()
        got = over_http(url, token, lambda c: c.call_tool("search", {"query": "how do I restore the database"}))
        assert not got.is_error and got.structured_content["results"]
    finally:
        stop_process(proc)
    r = run_cli("service", "install", "--http", "--no-start", env=env, cwd=PROJECT)
    assert r.returncode == 2 and "--store URL" in r.stderr and "--root DIR" in r.stderr
    r = run_cli("service", "uninstall", env=env, cwd=PROJECT)
    assert r.returncode == 0 and not list(units.iterdir())
