"""inotify's limits, named: what ran out, the value that holds, and how to raise it.

Linux gives each user a number of inotify watches — one per watched folder —
(`fs.inotify.max_user_watches`; inside a user namespace also that namespace's
/proc/sys/user/max_inotify_watches, the lower of the two holding). When a root has more folders
than are left, `inotify_add_watch` fails with ENOSPC, whose text is "No space left on device": it
is not a full disk, and is never reported as one (catalog.store_fault asks `is_watch_limit`).
The watcher polls such a root instead (daemon/watch.py); this module says why, and the fix.
"""

from __future__ import annotations

import errno
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from remembrancer.indexer.store.local.catalog import is_inotify_limit

WATCHES_SYSCTL = "fs.inotify.max_user_watches"
WATCHES_FILE = "/proc/sys/fs/inotify/max_user_watches"
USERNS_WATCHES_FILE = "/proc/sys/user/max_inotify_watches"   # this user namespace's own limit
INSTANCES_SYSCTL = "fs.inotify.max_user_instances"
INSTANCES_FILE = "/proc/sys/fs/inotify/max_user_instances"
SUGGESTED_WATCHES = 524288
# A root past the limit is polled (daemon/watch.py): a stat walk of it this often, ~40 ms of CPU per
# 3,000 files (docs/limits.md), 0.4 % of a core. Answers do not wait for it: they walk the root first.
POLL_S = 10.0


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
    """The OSError in `exc`'s chain that is inotify running out of watches or instances (watchdog
    words them "inotify watch limit reached" / "inotify instance limit reached"), or None."""
    seen = 0
    while exc is not None and seen < 8:
        if is_inotify_limit(exc):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


@dataclass(frozen=True)
class LimitReport:
    """An inotify limit that ran out, as the log, status, doctor and the CLI's error say it."""
    message: str   # what ran out, and the limit's current value(s)
    fix: str       # how to raise it


def limit_report(err: OSError | None = None) -> LimitReport:
    """What ran out (`err`: EMFILE for instances, else watches) and its fix, from one reading of the
    limits (/proc), so the value named and the value the fix raises are the same reading."""
    lim = limits()
    if err is not None and err.errno == errno.EMFILE:
        n = lim.instances if lim and lim.instances is not None else "?"
        return LimitReport(f"the inotify instance limit is reached ({INSTANCES_SYSCTL} = {n})",
                           f"raise it: sudo sysctl {INSTANCES_SYSCTL}=1024")
    return LimitReport("the inotify watch limit is reached" + (f" ({lim.describe()})" if lim else ""),
                       lim.fix() if lim else f"raise {WATCHES_SYSCTL}")


def watches_in_use(skip_pids: set[int] = frozenset()) -> int | None:
    """The inotify watches this user's processes hold now (their fdinfo), but those of `skip_pids`;
    None when /proc cannot tell."""
    uid, total = os.getuid(), 0
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
        total += held
    return total
