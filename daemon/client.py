"""A client of the daemon's socket (used by the CLI, the MCP server and the git hooks)."""

from __future__ import annotations

import itertools
import json
import os
import socket
import struct
from pathlib import Path

from . import protocol


class DaemonUnavailable(Exception):
    """No daemon answers on the socket (not running, stale socket, or refused)."""


class DaemonError(Exception):
    """The daemon answered with a structured error."""

    def __init__(self, error: dict):
        super().__init__(error.get("message", "daemon error"))
        self.error = error


class Client:
    def __init__(self, path: Path, timeout: float = 30.0):
        self.path = Path(path)
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._sock: socket.socket | None = None
        self._buf = b""
        self._reused = False

    def _connect(self) -> socket.socket:
        if self._sock is None:
            check_socket_owner(self.path)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(self.timeout)
            try:
                s.connect(str(self.path))
            except OSError as e:
                s.close()
                raise DaemonUnavailable(f"no daemon on {self.path} ({e.strerror or e})") from None
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

    def _call(self, method: str, params: dict) -> dict:
        self._reused = self._sock is not None
        s = self._connect()
        rid = next(self._ids)
        try:
            s.sendall(encode_ascii_safe({"id": rid, "method": method, "params": params}))
            while b"\n" not in self._buf:
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
        resp = json.loads(line)
        if not resp.get("ok"):
            raise DaemonError(resp.get("error") or {})
        return resp["result"]

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


def encode_ascii_safe(obj: dict) -> bytes:
    """One protocol line; text that UTF-8 cannot carry (a lone surrogate) goes as a JSON escape,
    so the other side answers it with a structured error instead of this side crashing."""
    try:
        return protocol.encode(obj)
    except UnicodeEncodeError:
        return (json.dumps(obj, separators=(",", ":")) + "\n").encode("ascii")


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


def check_socket_owner(path: Path) -> None:
    """Refuse a socket that belongs to another user: its answers could be anything."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DaemonUnavailable(f"no daemon socket at {path}") from None
    except OSError as e:
        raise DaemonUnavailable(f"cannot stat {path}: {e.strerror}") from None
    if st.st_uid != os.getuid():
        raise DaemonUnavailable(f"socket {path} belongs to uid {st.st_uid}, not you; refusing to use it")


def ping(path: Path, timeout: float = 2.0) -> dict | None:
    """The daemon's status if one answers, else None."""
    try:
        with Client(path, timeout=timeout) as c:
            return c.call("status")
    except (DaemonUnavailable, DaemonError, ValueError):
        return None


def process_alive(pid: int) -> bool:
    """A running process (a zombie — exited, not yet reaped — counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True

