"""One writer per index, enforced on its directory, and one daemon per data dir.

An flock on a file (`writer.lock` in an index directory, `daemon.lock` in the data dir) held for
as long as the writer lives; a `kill -9` releases it. The holder writes who it is into the file,
so the one refused can say who to ask or wait for. A socket lock alone let a `serve` on another
socket (a client with a bare environment) become a second writer of the same index, and
`remembrancer index` ran beside the daemon: tantivy's own lock covers only its writer, the
catalog and the vector file had none (LockBusy, rebuilt vector files, false "damaged" catalogs).

Within one process the lock is counted, not taken twice: flock locks conflict between two
opens of the same file even in one process, and the daemon or the CLI may open an engine on an
index it already holds.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import threading
from pathlib import Path
from typing import Callable

from remembrancer.indexer.errors import UserError

WRITER_LOCK = "writer.lock"   # in an index directory (catalog.move_aside leaves it in place)
DAEMON_LOCK = "daemon.lock"   # in the data dir

_me: dict = {"by": "index"}   # who this process is, as the lock files say it (the CLI: its command)
_held: dict[str, list] = {}   # real path → [fd, count]
_guard = threading.RLock()   # re-entrant: a Held collected (`__del__`) while this thread holds it


def identify(**info) -> None:
    """Say what this process is in the locks it takes (the daemon: by="daemon", socket=...)."""
    _me.update(info)


def holder(path: Path) -> dict | None:
    """Who holds the lock at `path` as it wrote itself there, or None (free, or not yet written)."""
    try:
        info = json.loads(Path(path).read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and isinstance(info.get("pid"), int) else None


def writing(path: Path) -> dict | None:
    """Who holds the lock at `path`, if a live process says it does. Only reads the file: probing
    with flock could make the holder's own attempt fail."""
    info = holder(path)
    if info is None:
        return None
    try:
        os.kill(info["pid"], 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return info


def describe(info: dict | None) -> str:
    """The holder, for a message: 'the daemon (pid 12, socket /run/…/daemon.sock)'."""
    if not info:
        return "another process"
    if info.get("by") == "daemon":
        return f"the daemon (pid {info['pid']}, socket {info.get('socket', '?')})"
    return f"`remembrancer {info.get('by', 'index')}` (pid {info['pid']})"


class Busy(UserError):
    """Another process holds the lock; `holder` is what it wrote there (or None)."""

    def __init__(self, message: str, holder_info: dict | None, hint: str):
        super().__init__(message, code="index_busy", hint=hint)
        self.holder = holder_info


class Held:
    def __init__(self, key: str):
        self._key = key
        self._released = False

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        with _guard:
            entry = _held[self._key]
            entry[1] -= 1
            if entry[1] == 0:
                del _held[self._key]
                with contextlib.suppress(OSError):
                    os.ftruncate(entry[0], 0)   # free: nobody to name (a kill -9 leaves a dead pid: `writing`)
                os.close(entry[0])   # closing the descriptor releases the flock

    __del__ = release   # an engine that failed half-way through its open lets go of it too


def acquire(path: Path, what: str, *, wait: Callable[[dict | None], None] | None = None,
            info: dict | None = None) -> Held:
    """Hold the lock at `path` exclusively. Taken by another process: `Busy` naming it (`what`
    names the thing locked, for the message) — or, with `wait`, `wait(holder)` once and then
    block until it is free. `info` adds to what the lock file says about this process."""
    path = Path(path)
    key = os.path.realpath(path)
    with _guard:   # held while trying: two threads of this process never race for one file
        if key in _held:
            _held[key][1] += 1
            return Held(key)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
        else:
            return _took(key, fd, info)
        other = holder(path)
        if wait is None:
            os.close(fd)
            raise Busy(f"{what} is being written by {describe(other)}", other,
                       hint="try again when it ends (`remembrancer index` with a daemon running asks the daemon)")
    try:   # outside the guard: this process's own releases must not wait behind it
        wait(other)
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    with _guard:
        return _took(key, fd, info)


def _took(key: str, fd: int, info: dict | None) -> Held:
    """Record the lock as held by this process and say so in its file (called under _guard). A
    full disk leaves the file unsaid: the lock holds, the refused only cannot name its holder."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), **_me, **(info or {})}).encode(), 0)
    except OSError:
        pass
    _held[key] = [fd, 1]
    return Held(key)
