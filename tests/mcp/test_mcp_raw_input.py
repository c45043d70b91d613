"""What an MCP client may send that the engine cannot take as it is — a lone surrogate (valid JSON,
not text), a question longer than the engine reads — answered each with a structured error naming
the argument, never with silence. A real `remembrancer mcp` over stdio (the tiny model) spoken to in
raw JSON-RPC: the SDK's client cannot send a lone surrogate."""

from __future__ import annotations

from remembrancer.indexer.requests import MAX_QUERY_CHARS
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
