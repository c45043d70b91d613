"""Answers that find nothing say so, and why: a search with no result is no strong match in every
mode, an empty listing names the path that matched nothing, a missing document suggests only
names that are close, and every text parameter is held to the bound the MCP schema declares —
for the engine's callers (the CLI in-process, the daemon's socket) as for the MCP tool.

The sample notes, indexed with the tiny model (real tantivy and hnswlib)."""

from __future__ import annotations

import pytest

from remembrancer.indexer import api
from remembrancer.indexer.answers import DocumentList, SearchAnswer
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.search import reader
from remembrancer.mcp_server import render


@pytest.mark.parametrize("method,params,name,most", [
    ("list", {"path": "p" * 1001}, "path", 1000),
    ("search", {"query": "restore", "path": "p" * 1001}, "path", 1000),
    ("latest", {"terms": "restore", "path": "p" * 1001}, "path", 1000),
    ("read", {"path": "p" * 1001}, "path", 1000),
    ("outline", {"path": "p" * 1001}, "path", 1000),
    ("neighbors", {"path": "p" * 1001}, "path", 1000),
    ("verify", {"path": "p" * 1001}, "path", 1000),
    ("history", {"entity": "db1", "topic": "t" * 1001}, "topic", 1000),
    ("history", {"entity": "d" * 201}, "entity", 200),
    ("search", {"query": "restore", "since": "2" * 41}, "since", 40),
])
def test_a_text_parameter_over_its_declared_bound_is_refused_by_name(notes_engine, method, params, name, most):
    """The bounds the MCP tool's schema declares were enforced only there: the CLI (in-process, as
    here) and the socket passed a 100 KB path or topic on to the engine."""
    with pytest.raises(UserError) as err:
        api.READ_METHODS[method](notes_engine.view(), params)
    d = err.value.to_dict()
    assert d["code"] == "bad_input" and d["param"] == name, d
    assert f"{name} is {len(params[name])} characters, the most is {most}" in d["message"], d


def test_a_text_parameter_at_its_bound_is_answered(notes_engine):
    view = notes_engine.view()
    assert api.do_list(view, {"path": "p" * 1000})["total"] == 0
    assert "results" in api.do_history(view, {"entity": "db1", "topic": "backups " + "t" * 992})
