"""A live process's memory and CPU time, read from /proc (Linux): what the benches measure of a
daemon, a child or themselves, one definition for all of them."""

from __future__ import annotations

import os
from pathlib import Path


def _status_mb(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def rss_mb(pid: int) -> float:
    """Resident memory now (VmRSS), MB."""
    return _status_mb(pid, "VmRSS")


def peak_rss_mb(pid: int) -> float:
    """Peak resident memory so far (VmHWM), MB."""
    return _status_mb(pid, "VmHWM")


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) the process has used: the figure a loaded machine does not
    inflate the way it inflates wall time."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 2)


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process, of its children that exited (reaped: its cutime/cstime) and of
    its live children: what a server's whole process tree used (a PostgreSQL postmaster's
    backends and workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = sum(int(x) for x in fields[11:15])
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            f = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue   # exited meanwhile: its time is in the parent's reaped total, or soon will be
        if int(f[1]) == pid:
            total += int(f[11]) + int(f[12])
    return round(total / tick, 2)
