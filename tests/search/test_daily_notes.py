"""A vault of daily notes (Obsidian's `2024-01-05.md`, Logseq's `2024_01_05.md`, an agent's
`memory/2025-01-05.md`): each file is one day of a journal, and says which day only in its name. A
question naming the day finds that day's notes."""

from __future__ import annotations

import pytest

from remembrancer.indexer import api
from remembrancer.indexer.search import answer
from remembrancer.indexer.search.answer import SearchRequest, search
from tests.support.corpus import real_model_engine, write_tree

TOPICS = ["billing export", "login page", "search box", "invoice mailer", "audit log", "rate limiter",
          "cache warmer", "status page", "backup job", "billing retries", "search ranking", "login rate limit"]
VAULT = {
    **{f"daily/2024-01-{d:02d}.md": f"## Standup\n\nWorked on the {topic}.\n\n## Notes\n\nWhat I learned: the "
       f"{topic} needs a test.\n" for d, topic in enumerate(TOPICS, 1)},
    "memory/2024-01-13.md": "## Session\n\nWhat happened: the deploy of the billing export failed twice.\n",
    "projects/roadmap.md": "# Roadmap 2024\n\nWhat the 2024 release holds: billing, search and audit.\n",
    "projects/billing.md": "# Billing\n\nWhat happened to billing in 2024: exports, retries, invoices.\n",
    "people/ana.md": "# Ana\n\nJoined in 2024; owns the 2024 billing work.\n",
}


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    with real_model_engine(tmp_path_factory.mktemp("daily"), VAULT) as e:
        yield e


@pytest.mark.slow
@pytest.mark.parametrize("query", ["what happened on 2024-01-05?", "What did I work on on 5 January 2024?",
                                   "my notes from January 5th, 2024"])
def test_a_day_the_question_names_finds_that_days_note(vault, monkeypatch, query):
    """The day is read as the day to look in (its month is no absent name, its digits no keywords):
    that day's note comes first, ahead of notes titled or filled with the year. Without it the
    question's words win: "Roadmap 2024", "what happened to billing in 2024"."""
    out = api.do_search(vault.view(), {"query": query, "limit": 5, "explain": True})
    assert out["results"] and not out.get("no_strong_match"), out
    assert out["results"][0]["path"] == "daily/2024-01-05.md", [(r["path"], r["heading"]) for r in out["results"]]
    monkeypatch.setattr(answer, "DAY_CREDIT", False)
    off = api.do_search(vault.view(), {"query": query, "limit": 5})
    assert "daily/2024-01-05.md" not in [r["path"] for r in (off["results"] or off["best_weak"])[:2]]
    assert any("the day the question names" in why for why in out["results"][0]["why"])


@pytest.mark.slow
def test_a_day_the_notes_do_not_hold_is_searched_as_words(vault):
    """No note is dated 2024-03-05: the question is searched as it stands, nothing is moved first."""
    out = api.do_search(vault.view(), {"query": "what happened on 2024-03-05?", "limit": 5, "explain": True})
    shown = out["results"] or out["best_weak"]
    assert shown and not any("the day the question names" in why for r in shown for why in r.get("why") or [])


@pytest.mark.slow
def test_a_daily_note_is_a_journal_titled_by_its_day_wherever_it_is_kept(vault):
    for path in ("daily/2024-01-05.md", "memory/2024-01-13.md"):
        doc = api.do_read(vault.view(), {"path": path, "max_chars": 100})
        assert (doc["type"], doc.get("date")) == ("journal", path[-13:-3]), doc


@pytest.mark.parametrize("rel, text, title, header, heading", [
    ("daily/2024-01-05.md", "## Standup\n\nWorked on it.\n", "2024-01-05", "[journal] 2024-01-05 > Standup", "Standup"),
    ("journals/2024_01_05.md", "## Standup\n\nWorked on it.\n", "2024-01-05", "[journal] 2024-01-05 > Standup", "Standup"),
    ("daily/2024-01-05.md", "# Friday\n\n## Standup\n\nWorked on it.\n", "Friday", "[journal] Friday > Standup",
     "Friday > Standup"),
    ("notes/ana.md", "## Role\n\nOwns billing.\n", "ana.md", "[doc] Role", "Role"),
    # named by the day in words, as a daily-notes app may be set to name them
    ("daily/5 January 2024.md", "## Standup\n\nWorked on it.\n", "2024-01-05", "[journal] 2024-01-05 > Standup", "Standup"),
    ("daily/Friday, January 5th, 2024.md", "## Standup\n\nWorked on it.\n", "2024-01-05",
     "[journal] 2024-01-05 > Standup", "Standup"),
    ("notes/5 January 2024 retro.md", "## Role\n\nOwns billing.\n", "5 January 2024 retro.md", "[doc] Role", "Role"),
])
def test_a_daily_note_without_a_title_is_titled_and_headed_by_its_day(rel, text, title, header, heading):
    """Its text never says which day it is: the day stands in for the missing H1 in the title and in
    every passage's header, as a journal's dated H1 would; the section keeps its own breadcrumb (the
    address `read` takes). A note with an H1, or not named by its day, keeps what it had."""
    from remembrancer.indexer.config import DEFAULT_LAYOUT
    from remembrancer.indexer.ingest import document as ingest
    from remembrancer.indexer.ingest import meta
    from remembrancer.indexer.ingest.corpus import CorpusFile
    from tests.support.adversarial import FUZZ_ROOT

    data = text.encode()
    f = CorpusFile(FUZZ_ROOT, rel, rel, FUZZ_ROOT.path / rel, len(data), 0)
    prepared = ingest.prepare(f, data, meta.Layout(DEFAULT_LAYOUT), meta.EntityMatcher([]), None)
    assert prepared.doc.title == title
    assert prepared.sections[-1].heading == heading
    assert header in prepared.texts.values(), prepared.texts   # the heading passage: the header alone


SMALL_VAULT = {
    **{f"daily/2024-01-0{d}.md": f"## Standup\n\nWorked on the {topic} for the 2024 release.\n"
       for d, topic in zip(range(1, 10), ["billing export", "login page", "search box", "invoice mailer",
                                          "audit log", "rate limiter", "cache warmer", "status page", "backup job"])},
    "projects/roadmap.md": "# Roadmap 2024\n\nWhat the 2024 release holds: billing, search, audit.\n",
    "people/ana.md": "# Ana\n\nJoined in 2024; owns the 2024 release of billing.\n",
}


@pytest.mark.parametrize("query", ["what happened on 2024-01-05?", "What did I work on on 5 January 2024?",
                                   "notes from January 5th, 2024"])
def test_a_day_the_question_names_finds_the_notes_dated_that_day(tmp_path, tiny_engine, monkeypatch, query):
    """The tiny model's version of the test above (it runs with the fast tests): the sections dated
    the day come first, not a note titled with the year; the day's month is no absent name."""
    engine = tiny_engine(write_tree(tmp_path / "vault", SMALL_VAULT))
    out = search(engine.view(), SearchRequest(query, limit=5)).to_json()
    assert out["results"] and not out.get("no_strong_match"), out
    assert out["results"][0]["path"] == "daily/2024-01-05.md", out["results"]
    monkeypatch.setattr(answer, "DAY_CREDIT", False)
    off = search(engine.view(), SearchRequest(query, limit=5)).to_json()
    assert (off["results"] or off["best_weak"])[0]["path"] != "daily/2024-01-05.md"


@pytest.mark.parametrize("text, days", [
    ("what happened on 2024-01-05?", ["2024-01-05"]),
    ("on 5 January 2024 and on Jan 6th, 2024", ["2024-01-05", "2024-01-06"]),
    ("Sept 9 2033", ["2033-09-09"]),
    ("2024-02-30, 31 June 2024", []),                 # no such days
    ("the 12 servers of 2024, version 1.2 2024", []),   # numbers, not days
    ("what changed since 2024-01-05, before 6 January 2024?", []),   # bounds, not the day to look in
    ("my notes from January 5th, 2024", ["2024-01-05"]),
    ("Is API version 2025-06-01 still going to be sunset?", []),   # a version named by its day
    ("which customers are still pinned to version 2024-11-01?", []),
])
def test_the_days_a_question_names(text, days):
    from remembrancer.indexer import dates

    assert dates.days_named(text) == days
    assert not set(days) & set(dates.days_named(dates.without_days(text, days)))


def test_a_busy_day_nominates_a_bounded_number_of_sections(tmp_path, tiny_engine, monkeypatch):
    """A day with many sections (a conversations corpus, a long log) is credited on the sections the
    other legs found and nominates at most LITERAL_CANDIDATES more, as a probe found everywhere does:
    each candidate is scored, and thousands would cost every search of that day."""
    for name, width in (("LITERAL_CANDIDATES", 5), ("DENSE_CANDIDATES", 3), ("BM25_CANDIDATES", 3)):
        monkeypatch.setattr(answer, name, width)   # the other legs find a few: the day nominates the rest
    day = "# 2024-01-05\n\n" + "".join(f"## {h:02d}:00 entry {h}\n\nItem number {h} of the day.\n\n" for h in range(40))
    engine = tiny_engine(write_tree(tmp_path / "vault", {"journal/2024-01-05.md": day,
                                                          "notes/other.md": "# Other\n\nNothing dated.\n"}))
    with engine.view() as view:
        hybrid = answer._hybrid(view, "what happened on 2024-01-05?", None)
    by_the_day_alone = [c for c in hybrid.cands.values() if c.literal == 1.0 and not (c.bm25 or c.dense)]
    assert 0 < len(by_the_day_alone) <= 5, len(by_the_day_alone)
    out = search(engine.view(), SearchRequest("what happened on 2024-01-05?", limit=5)).to_json()
    assert out["results"] and out["results"][0]["path"] == "journal/2024-01-05.md"


@pytest.mark.parametrize("day, spanned", [
    ("is main frozen on 2026-12-20?", True),
    ("can I merge on December 20?", True),      # no year: on the calendar of the span's years
    ("can I merge on 2 January?", True),        # past New Year
    ("is main frozen on 2027-01-05?", False),
    ("what about 2026-12-17?", False),
    ("and on 5 May 2031?", True),
])
def test_a_day_within_a_span_the_text_writes(day, spanned):
    from remembrancer.indexer import dates

    text = "From 2026-12-18 to 2027-01-04 main is frozen. Between 3 May and 9 May 2031 the lab is shut."
    (named,) = dates.named_days(day)
    assert any(dates.within(named, *span) for span in dates.spans_in(text)) is spanned
    assert dates.spans_in("released 2026-01-04. Since 2026-02-01 we pin it") == []   # two days, no span
