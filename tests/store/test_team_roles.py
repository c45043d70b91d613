"""Scoped reader roles on a real PostgreSQL (pgserver): row-level security by granted prefixes.

A role granted journal/ + services/ with `grant_reader` (what `remembrancer team grant-reader`
runs) issuing raw SELECTs sees only those rows — statistics and writer-only meta included — and
the MCP tools over it answer exactly as a store holding only those folders does: the scope
differential's world and calls (tests/support/scope_world.py, tests/store/test_scope_differential.py), both
sides PostgreSQL readers.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import psycopg
import pytest

from remembrancer.indexer.store.postgres import roles as pg_roles
from remembrancer.indexer.config import Config, make_roots
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.team import TeamReader, Writer
from tests.support.scope_world import (OUTSIDE, SCOPE, SCOPED_DOCS, build, calls_for, run_differential,
                                      with_symlinks_committed)

_names = itertools.count()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return with_symlinks_committed(build(tmp_path_factory.mktemp("role-world")))


def _as(url: str, role: str, password: str = "pw") -> str:
    return url.replace("postgres:@", f"{role}:{password}@")


def _role() -> str:
    return f"scoped_{next(_names)}_{id(object()) % 10000}"


def _drop(url: str, role: str) -> None:
    with psycopg.connect(url, autocommit=True) as c:
        if not c.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            return
        c.execute(f'DROP OWNED BY "{role}"')
        c.execute(f'DROP ROLE IF EXISTS "{role}"')


def _write(root, app, url, embedder) -> Config:
    cfg = Config(roots=make_roots([root]), verify_repos=[app])
    w = Writer(cfg, url, embedder=embedder)
    try:
        w.pass_once()
    finally:
        w.close()
    return cfg


def test_a_scoped_role_selecting_raw_rows_sees_only_its_prefixes(world, data_env, tiny_embedder, pg_url):
    _write(world["full"], world["app"], pg_url, tiny_embedder)
    role = _role()
    got = pg_roles.grant_reader(pg_url, role, ["journal/", "services"], password="pw")
    assert got == {"role": role, "scoped": True, "scope": ["journal", "services"], "reads_all": False, "role_exists": True}
    try:
        with psycopg.connect(pg_url) as admin, psycopg.connect(_as(pg_url, role)) as me:
            def both(sql):
                return admin.execute(sql).fetchall(), me.execute(sql).fetchall()
            everything, mine = both("SELECT path FROM documents ORDER BY path")
            mine = [r[0] for r in mine]
            assert set(SCOPED_DOCS) <= set(mine), mine
            assert all(p.split("/")[0] in SCOPE for p in mine), mine
            assert not set(mine) & set(OUTSIDE)   # journal/host-db1.md -> hosts/: judged by its target
            assert len(everything) > len(mine)
            for table, key in [("sections", "doc_id"), ("entities", "doc_id"), ("links", "doc_id")]:
                a, b = both(f"SELECT count(*) FROM {table}")
                assert 0 < b[0][0] < a[0][0] or table == "entities", table
                assert me.execute(f"SELECT count(*) FROM {table} WHERE {key} NOT IN (SELECT id FROM documents)"
                                  ).fetchone()[0] == 0
            for table in ("chunks", "passages"):
                a, b = both(f"SELECT count(*) FROM {table}")
                assert 0 < b[0][0] < a[0][0], table
            a, b = both("SELECT count(*) FROM embeddings")
            assert 0 < b[0][0] < a[0][0]
            for table in ("postings", "field_stats", "postings_packed", "postings_dead"):   # corpus-wide: not readable
                assert admin.execute(f"SELECT count(*) FROM {table}").fetchone()[0] > 0 or table == "postings_dead"
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    me.execute(f"SELECT count(*) FROM {table}")
                me.rollback()
            # the planner's statistics (most common values, histograms) are hidden for tables under
            # row-level security: they would show outside paths and words
            admin.execute("ANALYZE")
            admin.commit()
            assert admin.execute("SELECT count(*) FROM pg_stats WHERE tablename = 'documents'").fetchone()[0] > 0
            assert me.execute("SELECT count(*) FROM pg_stats WHERE schemaname = 'public'").fetchone()[0] == 0
            keys = {r[0] for r in me.execute("SELECT key FROM meta")}
            assert "generation" in keys and "last_warnings" not in keys
            assert "last_warnings" in {r[0] for r in admin.execute("SELECT key FROM meta")}
            # a symlinked file is judged by its target too (the writer records the symlinks whose
            # targets it did not walk, and those it left out as second paths to a walked file — this
            # world's three, judged by their targets too; the role sees a row only when both ends
            # are its own): pretend journal/pool.md pointed outside, then inside
            assert dict(admin.execute("SELECT path, target FROM scope_symlinks").fetchall()) == {
                "journal/follow-up.md": "journal/2030-02-11.md", "journal/host-db1.md": "hosts/db1.md",
                "hosts/incident.md": "journal/2030-02-10.md"}
            assert [r[0] for r in me.execute("SELECT path FROM scope_symlinks")] == ["journal/follow-up.md"]
            me.rollback()
            for target, seen in [("hosts/elsewhere.md", False), ("services/queue.md", True)]:
                admin.execute("DELETE FROM scope_symlinks")
                admin.execute("INSERT INTO scope_symlinks VALUES ('journal/pool.md', %s)", (target,))
                admin.commit()
                assert bool(me.execute("SELECT count(*) FROM documents WHERE path = 'journal/pool.md'").fetchone()[0]) \
                    is seen, target
                assert me.execute("SELECT count(*) FROM sections s JOIN documents d ON d.id = s.doc_id"
                                  " WHERE d.path = 'journal/pool.md'").fetchone()[0] == 0 or seen
                # the role sees the symlink row only when both ends are its own; the helper tells
                # it only about its own paths (never where they point)
                assert me.execute("SELECT count(*) FROM scope_symlinks").fetchone()[0] == int(seen)
                assert me.execute("SELECT * FROM remembrancer_scope_hidden()").fetchall() == \
                    ([] if seen else [("journal/pool.md",)])
                me.rollback()
            admin.execute("DELETE FROM scope_symlinks")
            admin.commit()
            assert [r[0] for r in me.execute("SELECT prefix FROM scope_grants ORDER BY 1")] == ["journal", "services"]
            with pytest.raises(psycopg.errors.InsufficientPrivilege):   # the writer's resolutions name outside files
                me.execute("SELECT resolved FROM links")
            me.rollback()
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                me.execute("DELETE FROM scope_grants")
            me.rollback()
        # narrowing: only services/ left; then nothing at all
        assert pg_roles.revoke_reader(pg_url, role, ["journal/"])["scope"] == ["services"]
        with psycopg.connect(_as(pg_url, role)) as me:
            assert {r[0].split("/")[0] for r in me.execute("SELECT path FROM documents")} == {"services"}
        with pytest.raises(UserError) as e:
            pg_roles.revoke_reader(pg_url, role, ["hosts"])
        assert e.value.param == "scope" and e.value.options == ["services"]
        assert pg_roles.revoke_reader(pg_url, role)["scoped"] is False
        with psycopg.connect(_as(pg_url, role)) as me:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                me.execute("SELECT path FROM documents")
    finally:
        _drop(pg_url, role)


def test_roles_that_cannot_be_scoped_are_refused(world, data_env, tiny_embedder, pg_url):
    _write(world["full"], world["app"], pg_url, tiny_embedder)
    for bad, param in [("postgres", "role"), ("remembrancer_reader", "role"), ("", "role")]:
        with pytest.raises(UserError) as e:
            pg_roles.grant_reader(pg_url, bad, ["journal"])
        assert e.value.param == param, bad
    with pytest.raises(UserError) as e:
        pg_roles.grant_reader(pg_url, _role(), [])
    assert e.value.param == "scope"
    with pytest.raises(UserError) as e:
        pg_roles.grant_reader(pg_url, _role(), ["../etc"])
    assert e.value.param == "scope"
    # an unscoped reader granted a scope stops being unscoped (its policy would show every row)
    role = _role()
    pg_roles.grant_reader(pg_url, role, [], password="pw", everything=True)
    try:
        pg_roles.grant_reader(pg_url, role, ["services"])
        with psycopg.connect(_as(pg_url, role)) as me:
            assert {r[0].split("/")[0] for r in me.execute("SELECT path FROM documents")} == {"services"}
    finally:
        _drop(pg_url, role)


def _team_server(cfg: Config, url: str, embedder):
    from remembrancer.mcp_server.link import Link
    from remembrancer.mcp_server.server import build_server

    link = Link(cfg, 60.0)
    link.backend = TeamReader(url, cfg, embedder=embedder)
    return build_server(link, doc_types=cfg.doc_types), link


@pytest.mark.slow
def test_a_scoped_role_answers_like_a_store_of_only_its_files(world, data_env, tiny_embedder, pg_server):
    from tests.support.pg import fresh_database

    full_url, only_url = fresh_database(pg_server.get_uri(), "full"), fresh_database(pg_server.get_uri(), "only")
    cfg_full = _write(world["full"], world["app"], full_url, tiny_embedder)
    cfg_only = _write(world["only"], world["app"], only_url, tiny_embedder)
    role = _role()
    pg_roles.grant_reader(full_url, role, ["journal/", "services/"], password="pw")
    calls = calls_for(world)
    try:
        scoped, scoped_link = _team_server(cfg_full, _as(full_url, role), tiny_embedder)
        only, only_link = _team_server(cfg_only, only_url, tiny_embedder)
        run = run_differential(scoped, scoped_link, only, only_link, world, calls, clean=_no_store)
        answers_a, diffs, differing = run.answers_a, run.diffs, sum(bool(d) for d in run.per_call)
        assert not diffs, f"{differing} of {len(calls)} answers differ ({len(diffs)} fields):\n" + "\n".join(diffs[:60])
        plain = [a for (n, args), a in zip(calls, answers_a) if n == "search" and set(args) == {"query"}]
        assert sum(bool(a["structured"].get("results")) for a in plain) >= 8   # not an empty corpus
        outside = [a for (n, args), a in zip(calls, answers_a) if n == "read" and args.get("path") in OUTSIDE]
        assert outside and all(a["is_error"] for a in outside)
        # asking for more than the grants is refused; asking for less is served
        reader = TeamReader(_as(full_url, role), cfg_full, embedder=tiny_embedder)
        try:
            with pytest.raises(UserError) as e:
                reader.call("search", query="db1", scope=["hosts/"])
            assert e.value.param == "scope" and e.value.options == ["journal", "services"]
            assert {d["path"].split("/")[0] for d in reader.call("list", scope=["services"])["documents"]} == {"services"}
        finally:
            reader.close()
    finally:
        _drop(full_url, role)


def test_the_role_differential_sees_a_leak(world, data_env, tiny_embedder, pg_server):
    """An unscoped reader of the full store differs from the only-scoped store (the check can fail)."""
    from tests.support.pg import fresh_database

    full_url, only_url = fresh_database(pg_server.get_uri(), "lfull"), fresh_database(pg_server.get_uri(), "lonly")
    cfg_full = _write(world["full"], world["app"], full_url, tiny_embedder)
    cfg_only = _write(world["only"], world["app"], only_url, tiny_embedder)
    calls = [("search", {"query": "replication lag on db1"}), ("list_documents", {})]
    a_srv, a_link = _team_server(cfg_full, full_url, tiny_embedder)
    b_srv, b_link = _team_server(cfg_only, only_url, tiny_embedder)
    assert all(run_differential(a_srv, a_link, b_srv, b_link, world, calls, map_ids=False, clean=_no_store).per_call)


def _no_store(obj):
    """What differs between two stores written seconds apart: the store's URL (database and user
    name) and how long ago each was indexed. Nothing else."""
    if isinstance(obj, dict):
        return {k: ("<store>" if k == "store" else _no_store(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_no_store(v) for v in obj]
    if isinstance(obj, str):
        return re.sub(r"\b\d+ (s|min|h|days) ago\b", "<ago>", obj)
    return obj


@pytest.mark.slow
def test_a_scoped_roles_literal_candidates_use_the_index_within_its_grants(world, data_env, tiny_embedder, pg_url):
    """Migration 10: a scoped role's literal lookups go through the trigram index (a function run
    as the owner) and find what the same scope finds unscoped; called directly, the function
    names no section outside the role's grants."""
    from remembrancer.indexer.engine import Engine
    from remembrancer.indexer.store.postgres.store import PgStore

    cfg = _write(world["full"], world["app"], pg_url, tiny_embedder)
    role = _role()
    pg_roles.grant_reader(pg_url, role, ["journal/", "services"], password="pw")
    scoped = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(_as(pg_url, role), readonly=True))
    admin = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(pg_url, readonly=True))
    try:
        with admin.view(()) as view:
            words = {w for _, head, content, _ in admin.catalog.section_texts()
                     for w in re.findall(r"[a-z0-9][a-z0-9-]{3,}", (head + " " + content).lower())}
        checked = inside_only = 0
        for needle in sorted(words):
            with admin.view(SCOPE) as view:
                want = admin.catalog.sections_containing([needle])
                want_counts = sorted(admin.catalog.literal_counts(needle, True))
            with admin.view(()) as view:
                anywhere = admin.catalog.sections_containing([needle])
            with scoped.view(()) as view:
                got = scoped.catalog.sections_containing([needle])
                got_counts = sorted(scoped.catalog.literal_counts(needle, True))
                direct = {r[0] for r in scoped.catalog.conn.execute(
                    "SELECT * FROM remembrancer_scoped_literal(%s, true)", (needle,))}
            assert got is not None and [r[0] for r in got] == [r[0] for r in want], needle
            assert got_counts == want_counts, needle
            assert direct <= {r[0] for r in want}, needle   # candidates, never outside the grants
            checked += 1
            inside_only += len(anywhere) > len(want)
        assert checked > 20 and inside_only > 5   # needles also found outside the grants were asked
    finally:
        scoped.close()
        admin.close()
        _drop(pg_url, role)


def test_a_readers_password_never_reaches_the_server_in_clear(pg_url):
    """grant-reader sends the password's SCRAM verifier (made by libpq here), as psql's \\password
    does: a server that logs DDL logs the verifier, and the login works with the password."""
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {psycopg.sql.Identifier(admin.info.dbname).as_string(admin)} SET log_statement = 'ddl'")
        log = Path(admin.execute("SHOW data_directory").fetchone()[0]) / "log"
    secret = f"Correct-Horse-{next(_names)}-Battery"
    role = _role()
    pg_roles.grant_reader(pg_url, role, ["journal/"], password=secret)
    try:
        with psycopg.connect(_as(pg_url, role, secret)) as me:
            assert me.execute("SELECT current_user").fetchone()[0] == role
        with psycopg.connect(pg_url) as admin:
            stored = admin.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s", (role,)).fetchone()[0]
        assert stored.startswith("SCRAM-SHA-256$")
        logged = log.read_text(errors="replace")
        assert f"ALTER ROLE \"{role}\" PASSWORD 'SCRAM-SHA-256$" in logged   # the server did log the DDL
        assert secret not in logged
    finally:
        _drop(pg_url, role)


def _paths(url: str) -> set[str]:
    with psycopg.connect(url) as me:
        return {r[0].split("/")[0] for r in me.execute("SELECT path FROM documents")}


def _no_access(url: str) -> bool:
    with psycopg.connect(url) as me:
        try:
            me.execute("SELECT path FROM documents")
        except psycopg.errors.InsufficientPrivilege:
            return True
    return False


def test_a_reader_of_one_store_reads_no_other_on_the_same_server(world, data_env, tiny_embedder, pg_server):
    """Roles are the server's: with one shared group, a login made a reader of one store read
    every store there, and making it a scoped reader of one store cut its access to another.
    Each store now has its own groups; a grant or revoke in one never touches another."""
    from remembrancer.indexer.store.postgres.schema import READER_ROLE, store_roles
    from tests.support.pg import fresh_database

    a_url, b_url = fresh_database(pg_server.get_uri(), "storea"), fresh_database(pg_server.get_uri(), "storeb")
    cfg = _write(world["full"], world["app"], a_url, tiny_embedder)
    _write(world["full"], world["app"], b_url, tiny_embedder)
    everyone, both = _role(), _role()
    try:
        assert pg_roles.grant_reader(a_url, everyone, [], password="pw", everything=True)["reads_all"] is True
        assert {"journal", "services", "hosts"} <= _paths(_as(a_url, everyone))
        assert _no_access(_as(b_url, everyone))   # the defect: it read store B too
        with pytest.raises(UserError) as e:
            TeamReader(_as(b_url, everyone), cfg, embedder=tiny_embedder).call("search", query="db1")
        assert e.value.code == "no_access" and "grant-reader" in e.value.hint
        # a reader of all of A made a scoped reader of B keeps all of A (the defect: it lost A)
        pg_roles.grant_reader(a_url, both, [], password="pw", everything=True)
        pg_roles.grant_reader(b_url, both, ["journal"])
        assert {"journal", "services", "hosts"} <= _paths(_as(a_url, both))
        assert _paths(_as(b_url, both)) == {"journal"}
        assert [r["role"] for r in pg_roles.readers(a_url) if r["reads_all"]] == sorted([everyone, both])
        assert [(r["role"], r["scope"]) for r in pg_roles.readers(b_url)] == [(both, ["journal"])]
        # revoking in A leaves B as it was
        assert pg_roles.revoke_reader(a_url, both)["reads_all"] is False
        assert _no_access(_as(a_url, both)) and _paths(_as(b_url, both)) == {"journal"}
        # widening a scoped reader to all of a store takes its scope rows away (the groups are exclusive)
        got = pg_roles.grant_reader(b_url, both, [], everything=True)
        assert got["reads_all"] and not got["scoped"] and not got["scope"]
        assert {"journal", "services", "hosts"} <= _paths(_as(b_url, both))
        with pytest.raises(UserError) as e:
            pg_roles.grant_reader(b_url, both, ["journal"], everything=True)
        assert e.value.param == "scope"
        with pytest.raises(UserError) as e:
            pg_roles.revoke_reader(a_url, both)
        assert e.value.param == "role" and "not a reader" in e.value.message
        for url in (a_url, b_url):   # the shared group keeps nothing of either store
            with psycopg.connect(url) as admin:
                assert not admin.execute("SELECT has_table_privilege(%s, 'documents', 'SELECT')",
                                         (READER_ROLE,)).fetchone()[0]
        assert store_roles("storea") != store_roles("storeb")
    finally:
        for role in (everyone, both):
            _drop(a_url, role)
            _drop(b_url, role)


def test_store_role_names_fit_postgres_and_stay_apart():
    from remembrancer.indexer.store.postgres.schema import store_roles

    long_a, long_b = "x" * 60 + "a", "x" * 60 + "b"
    for db in (long_a, long_b, "ü" * 40):
        assert all(len(name.encode()) <= 63 for name in store_roles(db))
    assert set(store_roles(long_a)).isdisjoint(store_roles(long_b))
    assert store_roles("team") == ("remembrancer_reader_team", "remembrancer_scoped_team")


def test_a_store_made_with_shared_roles_moves_its_readers_to_its_own(world, data_env, tiny_embedder, pg_server):
    """A store from before migration 15: its readers were members of the shared groups. The
    migration gives each its place in the store's own groups (an unscoped one keeps the whole
    store, a scoped one its prefixes) and the shared groups lose their privileges here."""
    from remembrancer.indexer.store.postgres import schema
    from tests.support.pg import fresh_database

    url = fresh_database(pg_server.get_uri(), "before15")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
                     " applied_at timestamptz NOT NULL DEFAULT now())")
        for version, name, sql in schema.MIGRATIONS:
            if version < 15:
                schema._apply(conn, version, name, sql)
    old_all, old_scoped = _role(), _role()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{old_all}" LOGIN PASSWORD \'pw\' IN ROLE {schema.READER_ROLE}')
        conn.execute(f'CREATE ROLE "{old_scoped}" LOGIN PASSWORD \'pw\' IN ROLE {schema.SCOPED_ROLE}')
        conn.execute("INSERT INTO scope_roles VALUES (%s)", (old_scoped,))
        conn.execute("INSERT INTO scope_grants VALUES (%s, 'services')", (old_scoped,))
    try:
        _write(world["full"], world["app"], url, tiny_embedder)   # the writer applies migration 15
        assert {"journal", "services", "hosts"} <= _paths(_as(url, old_all))
        assert _paths(_as(url, old_scoped)) == {"services"}
        with psycopg.connect(url) as admin:
            for group in (schema.READER_ROLE, schema.SCOPED_ROLE):
                assert not admin.execute("SELECT has_table_privilege(%s, 'documents', 'SELECT') OR"
                                         " has_column_privilege(%s, 'links', 'target', 'SELECT') OR"
                                         " has_function_privilege(%s, 'remembrancer_scope_hidden()', 'EXECUTE')",
                                         (group, group, group)).fetchone()[0], group
        got = {r["role"]: r for r in pg_roles.readers(url)}
        assert got[old_all]["reads_all"] and got[old_scoped]["scope"] == ["services"]
    finally:
        for role in (old_all, old_scoped):
            _drop(url, role)


@pytest.mark.parametrize("createrole", [True, False])
def test_a_writer_that_is_no_superuser_makes_the_store_roles_or_says_why_not(world, data_env, tiny_embedder,
                                                                             pg_server, createrole):
    """As a team runs it: the writer's login owns the database (a superuser created the `vector`
    extension once). With CREATEROLE it makes the store's reader roles and grants readers; without,
    the store works and `grant-reader` says what is missing — never an internal error."""
    from tests.support.pg import database_url, fresh_database

    admin_url = fresh_database(pg_server.get_uri(), "owned")
    database = admin_url.split("?")[0].rsplit("/", 1)[1]
    writer_role, reader = _role(), _role()
    with psycopg.connect(admin_url, autocommit=True) as c:
        c.execute(f'CREATE ROLE "{writer_role}" LOGIN PASSWORD \'pw\' {"CREATEROLE" if createrole else ""}')
        c.execute(f'ALTER DATABASE "{database}" OWNER TO "{writer_role}"')
        c.execute(f'ALTER SCHEMA public OWNER TO "{writer_role}"')
        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
    url = _as(admin_url, writer_role)
    try:
        _write(world["full"], world["app"], url, tiny_embedder)
        if createrole:
            pg_roles.grant_reader(url, reader, ["journal"], password="pw")
            assert _paths(_as(admin_url, reader)) == {"journal"}
            pg_roles.grant_reader(url, reader, [], everything=True)
            assert {"journal", "services", "hosts"} <= _paths(_as(admin_url, reader))
            # the writer's role administers the groups it made (PostgreSQL 16 makes it a member): not a reader
            assert [r["role"] for r in pg_roles.readers(url)] == [reader]
        else:
            with pytest.raises(UserError) as e:
                pg_roles.grant_reader(url, reader, ["journal"], password="pw")
            assert e.value.param == "store" and "CREATEROLE" in e.value.hint
            from remembrancer.indexer.team import store_checks

            got = {c["check"]: c for c in store_checks(url, None)}["store readers"]   # doctor --store says it
            assert got["status"] == "FAIL" and "do not exist" in got["detail"] and "CREATEROLE" in got["fix"]
    finally:
        _drop(admin_url, reader)
        with psycopg.connect(database_url(pg_server.get_uri(), "postgres"), autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        _drop(pg_server.get_uri(), writer_role)
