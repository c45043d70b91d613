"""Conversations served live: a real `serve --conversations` daemon on a real socket watches the
transcript folder (watchdog) and a new exchange appended to a session is searchable moments later;
a real `remembrancer mcp --root NOTES --conversations DIR` answers `search` with `corpus` over stdio."""

from __future__ import annotations

import json
import shutil
import sys
import time

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.support.daemon import DaemonProc, stop_daemon_at, wait_for
from tests.support.env import remembrancer_env
from tests.support.paths import EXAMPLES
from tests.support.transcripts import Session


@pytest.fixture
def world(tmp_path):
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLES, notes)
    projects = tmp_path / "projects"
    s = Session(projects, branch="fix/uploads")
    s.prompt("Why do uploads to the eu bucket fail with SignatureDoesNotMatch?")
    s.tool("Bash", {"command": "aws s3 cp x s3://uploads-eu"}, "An error occurred (SignatureDoesNotMatch)",
           is_error=True)
    s.says("The clock on the worker drifted by 20 minutes; we enabled chrony and the uploads work again.")
    return {"notes": notes, "projects": projects, "session": s, "tmp": tmp_path}


def _search(d: DaemonProc, world, **params):
    return d.call("search", roots=[str(world["notes"])], conversations=[str(world["projects"])], **params)


@pytest.mark.slow
def test_an_appended_exchange_is_searchable_moments_later(world, tiny_model_dir):
    d = DaemonProc(world["tmp"], [world["notes"]], tiny_model_dir,
                   extra=("--conversations", str(world["projects"]))).start()
    try:
        first = _search(d, world, query="SignatureDoesNotMatch chrony", corpus="conversations")
        assert first["results"][0]["session_id"] == world["session"].session_id
        st = d.call("status")
        assert {tuple(c["roots"]) for c in st["corpora"]} == {
            (str(world["notes"].resolve()),), (f"conversations:{world['projects'].resolve()}",)}
        s = world["session"]
        t0 = time.monotonic()
        s.prompt("Is the zebracorn feature flag still on?")
        s.says("Yes, zebracorn stays on until the March release.")

        def found():
            out = _search(d, world, query="zebracorn feature flag", corpus="conversations")
            return out if any("zebracorn" in (r.get("content") or "") for r in out["results"]) else None
        out = wait_for(found, timeout=10, step=0.05)
        took = time.monotonic() - t0
        hit = next(r for r in out["results"] if "zebracorn" in (r.get("content") or ""))
        assert hit["uuid"] == s.uuids[-2] and hit["branch"] == "fix/uploads"
        print(f"appended exchange searchable after {took:.2f} s")   # bench/ measures it; here only that it happens
        notes = _search(d, world, query="zebracorn feature flag")   # notes: untouched by conversations
        assert not any("zebracorn" in (r.get("content") or "") for r in notes.get("results") or [])
        both = _search(d, world, query="restore the database from a backup", corpus="all")
        assert {r.get("corpus") for r in both["results"]} <= {"notes", "conversations"}
        assert both["index"]["verdict"] and both["conversations_index"]["verdict"]
    finally:
        d.stop()


@pytest.mark.slow
def test_a_value_an_appended_exchange_gives_away_leaves_the_earlier_exchanges(world, tiny_model_dir):
    """The daemon reads a grown transcript by its tail; when the new exchange gives a value away as a
    secret (`export PARTNER_API_KEY=…`), the earlier exchange that showed it bare loses it too: in
    search answers, an exact search, and every file under the data dir."""
    value = "Pv5Nq2Xr8Tz4Lk7Wm3"
    d = DaemonProc(world["tmp"], [world["notes"]], tiny_model_dir,
                   extra=("--conversations", str(world["projects"]))).start()
    try:
        s = world["session"]
        s.prompt("the partner api keeps answering 401, can you check what key the client sends")
        s.tool("Bash", {"command": "grep -rn partner config/"}, f"config/partner.yml:3:  header_value: {value}")
        s.says(f"The client sends {value} in the X-Partner header.")
        s.prompt("unrelated: bump the eslint version")
        s.says("eslint bumped.")
        wait_for(lambda: _search(d, world, query=value, exact=True, corpus="conversations")["results"], timeout=10)
        s.prompt("ok, rotate it: the portal gave us a new key")
        s.tool("Bash", {"command": f"export PARTNER_API_KEY={value} && ./scripts/check-partner.sh"}, "new key active")
        s.says("Rotated the partner key.")
        wait_for(lambda: not _search(d, world, query=value, exact=True, corpus="conversations")["results"],
                 timeout=10, step=0.05)
        out = _search(d, world, query="partner api 401 which key does the client send", corpus="conversations")
        hit = next(r for r in out["results"] if "X-Partner" in (r.get("content") or ""))
        assert "The client sends [REDACTED:" in hit["content"] and value not in json.dumps(out)

        def no_file_holds_it():   # the catalog is compacted after the write that answers already
            blob = b"".join(p.read_bytes() for p in (world["tmp"] / "data").rglob("*") if p.is_file())
            return value.encode() not in blob and value.lower().encode() not in blob
        wait_for(no_file_holds_it, timeout=10)
    finally:
        d.stop()


@pytest.mark.slow
def test_mcp_with_notes_and_conversations_answers_search_with_a_corpus(world, tiny_model_dir):
    tmp = world["tmp"]
    sock = tmp / "r" / "d.sock"
    (tmp / "config.toml").write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    env = remembrancer_env(data=tmp / "data", socket=sock, config=tmp / "config.toml")
    server = StdioServerParameters(command=sys.executable, args=[
        "-m", "remembrancer", "mcp", "--idle-exit", "5", "--root", str(world["notes"]),
        "--conversations", str(world["projects"])], env=env, cwd=str(tmp))

    async def main():
        async with Client(server, read_timeout_seconds=120) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            schema = tools["search"].input_schema["properties"]["corpus"]
            assert 'corpus="conversations"' in tools["search"].description and world["projects"].name in \
                tools["search"].description
            talk = await c.call_tool("search", {"query": "SignatureDoesNotMatch chrony", "corpus": "conversations"})
            read = await c.call_tool("read", {"path": world["session"].rel, "uuid": world["session"].uuids[-1]})
            bad = await c.call_tool("search", {"query": "x", "corpus": "everything"})
            return schema, talk, read, bad
    try:
        schema, talk, read, bad = anyio.run(main)
    finally:
        stop_daemon_at(sock)
    assert schema["enum"] == ["notes", "conversations", "commits", "code", "all"] and schema["default"] == "notes"
    best = talk.structured_content["results"][0]   # the one exchange there is
    assert best["session_id"] == world["session"].session_id and best["branch"] == "fix/uploads"
    assert "chrony" in talk.content[0].text and f"session {world['session'].session_id}" in talk.content[0].text
    assert "we enabled chrony" in read.structured_content["content"]
    assert bad.is_error and "corpus" in bad.content[0].text


@pytest.mark.slow
def test_mcp_with_conversations_alone_serves_them(world, tiny_model_dir):
    """No notes folder anywhere (no --root, no configured roots, the working folder not indexed):
    the session serves its conversations alone, through a daemon started on demand."""
    tmp = world["tmp"]
    sock = tmp / "r2" / "d.sock"
    (tmp / "config.toml").write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    env = remembrancer_env(data=tmp / "data2", socket=sock, config=tmp / "config.toml")
    server = StdioServerParameters(command=sys.executable, args=[
        "-m", "remembrancer", "mcp", "--idle-exit", "5", "--conversations", str(world["projects"])],
        env=env, cwd=str(tmp))

    async def main():
        async with Client(server, read_timeout_seconds=120) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            plain = await c.call_tool("search", {"query": "SignatureDoesNotMatch chrony"})
            talk = await c.call_tool("search", {"query": "SignatureDoesNotMatch chrony", "corpus": "conversations"})
            both = await c.call_tool("search", {"query": "SignatureDoesNotMatch chrony", "corpus": "all"})
            read = await c.call_tool("read", {"path": world["session"].rel, "uuid": world["session"].uuids[-1]})
            return tools, plain, talk, both, read
    try:
        tools, plain, talk, both, read = anyio.run(main)
    finally:
        stop_daemon_at(sock)
    assert 'corpus="conversations"' in tools["search"].description
    for answer in (plain, talk, both):
        assert not answer.is_error, answer.content[0].text
        best = answer.structured_content["results"][0]
        assert best["session_id"] == world["session"].session_id
    assert "no notes folder in this session" in plain.content[0].text
    assert "we enabled chrony" in read.structured_content["content"]


@pytest.mark.slow
def test_the_command_line_with_conversations_alone_starts_the_daemon_and_answers(world, tiny_model_dir):
    """`remembrancer search --conversations DIR --corpus conversations` with no notes folder and no
    daemon refused with "no corpus roots given … pass --root": it starts the daemon (as an MCP session
    does), says so on stderr, answers, and a second search uses the same daemon."""
    from tests.support.cli import run_cli

    tmp = world["tmp"]
    sock = tmp / "r3" / "d.sock"
    (tmp / "config.toml").write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    env = remembrancer_env(data=tmp / "data3", socket=sock, config=tmp / "config.toml")
    ask = ("search", "SignatureDoesNotMatch chrony", "--conversations", str(world["projects"]),
           "--corpus", "conversations", "--json")
    configured = tmp / "with-conversations.toml"   # conversations from the config file: `status` names no daemon
    configured.write_text(f'[model]\npath = "{tiny_model_dir}"\n[conversations]\nroots = ["{world["projects"]}"]\n')
    status = run_cli("status", env={**env, "REMEMBRANCER_CONFIG": str(configured)}, cwd=tmp)
    assert status.returncode == 3 and "conversations alone are indexed and served by the daemon" in status.stderr, \
        status.stderr
    try:
        first = run_cli(*ask, env=env, cwd=tmp, timeout=120)
        again = run_cli(*ask, env=env, cwd=tmp, timeout=120)
    finally:
        stop_daemon_at(sock)
    assert first.returncode == 0, first.stderr
    assert "starting one now" in first.stderr and "starting one now" not in again.stderr, again.stderr
    for p in (first, again):
        best = json.loads(p.stdout)["results"][0]
        assert best["session_id"] == world["session"].session_id and "chrony" in best["content"]


def test_a_nul_line_in_a_watched_transcript_keeps_the_session_and_is_a_status_warning(world, tiny_model_dir):
    """A line of NUL bytes and garbage appended to a transcript the daemon watches (a crash's
    torn tail): the session stays searchable and readable, and `status` — over the socket, on the
    command line and in the MCP tool's text — lists the skipped line by its number."""
    import subprocess

    from remembrancer.indexer.answers import StatusAnswer
    from remembrancer.mcp_server.render import status_text

    s = world["session"]
    with DaemonProc(world["tmp"], [world["notes"]], tiny_model_dir,
                    extra=("--conversations", str(world["projects"]))).start() as d:
        assert _search(d, world, query="SignatureDoesNotMatch chrony", corpus="conversations")["results"]
        bad = s.path.read_bytes().count(b"\n") + 1
        with s.path.open("ab") as fh:
            fh.write(b"\x00\x01\xff\xfe binary junk\n")
        warning = f"{s.rel}: line {bad} is not valid JSON; skipped"

        def warned():
            st = d.call("status", roots=[str(world["notes"])])
            talks = next(c for c in st["corpora"] if c["roots"][0].startswith("conversations:"))
            return st if warning in (talks.get("warnings") or []) else None
        st = wait_for(warned, timeout=15, step=0.1)
        out = _search(d, world, query="SignatureDoesNotMatch chrony", corpus="conversations")
        assert out["results"] and out["results"][0]["session_id"] == s.session_id
        listed = d.call("list", roots=[str(world["notes"])], conversations=[str(world["projects"])],
                        corpus="conversations")
        assert s.rel in [x["path"] for x in listed["documents"]]
        page = d.call("read", roots=[str(world["notes"])], conversations=[str(world["projects"])], path=s.rel)
        assert "chrony" in page["content"]
        assert warning in status_text(StatusAnswer.parse(st))
        cli = subprocess.run([sys.executable, "-m", "remembrancer", "status", "--root", str(world["notes"])],
                             env=d.env, capture_output=True, text=True, timeout=60)
        assert cli.returncode == 0 and f"warning: {warning}" in cli.stdout, cli.stdout + cli.stderr
