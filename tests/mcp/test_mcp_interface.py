"""The MCP tools' interface as an agent meets it (issue 27, interface gaps): an argument a tool
does not take is refused naming the ones it does, `latest` filters like the CLI's, and
`list_documents` pages. Real MCP client over stdio against a real corpus (tests/mcp/test_mcp.py's)."""

from __future__ import annotations

import pytest

from remembrancer.indexer import api
from remembrancer.indexer.errors import UserError
from tests.support.mcp_world import indexed, params, session, text, world  # noqa: F401  (fixtures)


@pytest.mark.slow
def test_an_unknown_argument_is_refused_naming_the_valid_ones(indexed):
    async def go(c):
        tools = (await c.list_tools()).tools
        return tools, {
            "scope": await c.call_tool("search", {"query": "restore the database", "scope": "runbooks/"}),
            "two": await c.call_tool("latest", {"terms": "pgbackrest", "paht": "x", "ghp_" + "a" * 36: 1}),
            "none": await c.call_tool("index_status", {"verbose": True}),
            "fine": await c.call_tool("search", {"query": "restore the database", "path": "runbooks/"}),
        }

    tools, r = session(params(indexed), go)
    assert all(t.input_schema.get("additionalProperties") is False for t in tools)
    err = r["scope"].structured_content["error"]
    assert r["scope"].is_error and err["param"] == "scope" and "path" in err["valid_options"]
    assert err["message"] == "search takes no parameter scope" and "path" in err["hint"]
    two = r["two"].structured_content["error"]
    assert r["two"].is_error and {"until", "path", "terms"} <= set(two["valid_options"])
    assert "paht" in two["message"] and "ghp_" + "a" * 36 not in text(r["two"]) + str(two)   # a token is not echoed
    assert r["none"].is_error and r["none"].structured_content["error"]["valid_options"] == []
    assert not r["fine"].is_error and r["fine"].structured_content["results"][0]["path"].startswith("runbooks/")


@pytest.mark.slow
def test_latest_takes_until_and_path_like_the_cli(indexed):
    async def go(c):
        return (await c.call_tool("latest", {"terms": "pgbackrest"}),
                await c.call_tool("latest", {"terms": "pgbackrest", "path": "runbooks/"}),
                await c.call_tool("latest", {"terms": "pgbackrest", "until": "2030-01-31"}))

    every, scoped, early = session(params(indexed), go)
    paths = {r["path"] for r in every.structured_content["results"]}
    assert len({p.split("/")[0] for p in paths}) > 1, paths   # the filters below have something to drop
    assert scoped.structured_content["results"] and all(
        r["path"].startswith("runbooks/") for r in scoped.structured_content["results"])
    dates = [r.get("date") for r in early.structured_content["results"]]
    assert all(d is None or d <= "2030-01-31" for d in dates)
    assert len(early.structured_content["results"]) < len(every.structured_content["results"])


@pytest.mark.slow
def test_list_documents_pages_with_an_offset(notes_engine, indexed):
    whole = api.do_list(notes_engine, {})
    page = api.do_list(notes_engine, {"limit": 4, "offset": 2})
    assert page["documents"] == whole["documents"][2:6] and page["next_offset"] == 6 and page["truncated"]
    last = api.do_list(notes_engine, {"limit": 4, "offset": 8})
    assert last["documents"] == whole["documents"][8:] and "next_offset" not in last

    async def go(c):
        return (await c.call_tool("list_documents", {"offset": 5}),
                await c.call_tool("list_documents", {"offset": 500}))

    rest, past = session(params(indexed), go)
    assert [d["path"] for d in rest.structured_content["documents"]] == [d["path"] for d in whole["documents"][5:]]
    assert f"documents 6-{whole['total']} of {whole['total']}" in text(rest)
    assert not past.is_error and f"past the last of {whole['total']} documents" in text(past)


@pytest.mark.slow
def test_the_server_declares_only_what_it_serves(indexed):
    """Tools only: no resources or prompts capability that would list nothing (the SDK's default)."""
    async def go(c):
        caps = c.server_capabilities
        try:
            await c.list_resources()
            listed = "answered"
        except Exception as e:   # the real client raises the server's "method not found"
            listed = str(e)
        return caps, listed

    caps, listed = session(params(indexed), go)
    assert caps.tools is not None and caps.resources is None and caps.prompts is None, caps
    assert listed != "answered" and "not found" in listed.lower(), listed


@pytest.mark.slow
def test_read_takes_a_stem_a_path_suffix_and_a_wikilink(tiny_engine, notes, indexed):
    from tests.support.corpus import write

    write(notes, "a/setup.md", "# Setup A\n\nalpha setup steps.\n")
    write(notes, "b/setup.md", "# Setup B\n\nbeta setup steps.\n")
    engine = tiny_engine(notes)
    want = api.do_read(engine.view(), {"path": "runbooks/postgres/restore.md"})["content"]
    for name in ("restore", "restore.md", "postgres/restore.md", "[[restore]]", "[[restore|the runbook]]",
                 "[[runbooks/postgres/restore#Verify]]"):
        assert api.do_read(engine.view(), {"path": name})["content"] == want, name
    with pytest.raises(UserError) as e:
        api.do_read(engine.view(), {"path": "[[setup]]"})
    assert e.value.code == "ambiguous" and e.value.to_dict()["valid_options"] == ["a/setup.md", "b/setup.md"]
    for other in ("gres/restore.md", "Runbooks/postgres/restore.md"):   # whole path parts, case kept
        with pytest.raises(UserError) as e:
            api.do_read(engine.view(), {"path": other})
        assert e.value.code == "not_found", other

    async def go(c):
        return (await c.call_tool("read", {"path": "[[db1]]"}),
                await c.call_tool("read", {"path": "db1.md", "heading": "Backups"}))

    whole, part = session(params(indexed), go)
    assert not whole.is_error and whole.structured_content["path"] == "hosts/db1.md"
    assert not part.is_error and "pgBackRest" in part.structured_content["content"]


@pytest.mark.slow
def test_an_empty_search_and_an_empty_listing_say_why(indexed):
    """An exact search with no hit answered `no_strong_match: false`; `list_documents` under a path
    that matches nothing answered "0 documents" and no more."""
    async def go(c):
        return (await c.call_tool("search", {"query": "zzqqxx-never-written", "exact": True}),
                await c.call_tool("list_documents", {"path": "jornal/"}))

    found, listed = session(params(indexed), go)
    assert not found.is_error and found.structured_content["no_strong_match"] is True, found.structured_content
    assert "No strong match for 'zzqqxx-never-written': No section matches." in text(found), text(found)
    assert not listed.is_error and listed.structured_content["closest"] == ["journal/"]
    assert ("0 documents: no indexed document is under the path 'jornal/'; the closest top-level folders: journal/"
            in text(listed)), text(listed)
