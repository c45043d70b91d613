"""Search latency in-process on one dev set, in CPU time as well as wall time (the machine is shared:
wall time measures the neighbours too), with and without the caller's rephrasings.

    .venv/bin/python bench/bench_search_latency.py [--set mm-v2.dev] [--repeat 3] [--baseline KEY=VALUE …]
    .venv/bin/python bench/bench_search_latency.py --against DIR [--rounds 3]
    .venv/bin/python bench/bench_search_latency.py --stages [--repeat 3]

How it measures: the index is opened and one untimed search loads the model; then each question
goes through the MCP `search` path (api.do_search) `--repeat` times and the fastest of the repeats
is kept per question (the least disturbed by other processes); p50 / p95 (nearest rank) are over
the questions. CPU time is the process's (every thread's: onnxruntime runs a query on two).

`--baseline` names [ranking] settings or search constants for a second configuration measured in the
same run on the same open index (e.g. a rule switched off: `--baseline POINTER_CREDIT=false`). `--against DIR` compares two versions of the code:
DIR holds another version's package (`git archive <commit> indexer | tar -x -C DIR/remembrancer`,
plus remembrancer/__init__.py); each round measures this checkout and DIR in turn, one child
process each (order swapped every round, so a change in the machine's load falls on both), and
each question keeps its fastest time over the rounds. Uses the index cache of bench/eval_all.py.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _import_path(argv: list[str]) -> None:
    """`--code DIR` (a child of `--against`) imports the package from DIR instead of this checkout."""
    sys.path.insert(0, str(ROOT))
    if "--code" in argv:
        sys.path.insert(0, argv[argv.index("--code") + 1])


_import_path(sys.argv)

from remembrancer.indexer.api import do_search  # noqa: E402
from remembrancer.indexer.search.evaluate import EvalSession, percentile  # noqa: E402

MODES = (("no alternates", False), ("with alternates", True))


def times(session: EvalSession, alternates: dict | None, repeat: int) -> dict[str, tuple[float, float]]:
    """Each question's fastest (wall ms, CPU ms) over `repeat` searches."""
    out = {}
    for case in session.cases:
        params = {"query": case.query, "limit": 5}
        if alternates and alternates.get(case.id):
            params["alternates"] = alternates[case.id]
        best_wall = best_cpu = float("inf")
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            do_search(session.engine.view(), params)
            best_wall = min(best_wall, (time.perf_counter() - t0) * 1000)
            best_cpu = min(best_cpu, (time.process_time() - c0) * 1000)
        out[case.id] = (best_wall, best_cpu)
    return out


def stage_times(session: EvalSession, alternates: dict | None, repeat: int) -> dict[str, float]:
    """Mean thread time (ms) per search of each stage, every question searched `repeat` times: a
    timer around each stage's function (the outermost call of a recursive one), thread time so the
    model's second thread and other processes are not counted in the stage they happen to overlap."""
    from remembrancer.indexer.store.local import catalog
    from remembrancer.indexer.models import embed
    from remembrancer.indexer import redact
    from remembrancer.indexer.search import answer as search

    stages = {"question's embedding": (embed.Embedder, "embed_query"),
              "rephrasings' embedding": (embed.Embedder, "embed_queries"), "legs (all phrasings)": (search, "_phrasing"),
              "  of which passage -> section": (catalog.Catalog, "passages_by_id"),
              "rerank (rows and rules)": (search, "_rerank"),
              "  of which the candidates' rows": (catalog.Catalog, "section_heads_by_id"),
              "abstention": (search, "_abstains"), "results": (search, "_results"),
              "redacting the answer": (redact.Redactor, "redact_obj")}
    spent = {"the whole search (MCP path)": 0.0, **dict.fromkeys(stages, 0.0)}
    saved = []

    def timed(label, fn):
        depth = [0]

        def run(*a, **k):
            depth[0] += 1
            t0 = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                depth[0] -= 1
                if not depth[0]:
                    spent[label] += time.thread_time() - t0
        return run

    for label, (owner, name) in stages.items():
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, timed(label, getattr(owner, name)))
    try:
        n = 0
        for _ in range(repeat):
            for case in session.cases:
                params = {"query": case.query, "limit": 5}
                if alternates and alternates.get(case.id):
                    params["alternates"] = alternates[case.id]
                t0 = time.thread_time()
                do_search(session.engine.view(), params)
                spent["the whole search (MCP path)"] += time.thread_time() - t0
                n += 1
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)
    return {label: round(v / n * 1000, 2) for label, v in spent.items()}


def figures(per_question: dict[str, tuple[float, float]]) -> dict:
    out = {}
    for i, name in enumerate(("wall", "cpu")):
        values = [t[i] for t in per_question.values()]
        for q in (50, 95):
            out[f"{name}_p{q}"] = round(percentile(values, q), 1)
    return out


def line(label: str, m: dict) -> str:
    return (f"{label:<40} CPU p50 {m['cpu_p50']:6.1f} ms  p95 {m['cpu_p95']:6.1f} ms"
            f"   wall p50 {m['wall_p50']:6.1f} ms  p95 {m['wall_p95']:6.1f} ms"
            f"   (load average {os.getloadavg()[0]:.1f})")


def against(args) -> int:
    """Rounds of child processes, this checkout and DIR in turn; each question's fastest over rounds."""
    codes = {"this checkout": None, f"against {args.against}": args.against}
    best: dict = {(c, m): {} for c in codes for m, _ in MODES}
    for r in range(args.rounds):
        for name in (list(codes) if r % 2 == 0 else list(codes)[::-1]):
            cmd = [sys.executable, __file__, "--set", args.set, "--eval-dir", args.eval_dir, "--data-dir",
                   args.data_dir, "--repeat", str(args.repeat), "--emit"]
            if codes[name]:
                cmd += ["--code", codes[name]]
            got = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            for mode, _ in MODES:
                for cid, (w, c) in got[mode].items():
                    old = best[(name, mode)].get(cid, (float("inf"), float("inf")))
                    best[(name, mode)][cid] = (min(old[0], w), min(old[1], c))
        print(f"round {r + 1} of {args.rounds} done (load average {os.getloadavg()[0]:.1f})", flush=True)
    for mode, _ in MODES:
        for name in codes:
            print(line(f"{args.set} {name[:24]:<24} {mode}", figures(best[(name, mode)])))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--eval-dir", default=str(ROOT.parent / "shared" / "eval"))
    ap.add_argument("--set", default="mm-v2.dev")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data-dir", default=str(ROOT / "bench" / "results" / "index-cache"))
    ap.add_argument("--baseline", action="append", default=[], metavar="KEY=VALUE",
                    help="a [ranking] setting, or an upper-case constant of indexer/search/answer.py "
                         "(POINTER_CREDIT=false), of the baseline configuration (repeatable)")
    ap.add_argument("--against", metavar="DIR", help="compare with the package in DIR, round by round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--stages", action="store_true",
                    help="where a search's time goes: thread time per stage (the shipped configuration)")
    ap.add_argument("--code", metavar="DIR", help=argparse.SUPPRESS)   # a child: import the package from DIR
    ap.add_argument("--emit", action="store_true", help=argparse.SUPPRESS)  # a child: per-question times as JSON
    args = ap.parse_args()
    if args.against:
        return against(args)
    os.environ["REMEMBRANCER_DATA_DIR"] = args.data_dir
    alt_file = Path(args.eval_dir) / "alternates" / f"{args.set}.json"
    alts = json.loads(alt_file.read_text()) if alt_file.exists() else None
    with EvalSession(str(Path(args.eval_dir) / "queries" / f"{args.set}.jsonl"), None) as session:
        do_search(session.engine.view(), {"query": session.cases[0].query})   # loads the model: not timed
        if args.emit:
            print(json.dumps({mode: times(session, alts if with_alt else None, args.repeat)
                              for mode, with_alt in MODES}))
            return 0
        if args.stages:
            for label, with_alt in MODES:
                print(f"{args.set} {label}: thread ms per search, {args.repeat} passes over the questions"
                      f" (load average {os.getloadavg()[0]:.1f})")
                for stage, ms in stage_times(session, alts if with_alt else None, args.repeat).items():
                    print(f"  {stage:<32} {ms:6.2f}")
            return 0
        import eval_all   # beside this file: its overrides and how a configuration is put in force

        base: dict = {"const": {}, "ranking": {}}
        for kv in args.baseline:
            key, sep, text = kv.partition("=")
            try:
                if not sep:
                    raise ValueError("give KEY=VALUE")
                part, value = eval_all.override(key, text)
            except ValueError as e:
                ap.error(f"--baseline {kv!r}: {e}")
            base[part][key] = value
        for name, overrides in (("baseline", base), ("shipped", {})):
            with eval_all.Applied(session, overrides):
                for label, with_alt in MODES:
                    m = figures(times(session, alts if with_alt else None, args.repeat))
                    print(line(f"{args.set} {name:<8} {label}", m), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
