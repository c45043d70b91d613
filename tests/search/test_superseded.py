"""A decision record that says it was superseded no longer holds: its document is stale as a whole
(meta.document_is_stale reads the status its opening states), and for a question about how things
are — not about the past — it steps back behind the record that replaced it (`stale_factor`)."""

from __future__ import annotations

from remembrancer.indexer import api
from remembrancer.indexer.ingest import meta
from remembrancer.indexer.ingest.markdown import parse_markdown, with_front_matter_preamble
from remembrancer.indexer.search import rank
from tests.support.corpus import write_tree
from tests.support.ranking import ranked, row

OLD = """# ADR-003: Relay cache on ElastiCache Redis

- Status: **Superseded by ADR-009** (2033-11-30)
- Date: 2033-05-16

## Decision

The relay keeps its hot cache in Redis 7.1.
"""
NEW = """# ADR-009: Move the relay's hot cache to Valkey 8.0

- Status: accepted
- Supersedes: ADR-003

## Decision

The relay keeps its hot cache in Valkey 8.0, same endpoint.
"""
NYGARD = """# 4. Use Kafka for events

## Status

Superseded by [7. Use Redpanda](0007-redpanda.md)

## Context

Events arrive in bursts.
"""


def _sections(text: str):
    return with_front_matter_preamble(parse_markdown(text)).sections


def test_a_document_whose_opening_says_superseded_is_stale():
    assert meta.document_is_stale({}, _sections(OLD))
    assert meta.document_is_stale({}, _sections(NYGARD))                     # a `Status` section
    assert meta.document_is_stale({"status": "superseded"}, _sections(NEW))  # front matter, as before
    assert not meta.document_is_stale({}, _sections(NEW))                    # "Supersedes: ADR-003" is current
    assert not meta.document_is_stale({}, _sections("# Notes\n\nWe talked about the superseded cache.\n"))
    late = "# Day\n\n" + "".join(f"- item {i}\n" for i in range(20)) + "- Status: obsolete\n"
    assert not meta.document_is_stale({}, _sections(late))                   # not the document's opening


def test_a_superseded_records_sections_are_stale_in_the_index(tmp_path, tiny_engine):
    """…and a journal day that notes a status change is what was seen that day, not stale itself."""
    day = "# 2033-12-07\n\n- Status: deprecated the v1 relay cache keys\n- moved to Valkey\n"
    e = tiny_engine(write_tree(tmp_path / "notes", {"decisions/ADR-003.md": OLD, "decisions/ADR-009.md": NEW,
                                                    "journal/2033-12-07.md": day}))
    out = api.do_search(e.view(), {"query": "relay hot cache Redis Valkey", "limit": 10})
    assert "journal/2033-12-07.md" in {r["path"] for r in out["results"]}
    stale = {(r["path"], r["heading"]) for r in out["results"] if r.get("stale")}
    assert stale == {("decisions/ADR-003.md", "ADR-003: Relay cache on ElastiCache Redis"),
                     ("decisions/ADR-003.md", "ADR-003: Relay cache on ElastiCache Redis > Decision")}


def test_the_superseding_record_answers_a_question_about_now_not_about_the_past():
    """Near ties go to the record that holds now; a question about the past keeps the old record."""
    rows = [row(1, "decisions/ADR-003.md", "ADR-003 > Decision", stale=True),
            row(2, "decisions/ADR-009.md", "ADR-009 > Decision")]
    scores = {1: 1.00, 2: 0.85}
    assert ranked(rows, scores, "what does the relay use for its hot cache?")[0] == 2
    assert ranked(rows, scores, "how do I flush the relay's hot cache?")[0] == 2
    assert ranked(rows, scores, "why did we pick Redis for the relay cache back then?")[0] == 1   # the past
    assert ranked(rows, scores, "what does the relay use for its hot cache?",
                  rank.RankingConfig(stale_factor=1.0))[0] == 1   # switched off
    assert ranked(rows, {1: 1.00, 2: 0.50}, "what does the relay use for its hot cache?")[0] == 1  # a clear lead stays
