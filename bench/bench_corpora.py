"""What one daemon for every corpus saves: resident memory of one daemon serving N corpora against
N daemons of one corpus each (the baseline, what a second project cost before), all with the real
default model, and the one daemon's memory after its corpora were released for being idle.

    .venv/bin/python bench/bench_corpora.py [--corpora 2] [--idle 3]

Each corpus is a copy of examples/notes. RSS is read from /proc (Linux).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
from bench.procstat import rss_mb  # noqa: E402
from remembrancer.wire import Client  # noqa: E402


def call(sock: Path, method: str, **params):
    with Client(sock, timeout=60) as c:
        return c.call(method, **params)


def wait_fresh(sock: Path, roots: list[str], timeout: float = 600) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            st = call(sock, "status", roots=roots)
            if st["freshness"]["verdict"] == "fresh" and not st["daemon"]["ingesting"] and st["documents"]:
                call(sock, "search", roots=roots, query="restore the database")   # the model is used
                return st
        except Exception:
            pass
        time.sleep(0.3)
    raise SystemExit(f"{roots} not fresh in {timeout}s")


def start(env: dict, sock: Path, *extra: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-m", "remembrancer", "serve", *extra],
                         env={**env, "REMEMBRANCER_SOCKET": str(sock)}, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return p


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=int, default=2)
    ap.add_argument("--idle", type=float, default=3.0, help="--corpus-idle of the shared daemon")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="rmb-corp-", dir="/tmp"))
    env = {**os.environ, "REMEMBRANCER_DATA_DIR": str(tmp / "data"), "REMEMBRANCER_CONFIG": str(tmp / "none.toml")}
    roots = []
    for i in range(args.corpora):
        shutil.copytree(PROJECT / "examples" / "notes", tmp / f"notes{i}")
        roots.append(str(tmp / f"notes{i}"))
    procs = []
    try:
        # baseline: one daemon per corpus
        singles = []
        for i, r in enumerate(roots):
            sock = tmp / f"single{i}.sock"
            p = start(env, sock, "--root", r)
            procs.append(p)
            singles.append((p, sock, r))
        for p, sock, r in singles:
            wait_fresh(sock, [r])
        per_corpus = [rss_mb(p.pid) for p, _, _ in singles]
        for p, _, _ in singles:
            p.send_signal(signal.SIGTERM)
            p.wait(30)
        # one daemon for all of them
        sock = tmp / "shared.sock"
        shared = start(env, sock, "--corpus-idle", str(args.idle))
        procs.append(shared)
        for r in roots:
            wait_fresh(sock, [r])
        both = rss_mb(shared.pid)
        loads = call(sock, "status")["daemon"]["model_loads"]
        deadline = time.monotonic() + args.idle * 10 + 30
        while time.monotonic() < deadline:
            if all(c["state"] == "closed" for c in call(sock, "status")["corpora"]):
                break
            time.sleep(0.5)
        released = rss_mb(shared.pid)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    total = sum(per_corpus)
    print(f"{args.corpora} daemons, one corpus each (baseline): {total:7.1f} MB RSS in all "
          f"({', '.join(f'{x:.1f}' for x in per_corpus)})")
    print(f"1 daemon, {args.corpora} corpora:                     {both:7.1f} MB RSS "
          f"({both / total:.2f}x the baseline), model loaded {loads}x")
    print(f"  after its idle corpora were released:     {released:7.1f} MB RSS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
