"""A wake-up that a signal handler may give: a byte down a pipe.

A signal handler runs on the main thread between two of its steps, maybe inside a lock that thread
holds. `threading.Event.set()` takes the event's lock: set from a handler while the main thread was
inside `wait()` on the same event, it waits forever (a daemon told to stop at that instant never
exited). Writing to a pipe takes no lock; the main thread waits on the pipe.
"""

from __future__ import annotations

import contextlib
import os
import select


class Waker:
    """Wakes the main loop from any thread or from a signal handler: a byte down a pipe, which
    takes no lock (an Event's set() does). Several wakes before a wait make one."""

    def __init__(self):
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)
        self._poll = select.poll()   # not select(): no limit on the descriptor's number
        self._poll.register(self._r, select.POLLIN)

    def set(self) -> None:
        try:
            os.write(self._w, b"\0")
        except OSError:   # full (a wake is pending anyway) or closed (stopped)
            pass

    def wait(self, timeout: float, also: int | None = None) -> bool:
        """Until a wake or `timeout` seconds; the wakes that came are used up. `also`: a descriptor
        watched too (a connection whose server may end it while idle): whether it became readable
        (its data is left for its owner to read) and no wake came."""
        poll = self._poll
        if also is not None:
            poll = select.poll()
            poll.register(self._r, select.POLLIN)
            poll.register(also, select.POLLIN)
        readable = False
        try:
            readable = any(fd == also and mask for fd, mask in poll.poll(max(timeout, 0.0) * 1000))
        except InterruptedError:
            pass
        woken = False
        try:
            while os.read(self._r, 512):
                woken = True
        except (BlockingIOError, InterruptedError):
            pass
        return readable and not woken

    def close(self) -> None:
        for fd in (self._r, self._w):
            with contextlib.suppress(OSError):
                os.close(fd)
