"""The storage seam (indexer/store.py): the local store keeps the interface, and no module outside
the store modules writes SQL."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from remembrancer.indexer import store
from remembrancer.indexer.catalog import Catalog
from remembrancer.indexer.store_local import LocalStore

PACKAGE = Path(__file__).resolve().parent.parent
STORE_MODULES = {"indexer/catalog.py", "indexer/store.py", "indexer/store_local.py"}
SQL_CALL = re.compile(r"\.(execute|executemany|executescript)\(|\bcatalog\.db\b|\bSELECT\s+[\w*]|\bINSERT\s+INTO\b")


def _sources():
    for folder in ("indexer", "daemon", "mcp_server", "cli", "hooks"):
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            rel = path.relative_to(PACKAGE).as_posix()
            if rel not in STORE_MODULES and not rel.startswith("indexer/pg"):
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
