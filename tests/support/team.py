"""The team store's shared test steps: one writer pass into a database, the questions both stores
are asked, and the check that the stored keyword statistics match the chunks."""

from __future__ import annotations

from contextlib import contextmanager

import psycopg

from remembrancer.indexer.team import Writer


QUERIES = ["how do I restart postgres", "what is the backup schedule", "deploy checklist", "pg1 disk full",
           "restore from a base backup", "who owns the billing service", "--no-track", "wal archiving lag",
           "what happened on 2030-01-21?", "how do I restore db1 from a backup?",   # a named day; a how-to on an entity
           "what happened to db1 when checkout failed?",                            # an event on an entity
           "what did we do on 21 January?"]                                         # a day without its year


def index_once(cfg, pg_url, embedder) -> None:
    """One complete writer pass into the store, the writer closed (its lock released) after it."""
    w = Writer(cfg, pg_url, embedder=embedder)
    try:
        w.pass_once()
    finally:
        w.close()


@contextmanager
def local_and_store(cfg, pg_url, embedder):
    """The same corpus indexed locally and written into the store: (the local engine, a reader
    engine of the store), both closed afterwards — the two sides of a parity check."""
    from remembrancer.indexer.engine import Engine
    from remembrancer.indexer.store.postgres.store import PgStore

    index_once(cfg, pg_url, embedder)
    local = Engine(cfg, embedder=embedder)
    local.refresh()
    reader = Engine(cfg, readonly=True, embedder=embedder, store=PgStore(pg_url, readonly=True))
    try:
        yield local, reader
    finally:
        reader.close()
        local.close()


def stats_consistent(url: str) -> None:
    """The stored field totals are exactly what the chunks say, and every posting has its chunk
    (updates and deletes included; document frequencies are counted from the postings)."""
    with psycopg.connect(url) as c:
        orphans = c.execute("SELECT count(*) FROM postings p WHERE NOT EXISTS"
                            " (SELECT 1 FROM chunks c WHERE c.id = p.chunk_id)").fetchone()[0]
        n_chunks = c.execute("SELECT count(*) FROM chunks").fetchone()[0]
        fields = c.execute("SELECT field, docs, tokens FROM field_stats ORDER BY field").fetchall()
        sums = c.execute("SELECT sum(lens[1]), sum(lens[2]), sum(lens[3]), sum(lens[4]) FROM chunks").fetchone()
        posted = c.execute("SELECT count(DISTINCT chunk_id) FROM postings").fetchone()[0]
        empty = c.execute("SELECT count(*) FROM chunks WHERE lens = '{0,0,0,0}'").fetchone()[0]
    assert orphans == 0
    assert posted == n_chunks - empty
    assert all(docs == n_chunks for _, docs, _ in fields)
    assert [t for _, _, t in fields] == [int(x or 0) for x in sums]
