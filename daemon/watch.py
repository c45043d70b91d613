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
from watchdog.observers.api import ObservedWatch
from watchdog.observers.polling import PollingObserverVFS

from remembrancer.indexer.ingest.corpus import MARKDOWN_SUFFIXES

from .watch_limit import POLL_S, is_watch_limit, limit_report

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
    """One recursive inotify watch per root; a root that vanishes is re-watched when it comes back.

    A root inotify cannot watch whole (more folders than watches left: ENOSPC) is polled instead —
    watchdog's PollingObserverVFS, a stat walk of the root every POLL_S — and listed by `polled()`:
    the corpus walks those roots before each answer too (daemon/corpora.py), and the daemon keeps
    serving. Every ensure() (each 30 s) tries inotify again, so a raised limit needs no restart."""

    def __init__(self, roots: list[Path], queue: ChangeQueue, suffixes: tuple[str, ...] = MARKDOWN_SUFFIXES):
        self.roots = roots
        self.queue = queue
        self.observer = Observer()
        self.poller: PollingObserverVFS | None = None   # started when a root first needs it
        self.watched: dict[Path, ObservedWatch] = {}
        self.polling: dict[Path, ObservedWatch] = {}
        self.handler = _Handler(queue, suffixes)
        self._why: OSError | None = None   # the limit error that made the last root polled
        self._lost: set[Path] = set()      # roots with a folder inotify could not watch after the start (its log)
        self._lock = threading.Lock()

    def start(self) -> None:
        # The observer first, the roots after: a root that cannot be watched fails its own
        # schedule() (ensure() handles it), not the observer's start with every root in it.
        self.observer.start()
        _LIMIT_LOG.watchers.add(self)
        self.ensure()

    def ensure(self) -> list[Path]:
        """(Re)arm watches for roots that exist, inotify's where it can; returns the roots that are missing."""
        missing = []
        for root in self.roots:
            if not root.is_dir():
                self._unschedule(root, self.observer, self.watched)
                self._unschedule(root, self.poller, self.polling)
                with self._lock:
                    self._lost.discard(root)
                missing.append(root)
                continue
            with self._lock:
                lost = root in self._lost
            if root in self.watched:
                if lost:   # inotify could not watch part of it: polled from now on
                    self._poll(root, None)
                    continue
                if _alive(self.observer, self.watched[root]):
                    continue
                self._unschedule(root, self.observer, self.watched)
            if root in self.polling:
                if _alive(self.poller, self.polling[root]):
                    self._try_inotify(root)   # the limit may allow it now; else polled on
                    continue
                self._unschedule(root, self.poller, self.polling)   # it went and came back
            try:
                self.watched[root] = self.observer.schedule(self.handler, str(root), recursive=True)
                self.queue.put(full=True)  # it (re)appeared: check everything once
            except OSError as e:
                if is_watch_limit(e) is not None and sys.platform.startswith("linux"):
                    self._poll(root, e)
                    continue
                log.warning("cannot watch %s: %s (the periodic rescan still covers it)", root, e)
                missing.append(root)
        return missing

    def _try_inotify(self, root: Path) -> None:
        """A polled root back to inotify, when the limit allows now (the poller stops after)."""
        try:
            self.watched[root] = self.observer.schedule(self.handler, str(root), recursive=True)
        except OSError:
            return   # a failed recursive watch takes back the watches it added (watchdog)
        self._unschedule(root, self.poller, self.polling)
        with self._lock:
            self._lost.discard(root)
        self.queue.put(str(root))   # what changed since the poller's last walk: the root walked once
        log.warning("watching %s with inotify again: the watch limit allows it now", root)

    def _poll(self, root: Path, error: OSError | None) -> None:
        if self.poller is None:
            self.poller = PollingObserverVFS(os.stat, _listdir, polling_interval=POLL_S)
            self.poller.start()
        # the poller's first snapshot is taken in schedule(): no gap before inotify's watch goes
        try:
            self.polling[root] = self.poller.schedule(self.handler, str(root), recursive=True)
        except OSError as e:   # gone meanwhile: the next check looks again
            log.warning("cannot poll %s: %s (the periodic rescan still covers it)", root, e)
            return
        self._unschedule(root, self.observer, self.watched)
        with self._lock:
            self._lost.discard(root)
            self._why = error or self._why
        self.queue.put(str(root))   # whatever changed before: the root walked once
        log.warning("%s", self.describe())

    @staticmethod
    def _unschedule(root: Path, observer, watches: dict) -> None:
        if root in watches and observer is not None:
            try:
                observer.unschedule(watches.pop(root))
            except (KeyError, ValueError):
                pass

    def lost(self, folder: str) -> None:
        """inotify could not watch `folder` (a new one, at the limit): its root counts as polled at
        once (walked before each answer) and is polled at the next ensure()."""
        for root in self.roots:
            if root in self.watched and (folder == str(root) or folder.startswith(str(root).rstrip(os.sep) + os.sep)):
                with self._lock:
                    self._lost.add(root)
                self.queue.put(folder)

    def polled(self) -> list[Path]:
        """The roots no inotify watch reports whole: polled, or about to be."""
        with self._lock:
            return sorted(set(self.polling) | self._lost)

    def problem(self) -> dict | None:
        """What the log, status and doctor say about polled roots: None when inotify watches all."""
        roots = self.polled()
        if not roots:
            return None
        n = len(roots)
        limit = limit_report(self._why)   # reads /proc: once
        return {"count": n, "roots": [str(r) for r in roots], "poll_s": POLL_S, "reason": limit.message,
                "message": f"{n} root{'s are' if n != 1 else ' is'} polled, not watched, as {limit.message}: "
                           f"a stat walk every {POLL_S:.0f} s and before each answer finds changes there",
                "fix": limit.fix}

    def describe(self) -> str:
        pr = self.problem()
        if pr is None:
            return "every root is watched"
        return f"{pr['message']}: {', '.join(pr['roots'])} — {pr['fix']}"

    def stop(self) -> None:
        _LIMIT_LOG.watchers.discard(self)
        for obs in (self.observer, self.poller):
            if obs is not None:
                obs.stop()
                obs.join(timeout=5)


def _listdir(path: str) -> list[os.DirEntry]:
    """A folder's entries as the poller walks them: not the ignored folders (node_modules, …), and
    of .git only its info folder (a repository's own ignore list)."""
    with os.scandir(path) as it:
        entries = list(it)
    if os.path.basename(path) == ".git":
        return [e for e in entries if e.name == "info"]
    return [e for e in entries if e.name == ".git" or e.name not in IGNORED_DIRS]


def _alive(observer, watch) -> bool:
    """Whether the emitter of `watch` still runs (a poller's ends when its root goes)."""
    for emitter in list(getattr(observer, "emitters", ())):
        if getattr(emitter, "watch", None) == watch:
            return emitter.is_alive()
    return True


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
