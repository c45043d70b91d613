"""The storage seam (indexer/store/base.py): the local store keeps the interface, and no module outside
the store modules writes SQL."""

from __future__ import annotations

import re

import pytest

from remembrancer.indexer.store import base as store
from remembrancer.indexer.store.local.catalog import Catalog
from remembrancer.indexer.store.local.store import LocalStore
from tests.support.paths import PROJECT

STORE_MODULES = {"indexer/store/local/catalog.py", "indexer/store/local/migrations.py", "indexer/store/common.py",
                 "indexer/store/base.py", "indexer/store/local/store.py", "indexer/store/scope_views.py",
                 "indexer/store/ledger.py"}
SQL_CALL = re.compile(r"\.(execute|executemany|executescript)\(|\bcatalog\.db\b|\bSELECT\s+[\w*]|\bINSERT\s+INTO\b")


def _sources():
    for folder in ("indexer", "daemon", "mcp_server", "cli", "hooks"):
        for path in sorted((PROJECT / folder).rglob("*.py")):
            rel = path.relative_to(PROJECT).as_posix()
            if rel not in STORE_MODULES and not rel.startswith("indexer/store/postgres/"):
                yield rel, path.read_text()


def test_no_sql_outside_the_store_modules():
    offenders = [f"{rel}:{i}: {line.strip()}" for rel, text in _sources()
                 for i, line in enumerate(text.splitlines(), 1) if SQL_CALL.search(line)]
    assert offenders == []


def test_the_sql_detector_sees_a_query():
    assert SQL_CALL.search('rows = engine.catalog.db.execute("SELECT path FROM documents")')
    assert not SQL_CALL.search("rows = engine.catalog.document_paths()")


def test_the_local_store_keeps_the_interface(tmp_path):
    s = LocalStore(tmp_path / "idx")
    assert isinstance(s, store.Store)
    ledger = s.open_ledger(readonly=False)
    try:
        assert isinstance(ledger, store.Ledger)
        assert isinstance(s.keyword_index(lambda: ledger), store.KeywordIndex)
        assert isinstance(s.vector_index(lambda: ledger, 8), store.VectorIndex)
    finally:
        ledger.close()


def test_a_reader_of_a_missing_local_index_is_told_to_build_it(tmp_path):
    from remembrancer.indexer.errors import UserError

    with pytest.raises(UserError) as e:
        LocalStore(tmp_path / "nothing", "notes").open_ledger(readonly=True)
    assert e.value.code == "no_index" and "notes" in str(e.value)


def test_typed_reads_of_the_local_catalog(notes_engine):
    cat: Catalog = notes_engine.catalog
    paths = cat.document_paths()
    assert sorted(paths) == sorted(cat.documents())
    names = cat.document_names()
    assert {n[0] for n in names} == set(paths)
    some = paths[0]
    assert [s.path for s in cat.sections(some)] == [some] * len(cat.sections(some))
    assert set(cat.section_ids_of([some])) == {s.id for s in cat.sections(some)}
    summaries = {d.path: d for d in cat.document_summaries(store.Filters())}
    assert summaries[some].sections == len(cat.sections(some))
    doc = cat.document(some)
    assert set(cat.passage_ids_of_document(doc["id"])) == cat.passage_ids_in(s.id for s in cat.sections(some))


# -- the section heads kept between searches (Catalog.section_heads_by_id) ---------------------------

def _heads_world(notes_engine):
    cat: Catalog = notes_engine.catalog
    runbook = [s.id for s in cat.sections(next(p for p in cat.document_paths() if p.startswith("runbooks/")))]
    host = [s.id for s in cat.sections("hosts/db1.md")]
    return cat, runbook, host


def test_kept_section_heads_see_another_connections_commit(notes_engine):
    import sqlite3

    cat, runbook, host = _heads_world(notes_engine)
    assert cat.section_heads_by_id(host)[host[0]].entities != ["zz-other"]
    other = sqlite3.connect(cat.path)   # the daemon's writer has a connection of its own
    with other:
        other.execute("UPDATE sections SET entities=? WHERE id=?", ('["zz-other"]', host[0]))
    other.close()
    assert cat.section_heads_by_id(host)[host[0]].entities == ["zz-other"]


def test_kept_section_heads_see_this_connections_own_writes(notes_engine):
    cat, runbook, host = _heads_world(notes_engine)
    before = cat.section_heads_by_id(host)[host[0]]
    cat.db.execute("UPDATE sections SET heading=? WHERE id=?", ("Renamed here", host[0]))
    assert before.heading != "Renamed here"
    assert cat.section_heads_by_id(host)[host[0]].heading == "Renamed here"


def test_kept_section_heads_never_cross_a_scope(notes_engine):
    cat, runbook, host = _heads_world(notes_engine)
    both = runbook + host
    assert set(cat.section_heads_by_id(both)) == set(both)
    with cat.scoped(("runbooks",)):
        assert set(cat.section_heads_by_id(both)) == set(runbook)   # read unscoped a moment ago
    assert set(cat.section_heads_by_id(both)) == set(both)


def test_heads_read_inside_a_transaction_are_not_kept(notes_engine):
    cat, runbook, host = _heads_world(notes_engine)
    original = cat.section_heads_by_id(host)[host[0]].heading
    cat.db.execute("BEGIN")
    cat.db.execute("UPDATE sections SET heading=? WHERE id=?", ("Rolled back", host[0]))
    assert cat.section_heads_by_id(host)[host[0]].heading == "Rolled back"
    cat.db.execute("ROLLBACK")
    assert cat.section_heads_by_id(host)[host[0]].heading == original
