"""The per-user daemon: the only index writer, the only loaded model, served on a Unix socket.

Threads: one ingest thread (the single writer) that waits for debounced changes and applies
them through the engine; one thread per client connection answering requests from read-only
catalog snapshots; watchdog's observer. Nothing polls: the ingest thread sleeps on a condition
until an event, a notification, the slow periodic rescan, or the idle-exit deadline.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import signal
import socket
import socketserver
import stat
import threading
import time
from pathlib import Path

from remembrancer.indexer import api
from remembrancer.indexer.config import Config, socket_path
from remembrancer.indexer.engine import Engine
from remembrancer.indexer.errors import UserError

from . import protocol
from .client import encode_ascii_safe, peer_uid, ping
from .updates import Updater
from .watch import ChangeQueue, Watcher

log = logging.getLogger(__name__)

RESCAN_S = 600.0        # slow periodic rescan: catches inotify overflow and unwatched subtrees
ROOT_CHECK_S = 30.0     # how often a vanished root is looked for again
REQUEST_TIMEOUT_S = 10.0  # a request line must arrive whole this soon after its first byte (and a reply be taken)


class AlreadyRunning(UserError):
    pass


def release_memory() -> None:
    """Give freed heap back to the OS after an ingest: glibc keeps what embedding batches and
    parsing freed, so an idle daemon would otherwise sit at its indexing peak."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to do
        pass


class _TooLarge(Exception):
    def __init__(self, ended: bool):
        super().__init__()
        self.ended = ended  # its newline was read: the stream is already at the next request


def _read_request(sock: socket.socket, buf: bytearray, idle_s: float, request_s: float) -> bytes | None:
    """The next request line (buffered in `buf`), or None to drop the client: it hung up, sent
    nothing for `idle_s`, or took over `request_s` to send one line (a slow drip holds no thread
    for long). Past MAX_REQUEST_BYTES it raises _TooLarge at once, without waiting for a newline."""
    deadline = time.monotonic() + request_s if buf else None
    scanned = 0
    while True:
        nl = buf.find(b"\n", scanned)
        if nl >= 0:
            line = bytes(buf[:nl])
            del buf[:nl + 1]
            if len(line) > protocol.MAX_REQUEST_BYTES:
                raise _TooLarge(ended=True)
            return line
        if len(buf) > protocol.MAX_REQUEST_BYTES:
            raise _TooLarge(ended=False)
        scanned = len(buf)
        now = time.monotonic()
        if deadline is None and buf:
            deadline = now + request_s
        left = idle_s if deadline is None else deadline - now
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            chunk = sock.recv(1 << 16)
        except OSError:  # includes the timeout
            return None
        if not chunk:
            return None
        buf += chunk


def _skip_line(sock: socket.socket, buf: bytearray, request_s: float) -> bool:
    """Discard the rest of an oversized line; False if its newline does not come in time."""
    deadline = time.monotonic() + request_s
    while True:
        nl = buf.find(b"\n")
        if nl >= 0:
            del buf[:nl + 1]
            return True
        buf.clear()
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        sock.settimeout(left)
        try:
            chunk = sock.recv(1 << 16)
        except OSError:
            return False
        if not chunk:
            return False
        buf += chunk


def _check_text(params: dict) -> None:
    """Every string must be Unicode text: a lone surrogate ("\\ud800" is valid JSON) would reach
    tokenizers, tantivy and SQLite, which refuse it with exceptions of their own."""
    for name, value in params.items():
        stack = [name, value]
        while stack:
            v = stack.pop()
            if isinstance(v, str):
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    raise UserError(f"{name} is not valid Unicode text (it holds a lone surrogate)",
                                    param=str(name)) from None
            elif isinstance(v, dict):
                stack += [*v.keys(), *v.values()]
            elif isinstance(v, list):
                stack += v


class Daemon:
    def __init__(self, config: Config, *, sock: Path | None = None, idle_exit_s: float | None = None,
                 embedder=None, rescan_s: float = RESCAN_S, client_timeout_s: float = protocol.IDLE_TIMEOUT_S,
                 request_timeout_s: float = REQUEST_TIMEOUT_S):
        self.config = config
        self.sock_path = Path(sock or socket_path())
        self.idle_exit_s = idle_exit_s
        self.rescan_s = rescan_s
        self.client_timeout_s = client_timeout_s    # a connection idle this long is closed
        self.request_timeout_s = request_timeout_s  # a request line slower than this is dropped
        self.queue = ChangeQueue()
        self.started_at = time.time()
        self.stopping = threading.Event()
        self.clients = 0
        self.requests = 0
        self.last_activity = time.monotonic()
        self.last_error: str | None = None
        self.last_ingest: dict | None = None
        self.ingesting = False
        self.notifications = 0
        self.last_notification: dict | None = None
        self._lock = threading.Lock()
        self._lockfile = None
        self._server: socketserver.UnixStreamServer | None = None
        self._acquire()
        self.engine = Engine(config, embedder=embedder)
        self.updates = Updater(self.engine)
        self.watcher = Watcher([r.path for r in config.roots], self.queue)

    # -- single instance --------------------------------------------------------------------------
    def _acquire(self) -> None:
        """One daemon per socket: an flock next to it; a dead daemon's socket is replaced."""
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
            self._lockfile = open(str(self.sock_path) + ".lock", "a+")
        except OSError as e:
            raise UserError(f"cannot use socket folder {d}: {e.strerror or e}", code="bad_socket",
                            hint="set REMEMBRANCER_SOCKET to a writable path") from None
        try:
            fcntl.flock(self._lockfile, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EACCES):
                st = ping(self.sock_path)
                pid = st.get("daemon", {}).get("pid") if st else "?"
                raise AlreadyRunning(f"a daemon already serves {self.sock_path} (pid {pid})",
                                     hint="use it, or stop it with `remembrancer stop`", code="already_running")
            raise
        self._lockfile.seek(0)
        self._lockfile.truncate()
        self._lockfile.write(str(os.getpid()))
        self._lockfile.flush()
        if self.sock_path.exists() or self.sock_path.is_symlink():
            self.sock_path.unlink()  # stale: we hold the lock, so nobody serves it

    # -- lifecycle --------------------------------------------------------------------------------
    def serve_forever(self) -> None:
        self._bind()
        signal.signal(signal.SIGTERM, lambda *_: self.stop())
        signal.signal(signal.SIGINT, lambda *_: self.stop())
        self.watcher.start()
        self.queue.put(full=True)  # catch up with whatever changed while we were down
        accept = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 3600},
                                  name="accept", daemon=True)
        accept.start()
        log.info("serving %s on %s", ", ".join(str(r.path) for r in self.config.roots), self.sock_path)
        try:
            self._ingest_loop()
        finally:
            self._shutdown()

    def stop(self) -> None:
        self.stopping.set()
        self.engine.stop_requested.set()
        self.queue.close()

    def _bind(self) -> None:
        daemon = self

        class Handler(socketserver.BaseRequestHandler):
            def send(self, obj: dict) -> None:
                self.request.settimeout(daemon.request_timeout_s)  # a client that never reads is dropped
                self.request.sendall(encode_ascii_safe(obj))

            def handle(self):
                sock: socket.socket = self.request
                daemon._client(+1)
                try:
                    uid = peer_uid(sock)  # 0600 in a 0700 folder already; this holds if someone loosens them
                    if uid is not None and uid not in (os.getuid(), 0):
                        log.warning("refused a client running as uid %s", uid)
                        self.send({"id": None, "ok": False, "error": {
                            "code": "forbidden", "message": f"uid {uid} may not use the daemon of uid {os.getuid()}"}})
                        return
                    buf = bytearray()
                    while not daemon.stopping.is_set():
                        try:
                            line = _read_request(sock, buf, daemon.client_timeout_s, daemon.request_timeout_s)
                        except _TooLarge as e:
                            self.send({"id": None, "ok": False, "error": {
                                "code": "too_large", "message": f"request over {protocol.MAX_REQUEST_BYTES} bytes"}})
                            if e.ended or _skip_line(sock, buf, daemon.request_timeout_s):
                                continue  # one error for one request; the next line is answered
                            return
                        if line is None:
                            return
                        self.send(daemon.handle_line(line))
                except OSError:  # the client went away or stopped reading
                    return
                finally:
                    daemon.engine.release_reader()
                    daemon._client(-1)

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True
            # socketserver's default backlog is 5: a burst of clients (hooks, MCP servers, searches)
            # got EAGAIN from connect() on a busy daemon
            request_queue_size = socket.SOMAXCONN

        old_umask = os.umask(0o177)
        try:
            self._server = Server(str(self.sock_path), Handler)
        finally:
            os.umask(old_umask)
        os.chmod(self.sock_path, 0o600)

    def _client(self, delta: int) -> None:
        with self._lock:
            self.clients += delta
            self.last_activity = time.monotonic()
        if delta < 0:
            self.queue.wake()  # let the ingest loop re-check the idle deadline

    def _shutdown(self) -> None:
        self.watcher.stop()
        if self._server is not None:
            # No shutdown(): its handshake would wait out the accept loop's select timeout. The
            # accept and client threads are daemon threads; closing the socket is enough.
            self._server.server_close()
        try:
            self.sock_path.unlink()
        except FileNotFoundError:
            pass
        try:
            self.updates.flush()
        except Exception:  # a full disk: the next start rebuilds the vector file from the catalog
            log.exception("vector file not saved at shutdown")
        self.engine.close()
        log.info("daemon stopped")

    # -- the single writer ------------------------------------------------------------------------
    def _ingest_loop(self) -> None:
        self.engine.claim_writer()
        self.engine.repair()
        next_rescan = time.monotonic() + self.rescan_s
        root_check_s = min(ROOT_CHECK_S, self.rescan_s)
        next_root_check = time.monotonic() + root_check_s
        while not self.stopping.is_set():
            now = time.monotonic()
            wake = min(next_rescan, next_root_check, self.updates.save_due() or next_rescan)
            if self.idle_exit_s is not None:
                wake = min(wake, self.last_activity + self.idle_exit_s)
            batch = self.queue.wait_batch(timeout=max(wake - now, 0.05))
            if self.stopping.is_set():
                break
            now = time.monotonic()
            if batch is not None:
                self._apply(*batch)
            if now >= next_root_check:
                self.watcher.ensure()
                release_memory()  # what searches freed, too
                next_root_check = now + root_check_s
            if now >= next_rescan:
                self._apply()
                next_rescan = now + self.rescan_s
            self.updates.when_quiet()
            if self._idle_expired():
                log.info("no clients for %.0fs: exiting (started on demand)", self.idle_exit_s)
                break

    def _idle_expired(self) -> bool:
        with self._lock:
            return (self.idle_exit_s is not None and self.clients == 0
                    and time.monotonic() - self.last_activity >= self.idle_exit_s)

    def _apply(self, paths=(), full: bool = True) -> None:
        """Bring the index up to date: the queued paths (and a moved HEAD) only, or with `full` a
        stat walk of every root (daemon/updates.py); only what changed is read and embedded."""
        self.ingesting = True
        try:
            report = self.updates.apply(paths, full)
            self.last_ingest = {"at": time.time(), **report.to_dict()}
            self.last_error = None
        except Exception as e:  # recorded and shown in status/freshness; the daemon keeps serving
            log.exception("ingest failed")
            self.last_error = f"{type(e).__name__}: {e}"
        finally:
            self.ingesting = False
            release_memory()

    # -- requests ---------------------------------------------------------------------------------
    def handle_line(self, line: bytes) -> dict:
        rid = None
        try:
            try:
                rid, method, params = protocol.decode_request(line.rstrip(b"\n"))
            except RecursionError:  # JSON nested deeper than the decoder recurses
                raise protocol.ProtocolError("malformed", "request is nested too deeply") from None
            _check_text(params)
            with self._lock:
                self.requests += 1
                self.last_activity = time.monotonic()
            return {"id": rid, "ok": True, "result": self.dispatch(method, params)}
        except protocol.ProtocolError as e:
            return {"id": rid, "ok": False, "error": {"code": e.code, "message": e.message}}
        except UserError as e:
            return {"id": rid, "ok": False, "error": e.to_dict()}
        except Exception as e:  # a bug must not kill the daemon or leak a traceback to a client
            log.exception("request failed")
            return {"id": rid, "ok": False, "error": {"code": "internal", "message": f"{type(e).__name__}: {e}"}}

    def dispatch(self, method: str, params: dict) -> dict:
        out = api.dispatch_read(self.engine, method, params, self.freshness)
        if out is not None:
            return out
        if method == "status":
            with self.engine.scoped(params.get("scope") or ()):
                return self.status()
        if method == "notify":
            self.notifications += 1
            self.last_notification = {"event": str(params.get("event") or ""), "root": str(params.get("root") or ""),
                                      "at": time.time()}
            self.queue.put()   # the engine diffs the indexed HEAD against the new one (daemon/updates.py)
            return {"queued": self.queue.pending()[0]}
        if method == "reindex":
            self.queue.put(full=True)
            return {"queued": self.queue.pending()[0]}
        if method == "stop":
            threading.Timer(0.05, self.stop).start()
            return {"stopping": True}
        raise UserError(f"unknown method {method!r}")  # protocol.decode_request already filters

    def freshness(self) -> dict:
        """One verdict for every answer: fresh, catching up, or STALE with the reason."""
        queued, behind = self.queue.pending()
        st = self.engine.status()
        base = {"documents": st["documents"], "sections": st["sections"], "generation": st["generation"],
                "last_indexed_at": st["last_indexed_at"]}
        problem = self.engine.redaction.problem() or self.engine.contract_problem()
        if self.last_error:
            return {**base, "verdict": "stale", "reason": f"last ingest failed: {self.last_error}"}
        if problem:
            return {**base, "verdict": "stale", "reason": problem}
        if queued or self.ingesting:
            return {**base, "verdict": "catching_up", "queued_changes": queued,
                    "seconds_behind": round(behind or 0.0, 1)}
        heads = [r for r in st["roots"] if r["head_current"] and r["head_current"] != r["head_indexed"]]
        if heads:
            return {**base, "verdict": "catching_up", "reason": f"HEAD of {heads[0]['name']} moved"}
        return {**base, "verdict": "fresh", "detail": "at HEAD and on-disk state"}

    def status(self) -> dict:
        st = self.engine.status()
        queued, behind = self.queue.pending()
        return {
            **st,
            "daemon": {"pid": os.getpid(), "socket": str(self.sock_path), "started_at": self.started_at,
                       "clients": self.clients, "requests": self.requests, "queued_changes": queued,
                       "seconds_behind": behind, "ingesting": self.ingesting, "last_error": self.last_error,
                       "last_ingest": self.last_ingest, "idle_exit_s": self.idle_exit_s,
                       "model_loads": self.engine.model_loads, "notifications": self.notifications,
                       "last_notification": self.last_notification},
            "freshness": self.freshness(),
        }
