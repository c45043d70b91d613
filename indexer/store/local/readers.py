"""Read-only ledger connections for request threads: one per thread, or borrowed from a pool.

A connection closed while another one of the same process holds a lock on the catalog (the
writer always does in WAL mode) keeps its file descriptor: SQLite's unix VFS may not close it
without dropping the process's locks, and parks it for reuse instead. A daemon that opened one
connection per client thread therefore kept as many descriptors as its peak concurrency, for
good. Pooled, the request threads share a few connections, borrowed for one request and given
back after it: descriptors stay at the pool's size, whatever the burst.

Without a pool (the CLI, tests, in-process servers), each thread keeps its own connection, as a
thread that never gives one back must not hold a shared slot.
"""

from __future__ import annotations

import threading
from typing import Callable

POOL_SIZE = 8         # connections request threads share (searches beyond this only queue for the 2 cores)
BORROW_WAIT_S = 2.0   # a request waits this long for a free one, then opens one of its own for the request


class Readers:
    def __init__(self, open_reader: Callable[[], object]):
        self._open = open_reader
        self._local = threading.local()
        self._pooled = False
        self._idle: list = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(POOL_SIZE)
        self.opened = 0   # connections ever opened (a figure for tests and status)

    def pool(self) -> None:
        """Share POOL_SIZE connections between threads that give theirs back (`give_back`)."""
        self._pooled = True

    def get(self):
        """The calling thread's connection, borrowed (or opened) on its first use."""
        cat = getattr(self._local, "catalog", None)
        if cat is None:
            slot = self._pooled and self._slots.acquire(timeout=BORROW_WAIT_S)
            with self._lock:
                cat = self._idle.pop() if slot and self._idle else None
            if cat is None:
                cat = self._open()
                self.opened += 1
            self._local.catalog, self._local.slot = cat, slot
        return cat

    def give_back(self) -> None:
        """The calling thread is done reading for now (a request ended, or its client left)."""
        cat = getattr(self._local, "catalog", None)
        if cat is None:
            return
        self._local.catalog = None
        if self._local.slot:
            with self._lock:
                self._idle.append(cat)
            self._slots.release()
        else:
            cat.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for cat in idle:
            cat.close()
