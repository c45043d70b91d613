"""What one search hands the agent: the best section whole, short runners-up whole, pointers for
the rest — and, over the budget, the runners-up's text goes first (indexer/api.py fit_budget)."""

from __future__ import annotations

import json

from remembrancer.indexer import api
from remembrancer.indexer.answers import SearchAnswer
from remembrancer.indexer.search import answer as S
from remembrancer.mcp_server.render import search_text
from tests.support.corpus import write

LONG = "Restore drills are logged here. " + " ".join(f"Drill {i}: the backup restored cleanly in {i} minutes."
                                                    for i in range(200))


def _notes(root):
    write(root, "runbook.md", "# Restore the database\n\nStop the app, restore the newest backup with "
                              "pgbackrest, start the app, check the row counts.\n")
    write(root, "lesson.md", "# Restore lesson\n\nA restore from backup takes 45 minutes: tell the team first.\n")
    write(root, "drills.md", f"# Restore drills\n\n{LONG}\n")
    return root


def test_short_runners_up_come_whole_and_long_ones_as_pointers(tmp_path, tiny_engine):
    e = tiny_engine(_notes(tmp_path / "notes"))
    out = SearchAnswer.parse(api.do_search(e.view(), {"query": "restore the database from backup", "limit": 5}))
    by_path = {r.path: r for r in out.results}
    assert set(by_path) == {"runbook.md", "lesson.md", "drills.md"}
    assert by_path["drills.md"].tokens > S.CARRY_SECTION_TOKENS
    for r in out.results[1:]:
        if r.path == "drills.md":
            assert r.content is None          # too long to carry: a pointer with its snippet
        else:
            assert r.content is not None and ("45 minutes" in r.content or "pgbackrest" in r.content)
    text = search_text(out)
    assert "A restore from backup takes 45 minutes: tell the team first." in text
    assert "pgbackrest" in text
    assert LONG not in text and "Drill 150:" not in text


def test_the_runners_up_share_one_allowance(tmp_path, tiny_engine, monkeypatch):
    e = tiny_engine(_notes(tmp_path / "notes"))
    monkeypatch.setattr(S, "CARRY_TOKENS", 1)   # nothing fits: every runner-up is a pointer
    out = SearchAnswer.parse(api.do_search(e.view(), {"query": "restore the database from backup", "limit": 5}))
    assert out.results[0].content and all(r.content is None for r in out.results[1:])
    assert "short ones in full" not in search_text(out)


def test_over_the_budget_the_runners_up_text_goes_before_the_best_sections(tmp_path, tiny_engine):
    e = tiny_engine(_notes(tmp_path / "notes"))
    wide = SearchAnswer.parse(api.do_search(e.view(), {"query": "restore the database from backup", "limit": 5}))
    carried = [r for r in wide.results[1:] if r.content is not None]
    assert carried
    budget = api.estimate_tokens(json.dumps(wide.to_json(), ensure_ascii=False)) - 5
    out = api.fit_budget(wide, budget)
    assert all(r.content is None for r in out.results[1:])
    assert out.results[0].content and not out.results[0].content_truncated   # the best one kept whole
    assert any("a pointer only" in note for note in out.left_out)


def test_an_abstaining_answer_shows_its_short_candidates_whole_and_says_they_are_weak():
    from remembrancer.indexer.answers import CARRY_SECTION_TOKENS, Result

    short = Result(path="a.md", heading="A", lines=[1, 3], tokens=12, snippet="Restore…",
                   content="# A\n\nRestore from the nightly dump.\n")
    long = Result(path="b.md", heading="B", lines=[1, 90], tokens=CARRY_SECTION_TOKENS + 1, snippet="Drill 1…",
                  content="# B\n\n" + "Drill notes. " * 400)
    out = SearchAnswer(query="restore", mode="hybrid", results=[], no_strong_match=True, best_weak=[short, long],
                       why_no_strong_match=["best semantic match 0.31"])
    text = search_text(out)
    assert text.index("No strong match") < text.index("Restore from the nightly dump.")
    assert "Drill notes. Drill notes." not in text and "Drill 1…" in text
