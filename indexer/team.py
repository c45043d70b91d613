"""Team memory over the PostgreSQL store: the one writer and the many readers.

The writer (`remembrancer serve --store URL --root CHECKOUT`) keeps a checkout (or mirror) up to
date with `git fetch` + fast-forward, on a timer and on SIGHUP, and indexes it through the same
engine as the local store — so redaction runs before anything reaches the shared store, with
the same policy, failing closed. Readers (`remembrancer mcp --store URL`, the CLI's read
commands) need no local index: they embed queries only, and every answer says which commit is
indexed, how long ago, and how the reader's own checkout compares.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import signal
import subprocess
import threading
import time
from pathlib import Path

from remembrancer.indexer import api
from remembrancer.indexer import committed
from remembrancer.indexer.committed import CommittedTrees, Synced, compare_checkout
from remembrancer.indexer.answers import Freshness, IndexCounts
from remembrancer.indexer.ingest import corpus
from remembrancer.indexer.store.postgres import notify as pg_notify
from remembrancer.indexer.store import scope as scope_mod
from remembrancer.indexer.config import NO_CHECKOUT, Config, Root, load_config
from remembrancer.indexer.engine import Engine, ReadView
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.store.postgres import schema as pg_schema
from remembrancer.indexer.store.postgres.schema import WRITER_PULL_KEY
from remembrancer.indexer.store.postgres.store import PgStore, _psycopg, lost as pg_lost, safe_url
from remembrancer.indexer.wake import Waker

log = logging.getLogger(__name__)

DEFAULT_PULL_S = 60.0


def _ago(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 90:
        return f"{s} s ago"
    if s < 90 * 60:
        return f"{round(s / 60)} min ago"
    if s < 36 * 3600:
        return f"{round(s / 3600)} h ago"
    return f"{round(s / 86400)} days ago"


class TeamReader:
    """A reader of the team store, answering like the other backends (`call(method, **params)`)."""

    kind = "team"
    readonly = True

    def __init__(self, url: str, config: Config, embedder=None, checkout: bool = True):
        self.store = PgStore(url, readonly=True)
        if checkout:   # the teammate's folders under the store's names for them
            config = dataclasses.replace(config, roots=as_store_roots(config.roots, _store_root_names(self.store)))
        self.config = config
        self.checkout = checkout     # the roots are the reader's own checkout (else the writer's names)
        self.engine = Engine(config, readonly=True, embedder=embedder, store=self.store)
        # the MCP server answers on whichever worker thread the SDK picks (64 HTTP clients: dozens):
        # each call borrows a pooled connection and gives it back, so the server's connections stay
        # bounded by the pool (each with its side connections), not by the threads ever used
        self.engine.pool_readers()
        # a scoped role (indexer/store/postgres/roles.py): every request is served under its grants
        self.granted = self.engine.catalog.role_scope
        if self.granted is not None:
            scope_mod.effective_scope(self.granted, ())   # no grant at all: refused now, not per call
        self._counts: tuple[tuple, dict] = ((), {})

    def freshness(self, view: ReadView, path: str | None = None) -> Freshness:
        """Which commit the store holds, its age, and how this reader's checkout compares; for a
        `read` or `outline` of `path`, whether the reader's copy of it holds the indexed text."""
        cat = view.catalog
        heads = json.loads(cat.get_meta("heads") or "{}")
        if view.scope:   # HEAD as the scope's own history has it (docs/scopes.md), as status says
            by_name = {r.name: r for r in self.config.roots}
            heads = {n: (view.scoped_head(by_name[n], h) if n in by_name and self.checkout else h)
                     for n, h in heads.items()}
        last = cat.get_meta("last_indexed_at")
        key = (cat.generation, view.scope)
        if self._counts[0] != key:   # counting 100k rows per answer would cost more than the search
            self._counts = (key, cat.counts())
        counts = self._counts[1]
        base = IndexCounts(counts["documents"], counts["sections"], cat.generation, float(last) if last else None)
        store = {"store": safe_url(self.store.url), "indexed_heads": heads}
        if last is None:
            return Freshness.judged(base, "stale", **store, reason="the writer has not finished a first pass yet")
        age = _ago(time.time() - float(last))
        parts, at_indexed = [], {}   # root name → whether this reader's checkout is at its indexed commit
        for root in self.config.roots:
            indexed = heads.get(root.name)
            if not indexed:
                continue
            line = f"indexed {indexed[:7]}, {age}"
            if self.checkout:
                repo = corpus.open_repo(root.path) if view.scope else None
                mine = corpus.head_id(repo) if repo is not None else None
                if mine and view.scoped_head(root, mine) == indexed:   # the scope has not moved since
                    mine = indexed
                cmp_ = compare_checkout(root.path, indexed, mine)
                at_indexed[root.name] = cmp_.same
                line += f"; {cmp_.sentence()}" if cmp_.sentence() else ""
            parts.append(line)
        if not parts:
            parts.append(f"indexed {age} (not a git checkout)")
        same = all(at_indexed.values())
        differs = self._copy_differs(view, path, at_indexed) if path and self.checkout else None
        if differs:
            parts.append(differs)
            same = False
        writer = cat.writer_running()
        if not writer:
            parts.append("no writer is running: the store is not being updated")
        fetch = PullState.parse(cat.get_meta(WRITER_PULL_KEY)).problem()
        if fetch:
            parts.append(fetch)
        detail = "; ".join(parts)
        if same and writer and not fetch:
            return Freshness.judged(base, "fresh", **store, detail=detail, writer_running=writer)
        return Freshness.judged(base, "stale", **store, detail=detail, writer_running=writer, reason=detail)

    @staticmethod
    def _copy_differs(view: ReadView, path: str, at_indexed: dict[str, bool]) -> str | None:
        """Why the reader's file at `path` is not the indexed text, or None: `read` shows the
        reader's own file, search the indexed one — never under a "fresh" verdict. The file is
        the one the request read (reader.copy_of); why it differs is its own root's standing
        (`at_indexed`: root name → at the indexed commit), not another root's."""
        from remembrancer.indexer.search import reader as reading

        try:
            copy = reading.copy_of(view, path)
        except (UserError, OSError, corpus.Unreadable):   # the read itself says what is wrong
            return None
        doc = copy.doc
        if copy.blob == doc["content_hash"]:
            return None
        why = ("uncommitted changes in your checkout" if at_indexed.get(doc["root"], True)
               else "your checkout is at another commit")
        return (f"your copy of {doc['path']} differs from the indexed text ({why}): this answer shows your copy, "
                "search the indexed text")

    def call(self, method: str, **params) -> dict:
        corpus = params.pop("corpus", None)
        if corpus not in (None, "notes", "all"):   # said, never answered from the notes instead
            raise UserError(f"a team store holds the notes only: corpus {corpus!r} is searched in a machine's "
                            "own index (`remembrancer mcp --root DIR`)", param="corpus", options=["notes"],
                            code="team_reader")
        if self.granted is not None:
            params = {**params, "scope": list(scope_mod.effective_scope(self.granted, params.get("scope")))}
        psycopg = _psycopg()
        fresh = self.freshness
        if method in ("read", "outline") and isinstance(params.get("path"), str):   # the file read, compared too
            fresh = lambda view: self.freshness(view, params["path"])   # noqa: E731
        try:
            out = api.answer_in_process(self.engine, method, params, fresh)
        except psycopg.OperationalError as e:   # the server went away outside a request (freshness, word
            raise pg_lost(self.store.url, e) from None   # checks): each connection is renewed before its next query
        finally:
            self.engine.release_reader()
        if out is not None:
            if corpus == "all" and method == "search":
                out["notes"] = [*(out.get("notes") or []), "a team store holds the notes only: they were searched"]
            return out
        if method in ("notify", "reindex"):
            raise UserError("a reader of the team store does not index", code="team_reader",
                            hint="the writer (`remembrancer serve --store URL`) indexes the shared checkout")
        raise UserError(f"{method} is not served by a team-store reader", code="team_reader")

    def close(self) -> None:
        self.engine.close()


def reader_config(url: str, root_args: list[str] | None) -> tuple[Config, bool]:
    """The reader's roots: its own checkout when given with --root (freshness compares with it),
    else the writer's root names (answers still work; `read` needs the files, so it says what is
    missing). The config file's `roots` are this machine's own notes, not a clone of the team's:
    never taken for the checkout (its `read` would serve another repository's file under the
    team's path, its freshness compare another history). The rest of the config (the model, the
    redaction policy) applies either way. TeamReader knows a checkout by the store's name for it
    (`as_store_roots`)."""
    if root_args:
        return load_config(root_args), True
    names = _store_root_names(PgStore(url, readonly=True))
    if not names:
        raise UserError("the store does not name its roots yet", param="store",
                        hint="the writer records them on its first pass; pass --root CHECKOUT meanwhile")
    try:
        settings = load_config(None, with_roots=False)
    except UserError:   # a broken config file is its own commands' to report; the store still answers
        settings = Config()
    return dataclasses.replace(settings, roots=[Root(n, NO_CHECKOUT / n) for n in names]), False


def _store_root_names(store: PgStore) -> list[str]:
    led = store.open_ledger(readonly=True)
    try:
        return json.loads(led.get_meta("roots") or "[]") or led.root_names()
    finally:
        led.close()


def as_store_roots(mine: list[Root], names: list[str]) -> list[Root]:
    """The reader's checkouts under the store's root names: a name both have stays; when one
    checkout and one store root are left unmatched (the usual case: one root, folders named
    differently), they are the same. More left over cannot be paired safely and stay as they are."""
    known = set(names)
    left_mine = [r for r in mine if r.name not in known]
    left_store = [n for n in names if n not in {r.name for r in mine}]
    if len(left_mine) == 1 and len(left_store) == 1:
        return [dataclasses.replace(r, name=left_store[0]) if r is left_mine[0] else r for r in mine]
    return mine


def _has_config_roots() -> bool:
    try:
        return bool(load_config(None).roots)
    except UserError:
        return False


# -- the writer -------------------------------------------------------------------------------------

def pull(path: Path) -> str | None:
    """`git fetch` + fast-forward of a checkout with an upstream (a bare mirror: `git fetch` only).
    Returns a warning, or None. Never merges or rewrites: a diverged checkout is reported."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return committed.git(path, *args)

    if git("rev-parse", "--git-dir").returncode != 0:
        return None   # a plain folder: indexed as it is
    if git("rev-parse", "--abbrev-ref", "@{u}").returncode != 0:
        return None   # no upstream: the checkout is the source
    fetched = git("fetch", "--quiet")
    if fetched.returncode != 0:
        return f"{path}: git fetch failed: {fetched.stderr.strip()[:300]}"
    if git("rev-parse", "--is-bare-repository").stdout.strip() == "true":
        return None
    ff = git("merge", "--ff-only", "--quiet", "@{u}")
    if ff.returncode != 0:
        return f"{path}: cannot fast-forward to its upstream ({ff.stderr.strip()[:300]}); indexing it as it is"
    return None


@dataclasses.dataclass(frozen=True)
class PullState:
    """The writer's last `git fetch` of its checkouts, and what it found in them, as the store
    keeps it (meta `writer_pull`)."""
    ok_at: float | None = None           # when a fetch last worked
    error: str | None = None             # why it fails now (None: it works)
    failing_since: float | None = None   # the first failure of the current run of them
    uncommitted: dict | None = None      # root name → files its checkout changes and no commit holds (not indexed)
    tree_problems: list | None = None    # what kept a root's commit from being indexed (indexer/committed.py)

    @classmethod
    def parse(cls, raw: str | None) -> "PullState":
        try:
            d = json.loads(raw or "{}")
            return cls(**{f.name: d.get(f.name) for f in dataclasses.fields(cls)})
        except (ValueError, TypeError, AttributeError):
            return cls()

    def left_out(self) -> str | None:
        """The writer's checkout changes no commit holds, in one line (they are not indexed)."""
        if not self.uncommitted:
            return None
        n = sum(self.uncommitted.values())
        where = ", ".join(f"{name} {count}" for name, count in sorted(self.uncommitted.items()))
        return (f"the writer's checkout has {n} uncommitted change{'s' * (n != 1)} ({where}): not indexed — the "
                "store holds commits only")

    def problem(self) -> str | None:
        """The line a reader's freshness carries while fetching fails."""
        if not self.error:
            return None
        since = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.failing_since)) if self.failing_since else "?"
        return f"the writer could not fetch since {since}: {self.error}"


RECONNECT_FIRST_S = 1.0    # a writer that lost the server tries again after this long, doubling …
RECONNECT_MAX_S = 60.0     # … up to this


class Writer:
    """The one writer of a store: refuses to start while another holds the store's lock, and
    outlives the server: when its connection is lost (a restart, the network) it connects again,
    with backoff, and takes the lock again."""

    def __init__(self, config: Config, url: str, embedder=None):
        self.config = config
        self.url = url
        # each root indexed as the commit its checkout is at, in a tree of the writer's own in the data dir
        # (indexer/committed.py): the engine's roots have the configured names and the committed files
        self.trees = CommittedTrees(config.roots, safe_url(url))
        self.index_config = dataclasses.replace(config, roots=self.trees.roots)
        self.wake = Waker()   # the main loop waits on it alone: a signal handler may set it (indexer/wake.py)
        self._said_left_out: str | None = None
        self._open(embedder)

    def _open(self, embedder=None) -> None:
        self.store = PgStore(self.url, readonly=False)
        self.engine = Engine(self.index_config, embedder=embedder, store=self.store)   # takes the advisory lock
        self.engine.catalog.set_meta("roots", json.dumps([r.name for r in self.config.roots]))

    def _lost(self, e: Exception) -> bool:
        """Whether `e` is the server going away (rather than a bug or a refusal to fix by hand)."""
        import psycopg

        if isinstance(e, UserError):
            return e.code == "store_unreachable"
        broken = getattr(getattr(self.engine.core.writer_catalog, "conn", None), "broken", False)
        return isinstance(e, psycopg.OperationalError) or bool(broken)

    def _reconnect(self, stop: threading.Event, backoff: float) -> float:
        """Close what is left, wait `backoff`, connect again; the next backoff."""
        model = self.engine.core.loaded_embedder
        try:
            self.engine.close()
        except Exception:   # noqa: BLE001 — its connection is gone already
            log.debug("closing the writer's lost connection failed", exc_info=True)
        while not self._paused(stop, backoff):
            try:
                self._open(model)
                log.info("connected to the store %s again", safe_url(self.url))
                return RECONNECT_FIRST_S
            except UserError as e:   # still down, or another writer took over meanwhile: say so, wait longer
                backoff = min(backoff * 2, RECONNECT_MAX_S)
                log.warning("store still unavailable (%s); trying again in %.0f s", e, backoff)
        return backoff

    def pass_once(self, progress=None, reembed: bool = False):
        """Pull every checkout (fetch, fast-forward), move the indexed trees to their commits,
        record how that went, index."""
        redactor = self.engine.core.redaction.current()   # a remote's URL in git's message may carry a token
        problems = [redactor.redact_text(p) for p in (pull(r.path) for r in self.config.roots) if p]
        for problem in problems:
            log.warning("%s", problem)
        synced = self.trees.sync()
        synced.warnings = [redactor.redact_text(w) for w in synced.warnings]
        for warning in synced.warnings:
            log.warning("%s", warning)
        state = self._record_pull(problems, synced)
        left_out = state.left_out()
        if left_out != self._said_left_out:   # said when it changes, not every pass
            if left_out:
                log.warning("%s (e.g. %s): commit and push them, or discard them", left_out, ", ".join(
                    redactor.redact_path(p)[0] for name in sorted(synced.examples) for p in synced.examples[name]))
            self._said_left_out = left_out
        if synced.broken:   # fail closed: an index of no tree would remove every document of the root
            raise UserError(f"no commit of {', '.join(synced.broken)} to index: {'; '.join(synced.warnings)}",
                            code="writer_tree", hint="fix what git says on the writer's machine; the next pass "
                                                     "tries again")
        report = self.engine.refresh(progress=progress, reembed=reembed)
        report.warnings[:0] = problems + synced.warnings + ([left_out] if left_out else [])
        return report

    def _record_pull(self, problems: list[str], synced: Synced) -> PullState:
        """The last fetch, in the store for every reader: when it last worked, and since when and
        why it fails (`problems` come redacted); what the checkouts hold that no commit does."""
        cat = self.engine.catalog
        before = PullState.parse(cat.get_meta(WRITER_PULL_KEY))
        now = time.time()
        found = {"uncommitted": synced.uncommitted or None, "tree_problems": synced.warnings or None}
        if problems:
            error = "; ".join(problems)[:600]
            state = PullState(ok_at=before.ok_at, error=error, failing_since=before.failing_since or now, **found)
        else:
            state = PullState(ok_at=now, **found)
        cat.set_meta(WRITER_PULL_KEY, json.dumps(dataclasses.asdict(state)))
        return state

    def serve(self, interval_s: float = DEFAULT_PULL_S, stop: threading.Event | None = None) -> None:
        stop = stop or self.engine.stop_requested
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: (stop.set(), self.engine.stop_requested.set(), self.wake.set()))
        signal.signal(signal.SIGHUP, lambda *_: self.wake.set())   # `kill -HUP`: pull and index now
        pg_notify.listen(self.store.url, self.wake, stop)   # `remembrancer notify --store URL`: now
        log.info("writing %s to %s every %.0f s (SIGHUP or `remembrancer notify --store URL`: now)", ", ".join(str(r.path) for r in self.config.roots),
                 safe_url(self.store.url), interval_s)
        backoff = RECONNECT_FIRST_S
        while not stop.is_set():
            try:
                rep = self.pass_once()
                if rep.added or rep.updated or rep.removed:
                    log.info("indexed: %d added, %d updated, %d removed in %.1f s", rep.added, rep.updated,
                             rep.removed, rep.seconds)
            except Exception as e:
                if self._lost(e):   # a server restart, the network: connect again and go on
                    log.error("lost the store (%s); connecting again in %.0f s", str(e).strip()[:300], backoff)
                    backoff = self._reconnect(stop, backoff)
                    continue
                if not isinstance(e, UserError):
                    raise
                log.error("not indexing: %s", e)   # redaction policy broken and the like: fail closed, say why, retry
            lost = self._idle(interval_s)
            if lost and not stop.is_set():   # readers judge "a writer is running" by its lock: take it again now
                log.error("lost the store (%s); connecting again in %.0f s", lost, backoff)
                backoff = self._reconnect(stop, backoff)

    def _idle(self, seconds: float) -> str | None:
        """Wait `seconds` for the next pass, or until woken (a NOTIFY, SIGHUP, a stop). The writer's
        own connection is watched meanwhile: its lock is how readers know a writer is running
        (PgLedger.writer_running), and it goes with the connection — a server restart, an
        administrator ending the session. Why it was lost, then (the writer connects again at
        once, not at its next pass), else None."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            ledger = self.engine.core.writer_catalog
            conn = getattr(ledger, "conn", None)
            if conn is None or conn.closed:
                self.wake.wait(left)
                return None
            if not self.wake.wait(left, also=conn.fileno()):
                return None   # woken, or time for the next pass
            if ledger.ended_while_idle():
                return ledger.goodbye() or "the server closed the connection"
            # a notice or a status message from the server: read, and the wait goes on
        return None

    def _paused(self, stop: threading.Event, seconds: float) -> bool:
        """Wait `seconds` or until woken (a NOTIFY, SIGHUP, a stop); whether to stop. The main loop
        never waits on `stop` itself: the signal handler sets it."""
        self.wake.wait(seconds)
        return stop.is_set()

    def close(self) -> None:
        self.engine.close()
        self.wake.close()



def store_checks(url: str, root_args: list[str] | None) -> list[dict]:
    """`doctor --store URL`: reachable, schema, writer, model contract against this machine's model."""
    def check(name: str, status: str, detail: str, fix: str = "") -> dict:
        return {"check": name, "status": status, "detail": detail, **({"fix": fix} if fix else {})}

    try:
        store = PgStore(url, readonly=True)
    except UserError as e:
        return [check("store", "FAIL", str(e), e.hint)]
    out = [check("store", "OK", f"{safe_url(url)}: schema version {store.schema_version}")]
    led = store.open_ledger(readonly=True)
    try:
        holder = led.writer_lock_holder()   # one look at the lock: a writer, a squatter, or nobody
        running = holder is not None and holder.owns_store
        if holder is not None and not running:
            out.append(check("store writer", "FAIL", f"{holder.who()} holds the writer's lock but does not own the store",
                             "end that session (a superuser can, with pg_terminate_backend); keep logins you do "
                             "not trust off this database"))
        else:
            out.append(check("store writer", "OK" if running else "WARN",
                             "a writer holds the store's lock" if running else "no writer is running",
                             "" if running else "start one: `remembrancer serve --store URL --root CHECKOUT`"))
        pulled = PullState.parse(led.get_meta(WRITER_PULL_KEY))
        if pulled.error:
            out.append(check("writer fetch", "FAIL", pulled.problem(),
                             "on the writer's machine: `git -C CHECKOUT fetch` and fix what it says (credentials, "
                             "the remote's URL, the network)"))
        elif pulled.ok_at:
            out.append(check("writer fetch", "OK", "last fetched " + _ago(time.time() - pulled.ok_at)))
        left_out = [*(pulled.tree_problems or []), *filter(None, [pulled.left_out()])]
        if left_out:
            out.append(check("writer checkout", "WARN", "; ".join(left_out),
                             "on the writer's machine: `git -C CHECKOUT status`; commit and push what belongs to the "
                             "team (it is indexed once the writer pulls it), discard the rest"))
        elif pulled.ok_at:
            out.append(check("writer checkout", "OK", "nothing in the writer's checkout is left out of the index"))
        access = pg_schema.reader_access_problem(led.conn)
        reader, scoped = pg_schema.store_roles(led.conn.info.dbname)
        out.append(check("store readers", "FAIL" if access else "OK",
                         f"readers cannot be granted: {access}" if access else
                         f"its own reader roles: {reader} (every row), {scoped} (granted prefixes)",
                         "as a superuser: ALTER ROLE <writer> CREATEROLE; then restart the writer (it makes them)"
                         if access else ""))
        stored = led.model_contract()
    finally:
        led.close()
    try:
        from remembrancer.indexer.models.embed import load_embedder

        cfg = load_config(root_args) if root_args or _has_config_roots() else Config()
        mine = load_embedder(cfg.model).contract
        same = mine.matches(stored)
        out.append(check("store model", "OK" if same else "FAIL",
                         f"store {stored.get('name') if stored else 'none yet'}; here {mine.name}",
                         "" if same else "install and configure the store's model here (`model` in the config)"))
    except Exception as e:  # noqa: BLE001 — the model check above already says why
        out.append(check("store model", "WARN", f"cannot compare: {e}"))
    return out
