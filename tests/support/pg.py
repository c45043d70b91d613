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


def server_pids(pgdata) -> list[int]:
    """The postmaster of the server at `pgdata` and its children (its backends, checkpointer, …)."""
    postmaster = int((Path(pgdata) / "postmaster.pid").read_text().split()[0])
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == postmaster:
            children.append(int(stat.parent.name))
    return [postmaster, *children]


class frozen:
    """The server at `pgdata` frozen (SIGSTOP to the postmaster and its children, as a frozen host
    or a network black hole looks to a client) for the `with` block; always thawed after it."""

    def __init__(self, pgdata):
        self.pgdata = pgdata
        self.pids: list[int] = []

    def __enter__(self):
        import os
        import signal

        postmaster = server_pids(self.pgdata)[0]
        os.kill(postmaster, signal.SIGSTOP)   # first: it forks no backend after this
        self.pids = server_pids(self.pgdata)
        for pid in self.pids[1:]:
            os.kill(pid, signal.SIGSTOP)
        return self

    def thaw(self) -> None:
        import os
        import signal

        for pid in dict.fromkeys([*self.pids, *server_pids(self.pgdata)]):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def __exit__(self, *exc) -> None:
        self.thaw()
