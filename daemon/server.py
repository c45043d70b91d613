"""The per-user daemon: one for all of a user's corpora, the only index writer of each, the only
loaded model, served on a Unix socket.

A request names its corpus by its roots (`"roots": [...]` among its params); one without names
the daemon's default corpus (the roots it was started with), so older clients keep working.
Corpora are opened on first use and closed when idle (daemon/corpora.py).

Threads: per open corpus, one ingest thread (its single writer) that waits for debounced changes
and applies them through its engine, and watchdog's observer; one thread per client connection
answering requests from read-only catalog snapshots; the main thread, which sleeps until the
idle-exit deadline or the next check for idle corpora or for the socket.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import signal
import socket
import socketserver
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from remembrancer import build, wire
from remembrancer.indexer import api
from remembrancer.indexer.wake import Waker
from remembrancer.indexer import writelock
from remembrancer.indexer.answers import DaemonState, Freshness, StatusAnswer
from remembrancer.indexer.config import (CODE, COMMITS, CONVERSATIONS, Config, check_socket_path,
                                         ensure_data_dir, load_config, settings, socket_path)
from remembrancer.indexer.engine import ReadView
from remembrancer.indexer.search.across import ALL
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.requests import check_text
from remembrancer.indexer.ingest.commit_log import commits_config

from .corpora import (CORPUS_IDLE_S, RESCAN_S, Corpora, Corpus, SharedModel, code_param, config_for,
                      conversations_param, corpus_key, key_parts, roots_param, within_param)

log = logging.getLogger(__name__)

# A conversations corpus opened by a request: its first pass is waited for this long before answering.
SETTLE_S = 20.0
# Which documents exist is what these answer: a corpus just opened (a daemon start, a corpus
# reopened after being idle) answers them after its catch-up pass, waited for up to SETTLE_S; past
# that, the answer's verdict says it is catching up (a "not found" too: indexer/api.py absent).
SETTLE_METHODS = ("read", "outline", "list")
# A notes read after HEAD moved (no git hook told the daemon) waits this long for the pass that reads it.
HEAD_WAIT_S = 2.0
REQUEST_TIMEOUT_S = 10.0  # a request line must arrive whole this soon after its first byte (and a reply be taken)
# The socket path is looked at (one stat) this often. A cleaner of /tmp or of the runtime folder that
# deletes it, or its folder, left a daemon nobody could reach that still held the data dir's lock, so
# no other could start: every client failed until the idle exit (never, under a service manager).
SOCKET_CHECK_S = 2.0
# An edited config file is applied once two reads this far apart agree: an editor's save may be a
# truncate then a write, and the empty file between them is a valid config (every setting at its
# default, no [redact] deny). The file's mtime cannot tell: a writer preempted after its truncate
# leaves an empty file that looks settled.
CONFIG_QUIET_S = 0.2
CONFIG_VERDICTS = 64   # clients' settings compared with the daemon's, remembered (each a read of their file)


RESTART_SERVICE = ("`systemctl --user restart remembrancer.service`" if sys.platform != "darwin"
                   else "`launchctl kickstart -k gui/$(id -u)/dev.remembrancer.daemon`")


def _supervisor() -> str | None:
    """The service manager that runs this daemon ("systemd", "launchd"), else None: the parent
    process is the user's service manager. A client names the right way to restart it."""
    ppid = os.getppid()
    if sys.platform == "darwin":
        return "launchd" if ppid == 1 else None
    try:
        with open(f"/proc/{ppid}/comm") as f:
            return "systemd" if f.read().strip() == "systemd" else None
    except OSError:
        return None


class AlreadyRunning(UserError):
    pass


UNREAD = object()   # the config file not read yet


STARTING_WAIT_S = 1.0   # a daemon that won the race says who it is within milliseconds of taking its lock


def _soon(read: Callable[[], object | None], wait_s: float = STARTING_WAIT_S):
    """`read()`'s first value that is not None within `wait_s` (None when there is none)."""
    deadline = time.monotonic() + wait_s
    while (value := read()) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def still_config_stamp() -> bytes | None:
    """The config file's bytes (wire.config_bytes) once two reads CONFIG_QUIET_S apart agree (a few
    tries at most)."""
    stamp = wire.config_bytes()
    for _ in range(10):
        time.sleep(CONFIG_QUIET_S)
        again = wire.config_bytes()
        if again == stamp:
            break
        stamp = again
    return stamp


class Daemon:
    def __init__(self, config: Config, *, sock: Path | None = None, idle_exit_s: float | None = None,
                 embedder=None, rescan_s: float = RESCAN_S, client_timeout_s: float = wire.IDLE_TIMEOUT_S,
                 request_timeout_s: float = REQUEST_TIMEOUT_S, corpus_idle_s: float | None = CORPUS_IDLE_S,
                 reload: Callable[[], Config] | None = None):
        self.config = config    # the default corpus (its roots may be empty: then requests must name one)
        # `reload` makes `config` again from the config file (`serve`: with its command line): an
        # edited file is applied while the daemon runs (_config_current). None: never re-read.
        self._reload = reload
        self._config_seen: object = UNREAD   # the file as last applied (wire.config_bytes)
        self._config_error: UserError | None = None   # the file as it is now is invalid: requests get this
        self._config_lock = threading.Lock()
        # A client's settings found equal to this daemon's, or not: {(its identity, ours): differences}
        self._config_verdicts: dict[tuple, list[str]] = {}
        self.sock_path = check_socket_path(Path(sock)) if sock else socket_path()   # both checked: AF_UNIX length
        self.data_dir = ensure_data_dir()   # a wrong socket or data dir fails here, before the model and corpus load
        self.idle_exit_s = idle_exit_s
        self.client_timeout_s = client_timeout_s    # a connection idle this long is closed
        self.request_timeout_s = request_timeout_s  # a request line slower than this is dropped
        self.started_at = time.time()
        self.build = build.identity()   # the code it loaded, compared by every client (daemon/connect.py)
        self.supervisor = _supervisor()
        self.stopping = threading.Event()
        self._wake = Waker()
        self._signalled = False   # SIGTERM/SIGINT arrived: the main loop stops (signal handlers take no lock)
        self.clients = 0
        self.requests = 0
        self.last_activity = time.monotonic()
        self.notifications = 0
        self.last_notification: dict | None = None
        self._lock = threading.Lock()
        self._touched = threading.local()   # the engines a client thread read from (to release its readers)
        self._lockfile = None
        self._data_lock = None
        self._server: socketserver.UnixStreamServer | None = None
        self._bound: tuple[int, int] | None = None   # (st_dev, st_ino) of the socket bound (_socket_ours)
        self._acquire()
        self.corpora = Corpora(SharedModel(embedder), rescan_s=rescan_s, idle_s=corpus_idle_s)
        self.default_key = None
        if config.roots:  # opened now: a bad default corpus fails the start, as it always did
            c = self.corpora.acquire([r.path for r in config.roots], config)
            self.corpora.release(c)
            self.default_key = c.key
        for other in (config.conversation_config(), config.code_config()):   # watched and indexed from the start
            if other is not None:
                self.corpora.release(self.corpora.acquire([r.path for r in other.roots], other, kind=other.kind))

    # -- single instance --------------------------------------------------------------------------
    def _acquire(self) -> None:
        """One daemon per socket and per data dir (so one writer per index, whatever socket a
        client's environment names): an flock next to the socket and one in the data dir, which
        says where this daemon listens (clients elsewhere find it there: connect.data_dir_daemon);
        a dead daemon's socket is replaced."""
        self._lockfile = self._socket_lock()
        if self._lockfile is None:
            raise AlreadyRunning(self._socket_holder(), hint="use it, or stop it with `remembrancer stop`",
                                 code="already_running")
        writelock.identify(by="daemon", socket=str(self.sock_path))   # in the index locks it takes, too
        lock = self.data_dir / writelock.DAEMON_LOCK
        try:
            self._data_lock = writelock.acquire(lock, f"the data dir {self.data_dir}")
        except writelock.Busy as e:
            self._lockfile.close()
            other = e.holder or _soon(lambda: writelock.holder(lock))
            if other is None:   # it took the lock an instant ago and has not said who it is yet
                raise AlreadyRunning(
                    f"a daemon is starting on the data dir {self.data_dir} (it has not written its pid and socket "
                    "yet); a second one would be a second writer of its indexes",
                    hint="`remembrancer status` names it once it answers; to replace it, stop it then with "
                         "`remembrancer stop`", code="already_running") from None
            raise AlreadyRunning(
                f"a daemon already serves the data dir {self.data_dir} (pid {other.get('pid', '?')}, "
                f"socket {other.get('socket', '?')}); a second one would be a second writer of its indexes",
                hint="its clients find it through the data dir, whatever socket they name; to replace it, "
                     f"stop it first: REMEMBRANCER_SOCKET={other.get('socket', '?')} remembrancer stop",
                code="already_running") from None
        self._claim_socket()

    def _socket_holder(self) -> str:
        """Who holds the socket's lock, as far as it is known: the daemon answering there, else the
        pid it wrote into the lock file (it is still loading), else that one is starting."""
        st = wire.ping(self.sock_path)
        if st and (st.get("daemon") or {}).get("pid"):
            return f"a daemon already serves {self.sock_path} (pid {st['daemon']['pid']})"

        def written() -> int | None:
            try:
                text = Path(self._lock_path()).read_text().strip()
            except OSError:
                return None
            return int(text) if text.isdigit() else None

        pid = _soon(written)
        if pid is None:
            return f"a daemon is starting on {self.sock_path} (it has not written its pid yet)"
        return f"a daemon is starting on {self.sock_path} (pid {pid}; it does not answer yet)"

    def _socket_lock(self):
        """The socket's folder made (0700, checked to be ours) and the flock next to the socket
        taken, as a file kept open; None: another process holds it. At start and again when the
        folder was deleted under a running daemon (its lock file went with it)."""
        d = self.sock_path.parent
        try:
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
            st = d.stat()
            if st.st_uid != os.getuid():
                raise UserError(f"socket folder {d} belongs to another user", code="bad_socket",
                                hint="set REMEMBRANCER_SOCKET to a path in a folder of your own")
            if st.st_mode & (stat.S_ISVTX | stat.S_IWOTH):
                # A shared folder such as /tmp (REMEMBRANCER_SOCKET=/tmp/x.sock): making it 0700 would
                # lock every other user out of it (as root: out of /tmp). The socket is still 0600,
                # and clients check who listens on it.
                log.warning("socket folder %s is shared; only the socket itself is private", d)
            else:
                os.chmod(d, 0o700)
            f = open(self._lock_path(), "a+")
        except OSError as e:
            raise UserError(f"cannot use socket folder {d}: {e.strerror or e}", code="bad_socket",
                            hint="set REMEMBRANCER_SOCKET to a writable path") from None
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            f.close()
            if e.errno in (errno.EAGAIN, errno.EACCES):
                return None
            raise
        return f

    def _lock_path(self) -> str:
        return str(self.sock_path) + ".lock"

    def _claim_socket(self) -> None:
        """Our pid in the socket's lock file, and whatever is at the socket path removed: we hold
        the lock, so nobody serves it (a dead daemon's socket, or a file put there)."""
        self._lockfile.seek(0)
        self._lockfile.truncate()
        self._lockfile.write(str(os.getpid()))
        self._lockfile.flush()
        if self.sock_path.exists() or self.sock_path.is_symlink():
            self.sock_path.unlink()

    # -- lifecycle --------------------------------------------------------------------------------
    def serve_forever(self) -> None:
        self._bind()
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        self._accept()
        served = ", ".join(str(r.path) for r in self.config.roots) or "no default corpus"
        log.info("serving %s (and any corpus a request names) on %s", served, self.sock_path)
        try:
            self._housekeeping()
        finally:
            self._shutdown()

    def stop(self) -> None:
        self.stopping.set()
        self._wake.set()

    def _on_signal(self, *_) -> None:
        """A signal handler runs on the main thread between two of its steps, maybe inside a lock
        that thread holds: it sets a flag and writes to a pipe, nothing that takes a lock. (It called
        stop(), whose Event.set() waited forever for the lock of the Event.wait() it had interrupted:
        a daemon told to stop at that instant never exited, and kept its corpora's writer locks.)"""
        self._signalled = True
        self._wake.set()

    def _housekeeping(self) -> None:
        """Sleep until the idle-exit deadline or the next look for idle corpora or at the socket
        (SOCKET_CHECK_S); nothing polls faster."""
        idle_s = self.corpora.idle_s
        check_s = min(max(idle_s / 4, 0.2), SOCKET_CHECK_S) if idle_s is not None else SOCKET_CHECK_S
        while not self.stopping.is_set():
            wait = check_s
            if self.idle_exit_s is not None:
                wait = min(wait, max(self.last_activity + self.idle_exit_s - time.monotonic(), 0.05))
            self._wake.wait(wait)
            if self._signalled:
                self.stop()
            if self.stopping.is_set():
                break
            if not self._socket_ours() and not self._listen_again():
                break
            # An edited config file is applied within a tick even when no request comes: a path it now
            # denies leaves the index, not only the answers (one read of a small file).
            try:
                self._config_current()
            except UserError:
                pass   # logged when it was read; requests get it
            except Exception:
                log.exception("applying the edited config file failed; tried again at the next tick")
            self.corpora.release_idle()
            if self._idle_expired():
                log.info("no clients for %.0fs: exiting (started on demand)", self.idle_exit_s)
                break

    def _idle_expired(self) -> bool:
        with self._lock:
            return (self.idle_exit_s is not None and self.clients == 0
                    and time.monotonic() - self.last_activity >= self.idle_exit_s)

    def _socket_ours(self) -> bool:
        """Whether the socket path still is the socket this daemon bound: not deleted (alone or
        with its folder), not replaced by another file."""
        try:
            st = os.lstat(self.sock_path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._bound

    def _listen_again(self) -> bool:
        """The socket path is gone or is not ours: take its folder and lock again and bind a new
        socket there, as at start (connections already open go on). False, logged: another process
        holds the lock now, or the folder cannot be used — the caller stops, rather than live on
        unreachable holding the data dir."""
        try:
            if not self._lock_still_held():
                lock = self._socket_lock()
                if lock is None:
                    log.warning("socket %s was replaced, and another process holds its lock: exiting",
                                self.sock_path)
                    return False
                self._lockfile.close()
                self._lockfile = lock
            self._claim_socket()
            old = self._server
            self._bind()
        except (UserError, OSError) as e:
            log.warning("socket %s was removed and cannot be made again (%s): exiting", self.sock_path, e)
            return False
        self._retire(old)
        # said before the first client can be answered: a client told "the daemon is back" then finds it in the log
        log.warning("socket %s was removed; listening again", self.sock_path)
        self._accept()
        return True

    def _lock_still_held(self) -> bool:
        """Whether the lock file next to the socket is still the one this daemon holds (only the
        socket was deleted): locking it anew would conflict with our own flock."""
        try:
            st, own = os.stat(self._lock_path()), os.fstat(self._lockfile.fileno())
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)

    def _accept(self) -> None:
        """The accept loop of the current server, on a thread of its own; it sleeps in poll()
        until a client connects."""
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 3600},
                         name="accept", daemon=True).start()

    @staticmethod
    def _retire(server: socketserver.BaseServer) -> None:
        """Stop a replaced server's accept loop and close its socket. Its shutdown() returns only
        once the loop wakes: shutting the listening socket down wakes it now (Linux; elsewhere
        it ends at its poll timeout). Closing the socket under the loop instead would make poll()
        report it invalid at once, over and over."""
        threading.Thread(target=lambda: (server.shutdown(), server.server_close()), name="retire",
                         daemon=True).start()
        with contextlib.suppress(OSError):
            server.socket.shutdown(socket.SHUT_RDWR)

    def _bind(self) -> None:
        daemon = self

        class Handler(socketserver.BaseRequestHandler):
            def send(self, obj: dict) -> None:
                self.request.settimeout(daemon.request_timeout_s)  # a client that never reads is dropped
                self.request.sendall(wire.encode(obj))

            def handle(self):
                sock: socket.socket = self.request
                daemon._client(+1)
                try:
                    uid = wire.peer_uid(sock)  # 0600 in a 0700 folder already; this holds if someone loosens them
                    if uid is not None and uid not in (os.getuid(), 0):
                        log.warning("refused a client running as uid %s", uid)
                        # its request is read (briefly) first: closing on an unread request made the
                        # client's send fail with EPIPE instead of showing it this answer
                        with contextlib.suppress(wire.LineTooLong):
                            wire.read_request(sock, bytearray(), 1.0, 1.0)
                        self.send({"id": None, "ok": False, "error": {
                            "code": "forbidden", "message": f"uid {uid} may not use the daemon of uid {os.getuid()}"}})
                        return
                    buf = bytearray()
                    while not daemon.stopping.is_set():
                        try:
                            line = wire.read_request(sock, buf, daemon.client_timeout_s, daemon.request_timeout_s)
                        except wire.LineTooLong as e:
                            self.send({"id": None, "ok": False, "error": {
                                "code": "too_large", "message": f"request over {wire.MAX_REQUEST_BYTES} bytes"}})
                            if e.ended or wire.skip_line(sock, buf, daemon.request_timeout_s):
                                continue  # one error for one request; the next line is answered
                            return
                        if line is None:
                            return
                        try:
                            self.send(daemon.handle_line(line))
                        finally:
                            daemon._release_readers()   # the connection goes back to the pool per request
                except OSError:  # the client went away or stopped reading
                    return
                finally:
                    daemon._release_readers()
                    daemon._client(-1)

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True
            # socketserver's default backlog is 5: a burst of clients (hooks, MCP servers, searches)
            # got EAGAIN from connect() on a busy daemon
            request_queue_size = socket.SOMAXCONN

        old_umask = os.umask(0o177)
        try:
            self._server = Server(str(self.sock_path), Handler)
        except OSError as e:
            raise UserError(f"cannot listen on {self.sock_path}: {e.strerror or e}", code="bad_socket",
                            param="REMEMBRANCER_SOCKET", hint="set REMEMBRANCER_SOCKET to a path in a folder of your own") from None
        finally:
            os.umask(old_umask)
        os.chmod(self.sock_path, 0o600)
        st = os.lstat(self.sock_path)
        self._bound = (st.st_dev, st.st_ino)   # what _socket_ours() compares the path with

    def _client(self, delta: int) -> None:
        with self._lock:
            self.clients += delta
            self.last_activity = time.monotonic()
        if delta < 0:
            self._wake.set()  # let the main loop re-check the idle deadline

    def _touched_engines(self) -> set:
        if not hasattr(self._touched, "engines"):
            self._touched.engines = set()
        return self._touched.engines

    def _release_readers(self) -> None:
        """Close this client thread's read-only connections (left to the GC, they piled up)."""
        for engine in getattr(self._touched, "engines", ()):
            engine.release_reader()
        self._touched.engines = set()

    def _shutdown(self) -> None:
        if self._server is not None:
            # No shutdown(): its handshake would wait out the accept loop's select timeout. The
            # accept and client threads are daemon threads; closing the socket is enough.
            self._server.server_close()
        if self._socket_ours():   # a path another daemon took over is left to it
            with contextlib.suppress(FileNotFoundError):
                self.sock_path.unlink()
        self.corpora.close_all()
        if self._data_lock is not None:
            self._data_lock.release()
        self._wake.close()
        log.info("daemon stopped")

    # -- requests ---------------------------------------------------------------------------------
    def handle_line(self, line: bytes) -> dict:
        rid = None
        try:
            try:
                rid, method, params = wire.decode_request(line.rstrip(b"\n"))
            except RecursionError:  # JSON nested deeper than the decoder recurses
                raise wire.ProtocolError("malformed", "request is nested too deeply") from None
            check_text(params)
            with self._lock:
                self.requests += 1
                self.last_activity = time.monotonic()
            out = {"id": rid, "ok": True, "result": self.dispatch(method, params)}
        except wire.ProtocolError as e:
            out = {"id": rid, "ok": False, "error": {"code": e.code, "message": e.message}}
        except UserError as e:
            out = {"id": rid, "ok": False, "error": e.to_dict()}
        except Exception as e:  # a bug must not kill the daemon or leak a traceback to a client
            log.exception("request failed")
            out = {"id": rid, "ok": False, "error": {"code": "internal", "message": f"{type(e).__name__}: {e}"}}
        out["build"] = self.build["fingerprint"]   # every answer says which build gave it (wire.Client.build)
        return out

    def dispatch(self, method: str, params: dict) -> dict:
        params = dict(params)
        roots = roots_param(params)
        within = within_param(params)
        conversations = conversations_param(params)
        code = code_param(params)
        without_notes = params.pop("without_notes", False) is True   # a session of conversations alone
        asked = params.pop("config", None)   # the client's settings (wire.config_identity)
        asked_build = params.pop("build", None)   # the client's build fingerprint (remembrancer/build.py)
        if method == "notify":
            return self._notify(params)
        if method == "stop":
            threading.Timer(0.05, self.stop).start()
            return {"stopping": True}
        try:
            self._config_current()
        except UserError:
            if method not in ("status", "notify", "forget"):   # status says it (stale); `stop` asks it the pid
                raise
        if asked_build is not None and method not in ("status", "forget"):
            self._same_build(asked_build)
        if asked is not None and method != "forget":
            self._same_config(asked)
        if method == "forget":   # `remembrancer corpora forget`: this daemon may be serving it
            out = self.corpora.forget(str(params.get("index") or ""))
            if self.default_key is not None and list(self.default_key) in out["keys"]:
                self.default_key = None
            return out
        if method == "status" and roots is None and within is None and not self._default_open():
            return self.status(None).to_json()  # a ping: never reopens a closed corpus
        if method == "reindex" and roots is None and self.default_key is None and not conversations:
            for c in list(self.corpora.open.values()):
                c.queue.put(full=True)
            return {"queued": len(self.corpora.open)}
        if method in api.READ_METHODS:   # notes, conversations, or both (indexer/search/across.py)
            def notes(m: str, p: dict) -> dict:
                corpus = self._notes_corpus(roots, within)
                try:
                    if corpus.reconfigured or m in SETTLE_METHODS:
                        # the pass applying an edited config first (what it now denies is gone); a
                        # read or a listing answers which documents exist: after the opening pass
                        corpus.settle(SETTLE_S)
                    corpus.catch_up_head(HEAD_WAIT_S)   # a commit made without the hooks: read before answering
                except BaseException:
                    self.corpora.release(corpus)
                    raise
                return self._read(corpus, m, p)

            def on_demand(folders: list[str], kind: str):
                def read(m: str, p: dict) -> dict:
                    corpus = self.corpora.acquire(folders, kind=kind)
                    corpus.settle(SETTLE_S)   # opened on demand (no client waits for its first index)
                    return self._read(corpus, m, p)
                return read

            # Only a request that may read the commits looks for them (a notes corpus is opened for it).
            log_config = None if without_notes or params.get("corpus") not in (COMMITS, ALL) \
                else self._commit_config(roots, within)

            def log(m: str, p: dict) -> dict:
                corpus = self.corpora.acquire([r.path for r in log_config.roots], log_config, kind=COMMITS)
                corpus.catch_up(SETTLE_S)   # opened on demand; a commit made since is read first
                return self._read(corpus, m, p)

            return api.read_across(method, params, None if without_notes else notes,
                                   on_demand(conversations, CONVERSATIONS) if conversations else None,
                                   log if log_config else None, on_demand(code, CODE) if code else None)
        if method == "reindex" and (conversations or code):   # `index --conversations/--code`: each corpus
            out = {name: self._reindex(self.corpora.acquire(folders, kind=kind), params)
                   for name, folders, kind in (("conversations", conversations, CONVERSATIONS), ("code", code, CODE))
                   if folders}
            if roots is None and self.default_key is None:
                return out
            return {**self._reindex(self._corpus(roots), params), **out}
        corpus = self._notes_corpus(roots, within)
        if method == "reindex":
            return self._reindex(corpus, params)
        try:
            self._touched_engines().add(corpus.engine)
            if method == "status":
                scope = params.get("scope") or ()
                since = time.monotonic()
                corpus.check_polled(HEAD_WAIT_S)   # its verdict, as an answer's, after walking a polled root
                with corpus.engine.view(scope) as view:
                    st = self.status(corpus, view, since=since)
                    if scope:  # a scoped client sees its own corpus only, as the scope sees it
                        st.corpora = [corpus.summary(view)]
                return st.to_json()
        finally:
            self.corpora.release(corpus)
        raise UserError(f"unknown method {method!r}")  # wire.decode_request already filters

    def _reindex(self, corpus: Corpus, params: dict) -> dict:
        """A full pass of one acquired corpus: waited for (`remembrancer index`: this daemon is the
        index's one writer) or queued."""
        try:
            if params.get("wait"):
                return {"report": corpus.full_pass(), "pid": os.getpid()}
            corpus.queue.put(full=True)
            return {"queued": corpus.queue.pending()[0]}
        finally:
            self.corpora.release(corpus)

    def _read(self, corpus: Corpus, method: str, params: dict) -> dict:
        """A read method on one acquired corpus, its writer giving way meanwhile; released after.
        A root no inotify watch reports (polled: inotify's limit) is walked first: the verdict may then be fresh."""
        try:
            since = time.monotonic()
            corpus.check_polled(HEAD_WAIT_S)
            self._touched_engines().add(corpus.engine)
            with corpus.engine.store.priority.request():
                return api.dispatch_read(corpus.engine, method, params,
                                         lambda view: corpus.freshness(view, since=since))
        finally:
            self.corpora.release(corpus)

    def _notes_corpus(self, roots: list[str] | None, within: str | None) -> Corpus:
        """The notes corpus a request reads, acquired: the one holding its folder (`within`), else
        its roots' (or the default)."""
        return self.corpora.acquire_within(within) if within and roots is None else self._corpus(roots)

    def _commit_config(self, roots: list[str] | None, within: str | None) -> Config | None:
        """The commits corpus of the notes a request reads (None: they are in no git repository;
        asked each time, as a folder may become one)."""
        corpus = self._notes_corpus(roots, within)
        try:
            return commits_config(corpus.config)
        finally:
            self.corpora.release(corpus)

    def _default_open(self) -> bool:
        return self.default_key is not None and self.corpora.get(self.default_key) is not None

    def _corpus(self, roots: list[str] | None) -> Corpus:
        if roots is None:
            if self.default_key is None:
                raise UserError("no corpus named, and this daemon has no default one", param="roots",
                                hint="pass --root DIR (or set roots = [\"~/notes\"] in the config file); "
                                     "over the socket: \"roots\": [folders] in the params")
            return self.corpora.acquire(self.default_key, self.config)
        return self.corpora.acquire(roots)

    # -- the config file --------------------------------------------------------------------------
    def _config_current(self) -> None:
        """Apply the config file if it was edited since it was read (before each request and at each
        housekeeping tick); while it is invalid, its error (the one the in-process path gives) is
        raised. A request that comes during an apply waits for it: no answer from the old settings."""
        if self._reload is None:
            return
        if wire.config_bytes() != self._config_seen:
            with self._config_lock:   # at the first request or tick: the file as `serve` just read it
                stamp = wire.config_bytes() if self._config_seen is UNREAD else still_config_stamp()
                if stamp != self._config_seen:
                    self._apply_config()
                    self._config_seen = stamp
        if self._config_error is not None:
            raise self._config_error

    def _apply_config(self) -> None:
        """The config file read again: every open corpus whose settings it changes (redaction, ignore
        rules, layout, model, …) is closed and opened again with them, as after being idle — its
        catch-up pass applies them (a changed redaction policy re-reads every document, as
        `remembrancer index` would)."""
        try:
            new = self._reload()
        except UserError as e:
            log.warning("the config file is invalid; requests are refused until it is fixed: %s", e.message)
            self._config_error = e
            return
        self._config_error = None
        self.config = new
        self.default_key = corpus_key(r.path for r in new.roots) if new.roots else None
        for key in self.corpora.reconfigure(self._config_of):
            kind, paths = key_parts(key)
            try:
                self.corpora.release(self.corpora.acquire(paths, self._config_of(key), kind=kind))
            except UserError as e:
                log.warning("corpus %s not opened again after the config change: %s", ", ".join(key), e.message)
                continue
            log.info("config file changed: corpus %s opened again with it", ", ".join(key))

    def _same_config(self, asked: object) -> None:
        """Refuse a client whose settings are not this daemon's: it would be answered under another
        redaction policy (a file its `[redact] deny` keeps out, served) or other rules, and say
        nothing. The same file with the same bytes is the same; any other is read and compared
        setting by setting (a copy of the file, or a missing one against the defaults, is the same)."""
        if not isinstance(asked, dict) or not isinstance(asked.get("path"), str) \
                or not all(isinstance(asked.get(k), (str, type(None))) for k in ("sha256", "secret_hashes")):
            raise UserError("config must be the client's settings: path, sha256, secret_hashes", param="config")
        # this daemon's settings as it applied them (_config_current read the file just now)
        applied = self._config_seen
        mine = wire.config_identity() if applied is UNREAD else wire.config_identity(applied, read=False)
        theirs = (asked["path"], asked.get("sha256"), asked.get("secret_hashes"))
        ours = (mine["path"], mine["sha256"], mine["secret_hashes"])
        if theirs == ours:
            return
        differ = self._config_verdicts.get((theirs, ours))
        if differ is None:
            differ = self._config_differences(Path(asked["path"]), asked.get("secret_hashes"), mine["secret_hashes"])
            if len(self._config_verdicts) >= CONFIG_VERDICTS:
                self._config_verdicts.clear()
            self._config_verdicts[(theirs, ours)] = differ
        if not differ:
            return

        def named(path: str, digest: str | None) -> str:
            return path + (" (no such file: the defaults)" if digest is None else "")
        raise UserError(
            f"the running daemon (pid {os.getpid()}) answers under the config {named(*ours[:2])}, not under "
            f"{named(*theirs[:2])}, which this client reads: they differ in {', '.join(differ)}; it does not "
            "answer under settings that are not yours", param="REMEMBRANCER_CONFIG", code="config_mismatch",
            options=[ours[0]],
            hint="restart the daemon with your config: `remembrancer stop`, then run this again (a daemon starts "
                 "with your settings; a service: `remembrancer service install` from this shell); or run this "
                 f"client with the daemon's: REMEMBRANCER_CONFIG={ours[0]}; or give it a daemon of its own "
                 "(REMEMBRANCER_SOCKET and REMEMBRANCER_DATA_DIR of its own)")

    def _same_build(self, asked: object) -> None:
        """Refuse a client of another build: this daemon's code would answer it as if it were its
        own (another redaction, other freshness rules). `status` is still answered: it says which
        build this is, and clients act on it (daemon/connect.py)."""
        if asked == self.build["fingerprint"]:
            return
        raise UserError(
            f"the running daemon (pid {os.getpid()}) runs {build.named(self.build)}, not the client's build {asked}: "
            "it does not answer another build's requests", code="build_mismatch",
            hint="restart the daemon with the installed code: `remembrancer stop` (a daemon of the client's build "
                 "starts on demand), or for the service: " + RESTART_SERVICE)

    def _config_differences(self, path: Path, their_hashes: str | None, our_hashes: str | None) -> list[str]:
        """The settings (named as in the file) in which a client's config file differs from this
        daemon's; a file that cannot be read or is invalid differs in all of them, said so."""
        try:
            theirs = load_config(with_roots=False, path=path)
        except UserError as e:
            return [f"everything (this daemon cannot use that file: {e.message})"]
        mine, other = settings(self.config, our_hashes), settings(theirs, their_hashes)
        return [name for name in mine if mine[name] != other.get(name)]

    def _config_of(self, key: tuple[str, ...]) -> Config:
        """A corpus's configuration as this daemon opens it: the default corpora (the notes, their
        conversations and code) from the serve command's settings, any other from its roots."""
        for cfg in (self.config, self.config.conversation_config(), self.config.code_config()):
            if cfg is not None and cfg.roots and corpus_key((r.path for r in cfg.roots), cfg.kind) == key:
                return cfg
        return config_for(key)

    def _notify(self, params: dict) -> dict:
        """A work tree changed (a git hook): queue a pass of every open corpus it concerns."""
        raw = str(params.get("root") or "")
        with self._lock:
            self.notifications += 1
            self.last_notification = {"event": str(params.get("event") or ""), "root": raw, "at": time.time()}
        if not raw:
            return {"queued": 0, "corpora": [], "ignored": "no root given"}
        path = Path(raw).expanduser()
        try:
            path = path.resolve()
        except OSError:
            pass
        hit = self.corpora.holding(path)
        for c in hit:
            c.queue.put()   # the engine diffs the indexed HEAD against the new one (daemon/updates.py)
        out = {"queued": sum(c.queue.pending()[0] for c in hit), "corpora": [list(c.key) for c in hit]}
        if not hit:
            closed = self.corpora.holding_closed(path)
            out["ignored"] = (f"corpus {', '.join(closed[0])} is closed; it catches up when opened" if closed
                              else f"no corpus of this daemon holds {path}")
        return out

    def status(self, corpus: Corpus | None, view: ReadView | None = None, since: float | None = None) -> StatusAnswer:
        """The daemon, every corpus with its freshness, and (when one is addressed) that corpus in full."""
        def daemon(**writer) -> DaemonState:
            return DaemonState(pid=os.getpid(), socket=str(self.sock_path), started_at=self.started_at,
                               clients=self.clients, requests=self.requests, idle_exit_s=self.idle_exit_s,
                               corpus_idle_s=self.corpora.idle_s, model_loads=self.corpora.model_loads(),
                               notifications=self.notifications, last_notification=self.last_notification,
                               multi_corpus=True, default_roots=list(self.default_key or ()),
                               build=self.build, supervisor=self.supervisor, **writer)
        if corpus is None:
            return StatusAnswer(index=None, corpora=self.corpora.summaries(self._touched_engines()),
                                daemon=daemon(queued_changes=0, seconds_behind=None, ingesting=False,
                                              last_error=None, last_ingest=None))
        observed = corpus.observe(view)   # one reading: the verdict is that of the figures beside it
        queued, behind, ingesting, st = observed
        freshness = corpus.freshness(view, observed, since=since)
        if self._config_error is not None:   # nothing but status is answered until the file is fixed
            freshness = Freshness.judged(st, "stale", reason=self._config_error.message)
        return StatusAnswer(index=st, freshness=freshness,
                            daemon=daemon(queued_changes=queued, seconds_behind=behind, ingesting=ingesting,
                                          last_error=corpus.last_error, last_ingest=corpus.last_run(view),
                                          polled=corpus.watcher.problem()),
                            corpora=self.corpora.summaries(self._touched_engines()))
