"""Bounded waits on the team store (indexer/store/postgres/connect.py): a reader's statements carry
a statement timeout and a client deadline past it, every connection a connect timeout and TCP
keepalives, the writer no statement timeout; what the URL says wins. And for real: a server
frozen with SIGSTOP (postmaster and children) costs a connected reader and a new CLI process a
structured error within the bound, and the next call after it thaws is answered."""

from __future__ import annotations

import threading
import time
from urllib.parse import quote

import pytest

from remembrancer.indexer.config import Config, make_roots
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.store.postgres import connect as pg_connect
from remembrancer.indexer.store.postgres.store import PgStore
from remembrancer.indexer.team import TeamReader
from tests.support.team import index_once


def _with_options(url: str, options: str) -> str:
    return url + ("&" if "?" in url else "?") + "options=" + quote(options)


def test_the_bounds_leave_what_the_url_or_environment_sets(monkeypatch):
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    monkeypatch.delenv("PGOPTIONS", raising=False)
    plain = pg_connect.bounds("postgresql://alice@db/memory")
    assert plain["connect_timeout"] == str(pg_connect.CONNECT_TIMEOUT_S)
    assert plain["keepalives"] == "1" and {"keepalives_idle", "keepalives_interval", "keepalives_count"} <= plain.keys()
    mine = pg_connect.bounds("postgresql://alice@db/memory?connect_timeout=30&keepalives_idle=60")
    assert "connect_timeout" not in mine and "keepalives_idle" not in mine and mine["keepalives_count"] == "3"
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "12")
    assert "connect_timeout" not in pg_connect.bounds("postgresql://alice@db/memory")
    assert not pg_connect.sets_statement_timeout("postgresql://alice@db/memory")
    assert pg_connect.sets_statement_timeout(_with_options("postgresql://alice@db/memory", "-c statement_timeout=60s"))
    monkeypatch.setenv("PGOPTIONS", "-c statement_timeout=0")
    assert pg_connect.sets_statement_timeout("postgresql://alice@db/memory")


def test_readers_get_a_statement_timeout_and_a_deadline_the_writer_neither(notes, data_env, tiny_embedder, pg_url):
    index_once(Config(roots=make_roots([notes])), pg_url, tiny_embedder)
    writer = PgStore(pg_url, readonly=False).open_ledger(readonly=False)
    readers = [PgStore(u, readonly=True).open_ledger(readonly=True)
               for u in (pg_url, _with_options(pg_url, "-c statement_timeout=3s"),
                         _with_options(pg_url, "-c statement_timeout=0"))]
    try:
        assert writer.conn.execute("SHOW statement_timeout").fetchone()[0] == "0"
        assert getattr(writer.conn, "answer_within", None) is None
        shown = [r.conn.execute("SHOW statement_timeout").fetchone()[0] for r in readers]
        assert shown == [pg_connect.READER_STATEMENT_TIMEOUT, "3s", "0"]
        grace = pg_connect.ANSWER_GRACE_S
        assert [r.conn.answer_within for r in readers] == [20 + grace, 3 + grace, None]
        assert readers[0].conn.info.get_parameters()["connect_timeout"] == str(pg_connect.CONNECT_TIMEOUT_S)
        with pytest.raises(UserError) as e:   # the server's own cancel at the statement timeout, said as such
            with readers[1].scoped(()):
                readers[1]._q("SELECT pg_sleep(5)")
        assert e.value.code == "store_timeout" and "took too long" in e.value.message
        with readers[1].scoped(()):   # the same connection answers the next request
            assert readers[1]._q("SELECT 1").fetchone()[0] == 1
    finally:
        for led in (writer, *readers):
            led.close()


def _within(fn, seconds: float):
    """fn()'s result or error, and how long it took; ("hung", seconds) if it did not return in time."""
    out: list = []

    def run():
        t0 = time.monotonic()
        try:
            out.append(fn())
        except Exception as e:   # noqa: BLE001 — the error is the answer looked at
            out.append(e)
        out.append(time.monotonic() - t0)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    return (out[0], out[1]) if len(out) == 2 else ("hung", seconds)


@pytest.mark.slow
def test_a_frozen_server_costs_a_reader_a_structured_error_within_the_bound(tmp_path, tiny_model_dir, tiny_embedder,
                                                                           data_env):
    """The server of this test's own frozen with SIGSTOP, as the QA froze it: a connected reader's
    next search is `store_unreachable` within its statement timeout (2 s here, from the URL) plus
    the grace, a new CLI process's within the connect timeout; after SIGCONT both answer."""
    import pgserver

    from tests.cli.test_team_cli import _cli, _world
    from tests.support.pg import fresh_database, frozen

    srv = pgserver.get_server(str(tmp_path / "pg"), cleanup_mode="stop")
    try:
        url = fresh_database(srv.get_uri(), "frozen")
        w = _world(tmp_path, tiny_model_dir, url)
        assert _cli(w, "index", "--store", url, "--root", str(w["shared"])).returncode == 0
        reader = TeamReader(_with_options(url, "-c statement_timeout=2s"), Config(roots=make_roots([w["mine"]])),
                            embedder=tiny_embedder)
        ledger = PgStore(_with_options(url, "-c statement_timeout=2s"), readonly=True).open_ledger(readonly=True)

        def count():
            with ledger.scoped(()):
                return ledger._q("SELECT count(*) FROM documents").fetchone()[0]
        try:
            assert reader.call("search", query="ledger service")["results"] and count() == 2
            bound = 2 + pg_connect.ANSWER_GRACE_S
            with frozen(srv.pgdata) as ice:
                stuck, stuck_took = _within(count, bound + 20)   # a statement on a connection made before
                err, took = _within(lambda: reader.call("search", query="restart the ledger"), bound + 20)
                t0 = time.monotonic()
                cli = _cli(w, "search", "ledger", "--store", url, "--root", str(w["mine"]), timeout=90)
                cli_took = time.monotonic() - t0
                ice.thaw()
            print(f"frozen server: statement error after {stuck_took:.1f} s, reader's search after {took:.1f} s,"
                  f" CLI after {cli_took:.1f} s")
            assert isinstance(stuck, UserError) and stuck.code == "store_unreachable", (stuck, stuck_took)
            assert "did not answer within" in stuck.message and stuck_took <= bound + 2, (stuck.message, stuck_took)
            # the search's request may need a connection made now (a side connection, another of the pool):
            # bounded by the connect timeout then, by the statement's bound else
            assert isinstance(err, UserError) and err.code == "store_unreachable", (err, took)
            assert took <= bound + 2, (err.message, took)
            assert cli.returncode == 2 and "cannot connect to the store" in cli.stderr, cli.stderr
            assert cli_took <= pg_connect.CONNECT_TIMEOUT_S + 15, cli_took
            assert "Traceback" not in cli.stderr
            after = reader.call("search", query="restart the ledger")   # the next call connects again
            assert after["results"][0]["path"] == "runbooks/restart.md"
            assert _cli(w, "search", "ledger", "--store", url, "--root", str(w["mine"])).returncode == 0
            assert count() == 2
        finally:
            reader.close()
            ledger.close()
    finally:
        srv.cleanup()
