"""The team writer's first load on a real PostgreSQL (pgserver): the indexes it builds once at
its end (pg_schema.DEFERRED_INDEXES and the HNSW index) come back exactly as the migrations
define them and are used afterwards; a store left without them gets them; entity mentions
rewrite only the sections whose mentions changed."""

from __future__ import annotations

import psycopg

from remembrancer.indexer.store.postgres import schema as pg_schema
from remembrancer.indexer.search import answer as S
from remembrancer.indexer.config import Config, make_roots
from remembrancer.indexer.store.postgres.store import PgStore
from remembrancer.indexer.team import Writer

DEFERRED = [name for name, _, _ in pg_schema.DEFERRED_INDEXES]


def _indexes(url: str) -> dict[str, str]:
    with psycopg.connect(url) as c:
        return dict(c.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'").fetchall())


def _first_load_flag(url: str) -> bool:
    with psycopg.connect(url) as c:
        return c.execute("SELECT EXISTS (SELECT 1 FROM meta WHERE key = %s)", (pg_schema.FIRST_LOAD,)).fetchone()[0]


def _plan(url: str, sql: str, params=()) -> str:
    """The plan PostgreSQL picks when it may not scan the table (the tables here are tiny)."""
    with psycopg.connect(url) as c:
        c.execute("SET enable_seqscan = off")
        return "\n".join(r[0] for r in c.execute("EXPLAIN " + sql, params))


def _grams(arg: str) -> str:
    """The literal index's expression (pg_schema migration 8) over `arg`."""
    return f"public.{pg_schema.LITERAL_GRAMS}({arg})"


def test_a_first_load_builds_its_indexes_at_its_end_as_the_migrations_define_them(notes, data_env, tiny_embedder,
                                                                                   pg_url):
    PgStore(pg_url, readonly=False)   # the migrations alone
    migrated = _indexes(pg_url)
    assert set(DEFERRED) <= migrated.keys()
    w = Writer(Config(roots=make_roots([notes])), pg_url, embedder=tiny_embedder)
    try:
        during = _indexes(pg_url)   # an empty store: a first load, without them until its end
        assert not set(DEFERRED) & during.keys() and _first_load_flag(pg_url)
        w.pass_once()
        after = _indexes(pg_url)
        assert {n: after.get(n) for n in DEFERRED} == {n: migrated[n] for n in DEFERRED}
        assert "passages_embedding_hnsw" in after and not _first_load_flag(pg_url)
        with psycopg.connect(pg_url) as c:   # the primary key again a primary key, not only an index
            assert c.execute("SELECT contype FROM pg_constraint WHERE conname = 'postings_pkey'").fetchone() == ("p",)
        w.engine.catalog.compact_keywords()   # (a reader's delta then starts past every chunk)
        assert "postings_pkey" in _plan(pg_url, "SELECT chunk_id FROM postings WHERE field = 1 AND term = 'postgres'")
        assert "sections_content_grams" in _plan(
            pg_url, f"SELECT id FROM sections s WHERE {_grams('s.content')} @> {_grams('%s')}",
            ("restart",))
        assert "chunks_tsv" in _plan(pg_url, "SELECT id FROM chunks WHERE to_tsvector('english', text) @@ 'backup'")
        # a second pass is not a first load: the indexes stay, updates maintain them
        (notes / "memory" / "wombat.md").write_text("# Wombat\n\nThe wombat restart runbook.\n")
        w.pass_once()
        assert {n: _indexes(pg_url).get(n) for n in DEFERRED} == {n: migrated[n] for n in DEFERRED}
        with w.engine.view(()) as view:
            hits = S.search(view, S.SearchRequest("wombat restart", exact=True)).to_json()["results"]
        assert [h["path"] for h in hits][:1] == ["memory/wombat.md"]
    finally:
        w.close()


def test_a_first_load_cut_short_carries_on_as_one_and_a_store_without_its_indexes_gets_them(
        notes, data_env, tiny_embedder, pg_url):
    cfg = Config(roots=make_roots([notes]))
    w = Writer(cfg, pg_url, embedder=tiny_embedder)
    # three documents written, the pass never ended (the real kill -9: test_team_store.py)
    w.engine.writer._ingest(sorted(_walk(w), key=lambda f: f.path)[:3], {}, _report(), None)
    assert w.engine.catalog.counts()["documents"] == 3
    w.close()   # as a killed writer would: no end of the first load
    assert _first_load_flag(pg_url) and not set(DEFERRED) & _indexes(pg_url).keys()
    w = Writer(cfg, pg_url, embedder=tiny_embedder)   # documents present, the flag too: still a first load
    try:
        assert not set(DEFERRED) & _indexes(pg_url).keys()
        w.pass_once()
        assert set(DEFERRED) | {"passages_embedding_hnsw"} <= _indexes(pg_url).keys()
        assert not _first_load_flag(pg_url) and w.engine.catalog.consistency_problems() == []
    finally:
        w.close()
    with psycopg.connect(pg_url, autocommit=True) as c:   # as an older writer killed in its first load left it
        c.execute("DROP INDEX sections_content_grams")
        c.execute("DROP INDEX passages_embedding_hnsw")
    Writer(cfg, pg_url, embedder=tiny_embedder).close()
    assert {"sections_content_grams", "passages_embedding_hnsw"} <= _indexes(pg_url).keys()


def _walk(w):
    from remembrancer.indexer.ingest import corpus

    cfg = w.engine.config
    return corpus.walk(cfg.roots, cfg.excludes, cfg.max_file_bytes).files


def _report():
    from remembrancer.indexer.engine import IndexReport

    return IndexReport()


def test_entity_mentions_rewrite_only_the_sections_they_change(notes, data_env, tiny_embedder, pg_url):
    w = Writer(Config(roots=make_roots([notes])), pg_url, embedder=tiny_embedder)
    try:
        w.pass_once()
        led = w.engine.catalog
        rows = led.sections()
        target = rows[0]
        before = dict(led.conn.execute("SELECT id, xmin::text FROM sections").fetchall())
        mentions = {s.id: list(s.entities) for s in rows}
        mentions[target.id] = sorted(set(target.entities) | {"zebra-host"})
        led.set_entity_mentions(mentions)
        after = dict(led.conn.execute("SELECT id, xmin::text FROM sections").fetchall())
        assert [i for i in before if before[i] != after[i]] == [target.id]
        assert led.sections_by_id([target.id])[target.id].entities == mentions[target.id]
        assert {s.id: s.entities for s in led.sections()} == mentions
    finally:
        w.close()
