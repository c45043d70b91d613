"""The corpora one daemon serves: each with its own index, watcher, change queue and writer
thread; all sharing one loaded embedding model.

A user has one daemon whatever the number of projects: a request names its corpus by its roots
and the corpus is opened on first use. A corpus nobody asked about for `idle_s` is closed (its
engine, indexes, watches and thread go; the model stays, shared) and opened again on demand,
when a full catch-up pass brings it up to date exactly as a daemon start does.
"""

from __future__ import annotations

import dataclasses
import json

import logging
import threading
import time
from pathlib import Path

from remembrancer.indexer import indexes
from remembrancer.indexer.answers import CorpusLine, Freshness, IndexStatus
from remembrancer.indexer.store.local.catalog import store_fault
from remembrancer.indexer.config import (CODE, COMMITS, CONVERSATIONS, NOTES, Config, load_config, make_roots,
                                         project_and_parents, project_slug)
from remembrancer.indexer.ingest.commit_log import commits_config
from remembrancer.indexer.engine import Engine, ReadView
from remembrancer.indexer.errors import UserError

from .heap import release_memory
from .updates import Updater
from .watch import ChangeQueue, Watcher

log = logging.getLogger(__name__)

RESCAN_S = 600.0        # slow periodic rescan: catches inotify overflow and what no event reports
WAITING_RETRY_S = 30.0  # passages left without vectors (an embedding server down) are tried again this often
ROOT_CHECK_S = 30.0     # how often a vanished root is looked for again
CORPUS_IDLE_S = 900.0   # a corpus without requests this long releases its memory
CORPUS_WARNINGS = 10    # a corpus's warnings in status's list of corpora (the one named has them all)
RETRY_FIRST_S = 1.0     # a failed ingest (a full disk, …) is retried after this, doubling each time …
RETRY_MAX_S = 60.0      # … up to this: its changes stay queued, never left for the next rescan
# A root inotify's limit leaves polled (daemon/watch.py) is also walked before every answer: a
# verdict is `fresh` only when it was walked after the request came, or (a status listing every
# corpus) within POLLED_FRESH_S.
POLLED_FRESH_S = 1.0


def corpus_key(paths, kind: str = NOTES) -> tuple[str, ...]:
    """A corpus is the set of its roots (resolved): the same roots name the same index. A
    conversations corpus's roots are marked `conversations:` (the same folder as notes is another index)."""
    mark = "" if kind == NOTES else f"{kind}:"
    return tuple(sorted({mark + str(Path(p).expanduser().resolve()) for p in paths}))


def key_parts(key: tuple[str, ...]) -> tuple[str, list[str]]:
    """(kind, root folders) of a corpus key."""
    for kind in (CONVERSATIONS, COMMITS, CODE):
        mark = f"{kind}:"
        if key and all(k.startswith(mark) for k in key):
            return kind, [k[len(mark):] for k in key]
    return NOTES, list(key)


def config_for(key: tuple[str, ...]) -> Config:
    """The configuration of the corpus a key names (the user's settings, its roots)."""
    kind, paths = key_parts(key)
    if kind == CONVERSATIONS:
        return load_config(conversation_args=paths).conversation_config()
    if kind == CODE:
        return load_config(code_args=paths).code_config()
    if kind == COMMITS:
        found = commits_config(load_config(), [Path(p) for p in paths])
        if found is None:
            raise UserError(f"no git repository at {', '.join(paths)} any more", param="corpus", code="not_found")
        return found
    return load_config(paths)


def holds(root: Path, path: Path) -> bool:
    """Whether a change notified for work tree `path` concerns corpus root `root` (one inside the other)."""
    return root == path or root.is_relative_to(path) or path.is_relative_to(root)


def project_slugs(folder: Path) -> list[str]:
    """The names Claude Code gives the transcript folder of a project in `folder`: its own, then its
    parents' up to (not including) the home folder or `/` (config.claude_folders looks the same way)."""
    return [project_slug(f) for f in project_and_parents(folder)]


def within_rank(config: Config, folder: Path, projects: list[str]) -> tuple[int, int] | None:
    """How well a corpus answers a client working in `folder` (lower first), None: not at all.

    A corpus answers when the folder lies inside one of its roots (or is one): notes first, the
    deepest root first; or when it is the conversations of the folder's project (a root named
    `projects[i]`, the nearest project first); other kinds holding the folder (code, commits) last.
    A folder that merely holds corpora — the home folder, `/`, ~/code — selects none: a session
    there must not be given another project's memory."""
    depth = [len(r.path.parts) for r in config.roots if r.path == folder or folder.is_relative_to(r.path)]
    if depth and config.kind == NOTES:
        return (0, -max(depth))
    if config.kind == CONVERSATIONS:
        near = [projects.index(r.path.name) for r in config.roots if r.path.name in projects]
        if depth or near:
            return (1, -max(depth) if depth else min(near))
    return (2, -max(depth)) if depth else None


class SharedModel:
    """One embedding model for every corpus (per model setting; a user has one)."""

    def __init__(self, embedder=None):
        self._injected = embedder
        self._loaded: dict[str | None, object] = {}
        self._lock = threading.Lock()
        self.loads = 0

    def get(self, spec: str | None):
        """The loaded model, or None when it cannot load (the engine then says why, as it always did)."""
        if self._injected is not None:
            return self._injected
        with self._lock:
            if spec not in self._loaded:
                from remembrancer.indexer.models.embed import ModelError, load_embedder

                try:
                    self._loaded[spec] = load_embedder(spec)
                    self.loads += 1
                except ModelError as e:
                    log.warning("embedding model unavailable: %s", e)
                    return None
            return self._loaded[spec]


class Corpus:
    """One open corpus: an engine whose single writer is this corpus's ingest thread."""

    def __init__(self, config: Config, model: SharedModel, rescan_s: float = RESCAN_S):
        self.config = config
        self.key = corpus_key((r.path for r in config.roots), config.kind)
        self.rescan_s = rescan_s
        self.queue = ChangeQueue()
        self.engine = Engine(config, embedder=model.get(config.model))
        self.engine.pool_readers()   # request threads share a few catalog connections (indexer/store/local/readers.py)
        self.updates = Updater(self.engine)
        # A commits corpus has no files to watch: a git hook's notify, a read (catch_up) and the
        # rescan find a moved HEAD.
        self.watcher = Watcher([] if config.kind == COMMITS else [r.path for r in config.roots], self.queue,
                               config.roots[0].suffixes)
        self.stopping = threading.Event()
        self.in_use = 0
        self.last_used = time.monotonic()
        self.ingesting = False
        self.last_error: str | None = None
        self.last_ingest: dict | None = None
        self.opened_at = time.time()
        self.retired: str | None = None   # why its settings are no longer the config's (retire)
        self.reconfigured = False   # opened again with changed settings: reads wait for its first pass
        self._thread: threading.Thread | None = None
        self._claimed = threading.Event()
        self._passes = threading.Condition()   # full passes waited for (`full_pass`): asked vs covered
        self._full_asked = 0
        self._full_covered = 0
        self._full_done = 0   # full passes ended (the first is the catch-up pass of start())
        self._passes_started = 0   # passes of any kind begun (catch_up) …
        self._done_since = 0       # … and the latest begun of those that ended
        self._failed: tuple[set[str], bool] | None = None   # the changes of a failed ingest, kept for its retry
        self._retry_at: float | None = None
        self._waiting_at: float | None = None   # when passages waiting for vectors are tried again
        self._retry_s = RETRY_FIRST_S
        self._polled_asked = 0     # walks of the polled roots asked for (check_polled) …
        self._polled_covered = 0   # … and done
        self._polled_walked: float | None = None   # when (monotonic) the last pass that walked them began

    def start(self) -> None:
        self.watcher.start()
        self.queue.put(full=True)  # catch up with whatever changed while it was closed
        self._thread = threading.Thread(target=self._ingest_loop, name=f"ingest {self.config.roots[0].name}",
                                        daemon=True)
        self._thread.start()
        # Until the ingest thread claims the writer connection, the opening (client) thread holds
        # it: wait, so no request ever shares the writer's connection with the writer.
        self._claimed.wait(timeout=10)

    def stop(self) -> None:
        """Stop the writer (an ingest in progress stops at its next file), the watches, the engine."""
        self.stopping.set()
        self.engine.stop_requested.set()
        self.queue.close()
        with self._passes:
            self._passes.notify_all()   # a client waiting in full_pass gets its answer
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        self.watcher.stop()
        try:
            self.updates.flush()
        except Exception:  # a full disk: the next start rebuilds the vector file from the catalog
            log.exception("vector file not saved at shutdown")
        self.engine.close()

    def retire(self, reason: str) -> None:
        """Its settings changed (the config file was edited): the writer stops (a pass under way
        stops at its next file) and requests waiting for a pass get their answer, so its users
        leave soon; Corpora then closes it and opens it again with the new settings."""
        self.retired = reason
        self.stopping.set()
        self.engine.stop_requested.set()
        self.queue.close()
        with self._passes:
            self._passes.notify_all()

    # -- the single writer ------------------------------------------------------------------------
    def _ingest_loop(self) -> None:
        self.engine.claim_writer()
        self._claimed.set()
        try:
            self.engine.repair()
        except Exception as e:  # recorded: status says it; searches still answer from what is there
            log.exception("repair failed")
            self.last_error = f"{type(e).__name__}: {e}"
        next_rescan = time.monotonic() + self.rescan_s
        root_check_s = min(ROOT_CHECK_S, self.rescan_s)
        next_root_check = time.monotonic() + root_check_s
        while not self.stopping.is_set():
            now = time.monotonic()
            wake = min(next_rescan, next_root_check, self.updates.save_due() or next_rescan,
                       self._retry_at or next_rescan, self._waiting_at or next_rescan)
            batch = self.queue.wait_batch(timeout=max(wake - now, 0.05))
            if self.stopping.is_set():
                break
            now = time.monotonic()
            if batch is not None:
                self._apply(*batch)
            elif self._retry_at is not None and now >= self._retry_at:
                self._apply((), False)   # the failed changes only (kept in _failed)
            elif self._waiting_at is not None and now >= self._waiting_at:
                self._apply((), False)   # no change: the passages that wait for their vectors
            if now >= next_root_check:
                self.watcher.ensure()
                release_memory()  # what searches freed, too
                next_root_check = now + root_check_s
            if now >= next_rescan:
                self._apply()
                next_rescan = now + self.rescan_s
            self.updates.when_quiet()

    def _apply(self, paths=(), full: bool = True) -> None:
        """Bring the index up to date: the queued paths (and a moved HEAD) only, or with `full` a
        stat walk of every root (daemon/updates.py); only what changed is read and embedded.

        A failed ingest keeps its changes and is retried with backoff (with whatever came since),
        and the verdict stays STALE until a retry succeeds: an edit that met a full disk is never
        dropped and never called fresh."""
        if self._failed is not None:
            paths, full = set(paths) | self._failed[0], full or self._failed[1]
        self.ingesting = True
        with self._passes:   # read before the walk: this pass sees the files as they were when asked
            covers = self._full_asked if full else None
            self._passes_started += 1
            mine = self._passes_started
            polled_asked = self._polled_asked
        began = time.monotonic()
        walks_polled = full or polled_asked > self._polled_covered
        if walks_polled and not full:   # the roots no inotify watch reports, walked as a change of each
            paths = set(paths) | {str(r) for r in self.watcher.polled()}
        try:
            report = self.updates.apply(paths, full)
            if walks_polled:
                with self._passes:
                    self._polled_walked = began
                    self._polled_covered = max(self._polled_covered, polled_asked)
                    self._passes.notify_all()
            self.last_ingest = {"at": time.time(), "report": report}
            self._waiting_at = time.monotonic() + WAITING_RETRY_S if report.waiting else None
            self.last_error = None
            self._failed, self._retry_at, self._retry_s = None, None, RETRY_FIRST_S
        except Exception as e:  # recorded and shown in status/freshness; the daemon keeps serving
            fault = store_fault(e, self.engine.dir)   # a full or read-only disk, said with its fix
            if isinstance(e, UserError) or fault is not None:   # a setup to fix, not a bug: one line a retry
                said = e if fault is None else fault
                log.warning("ingest failed: %s; retrying in %.0f s", said.message, self._retry_s)
                if fault is not None:   # with --debug: what the library raised
                    log.debug("the failed ingest raised", exc_info=True)
            else:
                log.exception("ingest failed; retrying in %.0f s", self._retry_s)
            self.last_error = str(fault) if fault is not None else f"{type(e).__name__}: {e}"
            self._failed = (set(paths), full)
            self._retry_at = time.monotonic() + self._retry_s
            self._retry_s = min(self._retry_s * 2, RETRY_MAX_S)
        finally:
            self.ingesting = False
            with self._passes:
                self._done_since = max(self._done_since, mine)
                self._passes.notify_all()
            if full:
                with self._passes:
                    self._full_done += 1
                    if covers is not None:
                        self._full_covered = max(self._full_covered, covers)
                    self._passes.notify_all()
            release_memory()

    def settle(self, timeout_s: float) -> None:
        """Wait, at most `timeout_s`, for the catch-up pass this corpus started with: a corpus a
        request just opened answers from its files, not from an empty or older index."""
        with self._passes:
            self._passes.wait_for(lambda: self._full_done >= 1 or self.stopping.is_set(), timeout=timeout_s)

    def catch_up(self, timeout_s: float) -> None:
        """Wait, at most `timeout_s`, for the first pass and, when a HEAD moved since the index was
        made, for a pass that read it (a commits corpus: no watcher tells it of a commit)."""
        self.settle(timeout_s)
        self._read_head(timeout_s)

    def catch_up_head(self, timeout_s: float) -> None:
        """A notes read: when a HEAD moved since the index was made (a commit or a pull without the
        git hooks) and no pass is under way, queue the one that reads the difference and wait for
        it, at most `timeout_s` — the answer is at HEAD, not "catching up" until the next rescan."""
        if not (self.ingesting or self.queue.pending()[0]):   # else a pass is coming anyway (said so)
            self._read_head(timeout_s)

    def check_polled(self, timeout_s: float) -> None:
        """Before an answer: when a root is polled (inotify's limit), a pass that walks it, begun
        after this call, waited for at most `timeout_s` — so the answer's verdict can be `fresh`
        (freshness(since=…)) without waiting for the poller; concurrent requests share one pass."""
        if not self.watcher.polled():
            return
        with self._passes:
            self._polled_asked += 1
            mine = self._polled_asked
        self.queue.put()
        with self._passes:
            self._passes.wait_for(lambda: self._polled_covered >= mine or self.stopping.is_set(), timeout=timeout_s)

    def _read_head(self, timeout_s: float) -> None:
        """If HEAD is not the indexed one, a pass that starts after this call, waited for."""
        with self.engine.view() as view:
            indexed = json.loads(view.catalog.get_meta("heads") or "{}")
        if self.engine.core.current_heads() == indexed:
            return
        with self._passes:
            asked = self._passes_started   # a pass under way may have read HEAD before it moved
        self.queue.put()
        with self._passes:
            self._passes.wait_for(lambda: self._done_since > asked or self.stopping.is_set(), timeout=timeout_s)

    def full_pass(self) -> dict:
        """Queue a full pass and wait for one that starts after this call: `remembrancer index`
        while the daemon serves the corpus (its one writer does the pass). Its report, scoped."""
        with self._passes:
            self._full_asked += 1
            asked = self._full_asked
        self.queue.put(full=True)
        with self._passes:
            self._passes.wait_for(lambda: self._full_covered >= asked or self.stopping.is_set())
            done = self._full_covered >= asked
        if not done:
            raise UserError(f"the daemon's index pass was cut short: {self.retired}" if self.retired
                            else "the daemon stopped before its index pass ended", code="daemon_stopping",
                            hint="run `remembrancer index` again")
        if self.last_error:
            raise UserError(f"the daemon's index pass failed: {self.last_error}", code="ingest_failed",
                            hint="see `remembrancer status` and the daemon log")
        return self.last_run()

    # -- what it says about itself ------------------------------------------------------------------
    def last_run(self, view: ReadView | None = None) -> dict | None:
        """The last run's report, as the request's scope sees it (indexer/engine/report.py IndexReport.scoped)."""
        got = self.last_ingest
        view = view or self.engine.view()
        return None if got is None else {"at": got["at"], **view.last_run(got["report"])}

    def observe(self, view: ReadView | None = None) -> tuple[int, float | None, bool, IndexStatus]:
        """(queued changes, seconds behind, ingesting?, engine status): what a verdict is judged
        on, read in this order — the writer's state before the index, so a change that lands in
        between is in the index, never missed by both."""
        queued, behind = self.queue.pending()
        ingesting = self.ingesting
        return queued, behind, ingesting, (view or self.engine.view()).status()

    def freshness(self, view: ReadView | None = None,
                  observed: tuple[int, float | None, bool, IndexStatus] | None = None,
                  since: float | None = None) -> Freshness:
        """One verdict for every answer: fresh, catching up, or STALE with the reason — judged on
        `observed` (observe()) when given, so a status shows the verdict of its own figures. With a
        polled root, `fresh` needs a walk of it begun at `since` (time.monotonic() when the request
        came; default: POLLED_FRESH_S ago) or later."""
        queued, behind, ingesting, st = observed or self.observe(view)
        if self.retired:
            return Freshness.judged(st, "stale", reason=self.retired)
        gone = st.unavailable_roots()
        if gone:   # a root moved away or deleted: its documents stay, but they are no longer its files
            return Freshness.judged(st, "stale", reason=gone)
        problem = self.engine.redaction.problem() or self.engine.contract_problem()
        if self.last_error:
            retry = self._retry_at
            when = "" if retry is None else f"; retrying in {max(retry - time.monotonic(), 0):.0f} s"
            return Freshness.judged(st, "stale", reason=f"last ingest failed: {self.last_error}{when}")
        if problem:
            return Freshness.judged(st, "stale", reason=problem)
        if queued or ingesting:
            return Freshness.judged(st, "catching_up", queued_changes=queued, seconds_behind=round(behind or 0.0, 1))
        if st.vectors_waiting:   # the model is usable again: the next pass embeds them (WAITING_RETRY_S)
            return Freshness.judged(st, "catching_up", reason=f"{st.vectors_waiting} passage texts wait for their vectors")
        heads = [r for r in st.roots if r.head_current and r.head_current != r.head_indexed]
        if heads:
            return Freshness.judged(st, "catching_up", reason=f"HEAD of {heads[0].name} moved")
        git = any(r.head_current for r in st.roots)   # a plain folder has no HEAD to be at
        detail = "at HEAD and on-disk state" if git else "at the on-disk state"
        polled = self.watcher.polled()
        if polled:
            since = time.monotonic() - POLLED_FRESH_S if since is None else since
            walked = self._polled_walked
            if walked is None or walked < since:
                ago = "has not run yet" if walked is None else f"ran {time.monotonic() - walked:.0f} s ago"
                return Freshness.judged(st, "stale", reason=(
                    f"{self.watcher.problem()['message']}; the last walk for an answer {ago}, and a change "
                    "there since then may be missing"))
            detail += f" ({len(polled)} polled root{'s' if len(polled) != 1 else ''} walked just now)"
        return Freshness.judged(st, "fresh", detail=detail)

    def summary(self, view: ReadView | None = None) -> CorpusLine:
        """One line of `status`'s corpus list; with a scoped `view`, as that scope sees it (its
        warnings name only files the scope may see)."""
        warnings = None
        try:
            observed = self.observe(view)
            fr = self.freshness(view, observed)
            warnings = observed[3].warnings   # every corpus's, not only the one a status names
            if len(warnings) > CORPUS_WARNINGS:
                warnings = [*warnings[:CORPUS_WARNINGS], f"… and {len(warnings) - CORPUS_WARNINGS} more warnings"]
            warnings = warnings or None
        except Exception as e:  # a broken index still gets its line
            fr = Freshness(verdict="stale", reason=f"{type(e).__name__}: {e}")
        return CorpusLine(roots=list(self.key), index_dir=str(self.config.index_dir()), state="open",
                          idle_s=round(time.monotonic() - self.last_used, 1), freshness=fr, warnings=warnings,
                          polled=self.watcher.problem())


class Corpora:
    """The daemon's corpora by key: open ones, and closed ones remembered for `status`."""

    def __init__(self, model: SharedModel, rescan_s: float = RESCAN_S, idle_s: float | None = CORPUS_IDLE_S):
        self.model = model
        self.rescan_s = rescan_s
        self.idle_s = idle_s
        self.open: dict[tuple[str, ...], Corpus] = {}
        self.closed: dict[tuple[str, ...], CorpusLine] = {}   # key → its last summary, for status
        self.model_loads_closed = 0  # loads done by engines since closed (their own fallback loads)
        self._opening: dict[tuple[str, ...], threading.Event] = {}   # corpora being opened right now
        self._lock = threading.RLock()
        self._released = threading.Condition(self._lock)   # a retired corpus's last user let it go
        self._changed: set[tuple[str, ...]] = set()   # closed because their settings changed, not opened since

    def acquire(self, roots, config: Config | None = None, kind: str = NOTES) -> Corpus:
        """The open corpus for these roots (opened now if needed), marked in use until `release`.

        Opening (an engine, maybe a repair, the model's first load) happens outside the registry
        lock: the other corpora keep answering meanwhile; a second request for the same corpus
        waits for the first one's open instead of opening it twice."""
        key = corpus_key(roots, kind)
        while True:
            with self._lock:
                c = self.open.get(key)
                if c is not None and c.retired:   # its settings changed: closed, then opened with the new ones
                    if c.in_use:
                        self._released.wait()   # retire() ended its users' waits: they leave soon
                        continue
                    self._close(c)
                    self._changed.add(key)
                    c = None
                if c is not None:
                    c.in_use += 1
                    c.last_used = time.monotonic()
                    return c
                opening = self._opening.get(key)
                if opening is None:
                    opening = self._opening[key] = threading.Event()
                    break
            opening.wait()
        try:
            c = Corpus(config or config_for(key), self.model, self.rescan_s)
            c.start()
        except BaseException:
            with self._lock:
                self._opening.pop(key).set()
            raise
        with self._lock:
            c.in_use += 1
            c.reconfigured = key in self._changed
            self._changed.discard(key)
            self.open[key] = c
            self.closed.pop(key, None)
            self._opening.pop(key).set()
        log.info("opened corpus %s", ", ".join(key))
        return c

    def acquire_within(self, path: str) -> Corpus:
        """The open corpus of a client working in folder `path` (within_rank: the best one), marked
        in use; never opens one: a light client (the Claude Code hook) must not start indexing a folder."""
        p = Path(path).expanduser().resolve()
        projects = project_slugs(p)
        with self._lock:
            ranked = sorted((rank, i, c) for i, c in enumerate(self.open.values())
                            if (rank := within_rank(c.config, p, projects)) is not None)
            if not ranked:
                raise UserError(f"no open corpus holds {p}", param="within", code="no_corpus",
                                hint="a client naming the corpus by its roots (the MCP server) opens it")
            hit = ranked[0][2]
            hit.in_use += 1
            hit.last_used = time.monotonic()
            return hit

    def release(self, c: Corpus) -> None:
        with self._lock:
            c.in_use -= 1
            c.last_used = time.monotonic()
            if c.retired and not c.in_use:
                self._released.notify_all()

    def reconfigure(self, config_of) -> list[tuple[str, ...]]:
        """Retire every open corpus whose settings differ from `config_of(key)` (its configuration
        as the config file says now): the keys to open again. A key whose configuration cannot be
        made any more (its roots are gone) is retired too: opening it says why."""
        out = []
        with self._lock:
            for key, c in self.open.items():
                if c.retired:   # retired by an apply that failed half-way: opened again by this one
                    out.append(key)
                    continue
                try:
                    changed = config_of(key) != c.config
                except UserError:
                    changed = True
                if changed:
                    c.retire("the config file changed; the corpus is being opened again with it")
                    out.append(key)
        return out

    def _close(self, c: Corpus) -> None:
        """Stop a corpus nobody uses and forget it (under the registry lock: nobody reopens it meanwhile)."""
        c.stop()
        indexes.mark_used(c.engine.dir, time.time() - (time.monotonic() - c.last_used))
        self.model_loads_closed += c.engine.model_loads
        del self.open[c.key]

    def get(self, roots) -> Corpus | None:
        with self._lock:
            return self.open.get(corpus_key(roots))

    def holding(self, path: Path) -> list[Corpus]:
        """The open corpora one of whose roots holds (or lies inside) `path`."""
        with self._lock:
            return [c for c in self.open.values() if any(holds(r.path, path) for r in c.config.roots)]

    def holding_closed(self, path: Path) -> list[tuple[str, ...]]:
        with self._lock:
            return [k for k in self.closed if any(holds(Path(r), path) for r in k)]

    def release_idle(self) -> list[tuple[str, ...]]:
        """Close every corpus unused for `idle_s` and not busy; returns their keys."""
        if self.idle_s is None:
            return []
        done = []
        with self._lock:  # held while closing: nobody may reopen an index still being closed
            now = time.monotonic()
            for key, c in list(self.open.items()):
                if c.in_use or c.ingesting or now - c.last_used < self.idle_s:
                    continue
                summary = c.summary()
                c.engine.release_reader()   # the one summary() just opened on this thread
                self._close(c)
                if c.retired:   # its users left before anyone opened it again
                    self._changed.add(key)
                self.closed[key] = dataclasses.replace(
                    summary, state="closed", closed_at=time.time(),
                    detail="released after being idle; opened again on the next request")
                done.append(key)
                log.info("closed idle corpus %s", ", ".join(key))
        if done:
            release_memory()
        return done

    def model_loads(self) -> int:
        with self._lock:
            return self.model.loads + self.model_loads_closed + sum(c.engine.model_loads for c in self.open.values())

    def summaries(self, touched: set | None = None) -> list[CorpusLine]:
        """Every corpus's line; the engines read from are added to `touched` (to release later)."""
        with self._lock:
            out = [c.summary() for c in self.open.values()] + list(self.closed.values())
            if touched is not None:
                touched.update(c.engine for c in self.open.values())
        return sorted(out, key=lambda s: s.roots)

    def close_all(self) -> None:
        with self._lock:
            for c in self.open.values():
                try:
                    c.stop()
                    indexes.mark_used(c.engine.dir, time.time() - (time.monotonic() - c.last_used))
                except Exception:  # one corpus failing to close must not keep the others open
                    log.exception("closing %s failed", c.key)
            self.open.clear()

    def forget(self, name: str) -> dict:
        """`remembrancer corpora forget`: close the corpus whose index folder is `name` and delete
        that folder (derived data; the notes are never touched). Done under the registry lock, so no
        request reopens it half-deleted; a request naming its roots later indexes it anew."""
        if not name or "/" in name or name in (".", ".."):
            raise UserError("forget needs the index folder's name, as `remembrancer corpora` prints it",
                            param="index")
        with self._lock:
            hit = [c for c in self.open.values() if c.engine.dir.name == name]
            if any(c.in_use for c in hit) or any(_index_name(k) == name for k in self._opening):
                raise UserError(f"the corpus {name} is answering a request right now", code="busy",
                                hint="run `remembrancer corpora forget` again in a moment")
            for c in hit:
                c.stop()
                del self.open[c.key]
            dropped = [k for k, v in self.closed.items() if Path(v.index_dir).name == name]
            for k in dropped:
                del self.closed[k]
            keys = [c.key for c in hit] + dropped
            d = indexes.indexes_dir() / name
            removed = d.is_dir()
            if removed:
                indexes.remove(indexes.Index(d, None))
        if hit:
            release_memory()
        log.info("forgot corpus %s (%s)", name, "its index removed" if removed else "no index here")
        return {"index": name, "closed": len(hit), "keys": [list(k) for k in keys], "removed": removed}


def _index_name(key: tuple[str, ...]) -> str | None:
    try:
        kind, paths = key_parts(key)
        return Config(roots=make_roots(paths, kind=kind), kind=kind).index_name()
    except UserError:
        return None


def within_param(params: dict) -> str | None:
    """`within`: a folder; the request is for the open corpus holding it (see acquire_within)."""
    within = params.pop("within", None)
    if within is not None and (not isinstance(within, str) or not within):
        raise UserError("within must be a folder path", param="within")
    return within


def _folders_param(params: dict, name: str, what: str) -> list[str] | None:
    folders = params.pop(name, None)
    if folders is None or folders == []:
        return None
    if not isinstance(folders, list) or not all(isinstance(r, str) and r for r in folders):
        raise UserError(f"{name} must be a list of {what}", param=name)
    return folders


def code_param(params: dict) -> list[str] | None:
    """The source folders a request's session searches (`code`), or None."""
    return _folders_param(params, "code", "source folders")


def conversations_param(params: dict) -> list[str] | None:
    """The conversation folders a request's session searches (`conversations`), or None."""
    return _folders_param(params, "conversations", "conversation folders")


def roots_param(params: dict) -> list[str] | None:
    """The corpus a request names (`roots`: a list of folder paths), or None for the default one."""
    return _folders_param(params, "roots", "corpus root folders")
