"""The MCP server's way to the index, kept alive for a whole session.

At start-up it takes what `daemon.connect.connect` gives (the running daemon for this corpus, a
daemon started on demand, the engine in-process read-only, or a team store's reader). During the
session:

* the daemon closes idle connections (wire.IDLE_TIMEOUT_S) and exits after `idle_exit_s`
  without requests, so a lost connection is normal: the call is sent again on a new one, to the
  same daemon if it still answers, else to a daemon started again;
* if no daemon can be had, the call is answered by the read-only local engine, whose freshness
  verdict says STALE and why; every RETRY_S the daemon is looked for (and started) again.

Calls are serialised: tool functions run on worker threads, and the socket client is not
thread-safe.
"""

import logging
import os
import threading
import time
from pathlib import Path

from remembrancer.daemon import connect as dconnect
from remembrancer.wire import IDLE_TIMEOUT_S, DaemonUnavailable, ping
from remembrancer.daemon.connect import process_alive as _alive
from remembrancer.indexer.config import CONVERSATIONS, Config, found_conversations, socket_path
from remembrancer.indexer.errors import UserError

log = logging.getLogger(__name__)

RETRY_S = 60.0          # how often a read-only fallback tries to get a daemon again
# The requests that may read the project's conversations (a notes search reads Claude Code's memory
# files beside them too): before each, the project's transcript folders are looked for again.
CONVERSATION_READS = ("search", "read", "outline", "list", "latest")
STARTING_WAIT_S = 60.0  # how long to wait for a daemon another process is starting


class Link:
    def __init__(self, config: Config | None, idle_exit_s: float, *, config_error: UserError | None = None,
                 scope: tuple[str, ...] = (), store: str | None = None, root_args: list[str] | None = None):
        self.config = config
        self.store = store          # a team store's URL: its reader answers, never a daemon or local index
        self.root_args = root_args  # the reader's checkout (store only)
        self.scope = scope   # path prefixes: every call carries them; the engine enforces them
        self.config_error = config_error
        self.idle_exit_s = idle_exit_s
        self.backend = None
        self.start_problem: str | None = None   # why start-up found nothing to answer from
        self.lock = threading.RLock()
        self._last_attempt = 0.0
        self._last_call = time.monotonic()
        # No notes corpus and, at start-up, no conversations either: these settings serve the
        # project's conversations alone once its transcript folder appears (server.choose_later).
        self.awaiting_conversations: Config | None = None

    # -- connecting -------------------------------------------------------------------------------
    @property
    def kind(self) -> str | None:
        return getattr(self.backend, "kind", None)

    def open(self) -> None:
        """Connect now (start-up); raises UserError when there is nothing to answer from."""
        with self.lock:
            if self.backend is None:
                self._connect()

    def _connect(self) -> None:
        if self.config_error is not None:
            raise self.config_error
        self._last_attempt = time.monotonic()
        error: UserError | None = None
        try:
            backend = dconnect.connect(self.config, start=True, readonly_fallback=True, store=self.store,
                                       root_args=self.root_args, idle_exit_s=self.idle_exit_s)
        except UserError as e:
            backend, error = None, e
        if self.store is not None:
            if backend is None:
                raise error
            self.config, self.backend = backend.config, backend
            return
        if (backend is None or backend.kind == "local") and self.config.roots:
            # Our daemon may have lost the start-up race to one another client is starting.
            found = self._await_starting_daemon()
            if found is not None:
                if backend is not None:
                    backend.close()
                backend = found
        if backend is None:
            raise error
        if backend.kind == "local":
            log.info("no daemon: answering read-only from the last index (%s)", backend.reason)
        else:
            log.info("using the daemon on %s", backend.sock)
        self.backend = backend

    def _await_starting_daemon(self) -> dconnect.DaemonBackend | None:
        """A daemon holding the socket's lock but not answering yet is starting: wait for it.

        The lock file holds the pid of the daemon that last took it; a live pid means one is
        running or starting (a dead one is a leftover). Reading it never takes the lock, so this
        cannot make a real daemon's start fail."""
        sock = Path(socket_path())
        lockfile = Path(str(sock) + ".lock")
        try:
            pid = int(lockfile.read_text().strip() or 0)
        except (OSError, ValueError):
            return None
        if pid <= 0 or pid == os.getpid() or not _alive(pid):
            return None
        log.info("daemon pid %d holds %s; waiting for it to answer", pid, lockfile)
        deadline = time.monotonic() + STARTING_WAIT_S
        while time.monotonic() < deadline and _alive(pid):
            st = ping(sock, timeout=1.0)
            if st is not None:
                if not dconnect.serves(st, self.config) or not dconnect.same_build(st):
                    return None   # another build's: connect() replaces it or answers beside it
                return dconnect.backend_for(sock, st, self.config)
            time.sleep(0.2)
        return None

    def _retry_daemon(self) -> None:
        """From a read-only fallback, switch to a daemon again when one can be had."""
        now = time.monotonic()
        try:
            found = dconnect.find_daemon(self.config)
        except dconnect.OtherBuild:   # still there, still not ours to replace: read-only meanwhile
            return
        if found is None and now - self._last_attempt >= RETRY_S:
            self._last_attempt = now
            try:
                found = dconnect.start_daemon(self.config, idle_exit_s=self.idle_exit_s)
            except (DaemonUnavailable, OSError, UserError) as e:
                log.info("daemon still unavailable: %s", e)
        if found is not None:
            log.info("daemon back on %s; leaving the read-only fallback", found.sock)
            self.backend.close()
            self.backend = found

    def _drop(self) -> None:
        if self.backend is not None:
            try:
                self.backend.close()
            except Exception:  # closing a dead connection must not hide the real problem
                log.debug("closing the backend failed", exc_info=True)
        self.backend = None

    # -- the project's conversations, found late -------------------------------------------------
    def look_for_conversations(self) -> None:
        """Claude Code creates a project's transcript folder when the first session writes, after
        it has started the MCP servers: a session whose conversation folders are found by themselves
        (Config.finds_conversations) looks for them again before each request that may read them —
        a few `stat`s — and from then on every request names them."""
        if self.store is not None:
            return
        waiting = self.awaiting_conversations
        if self.config is None and waiting is not None:   # nothing to serve yet but them
            found = found_conversations()
            if found:
                log.info("the project's conversations appeared: serving %s alone", ", ".join(str(r.path) for r in found))
                waiting.conversations, self.awaiting_conversations = found, None
                self.config, self.config_error, self.start_problem = waiting, None, None
            return
        cfg = self.config
        if cfg is None or not cfg.finds_conversations:
            return
        found = found_conversations()
        if [r.path for r in found] == [r.path for r in cfg.conversations]:
            return
        if not found and not cfg.roots:   # a session of conversations alone keeps what it serves
            return
        log.info("the project's conversation folders are now %s", ", ".join(str(r.path) for r in found) or "none")
        cfg.conversations = found
        backend = self.backend
        if backend is None:
            return
        if backend.kind == "daemon":
            backend.conversations = [str(r.path) for r in found] or None
        elif backend.kind == "local" and hasattr(backend, "_beside"):   # its config is this one
            old = backend._beside.pop(CONVERSATIONS, None)
            if old is not None:
                old.close()

    # -- calls ------------------------------------------------------------------------------------
    def call(self, method: str, **params) -> dict:
        with self.lock:
            if method in CONVERSATION_READS:
                self.look_for_conversations()
            if self.backend is None:
                self._connect()
            elif self.backend.kind == "local" and getattr(self.backend, "readonly", False) and self.config.roots:
                self._retry_daemon()
            elif self.backend.kind == "daemon" and time.monotonic() - self._last_call > IDLE_TIMEOUT_S - 2:
                self.backend.client.close()   # the daemon has closed (or is about to close) this idle connection
            try:
                return self._send(method, params)
            except DaemonUnavailable as e:
                lost = e
            except UserError as e:
                if e.code != "build_mismatch":
                    raise
                # a daemon of another build took the socket: connect() replaces it or answers beside it
                log.warning("%s; connecting again", e.message)
                self._drop()
                self._connect()
                return self._send(method, params)
            self._drop()
            again = self._reattach()
            if again is not None:
                log.info("reconnected to the daemon (%s)", lost)
                self.backend = again
            else:
                log.warning("lost the daemon (%s); starting it again", lost)
                self._connect()
            return self._send(method, params)

    def _send(self, method: str, params: dict) -> dict:
        if self.scope:
            params = {**params, "scope": list(self.scope)}
        out = self.backend.call(method, **params)
        self._last_call = time.monotonic()
        return out

    def _reattach(self) -> dconnect.DaemonBackend | None:
        """The same daemon on a new connection, if it still answers for this corpus."""
        sock = Path(socket_path())
        st = ping(sock)
        if st is None or (self.config.roots and not dconnect.serves(st, self.config)) or not dconnect.same_build(st):
            return None
        return dconnect.backend_for(sock, st, self.config)

    def close(self) -> None:
        with self.lock:
            self._drop()
