"""What an MCP client may send that the engine cannot take as it is — a lone surrogate (valid JSON,
not text), a question longer than the engine reads — answered each with a structured error naming
the argument, never with silence. A real `remembrancer mcp` over stdio (the tiny model) spoken to in
raw JSON-RPC: the SDK's client cannot send a lone surrogate."""

from __future__ import annotations

import json

import pytest

from remembrancer.indexer.errors import UserError
from remembrancer.indexer.requests import MAX_QUERY_CHARS, LatestParams, ListParams, ReadParams, SearchParams
from tests.support.daemon import raw_mcp, stdio_mcp


def call(rid: int, tool: str, arguments: dict) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


def error_of(reply: dict) -> dict:
    assert reply["result"]["isError"] is True, reply
    return reply["result"]["structuredContent"]["error"]


def test_a_lone_surrogate_in_an_argument_is_answered_naming_it(tmp_path, notes, tiny_model_dir):
    server, sock = stdio_mcp(tmp_path, tiny_model_dir, "--root", str(notes))
    replies, stderr = raw_mcp(server, sock, [
        call(3, "search", {"query": "restore \ud800 database"}),
        call(4, "latest", {"terms": ["pgbackrest", "x\udfff"]}),
        call(5, "search", {"query": "restore the database", "\ud800": 1}),   # in a name: named without quoting it
        call(6, "sea\ud800rch", {"query": "restore"}),                        # the tool's name: unknown, said
        call(7, "search", {"query": "restore the database"}),
    ], timeout=30)
    assert {3, 4, 5, 6, 7} <= set(replies), sorted(replies)   # the call with a lone surrogate was never answered
    for rid, param in ((3, "query"), (4, "terms")):
        err = error_of(replies[rid])
        assert err["code"] == "bad_input" and err["param"] == param, err
        assert err["message"] == f"{param} is not valid Unicode text (it holds a lone surrogate)"
    assert "not valid Unicode text" in error_of(replies[5])["message"]
    assert replies[6]["result"]["isError"] is True and "Unknown tool" in replies[6]["result"]["content"][0]["text"]
    assert replies[7]["result"]["structuredContent"]["results"]
    assert "Traceback" not in stderr


def test_a_question_is_at_most_max_query_chars_as_the_schema_says(tmp_path, notes, tiny_model_dir):
    server, sock = stdio_mcp(tmp_path, tiny_model_dir, "--root", str(notes))
    replies, stderr = raw_mcp(server, sock, [
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        call(3, "search", {"query": "q" * (MAX_QUERY_CHARS + 1)}),
        call(4, "search", {"query": "q" * MAX_QUERY_CHARS}),   # one word at the cap: a 5,000-letter one took gigabytes
    ])
    search = next(t for t in replies[2]["result"]["tools"] if t["name"] == "search")
    assert search["inputSchema"]["properties"]["query"]["maxLength"] == MAX_QUERY_CHARS
    err = error_of(replies[3])
    assert err["code"] == "bad_input" and err["param"] == "query" and str(MAX_QUERY_CHARS) in err["message"], err
    assert "distinctive part" in err["hint"]
    answered = replies[4]["result"]
    assert not answered.get("isError") and "results" in answered["structuredContent"], answered
    assert "Traceback" not in stderr


def bounded(schema: dict) -> list[str]:
    """The text and list shapes of a property schema that have no bound (maxLength, maxItems)."""
    shapes = schema.get("anyOf") or [schema]
    loose = []
    for s in shapes:
        if s.get("type") == "string" and "maxLength" not in s and "enum" not in s and "const" not in s:
            loose.append("string")
        if s.get("type") == "array":
            if "maxItems" not in s:
                loose.append("array")
            loose += [f"item {x}" for x in bounded(s.get("items") or {}) if x]
    return loose


def test_every_text_and_list_argument_is_bounded_and_never_echoed_whole(tmp_path, notes, tiny_model_dir):
    """`read.heading`, `type`, `tags`, `terms`, `lines` had no maxLength: a 100 KB value came back twice
    in a 200 KB error. Every text or list argument of every tool now has a bound in its schema (the
    SDK refuses past it with a short structured error), and a value within it is quoted cut short."""
    big = "zq" * 50_000
    server, sock = stdio_mcp(tmp_path, tiny_model_dir, "--root", str(notes))
    replies, stderr = raw_mcp(server, sock, [
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        call(3, "read", {"path": "runbooks/postgres/restore.md", "heading": big}),
        call(4, "search", {"query": "x", "type": big}),
        call(5, "search", {"query": "x", "tags": big}),
        call(6, "search", {"query": "x", "tags": [big]}),
        call(7, "list_documents", {"type": big}),
        call(8, "latest", {"terms": "x", "type": [big]}),
        call(9, "read", {"path": "runbooks/postgres/restore.md", "lines": big}),
        call(10, "read", {"path": "runbooks/postgres/restore.md", "heading": "h" * 1000}),   # within the bound
        call(11, "search", {"query": "x", "type": "t" * 100}),
        call(12, "search", {"query": "x", "tags": ["g" * 100]}),
    ])
    for tool in replies[2]["result"]["tools"]:
        for name, prop in tool["inputSchema"]["properties"].items():
            assert not bounded(prop), (tool["name"], name, prop)
    for rid, param in ((3, "heading"), (4, "type"), (5, "tags"), (6, "tags"), (7, "type"), (8, "type"), (9, "lines"),
                       (10, "heading"), (11, "type"), (12, "tags")):
        err = error_of(replies[rid])
        assert err["param"] == param, (rid, err)
        assert len(json.dumps(replies[rid])) < 2000, (rid, len(json.dumps(replies[rid])))
    assert "Traceback" not in stderr


def test_the_socket_enforces_the_same_bounds_as_the_schema():
    """Clients that never see the schema (the socket, the CLI) are held to the same bounds, and the
    error does not quote the value."""
    big = "zq" * 50_000
    for params, model, param in (({"path": "a.md", "heading": big}, ReadParams, "heading"),
                                 ({"query": "x", "type": big}, SearchParams, "type"),
                                 ({"query": "x", "tags": ["a"] * 100}, SearchParams, "tags"),
                                 ({"query": "x", "tags": [big]}, SearchParams, "tags"),
                                 ({"type": [big]}, ListParams, "type"),
                                 ({"terms": big}, LatestParams, "terms"),
                                 ({"path": "a.md", "lines": [1, 2, 3]}, ReadParams, "lines")):
        with pytest.raises(UserError) as refused:
            model.from_wire(params)
        assert refused.value.param == param and len(str(refused.value)) < 400, refused.value
