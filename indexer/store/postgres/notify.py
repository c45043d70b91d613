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


def listen(url: str, wake: threading.Event, stop: threading.Event) -> threading.Thread:
    """LISTEN in a thread: each NOTIFY sets `wake`. A lost connection is tried again every few
    seconds; the writer's timer keeps pulling meanwhile."""
    def run() -> None:
        import psycopg

        while not stop.is_set():
            try:
                with psycopg.connect(url, autocommit=True, application_name="remembrancer-writer (listen)") as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    while not stop.is_set():
                        for n in conn.notifies(timeout=1.0):
                            log.info("notified (%s): pulling now", n.payload or "no event")
                            wake.set()
            except Exception as e:  # noqa: BLE001 — the timer still pulls; say why and retry
                log.warning("not listening for notify on the store (%s); retrying in 5 s", str(e).strip()[:200])
                stop.wait(5.0)

    t = threading.Thread(target=run, name="store-notify", daemon=True)
    t.start()
    return t
