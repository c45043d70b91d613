"""The daemon's writer side of a change: what the watcher and the hooks queued → the engine.

A batch of paths (watcher events) or a bare notification (a git hook: the engine diffs the
indexed HEAD against the current one) is a targeted update — only those files are stat'ed, read
and embedded. The periodic rescan and the catch-up at start are full walks: the safety net for
events the watcher missed. Targeted updates leave the vector file to be saved once the daemon
has been quiet for a while (each save writes the whole file), and at shutdown. After a full pass
the engine prepares what the next targeted update needs (engine.prepare_targeted), so an edit
does not pay for it, and the heap it keeps is frozen out of the cyclic collector's walks
(daemon/heap.py).
"""

from __future__ import annotations

import time

from .heap import settle_heap

VECTORS_SAVE_QUIET_S = 2.0    # quiet this long after a targeted update before the vector file is written


class Updater:
    def __init__(self, engine, save_quiet_s: float = VECTORS_SAVE_QUIET_S):
        self.engine = engine
        self.save_quiet_s = save_quiet_s
        self._last_change: float | None = None
        self._prepare_due = False   # a full pass ran: the next edit's link resolver is built when quiet

    def apply(self, paths, full: bool):
        """One batch; returns the engine's IndexReport."""
        report = self.engine.refresh() if full else self.engine.refresh_paths(paths)
        self._last_change = time.monotonic() if self.engine.vectors_unsaved() else None
        self._prepare_due = self._prepare_due or full
        return report

    def save_due(self) -> float | None:
        """When (time.monotonic()) the vector file should be written, or None if it is current."""
        return None if self._last_change is None else self._last_change + self.save_quiet_s

    def when_quiet(self) -> None:
        """Write the vector file if it is due; after a full pass, prepare for the next edit."""
        due = self.save_due()
        if due is not None and time.monotonic() >= due:
            self.flush()
        if self._prepare_due:
            self._prepare_due = False
            self.engine.prepare_targeted()
            settle_heap()

    def flush(self) -> None:
        self.engine.save_vectors()
        self._last_change = None
