"""Search latency in-process on one dev set, in CPU time as well as wall time (the machine is shared:
wall time measures the neighbours too), with and without the caller's rephrasings.

    .venv/bin/python bench/bench_search_latency.py [--set mm-v2.dev] [--repeat 3] [--baseline KEY=VALUE …]

Each question goes through the MCP `search` path (api.do_search) `--repeat` times; the fastest of
the repeats is kept per question (the least disturbed by other processes), then p50 / p95 over the
questions. `--baseline` names [ranking] settings for a second configuration measured in the same
run on the same open index (e.g. the rules of the start of the round switched off), so the figures
are ratios on the same machine at the same moment. Uses the index cache of bench/eval_all.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from copy import deepcopy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from remembrancer.indexer.api import do_search  # noqa: E402
from remembrancer.indexer.evaluate import EvalSession, percentile  # noqa: E402


def measure(session: EvalSession, alternates: dict | None, repeat: int) -> dict:
    wall, cpu = [], []
    for case in session.cases:
        params = {"query": case.query, "limit": 5}
        if alternates and alternates.get(case.id):
            params["alternates"] = alternates[case.id]
        best_wall = best_cpu = float("inf")
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            do_search(session.engine, params)
            best_wall = min(best_wall, (time.perf_counter() - t0) * 1000)
            best_cpu = min(best_cpu, (time.process_time() - c0) * 1000)
        wall.append(best_wall)
        cpu.append(best_cpu)
    out = {}
    for name, values in (("wall", wall), ("cpu", cpu)):
        for q in (50, 95):
            out[f"{name}_p{q}"] = round(percentile(values, q), 1)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--eval-dir", default=str(ROOT.parent / "shared" / "eval"))
    ap.add_argument("--set", default="mm-v2.dev")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data-dir", default=str(ROOT / "bench" / "results" / "index-cache"))
    ap.add_argument("--baseline", action="append", default=[], metavar="KEY=VALUE",
                    help="a [ranking] setting of the baseline configuration (repeatable)")
    args = ap.parse_args()
    os.environ["REMEMBRANCER_DATA_DIR"] = args.data_dir
    alt_file = Path(args.eval_dir) / "alternates" / f"{args.set}.json"
    alts = json.loads(alt_file.read_text()) if alt_file.exists() else None
    with EvalSession(str(Path(args.eval_dir) / "queries" / f"{args.set}.jsonl"), None) as session:
        shipped = session.engine.config.ranking
        base = deepcopy(shipped)
        for kv in args.baseline:
            k, _, v = kv.partition("=")
            setattr(base, k, type(getattr(base, k))(json.loads(v.lower()) if v.lower() in ("true", "false") else v))
        do_search(session.engine, {"query": session.cases[0].query})   # loads the model: not timed
        for name, cfg in (("baseline", base), ("shipped", shipped)):
            session.engine.config.ranking = cfg
            for label, a in (("no alternates", None), ("with alternates", alts)):
                m = measure(session, a, args.repeat)
                print(f"{args.set} {name:<8} {label:<16} CPU p50 {m['cpu_p50']:6.1f} ms  p95 {m['cpu_p95']:6.1f} ms"
                      f"   wall p50 {m['wall_p50']:6.1f} ms  p95 {m['wall_p95']:6.1f} ms"
                      f"   (load average {os.getloadavg()[0]:.1f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
