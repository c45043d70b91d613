"""Stopping the daemon by a signal. A signal handler runs on the main thread between two of its
steps, possibly while that thread holds a lock: the handler must take none. It used to call stop(),
whose Event.set() waited for the lock of the very Event.wait() the signal had interrupted — a daemon
told to stop at that instant never exited and kept its corpora's writer locks (found left over
after a test run, 24 minutes after its SIGTERM, in `Event.set` under `Condition._is_owned`)."""

from __future__ import annotations

import threading

from remembrancer.daemon.server import Daemon, Waker
from remembrancer.indexer.config import Config


def test_the_signal_handler_completes_while_the_main_thread_holds_its_locks(data_env):
    d = Daemon(Config(roots=[]), sock=data_env / "r" / "d.sock")
    try:
        done = threading.Event()

        def main_thread_at_a_bad_moment():
            # the locks the main loop may hold when a signal lands: an Event's condition (waiting
            # on it, or checking it), the daemon's own lock (the idle check)
            with d._lock, d.stopping._cond:
                d._on_signal()
            done.set()

        t = threading.Thread(target=main_thread_at_a_bad_moment, daemon=True)
        t.start()
        assert done.wait(10), "the signal handler waited for a lock its own thread holds"
        d._wake.wait(0)          # the main loop's next look: it stops
        assert d._signalled and not d.stopping.is_set()
    finally:
        d._shutdown()


def test_a_wake_ends_a_wait_and_wakes_do_not_pile_up():
    w = Waker()
    try:
        done = threading.Event()

        def waiter():
            w.wait(60)
            done.set()

        threading.Thread(target=waiter, daemon=True).start()
        w.set()
        assert done.wait(10), "a wake did not end the wait"
        for _ in range(10_000):   # more than the pipe holds: a full pipe is a pending wake
            w.set()
        w.wait(0)                 # all of them used up at once
        ended = threading.Event()
        threading.Thread(target=lambda: (w.wait(0.05), ended.set()), daemon=True).start()
        assert ended.wait(10)     # a wait with no wake pending ends at its timeout
    finally:
        w.close()
