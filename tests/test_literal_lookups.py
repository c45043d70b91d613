"""`uses_word` (does any visible section use this word whole? — abstention asks it per word)
reads the literal index as the driving side of the join, so it stops at the first section that
does: the same answers as a scan, and only a scope's own sections inside a scope."""

from __future__ import annotations

from remembrancer.indexer import terms
from remembrancer.indexer.catalog import _string_list
from tests.corpus_helpers import write


def _corpus(root):
    for i in range(12):
        write(root, f"journal/2030-02-{i + 10}.md", f"# 2030-02-{i + 10}\n\n## Work\n\nRestored the wombat cache {i}.\n")
    write(root, "runbooks/wombat.md", "# Wombat\n\n## Steps\n\nFeed the WOMBAT twice.\n")
    write(root, "memory/other.md", "# Other\n\nNothing about marsupials here.\n")


def _scanned(engine, word: str) -> bool:
    return terms.uses_whole(word, (s.content.lower() for s in engine.catalog.sections()))


def test_uses_word_answers_what_a_scan_finds(tmp_path, tiny_engine):
    root = tmp_path / "notes"
    _corpus(root)
    e = tiny_engine(root)
    for word in ("wombat", "restored", "marsupials", "twice", "platypus", "wom", "cache", "cach"):
        assert e.catalog.uses_word(word) is _scanned(e, word), word
    assert e.catalog.uses_word("wombat") and not e.catalog.uses_word("wom")   # whole words only


def test_uses_word_sees_only_the_scope(tmp_path, tiny_engine):
    root = tmp_path / "notes"
    _corpus(root)
    e = tiny_engine(root)
    with e.scoped(["runbooks"]):
        assert e.catalog.uses_word("wombat") and e.catalog.uses_word("twice")
        assert not e.catalog.uses_word("restored")
    assert e.catalog.uses_word("restored")


def test_stored_lists_are_parsed_once_but_given_out_as_own_lists():
    a, b = _string_list('["pg1", "pg2"]'), _string_list('["pg1", "pg2"]')
    assert a == b == ["pg1", "pg2"] and a is not b
    a.append("x")
    assert _string_list('["pg1", "pg2"]') == ["pg1", "pg2"]
