"""The MCP server end to end: real `remembrancer mcp` processes driven by the SDK's stdio client.

Each session launches `python -m cli.main mcp --root <corpus> --idle-exit 5` with a private
environment (data dir, socket, config all in temp dirs), so the server starts a real daemon on
demand, with the real default model. The corpus is a git-initialised copy of examples/notes.
Tests run in file order: the daemon-lifetime tests wait for the previous daemon to go away.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from remembrancer.daemon.connect import process_alive
from remembrancer.wire import ping
from remembrancer.indexer.ingest.chunks import estimate_tokens
from remembrancer.indexer.answers import Freshness, SearchAnswer
from remembrancer.mcp_server import render
from tests.support.daemon import poll_until
from tests.support.mcp_world import IDLE_EXIT, indexed, params, session, text, world  # noqa: F401  (fixtures)

TOOLS = {"search", "read", "list_documents", "index_status", "history", "latest", "neighbors", "verify"}
FRESHNESS_LINE = re.compile(r"^Index (fresh|catching up: .+|STALE: .+)")
SHARED: dict = {}


# -- fixtures (the world, its sessions: tests/support/mcp_world.py) -----------------------------

def wait_no_daemon(world) -> None:
    assert poll_until(lambda: not world["sock"].exists() and ping(world["sock"]) is None, IDLE_EXIT + 10), \
        "a previous daemon did not exit by itself"


# -- 1. tools and their descriptions -----------------------------------------------------------

@pytest.mark.slow
def test_list_tools_describe_the_live_index(indexed):
    world = indexed

    async def go(c):
        return (await c.list_tools()).tools, c.instructions

    p = params(world)
    p.args += ["--instructions", "Ask about db1 and db2 first."]
    tools, instructions = session(p, go)
    assert instructions.startswith("remembrancer:") and instructions.endswith("Ask about db1 and db2 first.")
    by_name = {t.name: t for t in tools}
    assert set(by_name) == TOOLS
    desc = by_name["search"].description
    n_docs = len(list(world["corpus"].rglob("*.md")))
    assert f"{n_docs} documents" in desc
    for t, n in (("journal", 3), ("host", 2), ("runbook", 1), ("plan", 1), ("lesson", 1)):
        assert f"{t} ({n})" in desc, desc
    assert "newest wins" in desc and "check the journal" in desc
    assert "journal/ (3)" in desc and "postgres (" in desc          # top folders and tags
    assert "2030-02-03" in desc                                      # date range
    assert "not proof of absence" in desc and "read(" in desc
    # The index map stays within its budget; the corpora beside the notes (here: the commits of the
    # repository the example notes live in, when they are in one) add a line each.
    index_map = desc.split("\nAlso searchable")[0]
    assert 150 <= estimate_tokens(index_map) <= 300 and estimate_tokens(desc) <= 340, estimate_tokens(desc)
    assert "9 documents" in by_name["list_documents"].description
    schema = by_name["search"].input_schema["properties"]
    assert schema["limit"]["minimum"] == 1 and schema["limit"]["maximum"] == 50
    assert all(p.get("description") for p in schema.values())
    alternates = schema["alternates"]                                 # the agent as query expander
    assert "rephrasings" in alternates["description"] and "not a repeat" in alternates["description"]
    assert any(o.get("type") == "array" and o.get("maxItems") == 3 and o["items"]["type"] == "string"
               for o in alternates.get("anyOf", [alternates]))
    assert by_name["search"].output_schema["type"] == "object"
    assert by_name["read"].annotations.read_only_hint is True


# -- 2. search ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_search_follows_the_contract(indexed):
    async def go(c):
        return await c.call_tool("search", {"query": "how do I restore the database from a backup"})

    r = session(params(indexed), go)
    assert not r.is_error
    out = r.structured_content
    assert {"results", "no_strong_match", "index"} <= set(out)
    assert out["no_strong_match"] is False
    assert out["index"]["verdict"] in ("fresh", "catching_up", "stale")
    results = out["results"]
    for res in results:
        assert {"path", "heading", "lines", "score", "type", "date", "snippet", "provenance", "tokens"} <= set(res)
    assert results[0]["content"]
    top3 = [(x["path"], x["heading"]) for x in results[:3]]
    assert any(p == "runbooks/postgres/restore.md" or (p == "hosts/db1.md" and h.endswith("> Backups"))
               for p, h in top3), top3
    body = text(r)
    first_line = body.splitlines()[0]
    assert FRESHNESS_LINE.match(first_line), first_line
    assert results[0]["content"].strip().splitlines()[0] in body           # the best section in full
    for res in results[1:]:                                              # the others: short ones whole, or pointers
        assert f"{res['path']} § {res['heading']}" in body
        assert f"lines {res['lines'][0]}-{res['lines'][1]}" in body
    assert estimate_tokens(body) <= 4000
    assert "Traceback" not in body


@pytest.mark.slow
def test_search_with_alternates_says_which_phrasing_found_the_best_result(indexed):
    async def go(c):
        return await c.call_tool("search", {"query": "the thing that went wrong with too many connections",
                                            "alternates": ["sorry, too many clients already", "PgBouncer pool"]})

    r = session(params(indexed), go)
    assert not r.is_error
    out = r.structured_content
    assert out["found_by"] in ("the thing that went wrong with too many connections",
                               "sorry, too many clients already", "PgBouncer pool")
    assert (out["results"] or out["best_weak"])


# -- 3. a daemon on demand, gone when idle -----------------------------------------------------

@pytest.mark.slow
def test_daemon_started_on_demand_exits_when_idle(indexed):
    world = indexed
    wait_no_daemon(world)

    async def go(c):
        st = await c.call_tool("index_status", {})
        return st.structured_content, world["sock"].exists()

    st, sock_existed = session(params(world), go)
    assert sock_existed
    pid = st["daemon"]["pid"]
    assert st["daemon"]["idle_exit_s"] == IDLE_EXIT
    t0 = time.monotonic()
    assert poll_until(lambda: not world["sock"].exists() and not process_alive(pid), IDLE_EXIT + 8), \
        f"daemon {pid} still up {time.monotonic() - t0:.1f}s after the client left"
    assert ping(world["sock"]) is None


# -- 4. two clients, one daemon ----------------------------------------------------------------

@pytest.mark.slow
def test_two_clients_share_one_daemon(indexed):
    world = indexed
    wait_no_daemon(world)          # both servers start at once with no daemon running: they race
    statuses: dict[str, dict] = {}

    async def main():
        done = anyio.Event()

        async def one(name: str):
            async with Client(params(world), read_timeout_seconds=120) as c:
                r = await c.call_tool("search", {"query": "PgBouncer transaction pooling cursors"})
                assert not r.is_error, text(r)
                statuses[name] = (await c.call_tool("index_status", {})).structured_content
                if len(statuses) == 2:
                    done.set()
                await done.wait()    # both sessions are open at the same time

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "a")
            tg.start_soon(one, "b")

    anyio.run(main)
    a, b = statuses["a"]["daemon"], statuses["b"]["daemon"]
    assert a is not None and b is not None, "a server fell back to the in-process engine"
    assert a["pid"] == b["pid"]
    assert a["clients"] >= 2 or b["clients"] >= 2
    SHARED["two_clients"] = (a, b)   # model_loads is checked by the last test of the file


# -- 5. bad parameters -------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("args, param", [
    ({"query": "backup", "limit": 0}, "limit"),
    ({"query": "backup", "type": "nope"}, "type"),
    ({"query": "backup", "since": "yesterday"}, "since"),
    ({"query": "backup", "tags": ["no-such-tag"]}, "tags"),
    ({"query": "backup", "limit": "many"}, "limit"),
    ({"query": "backup", "alternates": ["a", "b", "c", "d"]}, "alternates"),
    ({"query": "backup", "alternates": ["restore", "  "]}, "alternates"),
    ({"query": "backup", "alternates": ["x" * 400]}, "alternates"),
    ({"query": "???"}, "query"),                                            # no word to search for
    ({"query": "backup", "exact": True, "alternates": ["restore"]}, "alternates"),   # not silently dropped
])
def test_bad_params_are_structured_errors(indexed, args, param):
    r = session(params(indexed), lambda c: c.call_tool("search", args))
    assert r.is_error
    body = text(r)
    assert "Traceback" not in body and 'File "' not in body
    err = r.structured_content["error"]
    assert err["param"] == param
    assert err["code"] == "bad_input" and err["message"]
    assert f'"param": "{param}"' in body
    if param == "type":
        assert "runbook" in err["valid_options"]
    if param == "alternates" and not args.get("exact"):   # the schema's refusals and the engine's advise alike
        assert "short rephrasings in the words the notes would use" in err["hint"], err


# -- 6. read -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_read_section_outline_pages_and_refusal(indexed):
    async def go(c):
        return [await c.call_tool("read", a) for a in (
            {"path": "runbooks/postgres/restore.md", "heading": "Restore"},
            {"path": "hosts/db1.md", "outline": True},
            {"path": "hosts/db1.md", "max_chars": 300},
            {"path": "hosts/db1.md", "max_chars": 300, "offset": 300},
            {"path": "../etc/passwd"},
            {"path": "hosts/db1.md", "heading": "No such heading"},
        )]

    section, outline, page1, page2, escape, missing = session(params(indexed), go)
    s = section.structured_content
    assert not section.is_error
    assert s["heading"] == "Restore PostgreSQL from backup > Restore"
    assert s["content"].startswith("## Restore") and "pgbackrest" in s["content"]
    assert s["content"] in text(section)                                   # verbatim
    o = outline.structured_content
    assert [x["heading"].split(" > ")[-1] for x in o["sections"]][:3] == \
        ["", "db1 — PostgreSQL primary", "Services"]   # the preamble: the record's front matter
    assert all(x["tokens"] > 0 and len(x["lines"]) == 2 for x in o["sections"])
    assert "Backups [lines" in text(outline)
    p1, p2 = page1.structured_content, page2.structured_content
    assert p1["truncated"] is True and p1["returned_chars"] == 300 and p1["next_offset"] == 300
    assert p1["total_chars"] > 600
    assert "continue with offset=300" in text(page1)
    assert p2["offset"] == 300 and p2["content"] != p1["content"]
    full = (indexed["corpus"] / "hosts/db1.md").read_text()
    assert full.startswith(p1["content"] + p2["content"])
    assert escape.is_error and escape.structured_content["error"]["param"] == "path"
    assert "root:" not in text(escape)
    assert missing.is_error and missing.structured_content["error"]["param"] == "heading"


@pytest.mark.slow
def test_list_documents_and_status(indexed):
    async def go(c):
        return (await c.call_tool("list_documents", {"type": "host"}),
                await c.call_tool("index_status", {}))

    docs, st = session(params(indexed), go)
    d = docs.structured_content
    assert [x["path"] for x in d["documents"]] == ["hosts/db1.md", "hosts/db2.md"]
    assert "hosts/db1.md — host" in text(docs)
    s = st.structured_content
    assert s["daemon"]["pid"] > 0 and s["documents"] >= 9
    assert FRESHNESS_LINE.match(text(st).splitlines()[0])


# -- 7. a saved file becomes searchable --------------------------------------------------------

@pytest.mark.slow
def test_atomic_save_becomes_searchable_without_commit(indexed):
    corpus = indexed["corpus"]
    target = corpus / "runbooks" / "redis-failover.md"

    async def go(c):
        await c.call_tool("index_status", {})      # the daemon is up and watching
        tmp = corpus / "runbooks" / ".redis-failover.md.tmp"
        tmp.write_text("# Redis failover\n\n## Promote the replica\n\nOn cache2 run `redis-cli replicaof no one`, "
                       "then point the app at it. Codeword quokkafrobnicate.\n", encoding="utf-8")
        os.replace(tmp, target)
        deadline = time.monotonic() + 10
        while True:
            r = await c.call_tool("search", {"query": "promote the redis replica quokkafrobnicate"})
            paths = [x["path"] for x in r.structured_content.get("results", [])]
            if "runbooks/redis-failover.md" in paths or time.monotonic() > deadline:
                return r, paths
            await anyio.sleep(0.3)

    try:
        r, paths = session(params(indexed), go)
        assert paths and paths[0] == "runbooks/redis-failover.md", paths
        assert "quokkafrobnicate" in r.structured_content["results"][0]["content"]
    finally:
        target.unlink(missing_ok=True)


@pytest.mark.slow
def test_git_commit_with_hooks_becomes_searchable_through_mcp(indexed):
    """hooks install → git commit with the git CLI → the post-commit hook notifies the daemon →
    the MCP search tool returns the new section."""
    from remembrancer.hooks.install import install_hooks

    corpus, env = indexed["corpus"], indexed["env"]
    install_hooks(corpus)
    home = Path(env["HOME"])

    async def go(c):
        await c.call_tool("index_status", {})
        (corpus / "memory" / "wombat.md").write_text(
            "# Wombat cache warming\n\nWarm the wombat cache with `make warm` before a release.\n", encoding="utf-8")
        git_env = {"REMEMBRANCER_SOCKET": env["REMEMBRANCER_SOCKET"]}
        subprocess.run(["git", "add", "-A"], cwd=corpus, check=True, env={**os.environ, **git_env})
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m",
                        "wombat lesson"], cwd=corpus, check=True, env={**os.environ, **git_env, "HOME": str(home)})
        deadline = time.monotonic() + 10
        while True:
            r = await c.call_tool("search", {"query": "how do I warm the wombat cache"})
            paths = [x["path"] for x in r.structured_content.get("results", [])]
            st = (await c.call_tool("index_status", {})).structured_content
            # the watcher may index the file before the hook's notifier process has connected
            if ("memory/wombat.md" in paths and st["daemon"]["notifications"]) or time.monotonic() > deadline:
                return paths, st

    paths, st = session(params(indexed), go)
    assert paths and paths[0] == "memory/wombat.md", paths
    assert st["daemon"]["notifications"] >= 1
    assert st["daemon"]["last_notification"]["event"] in ("post-commit", "post-checkout", "post-merge")


# -- 8. no daemon possible: read-only and STALE ------------------------------------------------

@pytest.mark.slow
def test_readonly_fallback_when_no_daemon_can_start(indexed, tmp_path):
    wait_no_daemon(indexed)   # a daemon of this data dir would answer, whatever socket the server names
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    p = params(indexed, env={"REMEMBRANCER_SOCKET": str(blocker / "daemon.sock")})

    async def go(c):
        tools = (await c.list_tools()).tools
        r = await c.call_tool("search", {"query": "how do I restore the database from a backup"})
        st = await c.call_tool("index_status", {})
        return tools, r, st

    tools, r, st = session(p, go)
    assert not r.is_error, text(r)
    out = r.structured_content
    assert out["index"]["verdict"] == "stale" and out["index"]["reason"]
    assert text(r).startswith("Index STALE: ")
    assert out["results"][0]["path"] == "runbooks/postgres/restore.md"
    assert st.structured_content["daemon"] is None
    # tools/list tries no daemon (a health check must start nothing): its descriptions come from the
    # index on disk; that no daemon could start is said by every answer, as above
    search_desc = next(t.description for t in tools if t.name == "search")
    assert re.search(r"Holds \d+ documents", search_desc), search_desc


# -- more: the daemon dies mid-session; no roots at all ----------------------------------------

@pytest.mark.slow
def test_reconnects_when_the_daemon_dies(indexed):
    async def go(c):
        first = (await c.call_tool("index_status", {})).structured_content["daemon"]["pid"]
        os.kill(first, signal.SIGTERM)             # the daemon these tests started
        assert poll_until(lambda: not process_alive(first), 10)
        r = await c.call_tool("search", {"query": "restore the database"})
        second = (await c.call_tool("index_status", {})).structured_content["daemon"]
        return first, r, second

    first, r, second = session(params(indexed), go)
    assert not r.is_error, text(r)
    assert r.structured_content["results"]
    assert r.structured_content["index"]["verdict"] != "stale"
    assert second is not None and second["pid"] != first


def test_starts_without_roots_and_says_why(indexed):
    sockdir = Path(tempfile.mkdtemp(prefix="rmb-none-", dir="/tmp"))
    try:
        p = params(indexed, env={"REMEMBRANCER_SOCKET": str(sockdir / "d.sock")}, roots=False)

        async def go(c):
            return (await c.list_tools()).tools, await c.call_tool("search", {"query": "backup"})

        tools, r = session(p, go)
        assert {t.name for t in tools} == TOOLS
        desc = next(t.description for t in tools if t.name == "search")
        assert "WARNING" in desc and "no corpus to serve" in desc
        assert r.is_error and "no corpus to serve" in r.structured_content["error"]["message"]
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)


# -- stdout is the JSON-RPC stream and nothing else ------------------------------------------------

@pytest.mark.slow
def test_stdout_carries_only_json_rpc(indexed):
    """A raw client: every line the server writes to stdout is a JSON-RPC message; logs go to stderr."""
    import json

    p = params(indexed)
    proc = subprocess.Popen([p.command, *p.args], env=p.env, cwd=p.cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "search", "arguments": {"query": "restore the database"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "search", "arguments": {"query": "x", "limit": 0}}},
    ]
    out_lines: list[str] = []
    try:
        for m in msgs:
            proc.stdin.write((json.dumps(m) + "\n").encode())
            proc.stdin.flush()
            if "id" in m:
                line = proc.stdout.readline().decode()
                out_lines.append(line)
        rest, err = proc.communicate(timeout=30)   # closes stdin: the server must exit by itself
    finally:
        if proc.poll() is None:
            proc.kill()
    out_lines += rest.decode().splitlines()
    replies = [json.loads(x) for x in out_lines if x.strip()]
    assert all(r.get("jsonrpc") == "2.0" for r in replies)
    by_id = {r["id"]: r for r in replies if "id" in r}
    assert by_id[1]["result"]["serverInfo"]["name"] == "remembrancer"
    assert by_id[2]["result"]["structuredContent"]["results"]
    assert by_id[3]["result"]["isError"] is True
    assert proc.returncode == 0
    assert b"Traceback" not in err


def test_setup_output_is_diverted_to_stderr(capfd):
    from remembrancer.mcp_server.server import stdout_to_stderr

    with stdout_to_stderr():
        print("stray print")
        os.write(1, b"stray fd write\n")
    print("after")
    out, err = capfd.readouterr()
    assert "stray" not in out and "stray print" in err and "stray fd write" in err
    assert "after" in out


# -- rendering (no processes) ------------------------------------------------------------------

def test_freshness_lines():
    assert render.freshness_line(Freshness.parse({"verdict": "fresh", "documents": 3, "sections": 7})).startswith("Index fresh (3")
    line = render.freshness_line(Freshness.parse({"verdict": "catching_up", "queued_changes": 4, "seconds_behind": 1.5}))
    assert line.startswith("Index catching up: 4 changes queued, 1.5 s behind")
    assert render.freshness_line(Freshness.parse({"verdict": "catching_up", "reason": "HEAD of notes moved"})).startswith(
        "Index catching up: HEAD of notes moved")
    assert render.freshness_line(Freshness.parse({"verdict": "stale", "reason": "daemon down"})).startswith("Index STALE: daemon down")
    for v in ({"verdict": "fresh"}, {"verdict": "catching_up", "queued_changes": 1}, {"verdict": "stale"}):
        assert FRESHNESS_LINE.match(render.freshness_line(Freshness.parse(v)))


def test_search_text_for_weak_and_empty_answers():
    weak = {"query": "kubernetes", "results": [], "no_strong_match": True, "index": {"verdict": "fresh"},
            "best_weak": [{"path": "a.md", "heading": "A", "lines": [1, 3], "type": "doc", "date": None,
                           "tokens": 5, "snippet": "something", "content": "# A\nsomething"}]}
    t = render.search_text(SearchAnswer.parse(weak))
    assert "No strong match" in t and "not proof" in t and "a.md § A" in t
    assert "# A\nsomething" in t   # a short weak candidate comes whole, under the warning
    empty = {"query": "x", "results": [], "no_strong_match": False, "index": {"verdict": "fresh"},
             "message": "0 matches for filters: type=plan"}
    t = render.search_text(SearchAnswer.parse(empty))
    assert "0 matches for filters: type=plan" in t and "not proof of absence" in t


# -- the server in-process over a fake index (errors and degraded descriptions) -------------------

class FakeLink:
    """Stands in for the index connection: answers `status`/`list` and fails the rest on purpose."""

    kind = "daemon"
    start_problem = None

    def __init__(self, documents: list[dict], failure: Exception):
        self.backend = object()
        self.documents = documents
        self.failure = failure

    def call(self, method: str, **params) -> dict:
        from remembrancer.indexer.errors import UserError

        if method == "status":
            return {"roots": [{"name": "n", "path": "/n"}], "sections": 2 * len(self.documents),
                    "documents": len(self.documents), "warnings": [],
                    "freshness": {"verdict": "fresh" if self.documents else "catching_up"}}
        if method == "list":
            return {"documents": self.documents, "total": len(self.documents)}
        if method == "search" and params.get("query") == "" and params.get("tags"):
            raise UserError("tag occurs in no document", param="tags", options=[])
        raise self.failure


def _in_process(link, calls):
    from remembrancer.mcp_server.server import build_server

    server = build_server(link)

    async def main():
        async with Client(server) as c:
            tools = (await c.list_tools()).tools
            return tools, [await c.call_tool(name, args) for name, args in calls]
    return anyio.run(main)


def test_internal_errors_are_one_line_without_traceback(caplog):
    docs = [{"path": "journal/d.md", "type": "journal", "date": "2030-01-01", "title": "d", "sections": 2,
             "tokens": 10}]
    tools, (r,) = _in_process(FakeLink(docs, RuntimeError("boom\n  deep detail")), [("search", {"query": "q"})])
    assert r.is_error
    err = r.structured_content["error"]
    assert err["code"] == "internal" and "RuntimeError: boom" in err["message"]
    assert "\n" not in err["message"] and "deep detail" not in text(r) and "Traceback" not in text(r)
    assert any("tool search failed" in rec.getMessage() for rec in caplog.records)   # details to the log


def test_user_errors_keep_their_structure():
    from remembrancer.indexer.errors import UserError

    failure = UserError("no section 'X'", param="heading", options=["A > B"], hint="pick one", code="not_found")
    _, (r,) = _in_process(FakeLink([], failure), [("read", {"path": "a.md", "heading": "X"})])
    assert r.is_error
    assert r.structured_content["error"] == {"code": "not_found", "message": "no section 'X'",
                                             "param": "heading", "valid_options": ["A > B"], "hint": "pick one"}


def test_empty_index_still_serves_with_a_warning():
    tools, (r,) = _in_process(FakeLink([], RuntimeError("unused")), [("index_status", {})])
    desc = next(t.description for t in tools if t.name == "search")
    assert "WARNING: the index is empty (still being built)" in desc
    assert not r.is_error and "Index catching up" in text(r)


# -- last: checked after everything else, so that a failure here hides nothing under -x ---------

@pytest.mark.slow   # with the slow test whose result it reads (else it is skipped)
def test_shared_daemon_loaded_the_model_once():
    """The two clients of test_two_clients_share_one_daemon saw one model load in their daemon."""
    if "two_clients" not in SHARED:
        pytest.skip("needs test_two_clients_share_one_daemon")
    a, b = SHARED["two_clients"]
    assert a["pid"] == b["pid"]
    assert a["model_loads"] == 1 and b["model_loads"] == 1, (
        f"daemon {a['pid']} loaded the model {a['model_loads']}x / {b['model_loads']}x (see daemon.log)")

