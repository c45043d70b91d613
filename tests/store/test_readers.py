"""Read-only connections for request threads (indexer/store/local/readers.py): pooled, a thread borrows one
for a request and gives it back; a request that finds none free opens its own after a wait."""

from __future__ import annotations

import threading

from remembrancer.indexer.store.local import readers
from remembrancer.indexer.store.local.readers import Readers


class FakeLedger:
    """A stand-in for a catalog connection: only open/close are counted (the real ledgers are
    exercised by the daemon test in test_hardening.py)."""

    def __init__(self, closed: list):
        self.closed = closed

    def close(self) -> None:
        self.closed.append(self)


def _run(threads: int, fn) -> None:
    ts = [threading.Thread(target=fn) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)


def test_pooled_threads_reuse_a_few_connections():
    closed: list = []
    r = Readers(lambda: FakeLedger(closed))
    r.pool()
    seen = []

    def request():
        for _ in range(20):
            seen.append(r.get())
            assert r.get() is seen[-1]   # one connection per thread for the whole request
            r.give_back()

    _run(40, request)
    assert r.opened <= readers.POOL_SIZE and closed == []
    assert len(set(map(id, seen))) <= readers.POOL_SIZE


def test_a_request_that_finds_no_free_connection_opens_its_own_and_closes_it(monkeypatch):
    monkeypatch.setattr(readers, "BORROW_WAIT_S", 0.05)
    closed: list = []
    r = Readers(lambda: FakeLedger(closed))
    r.pool()
    hold, done = threading.Event(), threading.Barrier(readers.POOL_SIZE + 1)

    def holder():
        r.get()
        done.wait()
        hold.wait()
        r.give_back()

    ts = [threading.Thread(target=holder) for _ in range(readers.POOL_SIZE)]
    for t in ts:
        t.start()
    done.wait()                      # every pooled connection is borrowed
    extra = r.get()
    assert r.opened == readers.POOL_SIZE + 1
    r.give_back()
    assert closed == [extra]         # not pooled: closed, the pool keeps its size
    hold.set()
    for t in ts:
        t.join(10)
    _run(readers.POOL_SIZE, lambda: (r.get(), r.give_back()))   # the pooled ones were given back
    assert closed == [extra] and r.opened == readers.POOL_SIZE + 1


def test_without_a_pool_each_thread_keeps_its_own_and_closes_it():
    closed: list = []
    r = Readers(lambda: FakeLedger(closed))
    got = []

    def thread():
        got.append(r.get())
        r.give_back()

    _run(12, thread)
    assert r.opened == 12 and len(closed) == 12
