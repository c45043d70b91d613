"""A journal kept by hand: a file a month (`journal/2031-05.md`) or a log of any name, its entries
titled by their day in words ("Tuesday 6 May", "14 May 2031"), and questions that name a day
without its year ("what did we do on 14 May?"), from today ("yesterday") or by its ordinal ("the
16th"). The day is what the notes say: it dates the entry, so filters, the day a question names,
the newest account and an entity's history all read it; a day the notes have nothing of is no
strong match, and a pasted log line's timestamp is when, not what."""

from __future__ import annotations

import pytest

from remembrancer.indexer import api, dates, terms
from remembrancer.indexer.ingest import meta
from remembrancer.indexer.search import answer
from remembrancer.indexer.search.answer import SearchRequest, search
from tests.support.corpus import real_model_engine, write_tree

MONTHLY = {
    "journal/2031-05.md": (
        "# May 2031\n\n"
        "## Tuesday 6 May — pg1 disk alarm\n\nThe disk on pg1 hit 91% at night: the WAL archiver had "
        "stalled on a full bucket quota. Raised the quota; the archiver caught up.\n\n"
        "## 14 May\n\nRebuilt the ingest workers on the new base image; the backlog drained by noon.\n\n"
        "## Thursday, 22 May\n\nMoved the WAL archive to the bucket wal-archive-2.\n"),
    "journal/2031-06.md": (
        "# June 2031\n\n"
        "## 3 June\n\nDeleted the old WAL bucket after the restore drill passed.\n\n"
        "## 10 June\n\nThe archiver stalled again: the wal-archive-2 credentials expired. Renewed them. The "
        "next restore drill is on 12 August.\n"),
    # kept outside journal/: the shape says it is a log
    "notes/ops-log.md": (
        "# Ops log 2031\n\n## 2 July\n\nPatched the proxy.\n\n## 9 July\n\nRotated the proxy certificate.\n\n"
        "## 16th July\n\nReplaced the proxy's disk.\n"),
    "hosts/pg1.md": "---\nhost: pg1\n---\n# pg1\n\nPostgreSQL primary; WAL archived to wal-archive-2.\n",
}


@pytest.mark.parametrize("chain, rel, doc_date, day", [
    (["May 2031", "Tuesday 6 May — pg1 disk alarm"], "journal/2031-05.md", None, "2031-05-06"),
    (["May 2031", "14 May"], "notes/log.md", None, "2031-05-14"),          # the year and month from above
    (["Log", "Thu, 22 May"], "journal/2031-05.md", None, "2031-05-22"),    # ... from the path
    (["Log", "Monday 3rd"], "journal/2031/05/log.md", None, "2031-05-03"),  # a weekday and a day: month from the path
    (["Notes", "May 14th, 2031 — pg1"], "", None, "2031-05-14"),
    (["Notes", "14th of May"], "2030/notes.md", None, "2030-05-14"),
    (["Notes", "May 14"], "notes.md", "2031-02-01", "2031-05-14"),         # the year from the document's date
    (["Notes", "May 14"], "notes.md", None, None),                         # nothing places it
    (["Notes", "31 June"], "journal/2031-06.md", None, None),              # no such day
    (["Plan", "3 Jobs to do"], "plans/2031-05.md", None, None),            # a number, no month
    (["Notes", "June 10.5 release"], "2031-06.md", None, None),            # a version
    (["Notes", "May 3:30pm call"], "2031-05.md", None, None),              # a time
    (["Notes", "Step 3"], "2031-05.md", None, None),
    (["2033-W40", "Mon 2033-10-03", "11:00 — GA slips to 13 December"], "log/2033-W40.md", None, "2033-10-03"),
    (["2032-06-29", "14:00 June cost against the plan"], "journal/2032/2032-06-29.md", None, "2032-06-29"),
])
def test_a_heading_that_is_a_day_in_words_dates_its_section(chain, rel, doc_date, day):
    """Only a heading that begins with the day is one: a day named further in ("GA slips to
    13 December") leaves the section the date of the heading above it."""
    assert meta.heading_dates(chain, rel, doc_date) == day


@pytest.mark.parametrize("chain, day_first, day", [
    (["Log", "14.05.2031"], None, "2031-05-14"),                 # day first, as Europe writes it
    (["Log", "Tue 3.6.2031 — pg1 disk"], None, "2031-06-03"),
    (["Log", "2031/05/14 standup"], None, "2031-05-14"),
    (["Log", "2031.05.14"], None, "2031-05-14"),
    (["Log", "14/05/2031"], None, "2031-05-14"),                 # a part over 12 says the order
    (["Log", "05/14/2031"], None, "2031-05-14"),
    (["Log", "03/04/2031"], True, "2031-04-03"),                 # the document's other headings say it
    (["Log", "03/04/2031"], False, "2031-03-04"),
    (["Log", "03/04/2031"], None, None),                         # nothing says it
    (["Log", "31.06.2031"], None, None),                         # no such day
    (["Log", "Release 1.2.2031.4"], None, None),                 # a version
    (["Log", "14.05.2031.1"], None, None),
    (["Log", "Steps 1/2 done"], None, None),
])
def test_a_heading_that_is_a_day_in_figures_dates_its_section(chain, day_first, day):
    assert meta.heading_dates(chain, "notes/log.md", None, day_first) == day


def test_how_a_document_writes_a_slashed_day_is_what_its_headings_say():
    assert dates.slash_order(["Log", "14/05/2031", "03/06/2031"]) is True
    assert dates.slash_order(["Log", "05/14/2031", "06/03/2031"]) is False
    assert dates.slash_order(["Log", "03/06/2031"]) is None
    assert dates.slash_order(["14/05/2031", "05/14/2031"]) is None   # both: it cannot be told


def test_a_log_of_days_in_figures_is_a_dated_journal(tmp_path, tiny_engine):
    """`## 03/06/2031` is read day first because the same log writes `## 14/05/2031`; a daily note
    named `02.07.2031.md` is that day. Read without them, every entry was undated and `since` found
    nothing; and "what did we do on 3 June 2031?" said the notes had nothing of that day."""
    engine = tiny_engine(write_tree(tmp_path / "notes", {
        "notes/ops-log.md": "# Ops log\n\n## 14/05/2031\n\nRebuilt the ingest workers.\n\n"
                            "## 03/06/2031\n\nDeleted the old WAL bucket of pg1.\n\n## 04/06/2031\n\nRenewed the keys.\n",
        "daily/02.07.2031.md": "Patched the proxy.\n",
        "hosts/pg1.md": "---\nhost: pg1\n---\n# pg1\n\nPostgreSQL primary.\n",
        "notes/drills.md": "# Drills\n\nThe next restore drill is on 12.08.2031.\n"}))
    out = api.do_search(engine.view(), {"since": "2031-06-01", "limit": 10})
    assert [(r["path"], r.get("date")) for r in out["results"]] == [
        ("daily/02.07.2031.md", "2031-07-02"), ("notes/ops-log.md", "2031-06-04"), ("notes/ops-log.md", "2031-06-03")], out
    doc = api.do_read(engine.view(), {"path": "notes/ops-log.md", "max_chars": 100})
    assert doc["type"] == "journal", doc
    from remembrancer.indexer.memory import tools as memory
    rows = memory.history(engine.view(), "pg1").to_json()["results"]
    assert [(r["date"], r["dated_by"]) for r in rows if r["path"] == "notes/ops-log.md"] == [("2031-06-03", "heading")]
    for query in ("what did we do on 3 June 2031?", "when is the restore drill of 12 August 2031?"):
        got = search(engine.view(), SearchRequest(query, limit=3)).to_json()
        assert not any(why.startswith("no note of ") for why in got.get("why_no_strong_match") or []), got


def test_a_weekly_note_is_dated_by_its_iso_week(tmp_path, tiny_engine):
    """`handoff-2042-W44.md` and its `# Handoff 2042-W44` are the week of Monday 2042-10-27 (ISO
    8601; Obsidian's Periodic Notes name weekly notes so): a series of weekly notes is a dated
    journal, newest first under `since`. Read without them, every handoff was undated."""
    assert meta.week_in("handoff-2042-W44.md") == "2042-10-27"
    assert meta.week_in("Handoff 2043-W01 (covers W52 + W01)") == "2042-12-29"   # ISO week 1 of 2043
    assert meta.week_in("2042-W54") is None and meta.week_in("2042-W00") is None   # no such week
    assert meta.week_in("build AB2042-W44x") is None    # inside a word: an identifier, not a week
    engine = tiny_engine(write_tree(tmp_path / "notes", {
        "oncall/handoff-2042-W44.md": "# Handoff 2042-W44\n\n## Happened\n\nCellar failed over.\n\n"
                                      "## Watch\n\nDisk on the replica.\n",
        "oncall/handoff-2042-W45.md": "# Handoff 2042-W45\n\n## Happened\n\nQuiet week.\n\n## Watch\n\nNothing.\n",
        "oncall/rotation.md": "# Rotation\n\nWho is on call.\n"}))
    out = api.do_search(engine.view(), {"since": "2042-10-01", "limit": 10})
    assert [(r["path"], r.get("date")) for r in out["results"]][:1] == [("oncall/handoff-2042-W45.md", "2042-11-03")], out
    assert {r["path"] for r in out["results"]} == {"oncall/handoff-2042-W44.md", "oncall/handoff-2042-W45.md"}, out
    doc = api.do_read(engine.view(), {"path": "oncall/handoff-2042-W44.md", "max_chars": 100})
    assert doc["type"] == "journal", doc


@pytest.mark.parametrize("text, named, without_year", [
    ("what did we do on 14 May?", [], [(5, 14)]),
    ("what did we do on June 3rd?", [], [(6, 3)]),
    ("the 3rd of June 2031", ["2031-06-03"], []),
    ("on 2031-06-03 and on 5 January 2024", ["2031-06-03", "2024-01-05"], []),   # "and 5" is no day
    ("we may 5x it; scale to 3 nodes; version 14", [], []),   # lower-case "may" is a verb
    ("Feb 30 and Mayday 3", [], []),
    ("what changed since 14 May?", [], []),                    # a bound, not the day to look in
])
def test_the_days_a_question_names_with_or_without_their_year(text, named, without_year):
    assert dates.days_named(text) == named
    assert list(dict.fromkeys((d.month, d.day) for d in dates.named_days(text) if d.year is None)) == without_year


def test_a_day_named_without_its_year_is_taken_out_of_the_words_as_the_day_the_notes_hold():
    assert dates.without_days("what did we do on 14 May?", ["2031-05-14"]) == "what did we do on ?"
    assert dates.without_days("what did we do on 14 May?", ["2031-05-15"]) == "what did we do on 14 May?"


def test_an_ordinal_is_english_not_a_term_of_art():
    assert not terms.is_rare("16th", frozenset())
    assert terms.is_rare("kubernetes", frozenset())


@pytest.fixture
def monthly(tmp_path, tiny_engine):
    return tiny_engine(write_tree(tmp_path / "notes", MONTHLY))


def test_entries_of_a_monthly_journal_carry_their_day(monthly):
    """Filters alone list the journal newest first by the days its headings give; `since` finds
    the June entries. Read without the days, every entry was undated and `since` found nothing."""
    out = api.do_search(monthly.view(), {"type": ["journal"], "path": "journal/", "limit": 10})
    assert [(r["heading"], r.get("date")) for r in out["results"]] == [
        ("June 2031 > 10 June", "2031-06-10"), ("June 2031 > 3 June", "2031-06-03"),
        ("May 2031 > Thursday, 22 May", "2031-05-22"), ("May 2031 > 14 May", "2031-05-14"),
        ("May 2031 > Tuesday 6 May — pg1 disk alarm", "2031-05-06")]
    june = api.do_search(monthly.view(), {"since": "2031-06-01", "until": "2031-06-30", "limit": 10})
    assert june["results"], june
    assert {r["heading"] for r in june["results"]} == {"June 2031 > 10 June", "June 2031 > 3 June"}


def test_an_entitys_history_is_dated_by_the_days_in_words(monthly):
    """`history pg1`: the journal entry that names it, dated by its heading (`dated_by: heading`);
    read without the day it had no date of its own (the file has none, and is not in git)."""
    from remembrancer.indexer.memory import tools as memory

    rows = memory.history(monthly.view(), "pg1").to_json()["results"]
    dated = [(r["heading"], r["date"], r["dated_by"]) for r in rows if r["path"].startswith("journal/")]
    assert dated == [("May 2031 > Tuesday 6 May — pg1 disk alarm", "2031-05-06", "heading")], dated


def test_a_log_of_days_in_words_is_a_journal_wherever_it_is_kept(monthly):
    doc = api.do_read(monthly.view(), {"path": "notes/ops-log.md", "max_chars": 100})
    assert doc["type"] == "journal", doc
    out = api.do_search(monthly.view(), {"path": "notes/", "since": "2031-07-16", "limit": 5})
    assert [r["heading"] for r in out["results"]] == ["Ops log 2031 > 16th July"]


@pytest.mark.parametrize("query, heading", [
    ("what did we do on 14 May?", "May 2031 > 14 May"),
    ("what did we do on June 3rd?", "June 2031 > 3 June"),
    ("anything on the 3rd of June?", "June 2031 > 3 June"),
    ("what happened on 16 July?", "Ops log 2031 > 16th July"),
])
def test_a_day_named_without_its_year_finds_that_days_entry(monthly, monkeypatch, query, heading):
    """The year is the notes' to say: the day's entry comes first and the month is no absent name
    ("not in the corpus: June" was the answer). Without the day's credit it is not first."""
    out = search(monthly.view(), SearchRequest(query, limit=5, explain=True)).to_json()
    assert out["results"] and not out.get("no_strong_match"), out
    assert out["results"][0]["heading"] == heading, [r["heading"] for r in out["results"]]
    assert any("the day the question names" in why for why in out["results"][0]["why"])
    monkeypatch.setattr(answer, "DAY_CREDIT", False)
    off = search(monthly.view(), SearchRequest(query, limit=5)).to_json()
    assert (off["results"] or off["best_weak"])[0]["heading"] != heading or off.get("no_strong_match")


def test_a_day_named_without_its_year_is_the_newest_such_day_the_notes_hold(tmp_path, tiny_engine):
    engine = tiny_engine(write_tree(tmp_path / "notes", {
        "journal/2030-05-14.md": "## Standup\n\nPatched the proxy.\n",
        "journal/2031-05-14.md": "## Standup\n\nPatched the proxy again.\n",
        "journal/2031-06-01.md": "## Standup\n\nNothing.\n"}))
    out = search(engine.view(), SearchRequest("what did we do on 14 May?", limit=3)).to_json()
    assert out["results"][0]["path"] == "journal/2031-05-14.md", out["results"]


def test_an_ordinal_the_notes_never_write_is_no_reason_to_abstain(monthly):
    """"the 17th" is English: a question using it is not about an identifier the corpus lacks."""
    out = search(monthly.view(), SearchRequest("what did we change on the 17th?", limit=3)).to_json()
    assert "17th" not in " ".join(out.get("why_no_strong_match") or []), out


@pytest.mark.slow
def test_a_bare_day_heading_goes_after_the_days_entries(tmp_path):
    """A daily note's `# 2031-06-03` says which day it is and nothing else: the day's entries lead.
    Before, its date written in its heading counted twice for it (the day's credit and the date
    found verbatim), the model read the question's day in it, and it came first."""
    notes = {
        "journal/2031-05-14.md": "# 2031-05-14\n\n## Ingest workers\n\nRebuilt the ingest workers on the new base "
                                 "image. The backlog drained by noon.\n",
        "journal/2031-06-03.md": "# 2031-06-03\n\n## WAL bucket\n\nDeleted the old WAL bucket after the restore "
                                 "drill passed against wal-archive-2.\n",
        "journal/2031-06-10.md": "# 2031-06-10\n\n## pg1 disk alarm\n\nThe WAL archive stalled when the "
                                 "wal-archive-2 credentials expired. Renewed them.\n"}
    with real_model_engine(tmp_path, notes) as engine:
        for query in ("what happened on 3 June 2031?", "what did we do on June 3rd?"):
            out = search(engine.view(), SearchRequest(query, limit=3)).to_json()
            assert [r["heading"] for r in out["results"][:2]] == ["2031-06-03 > WAL bucket", "2031-06-03"], out


@pytest.mark.parametrize("query", ["what did we do on 15 May?", "what happened on 2031-06-04?",
                                   "Who is on call for the week of 9 January 2034?"])
def test_a_day_the_notes_have_nothing_of_is_no_strong_match(monthly, query):
    """No section is dated that day and no text writes it: the notes cannot say what happened then,
    whatever a rephrasing finds (it cannot make the day exist)."""
    for alternates in ((), ("ingest workers rebuilt",)):
        out = search(monthly.view(), SearchRequest(query, limit=3, alternates=list(alternates))).to_json()
        assert out.get("no_strong_match"), out
        assert any(why.startswith("no note of ") for why in out["why_no_strong_match"]), out


def test_a_day_within_a_span_the_best_sections_write_is_held(tmp_path, tiny_engine):
    """"Is main frozen on 2026-12-20?": no section is dated that day and no text writes it, but the
    freeze note writes the span it falls in ("From 2026-12-18 to 2027-01-04"). Before, the question
    abstained ("no note of 2026-12-20") over the note that answers it; a day outside every span the
    best sections write still has no note."""
    e = tiny_engine(write_tree(tmp_path / "notes", {
        "process/freeze.md": "# Holiday code freeze\n\nFrom 2026-12-18 to 2027-01-04 main is frozen: merges need "
                             "an approval from the release owner.\n",
        "process/reviews.md": "# Code review\n\nTwo approvals for anything touching billing.\n"}))
    out = search(e.view(), SearchRequest("is main frozen on 2026-12-20?", limit=3)).to_json()
    assert not any(why.startswith("no note of ") for why in out.get("why_no_strong_match") or []), out
    assert (out["results"] or out["best_weak"])[0]["path"] == "process/freeze.md"
    outside = search(e.view(), SearchRequest("is main frozen on 2027-02-20?", limit=3)).to_json()
    assert any(why.startswith("no note of ") for why in outside["why_no_strong_match"]), outside


def test_a_day_the_notes_write_without_its_year_is_held(tmp_path, tiny_engine):
    """Terse notes write a day as `05-21` ("freeze 05-19 → 05-21"): "is the freeze still on for
    19–21 May?" abstained ("no note of 21 May") over the handoff that answers it."""
    e = tiny_engine(write_tree(tmp_path / "notes", {
        "handoffs/2033-05-03.md": "# Handoff 2033-05-03\n\n- Ostmark go-live freeze 05-19 → 05-21 is on the calendar.\n",
        "policies/reviews.md": "# Code review\n\nTwo approvals for anything touching billing.\n"}))
    out = search(e.view(), SearchRequest("Is the Ostmark go-live freeze still on for 19–21 May?", limit=3)).to_json()
    assert not any(why.startswith("no note of ") for why in out.get("why_no_strong_match") or []), out
    other = search(e.view(), SearchRequest("Is the Ostmark go-live freeze still on for 22 May?", limit=3)).to_json()
    assert any(why.startswith("no note of ") for why in other["why_no_strong_match"]), other


@pytest.mark.parametrize("query", ["How can I get back a file I deleted from my home directory yesterday?",
                                   "how do I restore the WAL archive I broke on 15 May?"])
def test_how_to_do_a_thing_does_not_hang_on_the_day_it_is_needed(monkeypatch, monthly, query):
    """The day is when the asker needs it, not what the notes should hold: a how-to question that
    names a day the notes have nothing of is still answered (it abstained: "no note of yesterday")."""
    import datetime as dt
    monkeypatch.setattr(dates, "today", lambda: dt.date(2031, 5, 16))
    out = search(monthly.view(), SearchRequest(query, limit=3)).to_json()
    assert not any(why.startswith("no note of ") for why in out.get("why_no_strong_match") or []), out
    asked = search(monthly.view(), SearchRequest("what did we do yesterday?", limit=3)).to_json()
    assert any(why.startswith("no note of ") for why in asked.get("why_no_strong_match") or []), asked


@pytest.mark.parametrize("query", ["what did we do on 14 May?", "when is the drill of 12 August?",
                                   "what changed since 15 May?"])
def test_a_day_the_notes_date_or_write_is_no_reason_to_abstain(monthly, query):
    """Dated sections, a day written in the text ("on 12 August"), or a bound and not a day to look in."""
    out = search(monthly.view(), SearchRequest(query, limit=3)).to_json()
    assert not any(why.startswith("no note of ") for why in out.get("why_no_strong_match") or []), out


@pytest.mark.parametrize("query", ["2031-05-22T09:12:44Z archiver moved to wal-archive-2",
                                   "[2031-07-09 10:02:11,331] rotated the proxy certificate",
                                   "what did we do with the proxy at 10:00?"])
def test_a_moment_is_when_not_what(monthly, query):
    """A pasted log line's timestamp, or a time, is no identifier the notes lack: the words logged are
    what the question is about (a log line pasted with its timestamp abstained on any notes)."""
    out = search(monthly.view(), SearchRequest(query, limit=3)).to_json()
    reasons = " ".join(out.get("why_no_strong_match") or [])
    assert "10:0" not in reasons and "09:12" not in reasons and "no note of" not in reasons, out


RECENT = {"journal/2031-06-11.md": "## Standup\n\nRotated the proxy certificate.\n",
          "journal/2031-06-09.md": "## Standup\n\nPatched the proxy.\n",
          "journal/2031-06-03.md": "## Standup\n\nReplaced the proxy's disk.\n",
          "hosts/proxy.md": "# proxy\n\nThe proxy in front of the API: certificate, disk, patches.\n"}


@pytest.mark.parametrize("query, path", [
    ("what did we do yesterday?", "journal/2031-06-11.md"),
    ("what did we do to the proxy last Monday?", "journal/2031-06-09.md"),
    ("what happened last Friday?", "journal/2031-06-06.md"),   # no note: nothing first, and said so
    ("what did we do the day before yesterday?", None),
])
def test_a_day_named_from_today_is_that_day(tmp_path, tiny_engine, monkeypatch, query, path):
    """"Yesterday", "the day before yesterday", "last Monday" count from today (here Thursday
    2031-06-12): that day's notes come first, or, when the notes have none, the answer says so."""
    import datetime as dt

    monkeypatch.setattr(dates, "today", lambda: dt.date(2031, 6, 12))
    engine = tiny_engine(write_tree(tmp_path / "notes", RECENT))
    out = search(engine.view(), SearchRequest(query, limit=3)).to_json()
    if path in RECENT:
        assert not out.get("no_strong_match") and out["results"][0]["path"] == path, out
    else:
        assert out.get("no_strong_match") and any(w.startswith("no note of ") for w in out["why_no_strong_match"]), out
