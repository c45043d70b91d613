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


def test_a_search_that_finds_nothing_is_no_strong_match_in_every_mode(notes_engine):
    """An exact search with no hit answered `no_strong_match: false` (a caller reading the flag took
    the empty answer for a confident one); so did a listing by filters that matched nothing."""
    view = notes_engine.view()
    for params in ({"query": "zzqqxx-never-written", "exact": True},
                   {"query": "", "type": "runbook", "since": "2099-01-01"},
                   {"query": "restore the database", "path": "nosuch/"}):
        out = api.do_search(view, params)
        assert out["results"] == [] and out["no_strong_match"] is True, (params, out)
        assert out["why_no_strong_match"] and out["message"] in out["why_no_strong_match"], out
        said = SearchAnswer.parse(out)
        mcp, terminal = render.search_text(said), render.search_terminal_text(said)
        assert "No strong match" in mcp and "candidates below" not in mcp, mcp
        assert out["message"] in terminal and "No strong match" in terminal, terminal
    found = api.do_search(view, {"query": "too many clients already", "exact": True})
    assert found["results"] and found["no_strong_match"] is False


def test_weak_candidates_show_their_own_similarity_not_a_relative_score(notes_engine):
    """Scores are relative to the other results: a weak candidate's 0.78 under "no strong match"
    read as a good answer. The terminal shows its similarity to the question instead."""
    found = api.do_search(notes_engine.view(), {"query": "pgBackRest restore"})
    # the tiny test model's similarities decide nothing: the same candidates, said weak as the engine says them
    out = {**found, "results": [], "no_strong_match": True, "best_weak": found["results"],
           "why_no_strong_match": ["best semantic match 0.12 < 0.3"]}
    terminal = render.search_terminal_text(SearchAnswer.parse(out))
    first = out["best_weak"][0]
    assert f"similarity {first['scores']['dense']:.2f}" in terminal and " score 0." not in terminal, terminal
    strong = render.search_terminal_text(SearchAnswer.parse(found))
    assert " score " in strong and "similarity" not in strong, strong


def test_an_exact_miss_does_not_suggest_the_exact_search_it_was(notes_engine):
    out = SearchAnswer.parse(api.do_search(notes_engine.view(), {"query": "zzqqxx", "exact": True}))
    assert "try exact=true" not in render.search_text(out) and "without exact" in render.search_text(out)


def test_a_listing_under_a_path_that_matches_nothing_says_why(notes_engine):
    view = notes_engine.view()
    out = api.do_list(view, {"path": "jornal/"})
    assert out["total"] == 0 and out["closest"] == ["journal/"], out
    assert "no indexed document is under the path 'jornal/'" in out["message"], out
    assert "journal/" in out["message"]
    text = render.list_text(DocumentList.parse(out))
    assert text.splitlines()[1].startswith("0 documents: no indexed document is under the path 'jornal/'"), text
    assert "closest top-level folders: journal/" in render.list_terminal_text(DocumentList.parse(out))
    far = api.do_list(view, {"path": "zzz/"})   # nothing near: the folders that exist are named
    assert "closest" not in far and "the top-level folders are hosts/, journal/" in far["message"], far
    both = api.do_list(view, {"path": "hosts/", "type": "runbook"})   # the path holds documents, not of that type
    assert both["total"] == 0 and both["message"] == "no indexed document matches type=runbook path=hosts/"
    listed = api.do_list(view, {"path": "hosts/"})   # a listing with documents is as it was
    assert listed["total"] == 2 and "message" not in listed and "closest" not in listed


@pytest.mark.parametrize("asked,close", [
    ("notes.md", []),                                     # once: hosts/db1.md, hosts/db2.md (on "s", "/", ".md")
    ("bar.md", []),
    ("x/y/z.md", []),
    ("hosts/db3.md", ["hosts/db1.md", "hosts/db2.md"]),   # a near file name in the same folder
    ("READ.md", ["README.md"]),                           # a near spelling
    ("hosts.md", ["hosts/db1.md", "hosts/db2.md"]),        # a shared path component (the folder)
    ("restor.md", ["runbooks/postgres/restore.md"]),      # a near file name in another folder
])
def test_a_missing_document_suggests_only_close_names(notes_engine, asked, close):
    for read in (lambda v, p: reader.read(v, p), lambda v, p: api.do_neighbors(v, {"path": p})):
        with pytest.raises(UserError) as err:
            read(notes_engine.view(), asked)
        assert err.value.code == "not_found"
        assert sorted(err.value.options or []) == close, (asked, err.value.options)


def test_close_paths_ignores_a_folder_every_document_shares():
    """A multi-root corpus prefixes every path with its root's name: sharing it says nothing."""
    known = [f"notes/{n}.md" for n in ("alpha", "beta", "gamma")] + ["work/plan.md"]
    assert reader.close_paths("notes/zzz.md", known) == []
    assert reader.close_paths("notes/alpah.md", known) == ["notes/alpha.md"]


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
