"""The typed answers keep the wire format: the same keys, in the same order, the same omissions —
what the socket, MCP's structured content and `--json` have always carried."""

from __future__ import annotations

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
