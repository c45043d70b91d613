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
