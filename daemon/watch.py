"""Filesystem events → a debounced "something changed" signal for the ingest thread.

watchdog reports raw inotify traffic: 200 file writes are ~1,200 events, an atomic save is a
move onto the target, a vim save moves the file to `name~` and writes a new one. None of that
matters here beyond "which Markdown paths may have changed, and when did it go quiet": the
ingest thread then re-checks those paths — and only those — against the catalog (by stat, then
by content hash; indexer/ingest/changes.py).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from remembrancer.indexer.ingest.corpus import MARKDOWN_SUFFIXES

log = logging.getLogger(__name__)

# An editor's save (temp file, write, rename) is a few events within milliseconds; a checkout or a
# sync is a stream of them. 0.1 s of quiet ends a save's batch (0.3 s was most of an edit's 0.5 s
# to searchable); a stream that pauses longer costs one more targeted batch, never a missed change.
QUIET_S = 0.1     # wait for this much quiet …
MAX_WAIT_S = 2.0  # … but never longer than this after the first event
IGNORED_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".cache", ".obsidian", ".trash"}
# The ignore rules a walk honours (indexer/ingest/corpus.py _Ignorer) that a watched tree can hold: an
# edit to one changes which files are in the corpus, though no Markdown file changed. (Rules outside
# the roots — a parent folder's .gitignore, core.excludesFile — are left to the periodic rescan.)
IGNORE_FILES = {".gitignore"}
REPO_EXCLUDE = os.path.join(".git", "info", "exclude")


def relevant(path: str, is_dir: bool, suffixes: tuple[str, ...] = MARKDOWN_SUFFIXES) -> bool:
    """A path whose change may change the index: the corpus's files (Markdown, or transcripts), or
    directories (moves, deletes)."""
    p = Path(path)
    if any(part in IGNORED_DIRS for part in p.parts):
        return False
    name = p.name
    if name.startswith(".#") or name.endswith(("~", ".swp", ".swx", ".tmp", ".part")) or name.startswith("~"):
        return False
    return is_dir or name.lower().endswith(suffixes)


class ChangeQueue:
    """Coalesces change signals: `wait_batch` returns once events went quiet (or waited long enough)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._paths: set[str] = set()
        self._full = False
        self._first: float | None = None
        self._last: float | None = None
        self._closed = False

    def put(self, path: str | None = None, full: bool = False) -> None:
        with self._cond:
            now = time.monotonic()
            if path is not None:
                self._paths.add(path)
            self._full = self._full or full
            self._first = self._first or now
            self._last = now
            self._cond.notify_all()

    def pending(self) -> tuple[int, float | None]:
        """(number of queued changes, seconds since the oldest one) — for the freshness verdict."""
        with self._cond:
            if self._first is None:
                return 0, None
            return max(len(self._paths), 1), time.monotonic() - self._first

    def wake(self) -> None:
        """Wake a waiting `wait_batch` without queueing anything (it re-checks its deadline)."""
        with self._cond:
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def wait_batch(self, timeout: float | None = None) -> tuple[set[str], bool] | None:
        """Block until a debounced batch is ready; None on close or timeout with nothing queued."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._closed:
                    return None
                if self._first is not None:
                    now = time.monotonic()
                    ready_at = min(self._last + QUIET_S, self._first + MAX_WAIT_S)
                    if now >= ready_at:
                        batch = (self._paths, self._full)
                        self._paths, self._full, self._first, self._last = set(), False, None, None
                        return batch
                    self._cond.wait(ready_at - now)
                    continue
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    self._cond.wait(left)
                else:
                    self._cond.wait()


class _Handler(FileSystemEventHandler):
    def __init__(self, queue: ChangeQueue, suffixes: tuple[str, ...]):
        self.queue = queue
        self.suffixes = suffixes

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory and event.event_type == "modified":
            return   # a child was added or removed: that child has its own event (a walk of the folder is not needed)
        paths = [event.src_path]
        if getattr(event, "dest_path", None):
            paths.append(event.dest_path)  # an atomic save is a move onto the target
        for p in paths:
            p = p.decode() if isinstance(p, bytes) else p
            if p.endswith(os.sep + REPO_EXCLUDE):
                self.queue.put(full=True)   # the repository's own ignore list: a walk re-judges every file
            elif not event.is_directory and Path(p).name in IGNORE_FILES:
                if relevant(os.path.dirname(p), True):
                    self.queue.put(os.path.dirname(p))   # its folder is walked again: files it now ignores leave
            elif relevant(p, event.is_directory, self.suffixes):
                self.queue.put(p)


class Watcher:
    """One recursive watch per root; a root that vanishes is re-watched when it comes back."""

    def __init__(self, roots: list[Path], queue: ChangeQueue, suffixes: tuple[str, ...] = MARKDOWN_SUFFIXES):
        self.roots = roots
        self.queue = queue
        self.observer = Observer()
        self.watched: dict[Path, object] = {}
        self.handler = _Handler(queue, suffixes)

    def start(self) -> None:
        self.ensure()
        self.observer.start()

    def ensure(self) -> list[Path]:
        """(Re)arm watches for roots that exist; returns the roots that are missing."""
        missing = []
        for root in self.roots:
            if not root.is_dir():
                if root in self.watched:
                    try:
                        self.observer.unschedule(self.watched.pop(root))
                    except (KeyError, ValueError):
                        pass
                missing.append(root)
                continue
            if root not in self.watched:
                try:
                    self.watched[root] = self.observer.schedule(self.handler, str(root), recursive=True)
                    self.queue.put(full=True)  # it (re)appeared: check everything once
                except OSError as e:
                    log.warning("cannot watch %s: %s (the periodic rescan still covers it)", root, e)
                    missing.append(root)
        return missing

    def stop(self) -> None:
        self.observer.stop()
        self.observer.join(timeout=5)
