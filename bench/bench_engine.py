"""Engine benchmark (issue: the engine): run on demand, never in CI.

    .venv/bin/python bench/bench_engine.py [--corpus ../shared/eval/corpora/mm-v2]
                                           [--queries ../shared/eval/queries/mm-v2.dev.jsonl]
                                           [--compute float|int8] [--index-only]

`--index-only` prints the full index's figures and stops: the real-model throughput (issue 12),
wall and CPU seconds with the load average beside them (on a quiet machine wall ≈ CPU / 2).
`--compute int8`: the default model's int8-compute graph (`[model] compute = "int8"`).

Prints, on this machine and in this run:
- full index from scratch: files, sections, vectors, seconds, vectors/s, peak RSS (a child process)
- re-index with nothing changed (seconds), and a one-file edit (seconds, vectors re-embedded)
- search latency p50/p95 over the dev queries, warm, in-process: hybrid, BM25-only, and a
  grep-style baseline (term counting over the raw files) — so every figure is a ratio on the
  same machine.
The corpus is copied to a temp dir (the edit must not touch the original).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
from remembrancer.indexer.search.evaluate import percentile  # noqa: E402  (nearest rank, one definition)
EVAL = PROJECT.parent / "shared" / "eval"


def child(code: str, env: dict) -> tuple[dict, float, float]:
    """Run `code` in a fresh interpreter; returns (its JSON on stdout, peak RSS in MB, CPU seconds).

    CPU seconds say what the work costs even when something else shares the machine; wall
    seconds (in the JSON) are what a user waits on a quiet one."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    return json.loads(out.stdout.strip().splitlines()[-1]), max(r1.ru_maxrss, r0.ru_maxrss) / 1024, cpu


INDEX_CODE = """
import json, sys, time
sys.path.insert(0, {project!r})
from remembrancer.indexer.config import load_config
from remembrancer.indexer.engine import Engine
t0 = time.perf_counter()
e = Engine(load_config([{root!r}]))
r = e.refresh()
c = e.catalog.counts()
print(json.dumps({{"seconds": time.perf_counter() - t0, "embedded": r.embedded, **c}}))
"""



def grep_baseline(root: Path, queries: list[str]) -> list[float]:
    """Term counting over every file, the way a grep-driven agent would look: read + count."""
    files = [p for p in root.rglob("*.md")]
    times = []
    for q in queries:
        words = [w.lower() for w in re.findall(r"\w+", q) if len(w) > 2]
        t0 = time.perf_counter()
        scores = []
        for f in files:
            text = f.read_text(errors="replace").lower()
            scores.append((sum(text.count(w) for w in words), f))
        scores.sort(key=lambda x: -x[0])
        times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(EVAL / "corpora" / "mm-v2"))
    ap.add_argument("--queries", default=str(EVAL / "queries" / "mm-v2.dev.jsonl"))
    ap.add_argument("--compute", choices=("float", "int8"), default="float", help="[model] compute")
    ap.add_argument("--index-only", action="store_true", help="the full index's figures only")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="remembrancer-bench-"))
    root = tmp / "corpus"
    shutil.copytree(args.corpus, root)
    (tmp / "config.toml").write_text(f'[model]\ncompute = "{args.compute}"\n')
    env = {**os.environ, "REMEMBRANCER_DATA_DIR": str(tmp / "data"), "REMEMBRANCER_CONFIG": str(tmp / "config.toml")}
    code = INDEX_CODE.format(project=str(PROJECT), root=str(root))
    print(f"corpus {args.corpus}: {sum(1 for _ in root.rglob('*.md'))} files, "
          f"{sum(p.stat().st_size for p in root.rglob('*.md')) / 1e6:.2f} MB")
    if args.compute == "int8":   # build the int8 graph before the timed run (a one-time cost, timed apart)
        built, _, build_cpu = child(f"import sys, json, time; sys.path.insert(0, {str(PROJECT)!r}); t0 = time.perf_counter(); "
                                    "from remembrancer.indexer.models.embed import load_embedder, INT8_SPEC; load_embedder(INT8_SPEC); "
                                    "print(json.dumps({'seconds': time.perf_counter() - t0}))", env)
        print(f"int8 graph built and loaded in {built['seconds']:.1f} s ({build_cpu:.1f} CPU s), once per data dir")
    load0 = os.getloadavg()
    full, rss, cpu = child(code, env)
    load1 = os.getloadavg()
    print(f"full index      {full['seconds']:7.1f} s   {full['documents']} docs, {full['sections']} sections, "
          f"{full['passages']} passages, {full['embedded']} embedded → {full['embedded'] / full['seconds']:.0f} vectors/s; "
          f"{cpu:.0f} CPU s ({full['embedded'] / cpu:.0f} vectors per CPU-second); peak RSS {rss:.0f} MB; "
          f"model compute {args.compute}; load average {load0[0]:.2f} before, {load1[0]:.2f} after "
          f"(1-min; on an idle 2-core machine wall ≈ CPU / 2)")
    if args.index_only:
        shutil.rmtree(tmp, ignore_errors=True)
        return 0
    same, _, _ = child(code, env)
    print(f"nothing changed {same['seconds']:7.2f} s   (embedded {same['embedded']}; includes opening the index)")
    victim = max(root.rglob("*.md"), key=lambda p: p.stat().st_size)
    text = victim.read_text()
    cut = text.find("\n\n", len(text) // 2)
    victim.write_text(text[:cut] + "\n\nAn edited paragraph about zebra crossings and quokkas.\n" + text[cut:])
    edit, _, _ = child(code, env)
    print(f"one-file edit   {edit['seconds']:7.2f} s   ({victim.relative_to(root)}: {edit['embedded']} vectors re-embedded)")

    os.environ.update(env)
    from remembrancer.indexer.config import load_config
    from remembrancer.indexer.engine import Engine
    from remembrancer.indexer.search.answer import SearchRequest, search

    queries = [json.loads(line)["query"] for line in open(args.queries) if line.strip()]
    e = Engine(load_config([str(root)]))
    search(e.view(), SearchRequest(queries[0])).to_json()  # warm: model load, caches

    def timed() -> list[float]:
        out = []
        for q in queries:
            t0 = time.perf_counter()
            search(e.view(), SearchRequest(q)).to_json()
            out.append((time.perf_counter() - t0) * 1000)
        return out

    hybrid = timed()
    e.contract_problem = lambda: "bench: BM25 only"  # the vector leg off, everything else the same
    bm25 = timed()
    del e.contract_problem
    grep = grep_baseline(root, queries)
    base = statistics.median(grep)
    for name, xs in (("hybrid", hybrid), ("bm25-only", bm25), ("grep-style", grep)):
        print(f"search {name:<10} p50 {percentile(xs, 50):6.2f} ms  p95 {percentile(xs, 95):6.2f} ms  "
              f"({percentile(xs, 50) / base:.2f}× grep p50)  n={len(xs)}")
    e.close()
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
