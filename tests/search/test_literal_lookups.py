"""`uses_word` (does any visible section use this word whole? — abstention asks it per word)
reads the literal index as the driving side of the join, so it stops at the first section that
does: the same answers as a scan, and only a scope's own sections inside a scope."""

from __future__ import annotations

import pytest

from remembrancer.indexer import terms
from remembrancer.indexer.store.common import string_list as _string_list
from tests.support.corpus import write


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
    with e.view(["runbooks"]) as view:
        assert e.catalog.uses_word("wombat") and e.catalog.uses_word("twice")
        assert not e.catalog.uses_word("restored")
    assert e.catalog.uses_word("restored")


def test_stored_lists_are_parsed_once_but_given_out_as_own_lists():
    a, b = _string_list('["pg1", "pg2"]'), _string_list('["pg1", "pg2"]')
    assert a == b == ["pg1", "pg2"] and a is not b
    a.append("x")
    assert _string_list('["pg1", "pg2"]') == ["pg1", "pg2"]


# Sections where the keyword index's tokens are not the whole words a scan finds: a letter beyond
# ASCII beside a word, the Kelvin sign Python's lower() folds to k, a line cut inside a word
# between two chunks; and ones where they are: ASCII and punctuation, emoji, a token too long for
# the term dictionary.
WORD_FILES = {
    "plain.md": "# Plain\n\nThe BACKUP ran; failover done — twice… 'quoted' “smart” → next 🚀 launch. "
                "snake_case_word v2beta x² " + "h" * 45 + ".\n",
    "accents.md": "# Accents\n\nbacké and a naïve check; İstanbul; Straße.\n",
    "kelvin.md": "# Scale\n\nthe \u212aelvin scale\n",
    "cut.md": "# Cut\n\n" + "q," * 1999 + "wombatish and more\n",
    "gone.md": "# Gone\n\nplatypus sightings\n",
}
WORDS = ["backup", "back", "failover", "fail", "twice", "quoted", "smart", "next", "launch", "snake", "case", "beta",
         "v2beta", "x", "check", "na", "ve", "kelvin", "elvin", "stra", "stanbul", "scale", "womb", "atish", "wombatish",
         "wo", "mbatish", "platypus", "wallaby", "sightings", "rich", "missing", "h" * 39, "h" * 45, "ba"]


def test_word_checks_from_the_term_dictionary_answer_like_a_scan(tmp_path, tiny_engine):
    """Abstention's "does the corpus use this word?" (search._word_occurs) asks the keyword index's
    term dictionary, and the words of the few sections whose tokens are not their whole words: the
    answers a scan of every visible section gives, in and out of a scope, after a deletion too (a
    deleted chunk's terms stay in the dictionary until a merge)."""
    from remembrancer.indexer.search import answer as S

    root = tmp_path / "notes"
    for name, text in WORD_FILES.items():
        write(root, name, text)
    e = tiny_engine(root)

    def scan(word, view=None):
        return terms.uses_whole(word, (c for _, _, c, _ in (view or e.view()).lowered_sections()))

    assert {w: S._word_occurs(e.view(), w) for w in WORDS} == {w: scan(w) for w in WORDS}
    # the sections' words are kept between generations: a new section that needs them, one gone
    write(root, "gone.md", "# Gone\n\nnothing seen\n")
    write(root, "later.md", "# Later\n\nwallaby sightings in Zürich\n")
    (root / "kelvin.md").unlink()
    e.refresh()
    seen = {}
    for scope in ((), ("plain.md",), ("accents.md", "later.md", "cut.md")):
        with e.view(scope) as view:
            seen[scope] = {w: S._word_occurs(view, w) for w in WORDS}
            assert seen[scope] == {w: scan(w, view) for w in WORDS}, scope
    got = seen[()]
    assert got["back"] and got["stra"] and got["wombatish"]   # not tokens: from the words
    assert not got["womb"] and not got["atish"] and not got["platypus"] and not got["kelvin"]
    assert got["wallaby"] and got["rich"]
    assert got["backup"] and got["case"] and got["x"] and not got["beta"] and not got["fail"]
    assert not seen[("plain.md",)]["back"] and not seen[("accents.md", "later.md", "cut.md")]["backup"]


def test_word_checks_read_no_section_text_when_the_dictionary_can_answer(tmp_path, tiny_engine, monkeypatch):
    """A question of common words costs term lookups, not a scan of the sections holding them as
    substrings ("time" in "timeout": tens of thousands of candidates at 10,000 documents)."""
    from remembrancer.indexer.search import answer as S

    root = tmp_path / "notes"
    _corpus(root)
    e = tiny_engine(root)
    scanned = []
    monkeypatch.setattr(terms, "uses_whole", lambda word, texts: scanned.append(word))
    for word in ("wombat", "wom", "restored", "platypus", "marsupials"):
        assert S._word_occurs(e.view(), word) is (word in ("wombat", "restored", "marsupials")), word
    S.search(e.view(), S.SearchRequest("what did we do about the problem with the thing last time")).to_json()
    assert scanned == []


@pytest.mark.slow
def test_tokens_are_words_only_when_the_tokenizer_says_so():
    """fulltext.tokens_are_words: where it holds, the body field's tokens are the text's whole words."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from remembrancer.indexer.store.local import fulltext

    analyzer = fulltext._body_analyzer()
    alphabet = st.sampled_from(list("aZ9 _-.,'é²İ\u212a—’…→🚀ßσΣ\u0301\u00a0\u200d\tx") + ["h" * 41])

    @settings(max_examples=300, deadline=None)
    @given(st.lists(alphabet, max_size=30).map("".join))
    def check(text):
        if fulltext.tokens_are_words(text):
            assert analyzer.analyze(text) == [w for w in terms.WORD_RUN_RE.findall(text.lower())
                                              if len(w) < fulltext.TERM_BYTES], text

    check()
    assert fulltext.tokens_are_words("a — b → c 🚀 “d”") and not fulltext.tokens_are_words("café")
