"""The team store's schema, as numbered migrations applied in order and recorded in
`schema_migrations` (so a newer writer upgrades an older store, and a reader can tell a store
too new for it). Migrations run under a transaction-scoped advisory lock: two processes
starting at once never apply the same step twice. Readers do not take that lock, so a step that
alters a table a reader is reading can deadlock with it (PostgreSQL then cancels one of the
two): the step is rolled back and tried again, as a reader retries its query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import logging
import re
import time

log = logging.getLogger(__name__)

MIGRATE_LOCK = 0x72656D31   # advisory lock key while migrating ("rem1")
STEP_TRIES = 5              # a migration step that meets a reader's locks (deadlock) is tried again
READER_ROLE = "remembrancer_reader"

MIGRATIONS: list[tuple[int, str, str | Callable]] = [   # SQL, or a function of the connection making it
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
-- BM25 from stored term statistics (indexer/store/postgres/keywords.py): one row per (field, term, chunk),
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

# Scoped readers (migration 7): a login role in SCOPED_ROLE sees only the rows under its granted
# path prefixes (scope_grants), enforced by row-level security on every table it can read; an
# unscoped reader (in READER_ROLE) has a policy that lets every row through. The owner (the
# writer) is exempt, as PostgreSQL makes table owners. Tables a scoped reader needs no rows of —
# the corpus-wide keyword postings and statistics — get no policy for it: nothing is visible, and
# a scoped reader ranks from its own chunks (indexer/store/scope.py KeywordIndexes) as a local scope
# does. A table created later is not readable by a scoped reader until a migration says how.
SCOPED_ROLE = "remembrancer_scoped_reader"
SCOPED_META_KEYS = ("generation", "model_contract", "heads", "last_indexed_at", "roots", "redaction_policy",
                    "parse_version", "layout", "schema_version", "link_targets")
_BY_DOCUMENT = "doc_id IN (SELECT id FROM public.documents)"
_BY_SECTION = "section_id IN (SELECT id FROM public.sections)"
SCOPED_POLICIES = {
    "documents": "public.remembrancer_granted(path) AND path NOT IN (SELECT public.remembrancer_scope_hidden())",
    "sections": _BY_DOCUMENT,
    "chunks": _BY_SECTION,
    "passages": _BY_SECTION,
    "entities": _BY_DOCUMENT,
    "links": _BY_DOCUMENT,
    "embeddings": "text_sha IN (SELECT text_sha FROM public.passages)",
    "meta": "key IN (" + ", ".join(f"'{k}'" for k in SCOPED_META_KEYS) + ")",
    "scope_symlinks": "public.remembrancer_granted(path) AND public.remembrancer_granted(target)",
    "scope_grants": "role = current_user",
    "scope_roles": "role = current_user",
    "schema_migrations": "true",
    # the last run's warnings, one row each (meta's last_warnings names outside files): run-wide
    # ones, those about a visible path, and those about a folder in or holding a granted prefix; a
    # warning about a symlink whose target is outside the grants is not the role's (migration 16)
    "run_warnings": ("path IS NULL OR (public.remembrancer_granted(rtrim(path, '/')) OR (NOT (lower(path) LIKE '%.md'"
                     " OR lower(path) LIKE '%.markdown') AND (rtrim(path, '/') IN ('', '.') OR EXISTS (SELECT 1 FROM"
                     " public.scope_grants g WHERE g.role = current_user AND starts_with(g.prefix, rtrim(path, '/') || '/')))))"
                     " AND path NOT IN (SELECT public.remembrancer_scope_hidden())"),
}
HIDDEN_FROM_SCOPED = ("postings", "field_stats")   # (term_stats: dropped by migration 5)
# links.resolved names the target the writer resolved in the whole corpus (maybe outside the
# scope): a scoped reader re-resolves links among its own documents and may not read the column.
SCOPED_LINK_COLUMNS = "id, doc_id, target, anchor, kind, line, text"


def _scoped_readers_sql() -> str:
    rls = []
    for table, using in SCOPED_POLICIES.items():
        rls.append(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;")
        rls.append(f"CREATE POLICY scoped_reader ON {table} FOR SELECT TO {SCOPED_ROLE} USING ({using});")
        if table not in ("scope_grants", "scope_roles"):
            rls.append(f"CREATE POLICY reader ON {table} FOR SELECT TO {READER_ROLE} USING (true);")
        grant = f"GRANT SELECT ({SCOPED_LINK_COLUMNS}) ON links" if table == "links" else f"GRANT SELECT ON {table}"
        rls.append(f"{grant} TO {SCOPED_ROLE};")
    for table in HIDDEN_FROM_SCOPED:
        rls.append(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;")
        rls.append(f"CREATE POLICY reader ON {table} FOR SELECT TO {READER_ROLE} USING (true);")
    body = "\n        ".join(rls)
    return f"""
CREATE TABLE scope_roles (role name PRIMARY KEY);
CREATE TABLE run_warnings (ord integer PRIMARY KEY, path text, text text NOT NULL);
CREATE TABLE scope_grants (role name NOT NULL REFERENCES scope_roles(role) ON DELETE CASCADE,
                           prefix text NOT NULL, PRIMARY KEY (role, prefix));
-- whole path segments, bytewise (starts_with is exact): journal holds journal/x, never journal-archive/x
CREATE FUNCTION remembrancer_granted(p text) RETURNS boolean LANGUAGE sql STABLE AS $f$
    SELECT EXISTS (SELECT 1 FROM public.scope_grants g WHERE g.role = current_user
                   AND (p = g.prefix OR starts_with(p, g.prefix || '/')))
$f$;
-- the caller's visible symlinks whose target is outside its grants (read as the owner: the
-- caller may not see those rows, and learns only paths under its own grants)
CREATE FUNCTION remembrancer_scope_hidden() RETURNS SETOF text LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = public AS $f$
    SELECT t.path FROM public.scope_symlinks t
    WHERE EXISTS (SELECT 1 FROM public.scope_grants g WHERE g.role = session_user
                  AND (t.path = g.prefix OR starts_with(t.path, g.prefix || '/')))
      AND NOT EXISTS (SELECT 1 FROM public.scope_grants g WHERE g.role = session_user
                      AND (t.target = g.prefix OR starts_with(t.target, g.prefix || '/')))
$f$;
REVOKE ALL ON FUNCTION remembrancer_scope_hidden() FROM PUBLIC;
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{SCOPED_ROLE}') THEN
        CREATE ROLE {SCOPED_ROLE} NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READER_ROLE}') THEN
        RAISE NOTICE 'no role {READER_ROLE}: scoped readers are not available';
        RETURN;
    END IF;
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO {SCOPED_ROLE}', current_schema());
    GRANT EXECUTE ON FUNCTION remembrancer_scope_hidden() TO {SCOPED_ROLE};
        {body}
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'role {SCOPED_ROLE} not created (no CREATEROLE): scoped readers are not available';
END $$;
"""


MIGRATIONS.append((7, "scoped readers: row-level security by granted path prefixes", _scoped_readers_sql()))
# The literal index (migration 8): the local store's FTS5 trigram index (indexer/store/local/catalog.py) in
# PostgreSQL. pg_trgm would do, but the pgserver wheel the tests run on ships no contrib
# extensions, and some managed servers restrict them; so each section's heading and content map
# to their lower-cased trigrams by an IMMUTABLE SQL function, under GIN expression
# indexes: "which sections may contain this string?" is `grams(content) @> grams(needle)`, the
# same candidates a trigram index gives, and the caller tests the text. Callers lower-case needles
# with Python, whose lower() differs from PostgreSQL's in two places (a final sigma becomes ς; İ
# becomes i + U+0307): both sides fold ς to σ and drop U+0307, so the candidates stay a superset.
# The text is split into characters once and each trigram read with lead() — linear in the text;
# substr() per position is quadratic (a 5 kB section took 20× longer); GIN drops duplicate keys.
LITERAL_GRAMS = "remembrancer_grams"
MIGRATIONS.append((8, "the literal index: GIN over each section's lower-cased trigrams", f"""
CREATE FUNCTION {LITERAL_GRAMS}(t text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$
    SELECT ARRAY(SELECT g FROM (SELECT c || lead(c, 1) OVER w || lead(c, 2) OVER w AS g
                                FROM unnest(string_to_array(translate(lower(t), 'ς' || chr(775), 'σ'), NULL))
                                     WITH ORDINALITY AS u(c, n) WINDOW w AS (ORDER BY n)) z WHERE g IS NOT NULL)
$f$;
CREATE INDEX sections_content_grams ON sections USING gin ({LITERAL_GRAMS}(content));
CREATE INDEX sections_heading_grams ON sections USING gin ({LITERAL_GRAMS}(heading));
"""))
# The keyword leg's compacted postings (migration 9): each term's postings as two packed byteas
# (pg_keywords.PACKED_POSTINGS_SQL), rebuilt by the writer from `postings` when enough has changed
# (pg_store.PgLedger.compact_keywords). A reader takes a term's packed copy (chunks up to the
# `packed_through` mark in meta), drops the chunks deleted since (`postings_dead`) and adds the
# postings above the mark from `postings`' key: a common term's tens of thousands of postings are
# a few TOAST pages, not as many index tuples. Stored uncompressed (EXTERNAL): read, not inflated.
# Hidden from scoped readers like the postings (they rank from their own chunks).
PACKED_THROUGH = "packed_through"
MIGRATIONS.append((9, "compacted keyword postings: one packed bytea per term, and the chunks deleted since", f"""
CREATE TABLE postings_packed (field smallint NOT NULL, term text NOT NULL, postings bytea NOT NULL,
                              sections bytea NOT NULL, PRIMARY KEY (field, term));
ALTER TABLE postings_packed ALTER COLUMN postings SET STORAGE EXTERNAL, ALTER COLUMN sections SET STORAGE EXTERNAL;
CREATE TABLE postings_dead (chunk_id bigint PRIMARY KEY);
-- a filter's sections by their documents from the index alone (the table holds their text)
CREATE INDEX sections_doc_ids ON sections(doc_id) INCLUDE (id);
DROP INDEX sections_doc;
INSERT INTO meta(key, value) VALUES ('{PACKED_THROUGH}', '0') ON CONFLICT (key) DO NOTHING;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READER_ROLE}') THEN
        GRANT SELECT ON postings_packed, postings_dead TO {READER_ROLE};
        ALTER TABLE postings_packed ENABLE ROW LEVEL SECURITY;
        ALTER TABLE postings_dead ENABLE ROW LEVEL SECURITY;
        CREATE POLICY reader ON postings_packed FOR SELECT TO {READER_ROLE} USING (true);
        CREATE POLICY reader ON postings_dead FOR SELECT TO {READER_ROLE} USING (true);
    END IF;
END $$;
"""))
# A scoped role's literal candidates (migration 10): PostgreSQL will not use the trigram index
# through row-level security (`@>` is not leakproof), so a scoped role scanned every visible
# section. This function runs as the owner, uses the index, and returns only the ids of sections
# in the caller's (session user's) grants, judged as the documents policy judges them; the
# caller's own query still goes through row-level security.
SCOPED_LITERAL = "remembrancer_scoped_literal"
MIGRATIONS.append((10, "a scoped role's literal candidates through the trigram index", f"""
CREATE FUNCTION {SCOPED_LITERAL}(needle text, with_heading boolean) RETURNS SETOF bigint
LANGUAGE sql STABLE SECURITY DEFINER ROWS 100 SET search_path = public AS $f$
    SELECT s.id FROM public.sections s JOIN public.documents d ON d.id = s.doc_id
    WHERE s.id IN (SELECT id FROM public.sections WHERE {LITERAL_GRAMS}(content) @> {LITERAL_GRAMS}(needle)
                   UNION ALL
                   SELECT id FROM public.sections WHERE with_heading AND {LITERAL_GRAMS}(heading) @> {LITERAL_GRAMS}(needle))
      AND EXISTS (SELECT 1 FROM public.scope_grants g WHERE g.role = session_user
                  AND (d.path = g.prefix OR starts_with(d.path, g.prefix || '/')))
      AND d.path NOT IN (SELECT public.remembrancer_scope_hidden())
$f$;
REVOKE ALL ON FUNCTION {SCOPED_LITERAL}(text, boolean) FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{SCOPED_ROLE}') THEN
        GRANT EXECUTE ON FUNCTION {SCOPED_LITERAL}(text, boolean) TO {SCOPED_ROLE};
    END IF;
END $$;
"""))
# Whole words from the keyword postings (migration 11): "does the corpus use this word?" (the
# abstention's question, pg_store.uses_word) is a key lookup of the word's body postings for a
# section whose tokens are exactly its whole words — one chunk (at most MAX_CHUNK_CHARS = 4000
# characters, indexer/ingest/chunks.py), ASCII letters and digits, and no character but ASCII and common
# punctuation (PLAIN_EXTRA: separators to tantivy's tokenizer, unchanged by Python's lower()).
# Only the other sections' candidates are read and tested (under a partial trigram index):
# testing a common substring's ~46k candidates one by one took 0.1–1.5 s a word.
PLAIN_EXTRA = ("\u00a0\u00a3\u00a7\u00a9\u00ab\u00ae\u00b0\u00b1\u00b7\u00bb\u00d7\u2013\u2014\u2018\u2019"
               "\u201c\u201d\u2022\u2026\u2032\u2033\u20ac\u2122\u2190\u2191\u2192\u2193\u2194\u21d2\u2212"
               "\u2248\u2260\u2264\u2265\u2500\u2502\u26a0\u2705\u2713\u2714\u2717\u274c")
PLAIN_MAX_CHARS = 4000
_PLAIN_CLASS = "[^\\x01-\\x7f" + "".join(f"\\u{ord(c):04x}" for c in PLAIN_EXTRA) + "]"   # a regex class
MIGRATIONS.append((11, "plain sections: their whole words are their body postings", f"""
ALTER TABLE sections ADD COLUMN plain boolean GENERATED ALWAYS AS
    (char_length(content) <= {PLAIN_MAX_CHARS} AND content !~ '{_PLAIN_CLASS}') STORED;
CREATE INDEX sections_content_grams_unplain ON sections USING gin ({LITERAL_GRAMS}(content)) WHERE NOT plain;
"""))
# The trigram function's true cost (migration 12): ~0.3 ms a section. At its default (an
# operator's 100th of a page read) the planner scanned a small store's sections computing every
# section's trigrams (339 sections: 97 ms a lookup) rather than use the GIN index (<1 ms).
MIGRATIONS.append((12, "the trigram function's cost, so the planner uses its index", f"""
ALTER FUNCTION {LITERAL_GRAMS}(text) COST 10000;
"""))
# The same trigrams, ~1.8× faster (migration 13; bench/bench_team.py --only grams): three runs of
# non-overlapping 3-character matches, from offsets 0, 1 and 2, hold every position's trigram; the
# window function over the text's characters cost 0.12–0.19 ms a section (computed for every
# section an index build or a pass writes: the content index was 1.4 s of a 5,000-section first
# load's index builds). The trigram sets are the same (duplicates
# aside, which GIN drops), so the indexes built with the old body stay valid as they are.
MIGRATIONS.append((13, "the trigram function, the same trigrams faster", f"""
CREATE OR REPLACE FUNCTION {LITERAL_GRAMS}(t text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE COST 10000 AS $f$
    SELECT ARRAY(SELECT m[1] FROM (SELECT translate(lower(t), 'ς' || chr(775), 'σ') AS x) y, generate_series(0, 2) k,
                 regexp_matches(substr(x, k + 1), '(...)', 'g') m)
$f$;
"""))
# The writer's last fetch (migration 14): whether its `git fetch` works is every reader's business,
# scoped ones included (a failing fetch is why their answers stop moving), so the scoped readers'
# meta policy takes that key too. Written by the writer (indexer/team.py), redacted.
WRITER_PULL_KEY = "writer_pull"
MIGRATIONS.append((14, "the writer's last fetch, readable by scoped readers", f"""
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_policies WHERE tablename = 'meta' AND policyname = 'scoped_reader') THEN
        DROP POLICY scoped_reader ON meta;
        CREATE POLICY scoped_reader ON meta FOR SELECT TO {SCOPED_ROLE}
            USING (key IN ({", ".join(f"'{k}'" for k in (*SCOPED_META_KEYS, WRITER_PULL_KEY))}));
    END IF;
END $$;
"""))
# Each store's own reader roles (migration 15): roles are the server's, not a database's, so the
# group roles of migrations 3 and 7 were shared by every store on a server — a login made a reader
# of one store read them all, and making it a scoped reader of one store (which takes it out of the
# unscoped group) cut its access to the others. This store's roles are named after its database
# (store_roles) and hold its policies and privileges (reader_access_sql: one definition, also run
# by the writer at start when the store's policies name other roles — a store restored or copied
# under another name, or restored without its policies); the shared roles keep nothing here. The
# logins that read this store through the shared roles are moved to its own (an unscoped one
# already read every store on the server; `team readers` lists them to review). Without
# CREATEROLE nothing changes and a notice says so; the writer tries again at its next start.
SCOPED_META_POLICY = "key IN (" + ", ".join(f"'{k}'" for k in (*SCOPED_META_KEYS, WRITER_PULL_KEY)) + ")"
READER_TABLES = (*(t for t in SCOPED_POLICIES if t not in ("scope_grants", "scope_roles")), *HIDDEN_FROM_SCOPED,
                 "postings_packed", "postings_dead")


def store_roles(database: str) -> tuple[str, str]:
    """The unscoped and the scoped reader group roles of the store in `database` (at most 63
    bytes, PostgreSQL's limit: a long name is cut and keeps a hash of the whole)."""
    import hashlib

    def fit(kind: str) -> str:
        name = f"remembrancer_{kind}_{database}"
        if len(name.encode()) <= 63:
            return name
        tag = "_" + hashlib.sha256(database.encode()).hexdigest()[:8]
        while len(name.encode()) > 63 - len(tag):
            name = name[:-1]
        return name + tag

    return fit("reader"), fit("scoped")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _policy_statements() -> list[str]:
    """This store's policies and grants for its group roles `r` (every row) and `s` (a scoped
    role's rows), as plpgsql statements over those two variables; re-running them is harmless."""
    out = []
    for table in READER_TABLES:
        out.append(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;")
        out.append(f"DROP POLICY IF EXISTS reader ON {table};")
        out.append(f"EXECUTE format('CREATE POLICY reader ON {table} FOR SELECT TO %I USING (true)', r);")
    for table, using in SCOPED_POLICIES.items():
        using = SCOPED_META_POLICY if table == "meta" else using
        grant = f"GRANT SELECT ({SCOPED_LINK_COLUMNS}) ON links" if table == "links" else f"GRANT SELECT ON {table}"
        out.append(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;")
        out.append(f"DROP POLICY IF EXISTS scoped_reader ON {table};")
        quoted = using.replace("'", "''").replace("%", "%%")   # a literal inside format()'s string
        out.append(f"EXECUTE format('CREATE POLICY scoped_reader ON {table} FOR SELECT TO %I USING ({quoted})', s);")
        out.append(f"EXECUTE format('{grant} TO %I', s);")
    out.append("EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I, %I', current_schema(), r, s);")
    out.append("EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO %I', current_schema(), r);")
    out.append("EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT ON TABLES TO %I', current_schema(), r);")
    out.append(f"EXECUTE format('GRANT EXECUTE ON FUNCTION remembrancer_scope_hidden(), {SCOPED_LITERAL}(text, boolean)"
               " TO %I', s);")
    return out


def reader_access_sql(conn, move_shared: bool = False) -> str:
    """The DO block giving this database's store its own reader roles (created if missing),
    policies and grants; with `move_shared`, also moving the shared roles' members and taking
    the shared roles' privileges here (migration 15)."""
    database = conn.execute("SELECT current_database()").fetchone()[0]
    reader, scoped = store_roles(database)
    # the roles the store's policies named before (a copy's source store's, restored under this
    # name) keep nothing here
    others = f"""FOR m IN SELECT DISTINCT unnest(roles) FROM pg_policies WHERE schemaname = current_schema()
                 AND policyname IN ('reader', 'scoped_reader') LOOP
        IF m NOT IN (r, s, 'public') AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = m) THEN
            EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM %I', current_schema(), m);
            EXECUTE format('REVOKE ALL ON FUNCTION remembrancer_scope_hidden(), {SCOPED_LITERAL}(text, boolean) FROM %I', m);
        END IF;
    END LOOP;
    """
    body = others + "\n    ".join(_policy_statements())
    shared = f"""
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READER_ROLE}') THEN
        EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM {READER_ROLE}', current_schema());
        EXECUTE format('REVOKE USAGE ON SCHEMA %I FROM {READER_ROLE}', current_schema());
        EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I REVOKE SELECT ON TABLES FROM {READER_ROLE}', current_schema());
        FOR m IN SELECT u.rolname FROM pg_auth_members a JOIN pg_roles g ON g.oid = a.roleid
                 JOIN pg_roles u ON u.oid = a.member
                 WHERE g.rolname = '{READER_ROLE}' AND u.rolname NOT IN (SELECT role FROM scope_roles) LOOP
            EXECUTE format('GRANT %I TO %I', r, m);
        END LOOP;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{SCOPED_ROLE}') THEN
        EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM {SCOPED_ROLE}', current_schema());
        EXECUTE format('REVOKE USAGE ON SCHEMA %I FROM {SCOPED_ROLE}', current_schema());
        EXECUTE 'REVOKE ALL ON FUNCTION remembrancer_scope_hidden(), {SCOPED_LITERAL}(text, boolean) FROM {SCOPED_ROLE}';
    END IF;
    FOR m IN SELECT g.role FROM scope_roles g JOIN pg_roles u ON u.rolname = g.role LOOP
        EXECUTE format('GRANT %I TO %I', s, m);
    END LOOP;""" if move_shared else ""
    return f"""
DO $$
DECLARE
    r name := {_literal(reader)};
    s name := {_literal(scoped)};
    m name;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN EXECUTE format('CREATE ROLE %I NOLOGIN', r); END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = s) THEN EXECUTE format('CREATE ROLE %I NOLOGIN', s); END IF;
    {body}{shared}
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'no reader roles of this store (the writer''s role needs CREATEROLE): %', SQLERRM;
END $$;
"""


def reader_access_problem(conn) -> str | None:
    """Why this store's readers cannot be served by its own roles (roles missing, policies naming
    other roles or missing), or None. The writer checks it at start and repairs what it can."""
    reader, scoped = store_roles(conn.execute("SELECT current_database()").fetchone()[0])
    if conn.execute("SELECT count(*) FROM pg_roles WHERE rolname IN (%s, %s)", (reader, scoped)).fetchone()[0] < 2:
        return f"its reader roles {reader} and {scoped} do not exist"
    wrong = conn.execute(
        "SELECT count(*) FROM unnest(%s::text[]) AS t(name) LEFT JOIN pg_policies p ON p.schemaname = current_schema()"
        " AND p.tablename = t.name AND p.policyname = 'reader' WHERE p.roles IS DISTINCT FROM ARRAY[%s]::name[]",
        (list(READER_TABLES), reader)).fetchone()[0]
    wrong += conn.execute(
        "SELECT count(*) FROM unnest(%s::text[]) AS t(name) LEFT JOIN pg_policies p ON p.schemaname = current_schema()"
        " AND p.tablename = t.name AND p.policyname = 'scoped_reader' WHERE p.roles IS DISTINCT FROM ARRAY[%s]::name[]",
        (list(SCOPED_POLICIES), scoped)).fetchone()[0]
    return f"{wrong} of its row-level security policies do not name its reader roles" if wrong else None


def ensure_reader_access(conn) -> str | None:
    """At the writer's start: give the store its own roles' policies and grants where they are
    missing or name other roles (restored or copied under another name); None when that is done,
    else why not (the writer's role cannot create roles: readers are refused, never let in)."""
    if applied_version(conn) < 15 or reader_access_problem(conn) is None:
        return None
    conn.execute(reader_access_sql(conn))
    problem = reader_access_problem(conn)
    if problem is None:
        log.info("store: its reader roles' policies and grants were (re)made")
    return problem


def own_roles_sql(conn) -> str:
    return reader_access_sql(conn, move_shared=True)


MIGRATIONS.append((15, "each store's own reader roles", own_roles_sql))
# A warning about a symlink judged by its target (migration 16): the writer records the symlinks it
# left out as a second path to a walked file, and warns about each; a scoped role sees that warning
# only when it sees the target too, as it sees a symlinked document. The policies are made again
# from SCOPED_POLICIES (reader_access_sql: re-running them is harmless).
MIGRATIONS.append((16, "a warning about a symlink is judged by its target", lambda conn: reader_access_sql(conn)))
# Indexes a first load into an empty store builds once, at its end, rather than maintaining them
# row by row (pg_store.PgLedger's first load): the trigram indexes computed the grams of every
# section as it was copied in and the postings' two btrees took an insert per posting — together
# the largest part of the server's work in a first load. Each is (name, the statements that build
# it, the statement that drops it); the definitions are the migrations' (tests compare them).
# Until they are built a reader's query scans, which is correct, only slower.
FIRST_LOAD = "first_load"   # meta key: a first load is under way (a killed one carries on as one)
DEFERRED_INDEXES: list[tuple[str, list[str], str]] = [
    ("postings_pkey",
     ["CREATE UNIQUE INDEX IF NOT EXISTS postings_pkey ON postings (field, term, chunk_id) INCLUDE (section_id, tf, dl)",
      "ALTER TABLE postings ADD CONSTRAINT postings_pkey PRIMARY KEY USING INDEX postings_pkey"],
     "ALTER TABLE postings DROP CONSTRAINT IF EXISTS postings_pkey"),
    ("postings_chunk", ["CREATE INDEX IF NOT EXISTS postings_chunk ON postings (chunk_id)"],
     "DROP INDEX IF EXISTS postings_chunk"),
    ("sections_content_grams",
     [f"CREATE INDEX IF NOT EXISTS sections_content_grams ON sections USING gin ({LITERAL_GRAMS}(content))"],
     "DROP INDEX IF EXISTS sections_content_grams"),
    ("sections_heading_grams",
     [f"CREATE INDEX IF NOT EXISTS sections_heading_grams ON sections USING gin ({LITERAL_GRAMS}(heading))"],
     "DROP INDEX IF EXISTS sections_heading_grams"),
    ("sections_content_grams_unplain",
     [f"CREATE INDEX IF NOT EXISTS sections_content_grams_unplain ON sections USING gin ({LITERAL_GRAMS}(content))"
      " WHERE NOT plain"],
     "DROP INDEX IF EXISTS sections_content_grams_unplain"),
    ("chunks_tsv", ["CREATE INDEX IF NOT EXISTS chunks_tsv ON chunks USING gin (to_tsvector('english', text))"],
     "DROP INDEX IF EXISTS chunks_tsv"),
]


MIGRATIONS.sort()   # numbered by the helpers that wrote them, applied in order
LATEST = MIGRATIONS[-1][0]


def first_grams_function(name: str) -> str:
    """Migration 8's trigram function as it was, created as `name` (its faster replacement,
    migration 13, is compared with it: tests/store/test_team_literal.py, bench/bench_team.py)."""
    sql = next(sql for version, _, sql in MIGRATIONS if version == 8)
    return sql[:sql.index("$f$;") + 4].replace(f"FUNCTION {LITERAL_GRAMS}(", f"FUNCTION {name}(")


MIN_PGVECTOR = (0, 5)   # HNSW indexes (migration 1's passages_embedding_hnsw)


def vector_version(conn) -> str | None:
    """The server's pgvector: installed in this database, else what CREATE EXTENSION would
    install; None without one."""
    row = conn.execute("SELECT coalesce(installed_version, default_version) FROM pg_available_extensions"
                       " WHERE name = 'vector'").fetchone()
    return row[0] if row else None


def version_tuple(version: str) -> tuple[int, ...]:
    """'0.8.2' → (0, 8, 2); a part's leading digits only ('0.7.0-dev' → (0, 7, 0))."""
    return tuple(int(re.match(r"\d*", part).group() or 0) for part in version.split("."))


def vector_problem(conn) -> str | None:
    """Why this server cannot hold the store's vectors — pgvector missing, or older than
    MIN_PGVECTOR — or None. Asked before migrating, so the writer says it in one line instead of
    failing inside migration 1."""
    version = vector_version(conn)
    if version is None:
        return "the server has no pgvector (the `vector` extension)"
    if version_tuple(version) < MIN_PGVECTOR:
        return (f"the server's pgvector is {version}; the store needs {'.'.join(map(str, MIN_PGVECTOR))} or newer"
                " (HNSW indexes)")
    return None


def applied_version(conn) -> int:
    """The newest migration recorded in the store (0: an empty database)."""
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()[0]
    if not exists:
        return 0
    return conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0]


MIGRATE_WAIT_S = 120   # the longest a writer waits for another session's migration lock


def _migration_lock(conn) -> None:
    """The migration lock, waited for at most MIGRATE_WAIT_S: any login may hold the key, and a
    writer must say who does rather than wait for ever."""
    from psycopg.errors import LockNotAvailable

    conn.execute(f"SET LOCAL lock_timeout = '{int(MIGRATE_WAIT_S * 1000)}ms'")
    try:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
    except LockNotAvailable:
        raise MigrationLockHeld() from None
    conn.execute("SET LOCAL lock_timeout = 0")


class MigrationLockHeld(Exception):
    """Another session held the migration lock past MIGRATE_WAIT_S (the store names it: lock_holder)."""


@dataclass(frozen=True)
class LockHolder:
    """The session holding an advisory lock key in this database. Any role sees pg_locks and, of
    another role's session, its role and pid — not its application name or start (then None)."""
    app: str | None
    role: str
    pid: int
    since: object          # a datetime, or None
    owns_store: bool       # a session of the role that owns the store's tables (or no store yet)

    def who(self, more: str = "") -> str:
        return f"{self.app or 'a session of role ' + self.role} (pid {self.pid}{more})"


def lock_holder(execute, key: int) -> LockHolder | None:
    """Who holds advisory lock `key` here (`execute`: a connection's or ledger's), or None."""
    row = execute(
        "SELECT a.application_name, a.usename, a.pid, a.backend_start,"
        " coalesce(a.usesysid = (SELECT relowner FROM pg_class WHERE oid = to_regclass('public.documents')), true)"
        " FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
        " WHERE l.locktype = 'advisory' AND l.classid = 0 AND l.objid = %s AND l.granted"
        " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) LIMIT 1",
        (key,)).fetchone()
    return LockHolder(*row) if row else None


def migrate(conn) -> list[int]:
    """Apply every migration not yet recorded, each in its own transaction; returns those applied."""
    done = []
    with conn.transaction():
        _migration_lock(conn)
        conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY,"
                     " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
    from psycopg.errors import DeadlockDetected   # lazily: without the `team` extra, pg_store says what to install

    for version, name, sql in MIGRATIONS:
        for attempt in range(1, STEP_TRIES + 1):
            try:
                if _apply(conn, version, name, sql):
                    done.append(version)
                break
            except DeadlockDetected:
                if attempt == STEP_TRIES:
                    raise
                log.info("store: migration %d met a reader's locks (deadlock); trying again", version)
                time.sleep(0.1 * attempt)
    return done


def _apply(conn, version: int, name: str, sql: str) -> bool:
    """One migration step in its own transaction; False if it was already applied."""
    with conn.transaction():
        _migration_lock(conn)
        if conn.execute("SELECT 1 FROM schema_migrations WHERE version = %s", (version,)).fetchone():
            return False
        conn.execute(sql if isinstance(sql, str) else sql(conn))
        conn.execute("INSERT INTO schema_migrations(version, name) VALUES (%s, %s)", (version, name))
    log.info("store: applied migration %d (%s)", version, name)
    return True


def session_scope(conn) -> tuple[str, ...] | None:
    """The prefixes the connected role is limited to, or None for an unscoped reader (or the writer)."""
    # recorded as this store's scoped reader: a scoped role sees its own row of scope_roles, an
    # unscoped reader none (no policy of its group there), a superuser every row but is never one
    row = conn.execute("SELECT to_regclass('public.scope_roles') IS NOT NULL AND EXISTS (SELECT 1 FROM pg_roles r"
                       " WHERE r.rolname = current_user AND NOT r.rolsuper AND NOT r.rolbypassrls)").fetchone()
    if not row[0] or not conn.execute("SELECT EXISTS (SELECT 1 FROM public.scope_roles WHERE role = current_user)"
                                      ).fetchone()[0]:
        return None
    return tuple(r[0] for r in conn.execute("SELECT prefix FROM public.scope_grants WHERE role = current_user"
                                            " ORDER BY prefix"))
