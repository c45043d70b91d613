"""The team store among logins that are not its writer, and versions that are not its own.

Any login may NOTIFY and take advisory locks (neither needs a privilege): a flood of forged
notifications wakes the writer and costs its log a few lines; a login squatting the writer's or
the migration lock is named, never taken for a writer, and never makes the writer hang. A reader
newer than the store's schema refuses it by name rather than failing on its first search.
"""

from __future__ import annotations

import logging
import threading
import time

import psycopg
import pytest

from remembrancer.indexer.store.postgres import notify

FORGED = "x\nERROR remembrancer.daemon: the store was deleted\n"


@pytest.fixture
def nobody(pg_url):
    """A login with no privilege on the store at all."""
    role = f"nobody_{int(time.time() * 1000) % 10**8}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
    yield pg_url.replace("postgres:@", f"{role}:@")
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'DROP ROLE "{role}"')


def test_a_flood_of_forged_notifications_wakes_the_writer_and_costs_its_log_a_few_lines(pg_url, nobody, caplog):
    caplog.set_level(logging.INFO, logger=notify.__name__)
    wake, stop = threading.Event(), threading.Event()
    thread = notify.listen(pg_url, wake, stop)
    try:
        time.sleep(1.5)   # listening
        sent = 0
        with psycopg.connect(nobody, autocommit=True) as conn:
            t0 = time.monotonic()
            while time.monotonic() - t0 < 2.0:
                conn.execute("SELECT pg_notify(%s, %s)", (notify.CHANNEL, FORGED))
                sent += 1
        assert sent > 500
        assert wake.wait(5)
        time.sleep(1.5)   # the listener drains what was sent
    finally:
        stop.set()
        thread.join(10)
    lines = [r.getMessage() for r in caplog.records if r.name == notify.__name__]
    assert 1 <= len(lines) <= 3, (sent, lines[:5])
    assert all("\n" not in line for line in lines) and "'x\\nERROR" in lines[0]


def test_a_burst_is_one_line_saying_how_many_came():
    now = [100.0]
    notices = notify.NoticeLog(clock=lambda: now[0])
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    notify.log.addHandler(handler)
    old = notify.log.level
    notify.log.setLevel(logging.INFO)
    try:
        for _ in range(1000):
            notices.seen("post-receive")
        now[0] += notify.LOGGED_EVERY_S
        notices.seen("post-receive")
    finally:
        notify.log.removeHandler(handler)
        notify.log.setLevel(old)
    assert [r.getMessage() for r in records] == ["notified ('post-receive'): pulling now",
                                                 "notified ('post-receive'): pulling now (and 999 more since the last line)"]


# -- the writer's locks: any login may take an advisory lock ----------------------------------------

def _hold(url: str, key: int):
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("SELECT pg_advisory_lock(%s)", (key,))
    return conn


def test_a_login_squatting_the_writers_lock_is_named_not_taken_for_a_writer(pg_url, nobody):
    from remembrancer.indexer.errors import UserError
    from remembrancer.indexer.store.postgres.store import WRITER_LOCK, PgStore

    PgStore(pg_url, readonly=False).open_ledger(readonly=False).close()   # a store, no writer running
    squat = _hold(nobody, WRITER_LOCK)
    try:
        reader = PgStore(pg_url, readonly=True).open_ledger(readonly=True)
        try:
            assert not reader.writer_running()   # readers do not report a writer that is not there
            assert reader.writer_lock_squatter().startswith("a session of role nobody_")
        finally:
            reader.close()
        with pytest.raises(UserError) as e:
            PgStore(pg_url, readonly=False).open_ledger(readonly=False)
        assert e.value.code == "writer_lock_squatted" and "does not own the store" in e.value.message
        assert "pg_terminate_backend(" in e.value.hint
    finally:
        squat.close()
    writer = PgStore(pg_url, readonly=False).open_ledger(readonly=False)   # the key is free again: it writes
    try:
        reader = PgStore(pg_url, readonly=True).open_ledger(readonly=True)
        assert reader.writer_running() and reader.writer_lock_squatter() is None
        reader.close()
    finally:
        writer.close()


def test_a_login_holding_the_migration_lock_is_named_after_a_bounded_wait(pg_server, monkeypatch):
    from remembrancer.indexer.errors import UserError
    from remembrancer.indexer.store.postgres import schema
    from remembrancer.indexer.store.postgres.store import PgStore
    from tests.support.pg import fresh_database

    url = fresh_database(pg_server.get_uri())   # a new database: the writer migrates first
    monkeypatch.setattr(schema, "MIGRATE_WAIT_S", 1)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute('CREATE ROLE "squatter_m" LOGIN')
    squat = _hold(url.replace("postgres:@", "squatter_m:@"), schema.MIGRATE_LOCK)
    try:
        t0 = time.monotonic()
        with pytest.raises(UserError) as e:
            PgStore(url, readonly=False)
        assert time.monotonic() - t0 < 10
        assert e.value.code == "migration_lock_held" and "a session of role squatter_m (pid" in e.value.message
    finally:
        squat.close()
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute('DROP ROLE "squatter_m"')
    assert PgStore(url, readonly=False).schema_version == schema.LATEST


def test_a_newer_reader_meeting_an_older_schema_is_told_to_upgrade_the_writer(pg_server):
    """The store as an older writer left it (every migration but the last): a reader of this
    version refuses it by name — never an internal error on its first search."""
    from remembrancer.indexer.errors import UserError
    from remembrancer.indexer.store.postgres import schema
    from remembrancer.indexer.store.postgres.store import PgStore
    from tests.support.pg import fresh_database

    url = fresh_database(pg_server.get_uri())
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
                     " applied_at timestamptz NOT NULL DEFAULT now())")
        for version, name, sql in schema.MIGRATIONS[:-1]:
            schema._apply(conn, version, name, sql)
    with pytest.raises(UserError) as e:
        PgStore(url, readonly=True)
    assert e.value.code == "schema_older" and f"version {schema.LATEST - 1}" in e.value.message
    assert "upgrade the writer first" in e.value.hint
    assert PgStore(url, readonly=False).schema_version == schema.LATEST   # the writer migrates it
    assert PgStore(url, readonly=True).schema_version == schema.LATEST
