"""The team store's schema, as numbered migrations applied in order and recorded in
`schema_migrations` (so a newer writer upgrades an older store, and a reader can tell a store
too new for it). Migrations run under a transaction-scoped advisory lock: two processes
starting at once never apply the same step twice.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

MIGRATE_LOCK = 0x72656D31   # advisory lock key while migrating ("rem1")
READER_ROLE = "remembrancer_reader"

MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "catalog, keyword postings and passage vectors", """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE documents (
    id bigserial PRIMARY KEY,
    path text NOT NULL UNIQUE,
    root text NOT NULL,
    rel text NOT NULL,
    content_hash text NOT NULL,
    size bigint NOT NULL,
    mtime_ns bigint NOT NULL,
    doc_type text NOT NULL,
    date text,
    title text NOT NULL,
    front_matter text NOT NULL,
    tags jsonb NOT NULL,
    warnings text NOT NULL,
    stale integer NOT NULL,
    line_count integer NOT NULL,
    indexed_at double precision NOT NULL
);
CREATE TABLE sections (
    id bigserial PRIMARY KEY,
    doc_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ord integer NOT NULL,
    heading text NOT NULL,
    title text NOT NULL,
    level integer NOT NULL,
    start_line integer NOT NULL,
    end_line integer NOT NULL,
    date text,
    stale integer NOT NULL,
    content text NOT NULL,
    body text NOT NULL,
    entities jsonb NOT NULL
);
CREATE INDEX sections_doc ON sections(doc_id);
CREATE TABLE chunks (
    id bigserial PRIMARY KEY,
    section_id bigint NOT NULL REFERENCES sections(id) ON DELETE CASCADE,
    part integer NOT NULL,
    nparts integer NOT NULL,
    start_line integer NOT NULL,
    end_line integer NOT NULL,
    text text NOT NULL,
    lens integer[] NOT NULL          -- tokens per keyword field (heading, body, stem, ident)
);
CREATE INDEX chunks_section ON chunks(section_id);
-- BM25 from stored term statistics (indexer/pg_keywords.py): one row per (field, term, chunk),
-- with the term's frequency and the field's length in that chunk; per-field totals are kept up to
-- date by the writer, in the same transaction (migration 5 reshapes this layout).
CREATE TABLE postings (
    field smallint NOT NULL,
    term text NOT NULL,
    chunk_id bigint NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    section_id bigint NOT NULL,
    tf integer NOT NULL,
    dl integer NOT NULL,
    PRIMARY KEY (field, term, chunk_id)
);
CREATE INDEX postings_chunk ON postings(chunk_id);
CREATE TABLE term_stats (field smallint NOT NULL, term text NOT NULL, df integer NOT NULL,
                         PRIMARY KEY (field, term));
CREATE TABLE field_stats (field smallint PRIMARY KEY, docs bigint NOT NULL, tokens bigint NOT NULL);
CREATE TABLE passages (
    id bigserial PRIMARY KEY,
    section_id bigint NOT NULL REFERENCES sections(id) ON DELETE CASCADE,
    ord integer NOT NULL,
    text_sha text NOT NULL,
    text text NOT NULL,
    embedding vector
);
CREATE INDEX passages_section ON passages(section_id);
CREATE INDEX passages_sha ON passages(text_sha);
CREATE TABLE embeddings (text_sha text PRIMARY KEY, vector vector NOT NULL);
CREATE TABLE entities (
    name text NOT NULL,
    doc_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    aliases jsonb NOT NULL,
    PRIMARY KEY (name, doc_id)
);
CREATE TABLE links (
    id bigserial PRIMARY KEY,
    doc_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    target text NOT NULL,
    anchor text,
    kind text NOT NULL,
    line integer NOT NULL,
    text text NOT NULL,
    resolved text
);
CREATE INDEX links_doc ON links(doc_id);
CREATE INDEX links_resolved ON links(resolved);
"""),
    (2, "PostgreSQL full-text search over chunks (ts_rank, measured against BM25)", """
CREATE INDEX chunks_tsv ON chunks USING gin (to_tsvector('english', text));
"""),
    (3, "a read-only role readers are granted (skipped with a notice without CREATEROLE)", f"""
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READER_ROLE}') THEN
        CREATE ROLE {READER_ROLE} NOLOGIN;
    END IF;
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO {READER_ROLE}', current_schema());
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO {READER_ROLE}', current_schema());
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT ON TABLES TO {READER_ROLE}',
                   current_schema());
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'role {READER_ROLE} not created (no CREATEROLE): grant SELECT to readers yourself';
END $$;
"""),
]
MIGRATIONS.append((4, "symlinked files and their targets (a scope judges a symlink by its target too)", f"""
CREATE TABLE scope_symlinks (path text PRIMARY KEY, target text NOT NULL);
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READER_ROLE}') THEN
        GRANT SELECT ON scope_symlinks TO {READER_ROLE};
    END IF;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'grant SELECT on scope_symlinks to readers yourself';
END $$;
"""))
MIGRATIONS.append((5, "postings read from their index alone; document frequencies counted, not stored", """
-- The keyword leg reads every posting of a query's terms: with the tf and the field length in the
-- primary key's leaf pages (INCLUDE) that is an index-only scan of one contiguous key range per
-- term, where the heap held them one row per page (a document's postings are written together).
ALTER TABLE postings DROP CONSTRAINT postings_pkey;
ALTER TABLE postings ADD CONSTRAINT postings_pkey PRIMARY KEY (field, term, chunk_id) INCLUDE (section_id, tf, dl);
-- A term's document frequency is the number of its postings, which the reader counts as it reads
-- them: a stored copy cost the writer an upsert per term per document and could only disagree.
DROP TABLE term_stats;
-- Postings go with their chunk explicitly (pg_store._delete_document): the per-row foreign-key
-- check on every inserted posting was the writer's largest server-side cost.
ALTER TABLE postings DROP CONSTRAINT postings_chunk_id_fkey;
"""))
LATEST = MIGRATIONS[-1][0]


def applied_version(conn) -> int:
    """The newest migration recorded in the store (0: an empty database)."""
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()[0]
    if not exists:
        return 0
    return conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0]


def migrate(conn) -> list[int]:
    """Apply every migration not yet recorded, each in its own transaction; returns those applied."""
    done = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY,"
                     " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
    for version, name, sql in MIGRATIONS:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
            if conn.execute("SELECT 1 FROM schema_migrations WHERE version = %s", (version,)).fetchone():
                continue
            conn.execute(sql)
            conn.execute("INSERT INTO schema_migrations(version, name) VALUES (%s, %s)", (version, name))
            done.append(version)
            log.info("store: applied migration %d (%s)", version, name)
    return done
