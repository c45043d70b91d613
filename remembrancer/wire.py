"""The daemon's wire: where its socket is, how a message is framed, and one small client.

Standard library only, on purpose: the git hook and the Claude Code hook import this on every
commit and every prompt, so it must cost nothing next to interpreter start-up (platformdirs is
imported only when XDG_RUNTIME_DIR is unset; paths are strings, since pathlib alone would cost
the hooks ~5 ms). The daemon's server, its clients (CLI, MCP server)
and both hooks share it, so the protocol is written down once.

Newline-delimited JSON, one request → one response:

    → {"id": 7, "method": "search", "params": {"query": "restore db", "limit": 5}}
    ← {"id": 7, "ok": true, "result": {...}}
    ← {"id": 7, "ok": false, "error": {"code": "bad_input", "message": "...", "param": "limit"}}

Methods (params → result):
    search   query, limit, type, path, tags, since, until, exact, explain → search contract + "index"
    read     path, heading | lines [a, b], offset, max_chars               → section / page
    outline  path                                                         → sections with sizes
    list     path (prefix), type                                          → documents
    history  entity, topic, since, until, limit                           → an entity's sections, newest first
    latest   terms, since, until, type, path, limit                       → sections with ALL terms, newest first
    neighbors path, limit                                                 → links out/in, unresolved, similar
    verify   path [+ heading] | text                                      → cited commit SHAs checked in git
    status   —                                                            → daemon + index facts
    notify   root (path), event ("post-commit", "save", …)                → {"queued": n}
    reindex  full (bool)                                                  → {"queued": n}
             wait (bool): a full pass that starts now, waited for              → {"report": {...}, "pid": n}
    stop     —                                                            → {"stopping": true}
    forget   index (an index folder's name)                               → {"closed": n, "removed": bool}

Every method but notify, stop and forget carries `"config": config_identity()` from our clients (the
CLI, the MCP server, the Claude Code hook): the settings the client would answer under. The daemon
refuses a request whose settings differ from its own (`config_mismatch`) rather than answer it under
another redaction policy; a request without it (an older client) is answered under the daemon's.

Every method but notify, stop, status and forget may carry `"build": <fingerprint>` (remembrancer/build.py),
the code the client runs: the daemon refuses another build's request (`build_mismatch`), and every
answer, refusals included, carries the daemon's own fingerprint beside "id" (`"build": "1a2b…"`), so a
client can tell an answer from a daemon of another build (one older than build identities sends none).
`status` is answered whatever the client's build, and reports the daemon's (`daemon.build`).

Every method but notify, stop and forget may name its corpus: `"roots": [folders]` (opened on first use),
or `"within": folder` (the open corpus whose root holds that folder, else the open conversations of
the folder's project; a folder that merely holds corpora selects none; never opens one). Without either,
the daemon's default corpus (the roots it was started with) answers, as before corpora existed;
`status` without either lists the daemon and its corpora without opening any.

A request line is at most MAX_REQUEST_BYTES; a connection idle for IDLE_TIMEOUT_S is closed.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import struct
import sys
import time
import warnings

APP = "remembrancer"
MAX_REQUEST_BYTES = 1_000_000
IDLE_TIMEOUT_S = 30.0
METHODS = ("search", "read", "outline", "list", "history", "latest", "neighbors", "verify",
           "status", "notify", "reindex", "stop", "forget")
SOCKET_PATH_MAX = (108 if sys.platform.startswith("linux") else 104) - 1   # sun_path holds the path and its NUL


# -- where the socket is --------------------------------------------------------------------------

class SocketPathTooLong(ValueError):
    """A socket path AF_UNIX can never bind or reach; `var` is the environment variable it came from."""

    def __init__(self, path: str, var: str | None):
        self.path, self.var, self.length = path, var, len(os.fsencode(str(path)))
        super().__init__(f"the daemon socket path {path}" + (f" (from {var})" if var else "")
                         + f" is {self.length} bytes long; a Unix socket path may be at most "
                         f"{SOCKET_PATH_MAX} bytes")


def socket_path() -> str:
    """The user's daemon socket: $REMEMBRANCER_SOCKET, else $XDG_RUNTIME_DIR/remembrancer/daemon.sock,
    else platformdirs' runtime dir (which warns on every call without XDG_RUNTIME_DIR — a
    container, su, ssh — so the warning is silenced). SocketPathTooLong when it cannot be bound."""
    env = os.environ.get("REMEMBRANCER_SOCKET")
    if env:
        return check_socket_path(env, "REMEMBRANCER_SOCKET")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return check_socket_path(os.path.join(runtime, APP, "daemon.sock"), "XDG_RUNTIME_DIR")
    import platformdirs   # only here: a hook's start-up pays for it only without XDG_RUNTIME_DIR

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = platformdirs.user_runtime_dir()
    return check_socket_path(os.path.join(base, APP, "daemon.sock"), None)


def check_socket_path(path: str, var: str | None = "REMEMBRANCER_SOCKET") -> str:
    """`path`, or SocketPathTooLong when it is longer than AF_UNIX takes."""
    if len(os.fsencode(str(path))) > SOCKET_PATH_MAX:
        raise SocketPathTooLong(path, var)
    return path


# -- which settings --------------------------------------------------------------------------------

def config_file() -> str:
    """The config file this process reads: $REMEMBRANCER_CONFIG as given, else config.toml in the
    user's config dir (platformdirs, imported only then)."""
    env = os.environ.get("REMEMBRANCER_CONFIG")
    if env:
        return env
    import platformdirs

    return os.path.join(platformdirs.user_config_dir(APP), "config.toml")


def config_bytes() -> bytes | None:
    """The config file this process reads, as it is now: its bytes, None when there is none,
    `unreadable: <errno>` when it cannot be read (whoever loads it says why)."""
    try:
        with open(config_file(), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except OSError as e:   # a folder, no permission
        return f"unreadable: {e.errno}".encode()


def config_identity(content: bytes | None = None, *, read: bool = True) -> dict:
    """What a request says about the settings it expects to be answered under: the config file
    (absolute), the sha256 of its bytes (None: there is none) and the secret-hash file the
    environment names. Cheap (one small read): the hooks send it with every request. `read=False`:
    of `content`, the file as the caller already read it (the daemon: as it applied it)."""
    import hashlib

    content = config_bytes() if read else content
    hashes = os.environ.get("REMEMBRANCER_SECRET_HASHES", "").strip()
    return {"path": os.path.abspath(config_file()),
            "sha256": None if content is None else hashlib.sha256(content).hexdigest(),
            "secret_hashes": os.path.abspath(os.path.expanduser(hashes)) if hashes else None}


# -- framing --------------------------------------------------------------------------------------

class ProtocolError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class LineTooLong(Exception):
    """A request line over MAX_REQUEST_BYTES; `ended` says whether its newline was already read."""

    def __init__(self, ended: bool):
        super().__init__("request too large")
        self.ended = ended


def encode(obj: dict) -> bytes:
    """One protocol line; text that UTF-8 cannot carry (a lone surrogate) goes as a JSON escape,
    so the other side answers it with a structured error instead of this side crashing."""
    try:
        return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(obj, separators=(",", ":")) + "\n").encode("ascii")


def decode_request(line: bytes) -> tuple[object, str, dict]:
    """(id, method, params) from one request line, or ProtocolError with a clear message."""
    if len(line) > MAX_REQUEST_BYTES:
        raise ProtocolError("too_large", f"request over {MAX_REQUEST_BYTES} bytes")
    try:
        req = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError("malformed", f"request is not a JSON object on one line: {e}") from None
    if not isinstance(req, dict):
        raise ProtocolError("malformed", "request must be a JSON object")
    method = req.get("method")
    if method not in METHODS:
        raise ProtocolError("unknown_method", f"unknown method {method!r}; valid: {', '.join(METHODS)}")
    params = req.get("params") or {}
    if not isinstance(params, dict):
        raise ProtocolError("malformed", "params must be a JSON object")
    return req.get("id"), method, params


def read_request(sock: socket.socket, buf: bytearray, idle_s: float, request_s: float) -> bytes | None:
    """The next request line (buffered in `buf`), or None to drop the client: it hung up, sent
    nothing for `idle_s`, or took over `request_s` to send one line (a slow drip holds no thread
    for long). Past MAX_REQUEST_BYTES it raises LineTooLong at once, without waiting for a newline."""
    deadline = time.monotonic() + request_s if buf else None
    scanned = 0
    while True:
        nl = buf.find(b"\n", scanned)
        if nl >= 0:
            line = bytes(buf[:nl])
            del buf[:nl + 1]
            if len(line) > MAX_REQUEST_BYTES:
                raise LineTooLong(ended=True)
            return line
        if len(buf) > MAX_REQUEST_BYTES:
            raise LineTooLong(ended=False)
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


def skip_line(sock: socket.socket, buf: bytearray, request_s: float) -> bool:
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


# -- who is at the other end ----------------------------------------------------------------------

def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a connected Unix socket (Linux), else None."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    try:
        _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i")))
    except OSError:
        return None
    return uid


def check_socket_owner(path: str | os.PathLike) -> None:
    """Refuse a socket that belongs to another user: its answers could be anything, and it would
    learn our paths and prompts."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DaemonUnavailable(f"no daemon socket at {path}") from None
    except OSError as e:
        raise DaemonUnavailable(f"cannot stat {path}: {e.strerror}") from None
    if st.st_uid != os.getuid():
        raise DaemonUnavailable(f"socket {path} belongs to uid {st.st_uid}, not you; refusing to use it")


# -- the client -----------------------------------------------------------------------------------

class DaemonUnavailable(Exception):
    """No daemon answers on the socket (not running, stale socket, refused, or too slow)."""


class DaemonError(Exception):
    """The daemon answered with a structured error."""

    def __init__(self, error: dict):
        super().__init__(error.get("message", "daemon error"))
        self.error = error


class Client:
    """One connection to the daemon, opened on first use. `timeout` bounds each socket operation;
    `deadline` (time.monotonic()), when given, bounds everything this client does — a hook's budget."""

    def __init__(self, path: str | os.PathLike, timeout: float | None = 30.0, deadline: float | None = None):
        self.path = os.fspath(path)
        self.timeout = timeout
        self.deadline = deadline
        self._ids = itertools.count(1)
        self._sock: socket.socket | None = None
        self._buf = b""
        self._reused = False
        self.build: str | None = None   # the build fingerprint the last answer carried (None: an older daemon)

    def _op_timeout(self) -> float | None:
        if self.deadline is None:
            return self.timeout
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise DaemonUnavailable("the daemon did not answer in time")
        return left if self.timeout is None else min(left, self.timeout)

    def _connect(self) -> socket.socket:
        if self._sock is None:
            check_socket_owner(self.path)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.settimeout(self._op_timeout())
                s.connect(self.path)
            except OSError as e:
                s.close()
                raise DaemonUnavailable(f"no daemon on {self.path} ({e.strerror or e})") from None
            except DaemonUnavailable:
                s.close()
                raise
            uid = peer_uid(s)  # the file's owner can be raced or faked; the listening process cannot
            if uid is not None and uid != os.getuid():
                s.close()
                raise DaemonUnavailable(f"the process serving {self.path} runs as uid {uid}, not you; "
                                        "refusing to use it")
            self._sock = s
        return self._sock

    def call(self, method: str, **params) -> dict:
        """Send one request and wait for its response; raises DaemonError for an error response.

        A connection the daemon closed (idle timeout) is reopened once: every method is safe to
        repeat (reads, or notifications that only queue work)."""
        try:
            return self._call(method, params)
        except DaemonUnavailable:
            if self._sock is None and self._reused:
                return self._call(method, params)
            raise

    def send(self, method: str, **params) -> None:
        """Send one request whose answer does not matter (a hook's notification): it is still read
        until the deadline, so the daemon does not write into a closed socket."""
        s = self._connect()
        try:
            s.sendall(encode({"id": next(self._ids), "method": method, "params": params}))
        except OSError as e:
            self.close()
            raise DaemonUnavailable(f"could not send {method} ({e})") from None
        try:
            self._read_line(method)
        except DaemonUnavailable:
            pass   # sent is what counts; a slow answer is the daemon's business

    def _call(self, method: str, params: dict) -> dict:
        self._reused = self._sock is not None
        s = self._connect()
        try:
            s.sendall(encode({"id": next(self._ids), "method": method, "params": params}))
        except OSError as e:
            self.close()
            raise DaemonUnavailable(f"daemon did not answer {method} ({e})") from None
        resp = json.loads(self._read_line(method))
        self.build = resp.get("build")
        if not resp.get("ok"):
            raise DaemonError(resp.get("error") or {})
        return resp["result"]

    def _read_line(self, method: str) -> bytes:
        s = self._sock
        try:
            while b"\n" not in self._buf:
                s.settimeout(self._op_timeout())
                chunk = s.recv(1 << 16)
                if not chunk:
                    raise DaemonUnavailable("daemon closed the connection")
                self._buf += chunk
        except DaemonUnavailable:
            self.close()
            raise
        except OSError as e:  # includes socket.timeout
            self.close()
            raise DaemonUnavailable(f"daemon did not answer {method} ({e})") from None
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None
                self._buf = b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def ping(path: str | os.PathLike, timeout: float = 2.0) -> dict | None:
    """The daemon's status if one answers, else None."""
    try:
        with Client(path, timeout=timeout) as c:
            return c.call("status")
    except (DaemonUnavailable, DaemonError, ValueError):
        return None
