"""Keyword search in Chinese, Japanese and Korean (and notes mixing them with English): a CJK run is
indexed and asked as overlapping bigrams (terms.keyword_text), so a word inside a run matches; the
hand-written questions of tests/data/cjk/cases.jsonl each find their section first through the
keyword leg alone, locally and in the team store with the same scores; English is indexed as before."""

from __future__ import annotations

import json
import shutil

import pytest

from remembrancer.indexer import terms
from remembrancer.indexer.search.evaluate import heading_key
from tests.support.paths import PROJECT

CJK = PROJECT / "tests" / "data" / "cjk"
CASES = [json.loads(line) for line in (CJK / "cases.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def cjk_notes(tmp_path):
    return shutil.copytree(CJK / "notes", tmp_path / "notes")


def _first(view, query: str) -> tuple[str, str] | None:
    hits = view.keyword_index().search(query, 5)
    if not hits:
        return None
    best = max(hits, key=hits.get)
    row = view.catalog.sections_by_id([best])[best]
    return row.path, row.heading


def _right(got, case) -> bool:
    return got is not None and any(got[0] == e["path"] and e["grade"] >= 2 and (
        e["heading"] is None or heading_key(got[1]) == heading_key(e["heading"])) for e in case["expect"])


def test_keyword_text_splits_cjk_runs_into_bigrams_and_leaves_other_text_alone():
    english = "Restart the app (systemctl restart app) — café, naïve, Ελληνικά."
    assert terms.keyword_text(english) is english
    assert terms.keyword_text("数据库备份").split() == ["数据", "据库", "库备", "备份"]
    assert terms.keyword_text("Redis备份策略").split() == ["Redis", "备份", "份策", "策略"]
    assert terms.keyword_text("再起動する").split() == ["再起", "起動", "動す", "する"]
    assert terms.keyword_text("用 pg_restore 恢复").split() == ["用", "pg_restore", "恢复"]
    assert terms.keyword_text("サーバー").split() == ["サー", "ーバ", "バー"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_each_keyword_question_finds_its_section_first(case, cjk_notes, tiny_engine):
    engine = tiny_engine(cjk_notes)
    got = _first(engine.view(), case["query"])
    assert _right(got, case), (case["query"], got)


def test_a_cjk_phrase_occurs_when_most_of_its_bigrams_do(cjk_notes, tiny_engine):
    """The abstention's "does the corpus use this word?" is asked of a CJK run's bigrams: a run is a
    phrase (nothing marks its words), so a question about restoring the database is not "absent"
    because its whole run occurs nowhere, and one about quantum computers is."""
    from remembrancer.indexer.search.answer import _word_occurs

    view = tiny_engine(cjk_notes).view()
    assert _word_occurs(view, "如何恢复数据库") and _word_occurs(view, "再起動")
    assert not _word_occurs(view, "量子计算机") and not _word_occurs(view, "量子コンピュータ")


def test_the_team_store_scores_cjk_questions_as_the_local_index(cjk_notes, data_env, tiny_embedder, pg_url):
    from remembrancer.indexer import api
    from remembrancer.indexer.config import Config, make_roots
    from tests.store.test_team_keywords import _scores
    from tests.support.team import local_and_store

    def answer(engine, query):   # the whole search, as the MCP tool answers it (timings aside)
        out = api.do_search(engine.view(), {"query": query, "limit": 5})
        return [(r["path"], r["heading"], round(r["score"], 4)) for r in out["results"]], out.get("no_strong_match")

    with local_and_store(Config(roots=make_roots([cjk_notes])), pg_url, tiny_embedder) as (local, reader):
        for case in CASES:
            got = _scores(reader.view(), case["query"])
            assert got and got == _scores(local.view(), case["query"]), case["query"]
            assert _right(_first(reader.view(), case["query"]), case), case["query"]
            assert answer(reader, case["query"]) == answer(local, case["query"]), case["query"]


def test_a_snippet_is_centred_on_a_cjk_word_inside_a_run():
    from remembrancer.indexer.search.answer import SNIPPET_CHARS, _snippet

    filler = "这一段只是背景说明，" * (SNIPPET_CHARS // 5)
    text = filler + "日志保留期改为七天。" + filler
    assert "日志保留期" in _snippet(text, "日志保留期怎么设置")
    assert "日志保留期" in _snippet(text * 40, "日志保留期怎么设置")   # a long section: its window too
    english = "background words here. " * 40 + "the backup runs nightly. " + "more words. " * 40
    assert "backup runs nightly" in _snippet(english, "when does the backup run")
