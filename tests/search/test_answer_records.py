"""The typed answers keep the wire format: the same keys, in the same order, the same omissions —
what the socket, MCP's structured content and `--json` have always carried."""

from __future__ import annotations

import json

from remembrancer.indexer import api
from remembrancer.indexer.answers import Outline, Page
from tests.support.corpus import write

DOC = "# Restore\n\nStop the app.\n\n## Verify\n\nCount the rows.\n\n" + "Then count them again. " * 10 + "\n"


def test_read_and_outline_answers_keep_their_keys(tmp_path, tiny_engine):
    e = tiny_engine(write(tmp_path / "notes", "r.md", DOC).parent)
    view = e.view()
    by_heading = api.do_read(view, {"path": "r.md", "heading": "Verify"})
    assert list(by_heading) == ["path", "type", "date", "heading", "lines", "content", "total_chars",
                                "returned_chars", "offset", "truncated"]
    by_lines = api.do_read(view, {"path": "r.md", "lines": "1:3"})
    assert list(by_lines) == ["path", "type", "date", "lines", "content", "total_chars", "returned_chars",
                              "offset", "truncated"]
    paged = api.do_read(view, {"path": "r.md", "max_chars": 100})
    assert list(paged) == ["path", "type", "date", "content", "total_chars", "returned_chars", "offset",
                           "truncated", "next_offset"]
    assert paged["truncated"] is True and paged["next_offset"] == 100 and paged["date"] is None
    outline = api.do_read(view, {"path": "r.md", "outline": True})
    assert list(outline) == ["path", "type", "date", "title", "sections", "total_tokens"]
    assert list(outline["sections"][0]) == ["heading", "level", "lines", "tokens"]
    # and the records read back what they wrote
    for data, record in ((by_heading, Page), (by_lines, Page), (paged, Page), (outline, Outline)):
        assert record.parse(data).to_json() == data


def test_the_status_answer_keeps_its_keys(tmp_path, tiny_engine):
    from remembrancer.indexer.answers import Freshness, StatusAnswer

    e = tiny_engine(write(tmp_path / "notes", "r.md", DOC).parent)
    for params in ({}, {"scope": ["r.md"]}):
        out = api.answer_in_process(e, "status", params, lambda view: Freshness("fresh"))
        assert list(out)[:4] == ["index_dir", "store", "roots", "documents"]
        assert list(out)[-3:] == ["redaction", "daemon", "freshness"] or list(out)[-3:] == ["scope", "daemon", "freshness"]
        assert out["daemon"] is None and "last_indexed_at" in out and "model" in out
        assert json.dumps(StatusAnswer.parse(out).to_json()) == json.dumps(out)
    # a daemon's answer with no corpus addressed: the daemon and its corpora only
    ping = {"roots": [], "daemon": {"pid": 1, "socket": "s", "started_at": 0.0, "clients": 0, "requests": 0,
                                    "idle_exit_s": None, "corpus_idle_s": 900.0, "model_loads": 0, "notifications": 0,
                                    "last_notification": None, "multi_corpus": True, "default_roots": [],
                                    "queued_changes": 0, "seconds_behind": None, "ingesting": False,
                                    "last_error": None, "last_ingest": None},
            "corpora": [{"roots": ["/n"], "index_dir": "/d", "state": "closed", "idle_s": 1.0,
                         "freshness": {"verdict": "fresh"}, "closed_at": 2.0, "detail": "released"}]}
    assert json.dumps(StatusAnswer.parse(ping).to_json()) == json.dumps(ping)
