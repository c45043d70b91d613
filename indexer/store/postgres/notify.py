"""Notify → writer over the team store: PostgreSQL LISTEN/NOTIFY on one channel.

`remembrancer notify --store URL` (and the git hooks when `$REMEMBRANCER_STORE` is set, or the
shared remote's post-receive hook) sends a NOTIFY; the one writer LISTENs and pulls and indexes
at once instead of at its next timer tick. Any role that can connect may notify (NOTIFY needs
no privilege) and the payload is only the event's name. A notification is a hint: the writer
also pulls on its timer, so a lost one costs at most one interval.

Imports only psycopg (lazily), so the hook module can use it without loading the engine.
"""

from __future__ import annotations

import logging
import threading
import time

from remembrancer.indexer.wake import Waker

log = logging.getLogger(__name__)

CHANNEL = "remembrancer_pull"


def notify_writer(url: str, event: str, timeout: float = 2.0) -> bool:
    """Send one NOTIFY; True if the server took it."""
    try:
        import psycopg

        with psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout + 0.999)),
                             application_name="remembrancer-notify") as conn:
            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, event[:200]))
        return True
    except Exception:  # noqa: BLE001 — a hint, never a requirement
        return False


LOGGED_EVERY_S = 10.0   # at most one log line per this long, however many notifications came
PAYLOAD_SHOWN = 40      # characters of a payload in the log, as a quoted literal (never raw)


class NoticeLog:
    """Logs notifications without letting them write the log: any login may NOTIFY, as often and
    with whatever payload it likes, so a payload is shown quoted and cut short, and a burst is one
    line per LOGGED_EVERY_S saying how many came."""

    def __init__(self, clock=time.monotonic) -> None:
        self._clock = clock
        self._last = -LOGGED_EVERY_S
        self._unlogged = 0

    def seen(self, payload: str) -> None:
        now = self._clock()
        if now - self._last < LOGGED_EVERY_S:
            self._unlogged += 1
            return
        more = f" (and {self._unlogged} more since the last line)" if self._unlogged else ""
        log.info("notified (%r): pulling now%s", (payload or "no event")[:PAYLOAD_SHOWN], more)
        self._last, self._unlogged = now, 0


def listen(url: str, wake: Waker | threading.Event, stop: threading.Event) -> threading.Thread:
    """LISTEN in a thread: each NOTIFY sets `wake` (a burst of them is one pull: the writer reads
    `wake` once per pass). A lost connection is tried again every few seconds; the writer's timer
    keeps pulling meanwhile."""
    def run() -> None:
        from remembrancer.indexer.store.postgres import connect as pg_connect

        notices = NoticeLog()
        while not stop.is_set():
            try:
                with pg_connect.connect(url, reader=False, autocommit=True,
                                        application_name="remembrancer-writer (listen)") as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    while not stop.is_set():
                        for n in conn.notifies(timeout=1.0):
                            notices.seen(n.payload)
                            wake.set()
            except Exception as e:  # noqa: BLE001 — the timer still pulls; say why and retry
                log.warning("not listening for notify on the store (%r); retrying in 5 s", str(e).strip()[:200])
                stop.wait(5.0)

    t = threading.Thread(target=run, name="store-notify", daemon=True)
    t.start()
    return t
