"""Filters-only listings (and the counts an emptied one reports) read each type's newest sections from the sections' own copy of their
document's type (catalog.SECTION_TYPES_INDEX): the same ids, in the same order, as the join over
documents they replace — for one type, several, with dates and paths, with undated and bodiless
sections — and a catalog from before the column gets it filled when it is opened for writing."""

from __future__ import annotations

import sqlite3

import pytest

from remembrancer.indexer.store.local.catalog import Catalog
from remembrancer.indexer.store.filters import Filters
from tests.support.corpus import engine_for, write

FILTERS = [
    Filters(types=["journal"]),
    Filters(types=["runbook"]),
    Filters(types=["journal"], since="2030-01-03"),
    Filters(types=["journal", "runbook"]),
    Filters(types=["runbook", "journal", "doc"], since="2030-01-02"),
    Filters(types=["doc", "journal"], until="2030-01-04"),
    Filters(types=["journal", "doc"], path="journal/"),
    Filters(types=["doc"]),            # one bodiless section among them: listed only by the fallback
    Filters(types=["lesson"]),         # no such section: nothing
    Filters(types=["runbook", "lesson"]),
    Filters(since="2030-01-02"),
]


def _corpus(root):
    for day in range(1, 7):
        write(root, f"journal/2030-01-0{day}.md",
              f"# 2030-01-0{day}\n\n## 09:00 deploy\n\nShipped build {day}.\n\n## 15:00 review\n\nLooked at it.\n")
    for i in range(4):
        write(root, f"runbooks/restore-{i}.md",
              f"---\ndate: 2030-01-0{i + 2}\n---\n# Restore {i}\n\n## Steps\n\nRun restore {i}.\n\n## Verify\n\nCheck it.\n")
    write(root, "notes/undated.md", "# Undated\n\nNo date anywhere in this note.\n")
    write(root, "notes/bare.md", "# Bare heading only\n")


@pytest.fixture
def typed_engine(tmp_path, data_env, tiny_embedder):
    root = tmp_path / "notes"
    _corpus(root)
    e = engine_for([root], tiny_embedder)   # the default layout: journal/, runbooks/, and the rest "doc"
    e.refresh()
    yield e
    e.close()


def _both_ways(cat: Catalog, f: Filters, limit: int) -> tuple[list[int], list[int]]:
    """newest_sections through the type index, and through the documents join it replaces."""
    typed = cat.newest_sections(f, limit)
    cat.has_section_types = False
    try:
        joined = cat.newest_sections(f, limit)
    finally:
        cat.has_section_types = True
    return typed, joined


@pytest.mark.parametrize("limit", [1, 3, 20])
def test_newest_by_type_lists_what_the_join_lists(typed_engine, limit):
    cat = typed_engine.catalog
    assert cat.has_section_types
    listed = 0
    for f in FILTERS:
        typed, joined = _both_ways(cat, f, limit)
        assert typed == joined, f
        listed += len(typed)
    assert listed > 0   # the filters do list sections: the comparison is not between two empty lists


def test_several_types_are_merged_newest_first(typed_engine):
    cat = typed_engine.catalog
    ids = cat.newest_sections(Filters(types=["runbook", "journal"]), 50)
    rows = cat.sections_by_id(ids)
    got = [(rows[i].doc_type, rows[i].date) for i in ids]
    assert {t for t, _ in got} == {"journal", "runbook"}
    dates = [d for _, d in got]
    assert dates == sorted(dates, reverse=True)


def test_a_bodiless_type_falls_back_to_its_bare_sections(typed_engine):
    cat = typed_engine.catalog
    ids = cat.newest_sections(Filters(types=["doc"], path="notes/bare.md"), 5)
    assert [cat.sections_by_id(ids)[i].heading for i in ids] == ["Bare heading only"]


def test_each_section_holds_its_documents_type(typed_engine):
    db = typed_engine.catalog.db
    wrong = db.execute("SELECT COUNT(*) FROM sections s JOIN documents d ON d.id = s.doc_id"
                       " WHERE s.doc_type IS NOT d.doc_type").fetchone()[0]
    assert wrong == 0 and db.execute("SELECT COUNT(*) FROM sections").fetchone()[0] > 20


def _drop_column(path) -> None:
    db = sqlite3.connect(path)
    db.execute("DROP INDEX sections_type_newest")
    db.execute("ALTER TABLE sections DROP COLUMN doc_type")
    db.execute("PRAGMA user_version = 2")   # the catalog as a version from before migration 3 left it
    db.commit()
    db.close()


def test_a_catalog_from_before_the_column_gets_it_at_open(typed_engine):
    path = typed_engine.catalog.path
    expected = {str(f): typed_engine.catalog.newest_sections(f, 5) for f in FILTERS}
    typed_engine.close()
    _drop_column(path)
    old = Catalog(path, readonly=True)   # a reader of the old catalog: the join, same answers
    try:
        assert not old.has_section_types
        assert {str(f): old.newest_sections(f, 5) for f in FILTERS} == expected
    finally:
        old.close()
    cat = Catalog(path)
    try:
        assert cat.has_section_types
        assert cat.db.execute("SELECT COUNT(*) FROM sections WHERE doc_type IS NULL").fetchone()[0] == 0
        assert {str(f): cat.newest_sections(f, 5) for f in FILTERS} == expected
    finally:
        cat.close()


def test_rows_an_older_version_wrote_without_a_type_are_filled(typed_engine):
    path = typed_engine.catalog.path
    expected = typed_engine.catalog.newest_sections(Filters(types=["runbook"]), 20)
    typed_engine.close()
    db = sqlite3.connect(path)
    db.execute("UPDATE sections SET doc_type = NULL WHERE id IN (SELECT id FROM sections ORDER BY id DESC LIMIT 7)")
    db.commit()
    db.close()
    cat = Catalog(path)
    try:
        assert cat.db.execute("SELECT COUNT(*) FROM sections WHERE doc_type IS NULL").fetchone()[0] == 0
        assert cat.newest_sections(Filters(types=["runbook"]), 20) == expected
    finally:
        cat.close()


def test_counts_are_the_listed_sections(typed_engine):
    cat = typed_engine.catalog
    counted = 0
    for f in FILTERS + [Filters(path="notes/"), Filters(types=["doc"], path="notes/bare.md", until="2031-01-01")]:
        n = len(cat.filtered_section_ids(f))
        assert cat.count_sections(f) == n, f
        cat.has_section_types = False   # a catalog from before the column counts through the join
        try:
            assert cat.count_sections(f) == n, f
        finally:
            cat.has_section_types = True
        counted += n
    assert counted > 0


def test_an_emptied_filter_result_names_each_filters_count(typed_engine):
    from remembrancer.indexer.search.answer import SearchRequest, search

    out = search(typed_engine.view(), SearchRequest(filters=Filters(types=["runbook"], since="2031-01-01"))).to_json()
    assert out["results"] == []
    cat = typed_engine.catalog
    by = {r["param"]: r for r in out["emptied_by"]}
    assert by["type"]["matches_alone"] == len(cat.filtered_section_ids(Filters(types=["runbook"]))) > 0
    assert by["since"]["matches_alone"] == 0
