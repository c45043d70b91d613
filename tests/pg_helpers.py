"""A real PostgreSQL with pgvector for the team-store tests: the `pgserver` wheel starts a
throw-away server in a temp dir (FIELD-NOTES); each test gets its own database."""

from __future__ import annotations

import itertools
from urllib.parse import urlsplit, urlunsplit

_counter = itertools.count()


def server(tmp_dir):
    import pgserver

    return pgserver.get_server(str(tmp_dir), cleanup_mode="stop")


def versions(url: str) -> str:
    """The server's PostgreSQL and pgvector versions, as the test summary says them."""
    import psycopg

    from remembrancer.indexer.pg_schema import vector_version

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
