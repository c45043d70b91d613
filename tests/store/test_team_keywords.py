"""The team store's keyword layout (migration 5): postings streamed from their covering key and
summed in numpy, document frequencies counted from the postings, field totals kept by the writer.
Checked against tantivy (the local store) on a real PostgreSQL: fresh, migrated from version 4,
after edits and deletes, filtered and scoped."""

from __future__ import annotations

import shutil

import psycopg
import pytest

from remembrancer.indexer.store.postgres import schema as pg_schema
from remembrancer.indexer.store.postgres import store as pg_store
from remembrancer.indexer.search import answer as S
from remembrancer.indexer.config import Config, make_roots
from remembrancer.indexer.engine import Engine
from remembrancer.indexer.store.postgres.store import PgStore
from tests.support.corpus import write
from tests.support.pg import fresh_database
from tests.support.team import QUERIES, index_once, local_and_store, stats_consistent

# What migrations 1–4 made of the keyword tables (a store a version-4 writer left behind: its
# term_stats held each term's number of postings).
VERSION_4_LAYOUT = """
ALTER TABLE postings DROP CONSTRAINT postings_pkey;
ALTER TABLE postings ADD PRIMARY KEY (field, term, chunk_id);
ALTER TABLE postings ADD CONSTRAINT postings_chunk_id_fkey FOREIGN KEY (chunk_id) REFERENCES chunks(id) ON DELETE CASCADE;
CREATE TABLE term_stats (field smallint NOT NULL, term text NOT NULL, df integer NOT NULL, PRIMARY KEY (field, term));
INSERT INTO term_stats SELECT field, term, count(*) FROM postings GROUP BY 1, 2;
DELETE FROM schema_migrations WHERE version = 5;   -- (7 and 8, scoped readers and the literal index, stay applied)
"""


def _scores(view, query: str, allowed=None) -> dict[tuple[str, str], float]:
    """Keyword scores keyed by (path, heading): ids are each store's own."""
    hits = view.keyword_index().search(query, 5000, allowed)
    rows = view.catalog.sections_by_id(list(hits))
    return {(rows[k].path, rows[k].heading): round(v, 4) for k, v in hits.items()}


def _same_scores(local, reader, queries=QUERIES) -> None:
    found = 0
    for q in queries:
        got = _scores(reader.view(), q)
        assert got == _scores(local.view(), q), q
        found += bool(got)
    assert found >= len(queries) - 2   # not a comparison of empty answers



def _edit(notes) -> None:
    """An added file, a deleted one and an edited one (the tests of what follows edits)."""
    write(notes, "memory/wombat.md", "# Wombat restore\n\nRestore the wombat backup before postgres starts.\n")
    (notes / "README.md").unlink()
    rb = notes / "runbooks" / "postgres" / "restore.md"
    rb.write_text(rb.read_text().replace("restore", "recover", 3) + "\n## Zebra backup\n\nBack up the zebra.\n")

def test_bm25_scores_equal_tantivys_fresh_filtered_and_after_edits(notes, data_env, tiny_embedder, pg_url):
    cfg = Config(roots=make_roots([notes]))
    with local_and_store(cfg, pg_url, tiny_embedder) as (local, reader):
        _same_scores(local, reader)
        # a filter keeps the corpus-wide statistics (tantivy's const-score filter does)
        f = S.flt.Filters(types=["runbook"])
        keep_local, keep_pg = local.catalog.filtered_section_ids(f), reader.catalog.filtered_section_ids(f)
        # both stores count what they list (an emptied result's per-filter counts)
        for g in (f, S.flt.Filters(types=["runbook", "journal"], since="2030-01-01"), S.flt.Filters(path="journal/")):
            n = len(local.catalog.filtered_section_ids(g))
            assert n and local.catalog.count_sections(g) == reader.catalog.count_sections(g) == n, g
        got = _scores(reader.view(), "restore postgres backup", keep_pg)
        assert got and got == _scores(local.view(), "restore postgres backup", keep_local)
        assert all(p.startswith("runbooks/") for p, _ in got)
    # edits and deletes: the counted frequencies and the kept totals follow them; a fresh local
    # index of the edited files scores alike (an updated tantivy index would still count the
    # deleted documents until its segments merge)
    _edit(notes)
    index_once(cfg, pg_url, tiny_embedder)
    stats_consistent(pg_url)
    shutil.rmtree(data_env / "data")
    local = Engine(cfg, embedder=tiny_embedder)
    local.refresh()
    reader = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(pg_url, readonly=True))
    try:
        _same_scores(local, reader, QUERIES + ["restore the wombat backup", "zebra"])
        assert reader.catalog.consistency_problems() == []
    finally:
        reader.close()
        local.close()


@pytest.mark.slow
def test_a_store_of_version_4_migrates_and_answers_as_a_fresh_one(notes, data_env, tiny_embedder, pg_server, pg_url):
    cfg = Config(roots=make_roots([notes]))
    index_once(cfg, pg_url, tiny_embedder)
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute(VERSION_4_LAYOUT)
        assert c.execute("SELECT count(*) FROM schema_migrations WHERE version = 5").fetchone()[0] == 0
    fresh_url = fresh_database(pg_server.get_uri(), "fresh")
    index_once(cfg, fresh_url, tiny_embedder)
    old = Engine(cfg, embedder=tiny_embedder, store=PgStore(pg_url, readonly=False))   # the writer migrates
    fresh = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(fresh_url, readonly=True))
    try:
        assert old.store.schema_version == pg_schema.LATEST
        with psycopg.connect(pg_url) as c:
            assert c.execute("SELECT to_regclass('term_stats')").fetchone()[0] is None
            key = c.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'postings_pkey'").fetchone()[0]
            assert "INCLUDE (section_id, tf, dl)" in key
        _same_scores(fresh, old)
        assert old.catalog.consistency_problems() == []
        # and the migrated store keeps working as a store of the new layout: an edit, a delete
        write(notes, "memory/wombat.md", "# Wombat restore\n\nRestore the wombat backup.\n")
        (notes / "README.md").unlink()
        old.refresh()
        fresh.close()
        index_once(cfg, fresh_url, tiny_embedder)
        fresh = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(fresh_url, readonly=True))
        _same_scores(fresh, old, QUERIES + ["restore the wombat backup"])
        assert old.catalog.consistency_problems() == []
        stats_consistent(pg_url)
    finally:
        fresh.close()
        old.close()


def test_a_scoped_readers_keyword_statistics_are_its_rows_only(notes, tmp_path, data_env, tiny_embedder, pg_url):
    """A scoped reader scores as a store holding only the scoped files would (document
    frequencies, chunk count and average lengths of those files, not the whole store's)."""
    cfg = Config(roots=make_roots([notes]))
    index_once(cfg, pg_url, tiny_embedder)
    only = tmp_path / "only" / notes.name
    shutil.copytree(notes / "journal", only / "journal")
    local_only = Engine(Config(roots=make_roots([only])), embedder=tiny_embedder)
    local_only.refresh()
    reader = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(pg_url, readonly=True))
    try:
        found = 0
        for q in ("postgres backup restore", "wal archiving lag", "pg1 disk full", "failover"):
            with reader.view(("journal/",)) as view:
                scoped = _scores(view, q)
            assert scoped == _scores(local_only.view(), q), q
            if scoped:
                found += 1
                whole = _scores(reader.view(), q)
                assert any(whole[k] != v for k, v in scoped.items()), q   # not the whole store's statistics
        assert found >= 3
    finally:
        reader.close()
        local_only.close()


def _packed_state(url: str) -> tuple[int, int, int, int]:
    """(packed terms, the packed mark, chunks above it, dead chunks) of the compacted postings."""
    with psycopg.connect(url) as c:
        return c.execute("SELECT (SELECT count(*) FROM postings_packed), m.value::bigint,"
                         " (SELECT count(*) FROM chunks WHERE id > m.value::bigint), (SELECT count(*) FROM postings_dead)"
                         f" FROM meta m WHERE m.key = '{pg_schema.PACKED_THROUGH}'").fetchone()


def test_packed_postings_with_edits_and_deletes_since_score_as_tantivy(notes, data_env, tiny_embedder, pg_url,
                                                                       monkeypatch):
    """Migration 9: a term's packed copy less the chunks deleted since plus the postings written
    since is its live postings — scores equal a fresh tantivy index's before and after the writer
    packs them again, filtered too."""
    cfg = Config(roots=make_roots([notes]))
    index_once(cfg, pg_url, tiny_embedder)
    terms, mark, above, dead = _packed_state(pg_url)
    assert terms > 0 and mark > 0 and above == 0 and dead == 0   # the first pass ends packed
    monkeypatch.setattr(pg_store, "COMPACT_FRACTION", 10.0)      # and now it may not pack again
    _edit(notes)
    index_once(cfg, pg_url, tiny_embedder)
    stats_consistent(pg_url)
    terms2, mark2, above, dead = _packed_state(pg_url)
    assert (terms2, mark2) == (terms, mark) and above > 0 and dead > 0   # packed, deleted since, written since
    local = Engine(cfg, embedder=tiny_embedder)
    local.refresh()
    f = S.flt.Filters(types=["runbook"])
    queries = QUERIES + ["restore the wombat backup", "zebra", "recover postgres"]

    def same_as_local() -> None:
        reader = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(pg_url, readonly=True))
        try:
            _same_scores(local, reader, queries)
            keep_local, keep_pg = local.catalog.filtered_section_ids(f), reader.catalog.filtered_section_ids(f)
            got = _scores(reader.view(), "recover postgres backup zebra", keep_pg)
            assert got and got == _scores(local.view(), "recover postgres backup zebra", keep_local)
        finally:
            reader.close()

    try:
        same_as_local()
        ledger = PgStore(pg_url, readonly=False).open_ledger(readonly=False)
        try:
            ledger.compact_keywords()
        finally:
            ledger.close()
        terms3, mark3, above, dead = _packed_state(pg_url)
        assert mark3 > mark and above == 0 and dead == 0
        same_as_local()
    finally:
        local.close()


# What a version-8 store looks like beside migrations 9 and 10 (no packed postings).
VERSION_8_LAYOUT = f"""
DROP TABLE postings_packed;
DROP TABLE postings_dead;
DELETE FROM meta WHERE key = '{pg_schema.PACKED_THROUGH}';
CREATE INDEX sections_doc ON sections(doc_id);
DROP INDEX sections_doc_ids;
DROP FUNCTION {pg_schema.SCOPED_LITERAL}(text, boolean);
DELETE FROM schema_migrations WHERE version IN (9, 10);
"""


def test_a_store_of_version_8_answers_unpacked_then_packs_at_the_next_pass(notes, data_env, tiny_embedder, pg_url):
    cfg = Config(roots=make_roots([notes]))
    index_once(cfg, pg_url, tiny_embedder)
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute(VERSION_8_LAYOUT)
    local = Engine(cfg, embedder=tiny_embedder)
    local.refresh()
    try:
        PgStore(pg_url, readonly=False)   # a writer migrates: 9 and 10 applied, nothing packed yet
        terms, mark, above, dead = _packed_state(pg_url)
        assert (terms, mark, dead) == (0, 0, 0) and above > 0
        reader = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(pg_url, readonly=True))
        try:
            _same_scores(local, reader)   # every posting read from the key (all above the mark 0)
        finally:
            reader.close()
        index_once(cfg, pg_url, tiny_embedder)   # the next pass packs them
        terms, mark, above, dead = _packed_state(pg_url)
        assert terms > 0 and mark > 0 and above == 0 and dead == 0
        reader = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(pg_url, readonly=True))
        try:
            _same_scores(local, reader)
            assert reader.catalog.consistency_problems() == []
        finally:
            reader.close()
    finally:
        local.close()
