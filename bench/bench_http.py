"""The MCP tools over HTTP (`serve-http`) against the same tools over stdio, in the same run.

One corpus (a dev set's, or examples/notes) is indexed once; a `remembrancer mcp` stdio session and
a `serve-http` endpoint (a bearer token) then answer the set's questions, each question's fastest
of `--repeat`, through the SDK's clients — both reach the same daemon. Then `--clients` HTTP
sessions at once, each asking `--each` questions: errors, wall time, p95.

With `--store` the same over a team store (a throw-away pgserver PostgreSQL, written once by
`index --store`): stdio is `mcp --store`, HTTP `serve-http --store`, and the server's connections
(pg_stat_activity, sampled every 20 ms) are counted — an idle stdio reader's, and the most the
HTTP endpoint held while the clients asked.

    .venv/bin/python bench/bench_http.py [--eval-dir ../shared/eval] [--set memory-dev] [--repeat 3]
        [--clients 64] [--each 3] [--store]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eval-dir", default=str(ROOT.parent / "shared" / "eval"))
    ap.add_argument("--set", default="memory-dev")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--each", type=int, default=3)
    ap.add_argument("--store", action="store_true", help="over a team store (a throw-away PostgreSQL)")
    args = ap.parse_args()
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from tests.mcp.test_mcp_http import over_http

    eval_dir = Path(args.eval_dir)
    corpus = eval_dir / "corpora" / args.set
    queries = next((q for q in (eval_dir / "queries" / f"{args.set}{s}.jsonl" for s in ("", ".dev")) if q.is_file()), None)
    if not corpus.is_dir() or queries is None:
        corpus, questions = ROOT / "examples" / "notes", ["how do I restore the database from a backup",
                                                          "pgbouncer", "what runs on db1", "disk full"]
    else:
        questions = [json.loads(line)["query"] for line in queries.read_text().splitlines() if line.strip()]
    tmp = Path(tempfile.mkdtemp(prefix="bench-http-"))
    sock = Path(tempfile.mkdtemp(prefix="rbh-", dir="/tmp")) / "d.sock"
    env = {**os.environ, "REMEMBRANCER_DATA_DIR": str(tmp / "data"), "REMEMBRANCER_CONFIG": str(tmp / "none.toml"),
           "REMEMBRANCER_SOCKET": str(sock)}
    run = lambda *a: subprocess.run([sys.executable, "-m", "remembrancer", *a], env=env, cwd=ROOT,
                                    capture_output=True, text=True, check=True)
    where, pg = ["--root", str(corpus)], None
    if args.store:
        from tests.support.pg import fresh_database, server as pg_server

        pg = pg_server(tmp / "pg")
        store = fresh_database(pg.get_uri(), "bench")
        where = ["--store", store, "--root", str(corpus)]
    run("index", *where)
    token = json.loads(run("team", "token", "create", "bench", "--json").stdout)["token"]
    sampler = Connections(pg.get_uri()) if pg else None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "remembrancer", "serve-http", *where, "--port",
                               str(port)], env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(300):
            try:
                httpx2.post(url, json={}, timeout=1)
                break
            except httpx2.HTTPError:
                time.sleep(0.1)
        params = StdioServerParameters(command=sys.executable, args=["-m", "remembrancer", "mcp", *where],
                                       env=env, cwd=str(ROOT))

        async def timed(c):
            await c.call_tool("search", {"query": questions[0]})   # warm: the daemon, the model
            out = []
            for q in questions:
                best = float("inf")
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    r = await c.call_tool("search", {"query": q})
                    best = min(best, (time.perf_counter() - t0) * 1000)
                    assert not r.is_error, r
                out.append(best)
            return out

        idle = {}

        async def stdio():
            async with Client(params, read_timeout_seconds=120) as c:
                out = await timed(c)
                if sampler:   # what one idle stdio reader holds once it has answered (the endpoint's too)
                    await anyio.sleep(1)
                    idle["stdio reader + http endpoint"] = sampler.now()
                return out
        if sampler:
            idle["http endpoint, before any call"] = sampler.now()
        ms_stdio = anyio.run(stdio)
        ms_http = over_http(url, token, timed)

        async def crowd():
            errors, lat = [], []

            async def one(i):
                async def ask(c):
                    for k in range(args.each):
                        t0 = time.perf_counter()
                        r = await c.call_tool("search", {"query": questions[(i * args.each + k) % len(questions)]})
                        lat.append((time.perf_counter() - t0) * 1000)
                        if r.is_error:
                            errors.append(r)
                try:
                    await anyio.to_thread.run_sync(lambda: over_http(url, token, ask))
                except BaseException as e:   # noqa: BLE001 — counted, as a client would see it
                    errors.append(e)
            t0 = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for i in range(args.clients):
                    tg.start_soon(one, i)
            return errors, lat, time.perf_counter() - t0
        if sampler:
            sampler.start()
        errors, lat, wall = anyio.run(crowd)
        if sampler:
            sampler.stop()
    finally:
        server.terminate()
        server.wait(30)
        subprocess.run([sys.executable, "-m", "remembrancer", "stop"], env=env, cwd=ROOT, capture_output=True)
        if pg:
            pg.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{corpus.name}: {len(questions)} questions, each its fastest of {args.repeat}")
    for name, ms in (("stdio", ms_stdio), ("http", ms_http)):
        print(f"  {name:<5} search p50 {statistics.median(ms):6.1f} ms  p95 {_pct(ms, 95):6.1f} ms")
    print(f"  HTTP adds p50 {statistics.median(ms_http) - statistics.median(ms_stdio):+.1f} ms, "
          f"p95 {_pct(ms_http, 95) - _pct(ms_stdio, 95):+.1f} ms")
    print(f"  {args.clients} HTTP clients at once, {args.each} searches each: {len(errors)} errors, "
          f"{len(lat)} answers in {wall:.1f} s, p50 {statistics.median(lat):.0f} ms, p95 {_pct(lat, 95):.0f} ms")
    if sampler:
        before, both = idle["http endpoint, before any call"], idle["stdio reader + http endpoint"]
        print(f"  server connections: the http endpoint before any call {before}; an idle stdio reader after "
              f"its searches {both - before} (both: {both})")
        print(f"  server connections while the {args.clients} HTTP clients asked: at most {sampler.most}"
              f" ({sampler.samples} samples)")
    return 0 if not errors else 1


class Connections:
    """The store server's client connections but this sampler's own, now or sampled in a thread."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.conn = psycopg.connect(url, autocommit=True)
        self.most, self.samples, self._stop = 0, 0, None

    def now(self) -> int:
        return self.conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
                                 " AND pid <> pg_backend_pid()").fetchone()[0]

    def start(self) -> None:
        import threading

        self._stop = threading.Event()

        def sample():
            while not self._stop.wait(0.02):
                self.most, self.samples = max(self.most, self.now()), self.samples + 1
        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


if __name__ == "__main__":
    raise SystemExit(main())
