"""What one search hands the agent: the best section whole, short runners-up whole, pointers for
the rest — and, over the budget, the runners-up's text goes first (indexer/api.py fit_budget)."""

from __future__ import annotations

import json

import pytest

from remembrancer.indexer import api
from remembrancer.indexer.answers import SearchAnswer
from remembrancer.indexer.search import answer as S
from remembrancer.mcp_server.render import search_text
from tests.support.corpus import real_model_engine, write

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


def _log(lines_before: int, lines_after: int) -> str:
    """A running log with no headings: one section, far longer than a small budget."""
    quiet = [f"- 2031-05-{i % 28 + 1:02d} checked the disks on host{i}: all fine, nothing to do\n" for i in range(400)]
    return ("# Ops log\n\n" + "".join(quiet[:lines_before])
            + "- 2031-06-30 pgbouncer on pg1 ran out of client slots: raised max_client_conn from 400 to 800\n"
            + "".join(quiet[400 - lines_after:]))


def test_a_section_too_long_to_carry_is_cut_around_the_part_that_matched(tmp_path, tiny_engine):
    """The best section is over the budget: the cut the answer carries holds the matching line and
    says which lines it is. Cut from the section's head, a log's answer on line 123 was not in it."""
    e = tiny_engine(write(tmp_path / "notes", "log.md", _log(120, 40)).parent)
    out = SearchAnswer.parse(api.do_search(e.view(), {"query": "max_client_conn", "exact": True, "budget_tokens": 400}))
    best = out.results[0]
    assert best.content_truncated and "raised max_client_conn from 400 to 800" in best.content, best.content
    first, last = best.content_lines
    assert best.lines[0] < first <= 123 <= last <= best.lines[1]
    on_disk = (tmp_path / "notes" / "log.md").read_text().split("\n")
    assert best.content.rstrip("\n").split("\n") == on_disk[first - 1:last]   # the lines it says it carries
    text = search_text(out)
    assert f"from line {first}, the part that matched" in text and "max_client_conn from 400 to 800" in text


def test_a_long_section_whose_match_is_near_its_head_is_cut_from_its_head(tmp_path, tiny_engine):
    e = tiny_engine(write(tmp_path / "notes", "log.md", _log(3, 150)).parent)
    out = SearchAnswer.parse(api.do_search(e.view(), {"query": "max_client_conn", "exact": True, "budget_tokens": 400}))
    best = out.results[0]
    assert best.content_truncated and best.content.startswith("# Ops log") and "max_client_conn" in best.content
    assert best.content_lines[0] == best.lines[0] and "the part that matched" not in search_text(out)


@pytest.mark.slow
def test_a_question_in_other_words_gets_the_part_of_a_long_log_that_answers_it(tmp_path):
    """With the shipped model: the dense leg's passage says where the answer stands in a log far over
    the budget, though the question shares almost no word with it (the words alone would centre the
    cut on the first "primary" or "limit")."""
    with real_model_engine(tmp_path, {"log.md": _log(300, 60)}) as engine:
        out = SearchAnswer.parse(api.do_search(engine.view(), {
            "query": "the connection pooler ran out of slots on the primary database - what limit did we change?"}))
    best = out.results[0]
    assert best.content_truncated and "raised max_client_conn from 400 to 800" in best.content
    assert best.content_lines[0] > best.lines[0]


def test_a_section_of_one_long_line_is_cut_around_its_match(tmp_path, tiny_engine):
    line = " ".join(f"event{i} ok" for i in range(3000)) + " pgbouncer raised max_client_conn to 800 " + "tail ok " * 200
    e = tiny_engine(write(tmp_path / "notes", "log.md", f"# Log\n\n{line}\n").parent)
    out = SearchAnswer.parse(api.do_search(e.view(), {"query": "max_client_conn", "exact": True, "budget_tokens": 400}))
    assert out.results[0].content_truncated and "max_client_conn to 800" in out.results[0].content
