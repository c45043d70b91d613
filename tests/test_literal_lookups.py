"""`contents_containing` (does any visible section use this word? — abstention asks it per word)
reads the literal index as the driving side of the join, so its rows come as the match finds
them: the same contents as a scan, and only a scope's own sections inside a scope."""

from __future__ import annotations

from remembrancer.indexer.catalog import _string_list
from tests.corpus_helpers import write


def _corpus(root):
    for i in range(12):
        write(root, f"journal/2030-02-{i + 10}.md", f"# 2030-02-{i + 10}\n\n## Work\n\nRestored the wombat cache {i}.\n")
    write(root, "runbooks/wombat.md", "# Wombat\n\n## Steps\n\nFeed the WOMBAT twice.\n")
    write(root, "memory/other.md", "# Other\n\nNothing about marsupials here.\n")


def _scanned(engine, word: str) -> list[str]:
    return sorted(s.content for s in engine.catalog.sections() if word in s.content.lower())


def test_contents_containing_yields_what_a_scan_finds(tmp_path, tiny_engine):
    root = tmp_path / "notes"
    _corpus(root)
    e = tiny_engine(root)
    for word in ("wombat", "restored", "marsupials", "twice"):
        got = sorted(e.catalog.contents_containing(word))
        assert got == _scanned(e, word) and got, word
    assert list(e.catalog.contents_containing("platypus")) == []


def test_contents_containing_sees_only_the_scope(tmp_path, tiny_engine):
    root = tmp_path / "notes"
    _corpus(root)
    e = tiny_engine(root)
    with e.scoped(["runbooks"]):
        got = sorted(e.catalog.contents_containing("wombat"))
        assert got == _scanned(e, "wombat") and len(got) == 2 and "Feed the WOMBAT twice." in got[1]
        assert list(e.catalog.contents_containing("restored")) == []
    assert len(list(e.catalog.contents_containing("restored"))) == 12


def test_stored_lists_are_parsed_once_but_given_out_as_own_lists():
    a, b = _string_list('["pg1", "pg2"]'), _string_list('["pg1", "pg2"]')
    assert a == b == ["pg1", "pg2"] and a is not b
    a.append("x")
    assert _string_list('["pg1", "pg2"]') == ["pg1", "pg2"]
