"""The Claude Code prompt hook's context, measured on the memory sets: how often it speaks (a strong
match), how often what it injects holds a fully-right section whole (a label graded 2 or 3), and
what that costs in tokens — for the hook's settings as shipped and as `--limit`/`--budget` set them.

    .venv/bin/python bench/hook_context.py [--eval-dir ../shared/eval] [--data-dir DIR]
        [--limit 1 3] [--budget 600 900]

Each question goes through the socket's search path (api.dispatch_read) with the hook's parameters
(hooks/claude_code.py search_params, without `within`: one corpus is open), then the hook's own gate
(`strong`) and text (`context_text`). Tokens: characters / 4, as the budgets count them.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SETS = ("memory-dev", "memory-dev-2", "memory-dev-3")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eval-dir", default=str(Path(__file__).resolve().parent.parent.parent / "shared" / "eval"))
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--limit", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--budget", type=int, nargs="+", default=[600, 900])
    ap.add_argument("--sets", nargs="+", default=list(SETS))
    args = ap.parse_args()
    if args.data_dir:
        os.environ["REMEMBRANCER_DATA_DIR"] = args.data_dir
    os.environ.setdefault("REMEMBRANCER_CONFIG", "/nonexistent/remembrancer.toml")
    from remembrancer.hooks import claude_code as hook
    from remembrancer.indexer.answers import Freshness
    from remembrancer.indexer.api import dispatch_read
    from remembrancer.indexer.search.evaluate import EvalSession

    print(f"{'set':<14}{'limit':>6}{'budget':>7}{'speaks':>8}{'in ctx':>8}{'of spoken':>10}{'tok p50':>8}{'tok max':>8}")
    for name in args.sets:
        with EvalSession(str(Path(args.eval_dir) / "queries" / f"{name}.jsonl"), None) as ev:
            fresh = Freshness(verdict="fresh")
            cases = [c for c in ev.cases if c.answerable]
            for limit, budget in itertools.product(args.limit, args.budget):
                hook.SEARCH_LIMIT, hook.BUDGET_TOKENS = limit, budget
                spoke = held = 0
                tokens = []
                for case in cases:
                    params = {k: v for k, v in hook.search_params(case.query, ".").items() if k != "within"}
                    out = dispatch_read(ev.engine, "search", params, lambda view: fresh)
                    if not hook.strong(out):
                        continue
                    text = hook.context_text(out)
                    spoke += 1
                    tokens.append(len(text) // 4)
                    flat = _norm(text)
                    held += any(_norm(t) and _norm(t) in flat for t in ev.labelled_texts(case, params))
                tokens.sort()
                p50 = tokens[len(tokens) // 2] if tokens else 0
                print(f"{name:<14}{limit:>6}{budget:>7}{spoke:>5}/{len(cases):<3}{held:>5}"
                      f"{100 * held / max(spoke, 1):>9.1f}%{p50:>8}{tokens[-1] if tokens else 0:>8}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
