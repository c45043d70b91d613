"""Which kind of note a labelled set prefers when two kinds hold a right answer: for every
answerable question whose grade-3 (the answer) and grade-2 ("equally correct") labels are of
different doc types, one count per (grade 3's type, grade 2's type), overall and per stratum.
docs/ranking.md ("How ranking is evaluated") quotes its recency counts: where two sets prefer
opposite kinds for the same kind of question, no ranking is strictly right on both.

    .venv/bin/python bench/label_preferences.py [--eval-dir ../shared/eval] [--sets memory-dev memory-dev-2]

Doc types come from the default layout (indexer/ingest/meta.py), as indexing gives them; a host's and a
service's record count as one kind, "record" (the memory rules' RECORD_TYPES).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remembrancer.indexer.config import DEFAULT_LAYOUT  # noqa: E402
from remembrancer.indexer.search.evaluate import load_cases  # noqa: E402
from remembrancer.indexer.ingest.meta import Layout  # noqa: E402
from remembrancer.indexer.search.rank import RECORD_TYPES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def preferences(cases, layout: Layout) -> dict[str, Counter]:
    """stratum (and "all") → Counter of (grade-3 kind, grade-2 kind), one per question and pair."""
    def kind(path: str) -> str:
        t = layout.type_of(path)
        return "record" if t in RECORD_TYPES else t

    out: dict[str, Counter] = {"all": Counter()}
    for case in cases:
        if not case.answerable:
            continue
        best = {kind(e.path) for e in case.expect if e.grade >= 3}
        second = {kind(e.path) for e in case.expect if e.grade == 2} - best
        for pair in ((a, b) for a in sorted(best) for b in sorted(second)):
            out["all"][pair] += 1
            out.setdefault(case.stratum, Counter())[pair] += 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--eval-dir", default=str(ROOT.parent / "shared" / "eval"))
    ap.add_argument("--sets", nargs="*", default=["memory-dev", "memory-dev-2"])
    args = ap.parse_args()
    layout = Layout(DEFAULT_LAYOUT)
    for name in args.sets:
        prefs = preferences(load_cases(Path(args.eval_dir) / "queries" / f"{name}.jsonl"), layout)
        print(name)
        for stratum, counts in prefs.items():
            for (a, b), n in counts.most_common():
                print(f"  {stratum:<12} grade 3 {a:<8} over grade 2 {b:<8} {n:3d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
