"""A real PostgreSQL with pgvector for the team-store tests: the `pgserver` wheel starts a
throw-away server in a temp dir; each test gets its own database."""

from __future__ import annotations

import itertools
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

_counter = itertools.count()


def server(tmp_dir):
    import pgserver

    return pgserver.get_server(str(tmp_dir), cleanup_mode="stop")


def distance_crash(url: str) -> str | None:
    """Why this server's pgvector cannot compute a distance here, or None. A pgvector binary built
    for a newer CPU (AVX-512) dies of an illegal instruction on its first 384-dimension distance on
    one without it: the backend drops the connection, and every team test would fail the same way."""
    import time

    import psycopg

    vec = "[" + ",".join(f"{i / 1000}" for i in range(384)) + "]"
    try:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("CREATE EXTENSION IF NOT EXISTS vector")
            c.execute(f"SELECT '{vec}'::vector <=> '{vec}'::vector").fetchone()
        return None
    except psycopg.OperationalError as e:
        for _ in range(60):   # the postmaster restarts its backends (crash recovery) before it can stop
            try:
                psycopg.connect(url).close()
                break
            except psycopg.OperationalError:
                time.sleep(0.5)
        flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
        cpu = "; this CPU has no AVX-512" if flags and "avx512f" not in flags else ""
        return f"its pgvector crashed computing a distance ({str(e).splitlines()[0]}){cpu}"


def versions(url: str) -> str:
    """The server's PostgreSQL and pgvector versions, as the test summary says them."""
    import psycopg

    from remembrancer.indexer.store.postgres.schema import vector_version

    with psycopg.connect(url, autocommit=True) as c:
        return f"PostgreSQL {c.execute('SHOW server_version').fetchone()[0]}, pgvector {vector_version(c)}"


def database_url(base_url: str, name: str) -> str:
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path="/" + name))


def fresh_database(base_url: str, prefix: str = "t") -> str:
    import psycopg

    name = f"{prefix}{next(_counter)}"
    with psycopg.connect(base_url, autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {name}")
        c.execute(f"CREATE DATABASE {name}")
    return database_url(base_url, name)
