"""Score every dev set in one run and print one comparable table (ranking before/after).

    .venv/bin/python bench/eval_all.py [--eval-dir ../shared/eval] [--json out.json]
                                       [--ranking stale_factor=1.0 --ranking enabled=false …]

`--const NAME=VALUE` overrides a constant of indexer/search.py (the heading-passage weight, the
literal leg's first-mention credit, candidate counts, fusion weights) for the run.
`--ranking KEY=VALUE` overrides one `[ranking]` setting (indexer/rank.py) for the run — how the
ablation table of docs/ranking.md is reproduced (`type_weights={plan=1.0}` takes a TOML inline table).

Uses `remembrancer eval`'s code path (indexer.evaluate.run_eval → the MCP search path). Indexes
live in REMEMBRANCER_DATA_DIR (set it to keep them between runs: only the first run embeds).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remembrancer.indexer import search  # noqa: E402
from remembrancer.indexer.evaluate import run_eval  # noqa: E402

SETS = ("mm-v1.dev", "mm-v2.dev", "memory-dev", "qmd")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--eval-dir", default=str(Path(__file__).resolve().parent.parent.parent / "shared" / "eval"))
    ap.add_argument("--json")
    ap.add_argument("--sets", nargs="*", default=list(SETS))
    ap.add_argument("--ranking", action="append", default=[], metavar="KEY=VALUE",
                    help="override a [ranking] setting, e.g. stale_factor=1.0 (repeatable)")
    ap.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                    help="override a search constant that is not a [ranking] setting, e.g. "
                         "HEADING_PASSAGE_WEIGHT=1.0 or DENSE_CANDIDATES=600 (indexer/search.py; repeatable)")
    args = ap.parse_args()
    for kv in args.const:
        name, _, value = kv.partition("=")
        if not hasattr(search, name) or not name.isupper():
            ap.error(f"--const: no constant {name!r} in indexer/search.py")
        setattr(search, name, type(getattr(search, name))(value))
    if args.ranking:
        # Through a config file, so the override takes the same path (and validation) as a user's.
        cfg = Path(tempfile.mkdtemp(prefix="eval-all-")) / "config.toml"
        cfg.write_text("[ranking]\n" + "\n".join(args.ranking) + "\n")
        os.environ["REMEMBRANCER_CONFIG"] = str(cfg)
    rows, reports = [], {}
    for name in args.sets:
        t0 = time.perf_counter()
        r = run_eval(str(Path(args.eval_dir) / "queries" / f"{name}.jsonl"), None)
        reports[name] = r
        o = r["overall"]
        ab = r["abstention"]
        strata = " ".join(f"{k}={v['top1'] * 100:.0f}" for k, v in r["strata"].items())
        rows.append(f"{name:<11} Top1 {o['top1'] * 100:5.1f}  Top3 {o['top3'] * 100:5.1f}  Top5 {o['top5'] * 100:5.1f}"
                    f"  MRR {o['mrr']:.3f}  abst {ab['abstained']}/{ab['unanswerable']}"
                    f"  false {ab['false_abstentions']}/{ab['answerable']}"
                    f"  p95 {r['latency_ms']['p95']:.0f}ms  [{strata}]  ({time.perf_counter() - t0:.0f}s)")
    print("\n".join(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
