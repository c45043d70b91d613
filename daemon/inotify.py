"""inotify's limits, and a watcher of one root that watches as much of it as they allow.

Linux gives each user a number of inotify watches — one per watched folder —
(`fs.inotify.max_user_watches`; inside a user namespace also that namespace's
/proc/sys/user/max_inotify_watches, the lower of the two holding). When a root has more folders
than are left, `inotify_add_watch` fails with ENOSPC, whose text is "No space left on device": it
is not a full disk, and is never reported as one (catalog.store_fault asks `is_watch_limit`).

watchdog's recursive watch of a root is all or nothing there, so a root it cannot watch whole is
handed to `PartialWatch`: its own inotify instance, folder by folder, breadth first (the folders
nearest the root first), until the limit; the folders left over are listed (`unwatched`). The
daemon rescans those every FALLBACK_RESCAN_S and before each answer (daemon/corpora.py), so an
answer is never called fresh over a change it could not see, and says which folders these are
and which limit to raise.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import os
import select
import struct
import sys
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

log = logging.getLogger(__name__)

WATCHES_SYSCTL = "fs.inotify.max_user_watches"
WATCHES_FILE = "/proc/sys/fs/inotify/max_user_watches"
USERNS_WATCHES_FILE = "/proc/sys/user/max_inotify_watches"   # this user namespace's own limit
INSTANCES_SYSCTL = "fs.inotify.max_user_instances"
INSTANCES_FILE = "/proc/sys/fs/inotify/max_user_instances"
SUGGESTED_WATCHES = 524288
LIMIT_ERRNOS = (errno.ENOSPC, errno.EMFILE)   # out of watches; out of inotify instances

# inotify(7)
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED = 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_EXCL_UNLINK, IN_ISDIR = 0x01000000, 0x02000000, 0x04000000, 0x40000000
MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)
_EVENT = struct.Struct("iIII")   # wd, mask, cookie, len; then `len` bytes of NUL-padded name


# -- the limits -------------------------------------------------------------------------------------
def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


@dataclass
class Limits:
    watches: int | None          # fs.inotify.max_user_watches
    userns_watches: int | None   # /proc/sys/user/max_inotify_watches (None: not present)
    instances: int | None        # fs.inotify.max_user_instances

    @property
    def effective(self) -> int | None:
        """The number of watches this user may hold here: the lower of the two limits."""
        known = [n for n in (self.watches, self.userns_watches) if n is not None]
        return min(known) if known else None

    @property
    def namespace_binds(self) -> bool:
        """Whether the user namespace's own limit is the lower one (a container, `unshare -U`)."""
        return self.userns_watches is not None and (self.watches is None or self.userns_watches < self.watches)

    def describe(self) -> str:
        out = f"{WATCHES_SYSCTL} = {self.watches:,}" if self.watches is not None else f"{WATCHES_SYSCTL} unknown"
        if self.namespace_binds:
            out += f"; this user namespace's {USERNS_WATCHES_FILE} = {self.userns_watches:,} (the lower one holds)"
        return out

    def fix(self, needed: int | None = None) -> str:
        """How to raise the limit that binds."""
        want = max(SUGGESTED_WATCHES, 2 * needed if needed else 0)
        out = (f"raise the inotify watch limit: sudo sysctl {WATCHES_SYSCTL}={want} (to keep it across reboots, "
               f"put the line {WATCHES_SYSCTL}={want} in /etc/sysctl.d/90-inotify.conf)")
        if self.namespace_binds:
            out += (f"; inside this user namespace the limit is {USERNS_WATCHES_FILE}: the namespace's owner "
                    f"raises it with `echo {want} > {USERNS_WATCHES_FILE}`")
        return out


def limits() -> Limits | None:
    """This machine's inotify limits; None where there is no inotify (not Linux)."""
    if not sys.platform.startswith("linux") or not Path(WATCHES_FILE).exists():
        return None
    return Limits(_read_int(WATCHES_FILE), _read_int(USERNS_WATCHES_FILE), _read_int(INSTANCES_FILE))


def is_watch_limit(exc: BaseException | None) -> OSError | None:
    """The OSError in `exc`'s chain that is inotify running out of watches or instances (its
    ENOSPC reads "No space left on device"), or None."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno in LIMIT_ERRNOS and (
                isinstance(exc, WatchLimit) or "inotify" in str(exc).lower()):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


class WatchLimit(OSError):
    """inotify_add_watch's ENOSPC (or inotify_init1's EMFILE), named for what it is."""

    def __init__(self, err: int, path: str | None = None):
        what = "inotify watch limit reached" if err == errno.ENOSPC else "inotify instance limit reached"
        super().__init__(err, what, path)


def limit_message(err: OSError | None = None) -> str:
    """What ran out, and the limit's current value(s)."""
    lim = limits()
    if err is not None and err.errno == errno.EMFILE:
        n = lim.instances if lim else None
        return f"the inotify instance limit is reached ({INSTANCES_SYSCTL} = {n if n is not None else '?'})"
    return "the inotify watch limit is reached" + (f" ({lim.describe()})" if lim else "")


def limit_fix(err: OSError | None = None, needed: int | None = None) -> str:
    if err is not None and err.errno == errno.EMFILE:
        return f"raise it: sudo sysctl {INSTANCES_SYSCTL}=1024"
    lim = limits()
    return lim.fix(needed) if lim else f"raise {WATCHES_SYSCTL}"


def watches_in_use(skip_pids: set[int] = frozenset()) -> tuple[int, int] | None:
    """(watches, processes): the inotify watches this user's processes hold now (their fdinfo), but
    those of `skip_pids`; None when /proc cannot tell."""
    uid, total, procs = os.getuid(), 0, 0
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    for pid in pids:
        if int(pid) in skip_pids:
            continue
        base = f"/proc/{pid}"
        try:
            if os.stat(base).st_uid != uid:
                continue
            fds = os.listdir(f"{base}/fd")
        except OSError:
            continue
        held = 0
        for fd in fds:
            try:
                if os.readlink(f"{base}/fd/{fd}") != "anon_inode:inotify":
                    continue
                with open(f"{base}/fdinfo/{fd}", encoding="ascii", errors="replace") as f:
                    held += sum(1 for line in f if line.startswith("inotify wd:"))
            except OSError:
                continue
        if held:
            total, procs = total + held, procs + 1
    return total, procs


# -- the libc calls ---------------------------------------------------------------------------------
_libc = None


def _lib():
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        lib.inotify_init1.argtypes = [ctypes.c_int]
        lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        lib.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        _libc = lib
    return _libc


def add_watch(fd: int, path: str, mask: int = MASK) -> int:
    """inotify_add_watch(2): the watch descriptor; OSError with the call's errno on failure (a
    WatchLimit for ENOSPC). The one seam every watch PartialWatch adds goes through."""
    wd = _lib().inotify_add_watch(fd, os.fsencode(path), mask)
    if wd < 0:
        err = ctypes.get_errno()
        if err == errno.ENOSPC:
            raise WatchLimit(err, path)
        raise OSError(err, os.strerror(err), path)
    return wd


def _init() -> int:
    fd = _lib().inotify_init1(os.O_CLOEXEC | os.O_NONBLOCK)
    if fd < 0:
        err = ctypes.get_errno()
        if err == errno.EMFILE:
            raise WatchLimit(err)
        raise OSError(err, os.strerror(err))
    return fd


# -- the partial watcher ----------------------------------------------------------------------------
class PartialWatch:
    """One root, watched folder by folder with an inotify instance of its own, as far as the limit
    allows. `emit(path, is_dir)` is told of every change (from its own thread); `overflow()` when
    the kernel dropped events. Folders in `skip` (by name) are not watched; `.git` gets a watch on
    its `info` folder only (a repository's own ignore list lives there)."""

    def __init__(self, root: Path, emit: Callable[[str, bool], None], overflow: Callable[[], None],
                 skip: frozenset[str] = frozenset()):
        self.root = str(root)
        self.emit = emit
        self.overflow = overflow
        self.skip = skip
        self.error: OSError | None = None      # the limit error that left folders unwatched
        self._lock = threading.Lock()
        self._paths: dict[int, str] = {}       # wd → folder
        self._wds: dict[str, int] = {}         # folder → wd
        self._unwatched: set[str] = set()      # top-most folders not watched (with all they hold)
        self._stop_r, self._stop_w = os.pipe()
        self.fd: int | None = None
        try:
            self.fd = _init()
        except OSError as e:   # no inotify instance left: nothing is watched, all is rescanned
            self.error = e
            self._unwatched.add(self.root)
        else:
            self._watch([(self.root, True)])
        self._thread = threading.Thread(target=self._run, name=f"inotify {root.name}", daemon=True)
        self._thread.start()

    # what is watched
    def unwatched(self) -> list[str]:
        with self._lock:
            return sorted(self._unwatched)

    def watched(self) -> int:
        with self._lock:
            return len(self._wds)

    def retry(self) -> None:
        """Try again to watch the folders left unwatched (the limit may have been raised)."""
        with self._lock:
            if not self._unwatched:
                return
            if self.fd is None:
                try:
                    self.fd = _init()
                except OSError:
                    return
            todo = sorted(self._unwatched, key=lambda p: (p.count(os.sep), p))
            self._unwatched.clear()
            self.error = None
        self._watch([(p, True) for p in todo])

    def _watch(self, tops: list[tuple[str, bool]]) -> None:
        """Watch these folders and (when `descend`) every folder below them, breadth first; at the
        limit, the folder that failed and every one still waiting are recorded as unwatched."""
        todo = deque(tops)
        with self._lock:
            while todo:
                folder, descend = todo.popleft()
                if folder in self._wds:
                    pass
                elif self.fd is None:
                    self._unwatched.add(folder)
                    continue
                else:
                    try:
                        wd = add_watch(self.fd, folder)
                    except OSError as e:
                        if e.errno in LIMIT_ERRNOS:
                            self.error = e
                            self._unwatched.add(folder)
                            self._unwatched.update(f for f, _ in todo)
                            return
                        continue   # gone, not a folder, unreadable: nothing to watch there
                    old = self._paths.get(wd)
                    if old is not None and old != folder:   # the same folder under a name it had
                        self._wds.pop(old, None)
                    self._paths[wd], self._wds[folder] = folder, wd
                if not descend:
                    continue
                try:
                    with os.scandir(folder) as it:
                        subs = sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
                except OSError:
                    continue
                for name in subs:
                    if name == ".git":
                        info = os.path.join(folder, name, "info")
                        if os.path.isdir(info):
                            todo.append((info, False))
                    elif name not in self.skip:
                        todo.append((os.path.join(folder, name), True))

    def _forget(self, folder: str) -> None:
        """A folder deleted or moved away: its watches (and its unwatched entries) go."""
        prefix = folder.rstrip(os.sep) + os.sep
        with self._lock:
            for path in [p for p in self._wds if p == folder or p.startswith(prefix)]:
                wd = self._wds.pop(path)
                self._paths.pop(wd, None)
                if self.fd is not None:
                    _lib().inotify_rm_watch(self.fd, wd)   # gone already (deleted): EINVAL, ignored
            self._unwatched = {p for p in self._unwatched if not (p == folder or p.startswith(prefix))}

    # the events
    def _run(self) -> None:
        if self.fd is None:
            return
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        poller.register(self._stop_r, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if self._stop_r in ready:
                return
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                return
            try:
                self._handle(data)
            except Exception:   # a bug here must not end the watching: the rescan covers what it missed
                log.exception("inotify event handling failed")
                self.overflow()

    def _handle(self, data: bytes) -> None:
        i = 0
        while i + _EVENT.size <= len(data):
            wd, mask, _cookie, n = _EVENT.unpack_from(data, i)
            name = data[i + _EVENT.size:i + _EVENT.size + n].rstrip(b"\0")
            i += _EVENT.size + n
            if mask & IN_Q_OVERFLOW:
                self.overflow()
                continue
            with self._lock:
                base = self._paths.get(wd)
                if mask & IN_IGNORED and base is not None:
                    self._paths.pop(wd, None)
                    if self._wds.get(base) == wd:
                        del self._wds[base]
            if base is None or mask & IN_IGNORED:
                continue
            if not name:   # the watched folder itself
                if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                    self.emit(base, True)
                continue
            path = os.path.join(base, os.fsdecode(name))
            is_dir = bool(mask & IN_ISDIR)
            if is_dir and mask & (IN_CREATE | IN_MOVED_TO):
                if os.path.basename(path) not in self.skip and os.path.basename(path) != ".git":
                    self._watch([(path, True)])
            elif is_dir and mask & (IN_MOVED_FROM | IN_DELETE):
                self._forget(path)
            elif is_dir and not mask & (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE):
                continue   # a folder's own attributes: its children have their own events
            self.emit(path, is_dir)

    def stop(self) -> None:
        os.write(self._stop_w, b"x")
        self._thread.join(timeout=5)
        with self._lock:
            if self.fd is not None:
                os.close(self.fd)   # every watch goes with the instance
                self.fd = None
            self._paths.clear()
            self._wds.clear()
        os.close(self._stop_r)
        os.close(self._stop_w)
