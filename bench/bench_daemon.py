"""Daemon benchmark (issue: always fresh): run on demand, never in CI.

    .venv/bin/python bench/bench_daemon.py [--corpus ../shared/eval/corpora/mm-v2] [--edits 20]

Prints, for a real daemon process on a real socket over a copy of the corpus (a git repo with
the hooks installed):
- save → searchable: atomic save of a one-section edit, until `search` over the socket returns it
- commit → searchable: the same through `git commit` (the post-commit hook notifies)
- MCP search round trip p50/p95 through the SDK's stdio client (vs a direct socket call, the baseline)
- daemon RSS idle and its peak while indexing; idle CPU over 60 s
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
from bench.procstat import cpu_seconds, peak_rss_mb, rss_mb  # noqa: E402
from remembrancer.indexer.search.evaluate import percentile  # noqa: E402  (nearest rank, one definition)
EVAL = PROJECT.parent / "shared" / "eval"

from remembrancer.wire import Client  # noqa: E402


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@x"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def until_found(c: Client, word: str, timeout: float = 30.0) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        out = c.call("search", query=word, limit=3, exact=True)
        if out["results"]:
            return time.perf_counter() - t0
        time.sleep(0.02)
    raise TimeoutError(word)


async def mcp_round_trips(env: dict, root: Path, n: int, queries: list[str]) -> list[float]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "remembrancer", "mcp", "--root", str(root)],
                                   env=env, cwd=str(PROJECT))
    times = []
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        for i in range(n):
            t0 = time.perf_counter()
            await s.call_tool("search", {"query": queries[i % len(queries)]})
            times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(EVAL / "corpora" / "mm-v2"))
    ap.add_argument("--queries", default=str(EVAL / "queries" / "mm-v2.dev.jsonl"))
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--idle", type=float, default=60.0)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="remembrancer-dbench-"))
    root = tmp / "corpus"
    shutil.copytree(args.corpus, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-qm", "import")
    sock = tmp / "run" / "d.sock"
    env = {**os.environ, "REMEMBRANCER_DATA_DIR": str(tmp / "data"), "REMEMBRANCER_SOCKET": str(sock),
           "REMEMBRANCER_CONFIG": str(tmp / "none.toml")}
    os.environ.update(env)
    from remembrancer.hooks.install import install_hooks

    install_hooks(root)
    proc = subprocess.Popen([sys.executable, "-m", "remembrancer", "serve", "--root", str(root)], env=env,
                            stdout=subprocess.DEVNULL, stderr=open(tmp / "daemon.log", "w"))
    t0 = time.perf_counter()
    while not sock.exists():
        time.sleep(0.05)
    c = Client(sock, timeout=60)
    while True:
        st = c.call("status")
        if st["freshness"]["verdict"] == "fresh" and not st["daemon"]["ingesting"] and st["documents"]:
            break
        time.sleep(0.2)
    print(f"first index through the daemon: {time.perf_counter() - t0:.1f} s, "
          f"{st['documents']} docs, {st['vectors']} vectors; peak RSS while indexing {peak_rss_mb(proc.pid):.0f} MB")
    files = sorted(root.rglob("*.md"))
    saves, commits = [], []
    for i in range(args.edits):
        f = files[(i * 7) % len(files)]
        word = f"zqsave{i}x"
        tmpf = f.with_name(f".{f.name}.tmp")
        tmpf.write_text(f.read_text() + f"\n\n## Bench note {i}\n\nMarker {word} for the benchmark.\n")
        os.replace(tmpf, f)
        saves.append(until_found(c, word))
        word = f"zqcommit{i}x"
        g = files[(i * 11 + 3) % len(files)]
        g.write_text(g.read_text() + f"\n\n## Commit note {i}\n\nMarker {word}.\n")
        git(root, "commit", "-qam", f"edit {i}")
        commits.append(until_found(c, word))
    for name, xs in (("save → searchable", saves), ("commit → searchable", commits)):
        print(f"{name:<20} p50 {percentile(xs, 50) * 1000:6.0f} ms  p95 {percentile(xs, 95) * 1000:6.0f} ms  (n={len(xs)})")

    queries = [json.loads(line)["query"] for line in open(args.queries) if line.strip()]
    direct = []
    for q in queries:
        t = time.perf_counter()
        c.call("search", query=q)
        direct.append((time.perf_counter() - t) * 1000)
    mcp = asyncio.run(mcp_round_trips(env, root, len(queries), queries))
    print(f"socket search        p50 {percentile(direct, 50):6.1f} ms  p95 {percentile(direct, 95):6.1f} ms  (baseline)")
    print(f"MCP search (stdio)   p50 {percentile(mcp, 50):6.1f} ms  p95 {percentile(mcp, 95):6.1f} ms  "
          f"({statistics.median(mcp) / statistics.median(direct):.2f}× the socket p50)")

    c.close()
    time.sleep(3)
    cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
    time.sleep(args.idle)
    cpu = (cpu_seconds(proc.pid) - cpu0) / (time.monotonic() - t0) * 100
    print(f"idle: RSS {rss_mb(proc.pid):.0f} MB, CPU {cpu:.2f} % over {args.idle:.0f} s")
    proc.terminate()
    proc.wait(10)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
