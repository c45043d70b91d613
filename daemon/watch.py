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
import sys
import threading
import time
import weakref
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from remembrancer.indexer.ingest.corpus import MARKDOWN_SUFFIXES

from .inotify import LIMIT_ERRNOS, PartialWatch, is_watch_limit, limit_fix, limit_message

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


def route(queue: ChangeQueue, p: str, is_dir: bool, suffixes: tuple[str, ...]) -> None:
    """One changed path into the queue, as the corpus sees it (watchdog's events and PartialWatch's)."""
    if p.endswith(os.sep + REPO_EXCLUDE):
        queue.put(full=True)   # the repository's own ignore list: a walk re-judges every file
    elif not is_dir and Path(p).name in IGNORE_FILES:
        if relevant(os.path.dirname(p), True):
            queue.put(os.path.dirname(p))   # its folder is walked again: files it now ignores leave
    elif relevant(p, is_dir, suffixes):
        queue.put(p)


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
            route(self.queue, p.decode() if isinstance(p, bytes) else p, event.is_directory, self.suffixes)


class Watcher:
    """One recursive watch per root; a root that vanishes is re-watched when it comes back.

    A root whose recursive watch meets inotify's limit (more folders than watches left) is watched
    by a PartialWatch instead: as many of its folders as the limit allows, the rest listed by
    `unwatched()` — the corpus rescans those (daemon/corpora.py); the daemon keeps serving."""

    def __init__(self, roots: list[Path], queue: ChangeQueue, suffixes: tuple[str, ...] = MARKDOWN_SUFFIXES):
        self.roots = roots
        self.queue = queue
        self.suffixes = suffixes
        self.observer = Observer()
        self.watched: dict[Path, object] = {}
        self.partial: dict[Path, PartialWatch] = {}
        self.handler = _Handler(queue, suffixes)
        self._lost: dict[Path, set[str]] = {}   # folders watchdog could not watch after the start (its log)
        self._lock = threading.Lock()
        self.rescan_s: float | None = None   # how often the corpus walks the unwatched folders (said in messages)

    def start(self) -> None:
        # The observer first, the roots after: a root that cannot be watched fails its own
        # schedule() (ensure() handles it), not the observer's start with every root in it.
        self.observer.start()
        _LIMIT_LOG.watchers.add(self)
        self.ensure()

    def ensure(self) -> list[Path]:
        """(Re)arm watches for roots that exist; returns the roots that are missing."""
        missing = []
        for root in self.roots:
            if not root.is_dir():
                if root in self.watched:
                    self._unschedule(root)
                if root in self.partial:
                    self.partial.pop(root).stop()
                missing.append(root)
                continue
            if root in self.partial:
                pw = self.partial[root]
                if pw.unwatched():
                    pw.retry()   # the limit may have been raised meanwhile
                    if not pw.unwatched():
                        log.warning("every folder of %s is watched now", root)
                continue
            if root in self.watched:
                if not self._lost.get(root) and self._emitter_alive(root):
                    continue
                self._unschedule(root)   # watchdog could not watch part of it: folder by folder instead
                self._watch_partially(root, None)
                continue
            try:
                self.watched[root] = self.observer.schedule(self.handler, str(root), recursive=True)
                self.queue.put(full=True)  # it (re)appeared: check everything once
            except OSError as e:
                if e.errno in LIMIT_ERRNOS and sys.platform.startswith("linux"):
                    self._watch_partially(root, e)
                    continue
                log.warning("cannot watch %s: %s (the periodic rescan still covers it)", root, e)
                missing.append(root)
        return missing

    def _watch_partially(self, root: Path, error: OSError | None) -> None:
        pw = PartialWatch(root, lambda p, is_dir: route(self.queue, p, is_dir, self.suffixes),
                          lambda: self.queue.put(full=True), skip=frozenset(IGNORED_DIRS))
        with self._lock:
            self._lost.pop(root, None)
        self.partial[root] = pw
        self.queue.put(full=True)   # whatever changed before the watches were in place
        gone = pw.unwatched()
        if gone:
            log.warning("%s", self.describe(root))
        else:
            log.warning("watching %s folder by folder: %s at its first try (%d folders watched)", root,
                        limit_message(error), pw.watched())

    def _unschedule(self, root: Path) -> None:
        try:
            self.observer.unschedule(self.watched.pop(root))
        except (KeyError, ValueError):
            pass

    def _emitter_alive(self, root: Path) -> bool:
        """Whether watchdog's emitter of this root still runs (an older watchdog's ends on an error)."""
        watch = self.watched.get(root)
        for emitter in list(getattr(self.observer, "emitters", ())):
            if getattr(emitter, "watch", None) == watch:
                return emitter.is_alive()
        return True

    def lost(self, folder: str) -> None:
        """watchdog could not watch `folder` (a new one, at the limit): it counts as unwatched now,
        and its root is watched folder by folder at the next ensure()."""
        for root in self.roots:
            if root in self.partial:
                continue   # its own watcher records what it cannot watch
            if folder == str(root) or folder.startswith(str(root).rstrip(os.sep) + os.sep):
                with self._lock:
                    self._lost.setdefault(root, set()).add(folder)
                self.queue.put(folder)

    def unwatched(self) -> list[Path]:
        """The folders whose changes no watch reports (each with all it holds)."""
        out = set()
        for pw in list(self.partial.values()):
            out.update(pw.unwatched())
        with self._lock:
            for folders in self._lost.values():
                out.update(folders)
        return [Path(p) for p in sorted(out)]

    def problem(self, rescan_s: float | None = None) -> dict | None:
        """What status and doctor say about folders that are not watched: None when all are."""
        rescan_s = rescan_s or self.rescan_s
        folders = self.unwatched()
        if not folders:
            return None
        errors = [pw.error for pw in self.partial.values() if pw.error is not None]
        err = errors[0] if errors else None
        every = f"every {rescan_s:.0f} s and " if rescan_s else ""
        n = len(folders)
        return {"count": n, "folders": [str(f) for f in folders[:UNWATCHED_SHOWN]],
                "reason": limit_message(err),
                "message": f"{n} folder{'s are' if n != 1 else ' is'} not watched, as {limit_message(err)}: "
                           f"changes there are found by a rescan {every}before each answer instead",
                "fix": limit_fix(err)}

    def describe(self, root: Path | None = None) -> str:
        pr = self.problem(self.rescan_s)
        if pr is None:
            return "every folder is watched"
        shown = ", ".join(pr["folders"][:5]) + (f", … ({pr['count'] - 5} more)" if pr["count"] > 5 else "")
        return f"{pr['message']}: {shown} — {pr['fix']}"

    def stop(self) -> None:
        _LIMIT_LOG.watchers.discard(self)
        for pw in self.partial.values():
            pw.stop()
        self.partial.clear()
        self.observer.stop()
        self.observer.join(timeout=5)


UNWATCHED_SHOWN = 20   # folders named in status (the count says how many there are)


class _LimitLog(logging.Filter):
    """watchdog logs, and goes on, when a folder created after the start cannot be watched (the
    limit reached meanwhile): that folder's changes would be missed silently. The watcher whose
    root holds it is told (Watcher.lost)."""

    def __init__(self):
        super().__init__()
        self.watchers: weakref.WeakSet[Watcher] = weakref.WeakSet()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            args = record.args if isinstance(record.args, tuple) else ()
            err = next((a for a in args if isinstance(a, OSError)), None) or (
                record.exc_info[1] if record.exc_info else None)
            if err is not None and is_watch_limit(err) is not None:
                path = next((a for a in args if isinstance(a, (bytes, str))), None)
                folder = os.fsdecode(path) if path is not None else None
                for w in list(self.watchers):
                    if folder is not None:
                        w.lost(folder)
                    else:
                        for root in w.roots:
                            w.lost(str(root))
        except Exception:   # never break watchdog's logging
            pass
        return True


_LIMIT_LOG = _LimitLog()
logging.getLogger("watchdog.observers.inotify").addFilter(_LIMIT_LOG)
