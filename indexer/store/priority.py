"""Requests first: the index writer gives way to the requests a daemon is answering.

A daemon answers searches on request threads while its ingest thread writes, and both need the
GIL (and, for the vector file, one lock: hnswlib must not add and query at once). A large
document's writing — its rows, its chunks into tantivy, its vectors into hnswlib — held searches
back for as long as it ran. So the writer works in slices, and before each slice it gives way:
it waits while any request is being answered, at most GIVE_WAY_MAX_S each time, so a steady
stream of requests slows the writer but cannot stop it. A search then waits for one slice (a few
ms) at most, not for a document. In-process use without requests (the CLI, eval) never waits.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

GIVE_WAY_MAX_S = 0.05   # the longest the writer waits for requests before one slice


class RequestsFirst:
    def __init__(self) -> None:
        self._active = 0
        self._done = threading.Condition()

    @contextmanager
    def request(self):
        """Answering a request (nests: a search inside a request counts once more)."""
        with self._done:
            self._active += 1
        try:
            yield
        finally:
            with self._done:
                self._active -= 1
                if not self._active:
                    self._done.notify_all()

    def give_way(self) -> None:
        """The writer, between two slices of work: wait while requests are being answered."""
        if not self._active:   # the usual case, without taking the lock (a stale read only waits less)
            return
        with self._done:
            self._done.wait_for(lambda: self._active == 0, timeout=GIVE_WAY_MAX_S)
