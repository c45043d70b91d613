"""Error analysis: every miss of a query set, with what was ranked first, where the labelled section
was, which leg found it and the rules that moved it (docs/ranking.md's "What is still short" comes from this).

    .venv/bin/python bench/misses.py QUERIES.jsonl [--alternates FILE] [--data-dir DIR] [--all] [--right-first]

Searches go through the MCP `search` path (api.do_search) with `explain` on and a limit of 50, so
the labelled section's rank and evidence are shown even when it is far from the top.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remembrancer.indexer.search import rank# noqa: E402
from remembrancer.indexer.api import do_search  # noqa: E402
from remembrancer.indexer.search.evaluate import EvalSession, is_hit, primary_labels  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def describe(r: dict) -> str:
    why = "; ".join(w for w in r.get("why", []) if not w.startswith("bm25="))
    s = r.get("scores", {})
    return (f"{r['score']:.3f} [{r['type']}] {r['path']}#{r['heading']}  (bm25 {s.get('bm25', 0):.2f} dense "
            f"{s.get('dense', 0):.3f} lit {s.get('literal', 0):.2f}) {why}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("queries")
    ap.add_argument("--alternates")
    ap.add_argument("--data-dir", default=str(ROOT / "bench" / "results" / "index-cache"))
    ap.add_argument("--all", action="store_true", help="show hits too")
    ap.add_argument("--right-first", action="store_true",
                    help="a hit is any label graded 2 or 3 (T1≥2, memory sets' primary figure), not only the best")
    args = ap.parse_args()
    os.environ["REMEMBRANCER_DATA_DIR"] = args.data_dir
    alts = json.loads(Path(args.alternates).read_text()) if args.alternates else {}
    with EvalSession(args.queries, None) as session:
        for case in session.cases:
            p = {"query": case.query, "limit": 50, "explain": True}
            if alts.get(case.id):
                p["alternates"] = alts[case.id]
            out = do_search(session.engine.view(), p)
            ranked = out.get("best_weak", []) if out.get("no_strong_match") else out.get("results", [])
            labels = ([e for e in case.expect if e.grade >= 2] if args.right_first else []) or primary_labels(case.expect)
            where = next((i for i, r in enumerate(ranked) if any(is_hit(r, lab) for lab in labels)), None)
            ok = (where == 0 and not out.get("no_strong_match")) if case.answerable else out.get("no_strong_match")
            if ok and not args.all:
                continue
            it = rank.intent(case.query)
            kind = ",".join(k for k, on in (("howto:" + it.howto, bool(it.howto)), ("outcome", it.outcome),
                                            ("past", it.past), ("fact", it.fact)) if on) or "-"
            print(f"\n== {case.id} [{'ok' if ok else 'MISS'}] intent={kind} abstained={out.get('no_strong_match')}")
            print(f"   Q: {case.query}")
            if out.get("why_no_strong_match"):
                print(f"   abstained because: {out['why_no_strong_match']}")
            print(f"   label: {', '.join(lab.show() for lab in labels)}  rank {None if where is None else where + 1}")
            for i, r in enumerate(ranked[:3]):
                print(f"   {i + 1}. {describe(r)}")
            if where is not None and where >= 3:
                print(f"   {where + 1}. {describe(ranked[where])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
