"""A team store's backup and restore, the way docs/team.md ("Running a team store") says to do it, with the real
`pg_dump` and `pg_restore` of the test server: the restore exits 0 as the writer's role (no
superuser), the writer's start gives the restored store its own reader roles (a copy restored under
another name is not readable by the source store's readers), and readers answer from it as from
the source."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest

from remembrancer.indexer.store.postgres import roles as pg_roles
from remembrancer.indexer.team import TeamReader
from tests.store.test_team_roles import _as, _drop, _no_access, _paths, _role, _write, world  # noqa: F401
from tests.support.pg import database_url, fresh_database


def _bin(name: str) -> str:
    import pgserver

    found = Path(pgserver.__file__).parent / "pginstall" / "bin" / name
    return str(found) if found.exists() else shutil.which(name)


def _owned_database(server_url: str, prefix: str, owner: str) -> str:
    """A database owned by `owner` with the `vector` extension (the one step that needs a superuser)."""
    url = fresh_database(server_url, prefix)
    name = url.split("?")[0].rsplit("/", 1)[1]
    with psycopg.connect(server_url, autocommit=True) as c:
        c.execute(f'ALTER DATABASE "{name}" OWNER TO "{owner}"')
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f'ALTER SCHEMA public OWNER TO "{owner}"')
        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return url


def _pg(tool: str, url: str, role: str, *args: str) -> subprocess.CompletedProcess:
    host = url.split("host=")[1]
    name = url.split("?")[0].rsplit("/", 1)[1]
    env = {**os.environ, "PGHOST": host, "PGUSER": role, "PGPASSWORD": "pw", "PGDATABASE": name}
    return subprocess.run([_bin(tool), *args], env=env, capture_output=True, text=True, timeout=300)


def test_a_store_dumped_and_restored_by_its_writer_serves_its_readers(world, data_env, tiny_embedder, pg_server,
                                                                       tmp_path):
    base = pg_server.get_uri()
    writer, alice = _role(), _role()
    with psycopg.connect(base, autocommit=True) as c:
        c.execute(f'CREATE ROLE "{writer}" LOGIN CREATEROLE PASSWORD \'pw\'')
    source = _owned_database(base, "backupsrc", writer)
    copy = _owned_database(base, "backupdst", writer)
    scratch = _owned_database(base, "backupscratch", writer)
    try:
        cfg = _write(world["full"], world["app"], _as(source, writer), tiny_embedder)
        pg_roles.grant_reader(_as(source, writer), alice, [], password="pw", everything=True)
        dump = tmp_path / "store.dump"
        r = _pg("pg_dump", source, writer, "--format=custom", "--no-comments", "--file", str(dump))
        assert r.returncode == 0, r.stderr
        # without the documented flags the writer's role cannot restore it cleanly (the extension's
        # comment belongs to a superuser)
        plain = tmp_path / "plain.dump"
        assert _pg("pg_dump", source, writer, "--format=custom", "--file", str(plain)).returncode == 0
        r = _pg("pg_restore", scratch, writer, "--no-owner", "--dbname", scratch.split("?")[0].rsplit("/", 1)[1],
                str(plain))
        assert r.returncode == 1 and "must be owner of extension vector" in r.stderr
        # restored whole on the same server, its policies and grants name the source's roles: the
        # source's readers read the copy — until its writer starts and gives it its own roles
        assert {"journal", "services", "hosts"} <= _paths(_as(scratch, alice))
        _write(world["full"], world["app"], _as(scratch, writer), tiny_embedder)
        assert _no_access(_as(scratch, alice))
        # the documented restore: every entry but the policies and grants, which name the source's roles
        toc = _pg("pg_restore", copy, writer, "--list", str(dump))
        assert toc.returncode == 0, toc.stderr
        kept = tmp_path / "store.toc"
        kept.write_text("".join(line + "\n" for line in toc.stdout.splitlines()
                                if " POLICY " not in line and " ACL " not in line))
        r = _pg("pg_restore", copy, writer, "--no-owner", "--no-privileges", "--use-list", str(kept),
                "--dbname", copy.split("?")[0].rsplit("/", 1)[1], str(dump))
        assert r.returncode == 0, r.stderr
        # a source store's reader reads nothing of the copy, before or after the writer's start
        assert _no_access(_as(copy, alice))
        _write(world["full"], world["app"], _as(copy, writer), tiny_embedder)   # the writer's start
        assert _no_access(_as(copy, alice))
        assert {"journal", "services", "hosts"} <= _paths(_as(source, alice))
        pg_roles.grant_reader(_as(copy, writer), alice, ["journal"])
        assert _paths(_as(copy, alice)) == {"journal"}
        pg_roles.grant_reader(_as(copy, writer), alice, [], everything=True)
        # the copy answers as its source did
        answers = []
        for url in (source, copy):
            reader = TeamReader(_as(url, alice), cfg, embedder=tiny_embedder)
            try:
                out = reader.call("search", query="db1 disk")
            finally:
                reader.close()
            answers.append([(x["path"], x["heading"], round(x["score"], 6)) for x in out["results"]])
        assert answers[0] and answers[0] == answers[1]
    finally:
        _drop(base, alice)
        for url in (source, copy, scratch):
            name = url.split("?")[0].rsplit("/", 1)[1]
            with psycopg.connect(database_url(base, "postgres"), autocommit=True) as c:
                c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        _drop(base, writer)
