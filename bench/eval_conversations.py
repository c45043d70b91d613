"""Score the conversations corpus (Claude Code transcripts) on a labelled set: the right exchange
first, in the top 3 / 5, MRR, Recall@5 and abstention, per stratum — through `api.read_across`
with corpus "conversations", the MCP `search` tool's path, on an index of the transcripts alone.

    .venv/bin/python bench/eval_conversations.py [--eval-dir ../shared/eval] [--set transcripts-dev]
        [--data-dir DIR] [--alternates DIR] [--plain] [--ranking KEY=VALUE …] [--show-misses]

A result hits a label when it comes from the label's file and its line range holds the label's
answer line (any uuid after the first; a compaction summary's own line when it has one uuid); the
set's README defines it. A `when` question also counts a session hit (the right session, any
exchange). Labels graded 3 count for Top-k and MRR, graded 2 or 3 for Recall@5 and T1≥2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def line_numbers(path: Path) -> dict[str, int]:
    """uuid → 1-based line number in a transcript."""
    out = {}
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            d = json.loads(raw)
        except ValueError:
            continue
        if isinstance(d, dict) and isinstance(d.get("uuid"), str):
            out[d["uuid"]] = n
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eval-dir", default=str(Path(__file__).resolve().parent.parent.parent / "shared" / "eval"))
    ap.add_argument("--set", default="transcripts-dev")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--alternates", default=None)
    ap.add_argument("--plain", action="store_true", help="the plain weighted hybrid, eval_all's baseline row")
    ap.add_argument("--ranking", action="append", default=[], help="KEY=VALUE of the [ranking] settings")
    ap.add_argument("--show-misses", action="store_true")
    args = ap.parse_args()
    if args.data_dir:
        os.environ["REMEMBRANCER_DATA_DIR"] = args.data_dir
    os.environ.setdefault("REMEMBRANCER_CONFIG", "/nonexistent/remembrancer.toml")
    from remembrancer.indexer import api
    from remembrancer.indexer.answers import Freshness
    from remembrancer.indexer.config import CONVERSATIONS, Config, make_roots
    from remembrancer.indexer.engine import Engine
    from remembrancer.indexer.search import answer as search_mod

    eval_dir = Path(args.eval_dir)
    corpus = eval_dir / "corpora" / args.set
    rows = [json.loads(x) for x in (eval_dir / "queries" / f"{args.set}.jsonl").read_text().splitlines() if x.strip()]
    alternates = {}
    if args.alternates:   # the eval sets' shape ({id: [rephrasing, …]}, SET.json) or rows of SET.jsonl
        as_map, as_rows = Path(args.alternates) / f"{args.set}.json", Path(args.alternates) / f"{args.set}.jsonl"
        if as_map.exists():
            alternates = json.loads(as_map.read_text(encoding="utf-8"))
        elif as_rows.exists():
            for x in as_rows.read_text(encoding="utf-8").splitlines():
                if x.strip():
                    d = json.loads(x)
                    alternates[d["id"]] = d.get("alternates") or d.get("rephrasings") or []
        else:
            sys.exit(f"--alternates {args.alternates}: neither {as_map.name} nor {as_rows.name} is there")
    from remembrancer.indexer.search.rank import RankingConfig

    base = Config(conversations=make_roots([str(corpus)], kind=CONVERSATIONS))
    config = base.conversation_config()
    if args.plain:   # eval_all's plain weighted hybrid: no heading passage, literal leg, rules or abstention
        from eval_all import PLAIN

        for name, value in PLAIN["const"].items():
            setattr(search_mod, name, value)
        config.ranking = RankingConfig(**PLAIN["ranking"])
    for kv in args.ranking:
        k, v = kv.split("=", 1)
        setattr(config.ranking, k, type(getattr(config.ranking, k))(json.loads(v)))
    engine = Engine(config)
    report = engine.refresh()
    print(f"indexed {report.scanned} files, {report.added} added, {report.seconds} s", file=sys.stderr)
    lines_of: dict[str, dict[str, int]] = {}
    stats = defaultdict(lambda: defaultdict(float))
    fresh = lambda view: Freshness(verdict="fresh")  # noqa: E731
    for r in rows:
        params = {"query": r["query"]}
        if r["id"] in alternates:
            params["alternates"] = alternates[r["id"]]
        # the MCP tool's path: search(corpus="conversations") (indexer/search/across.py)
        out = api.read_across("search", {**params, "corpus": "conversations"}, None,
                              lambda m, p: api.dispatch_read(engine, m, p, fresh))
        abstained = bool(out.get("no_strong_match"))
        shown = out.get("best_weak") if abstained else out.get("results")
        shown = shown or []
        st = stats[r["stratum"]]
        st["n"] += 1
        tot = stats["all"]
        tot["n"] += 1
        if not r["answerable"]:
            st["abstain"] += abstained
            tot["unans"] += 1
            tot["abstain"] += abstained
            if args.show_misses and not abstained:
                print(f"  ANSWERED {r['id']}: {r['query']!r} → {shown[0]['path'] if shown else None} § {shown[0].get('heading') if shown else None}")
            continue

        def hits(res, grades):
            for e in r["expect"]:
                if e["grade"] not in grades:
                    continue
                if e["file"] not in lines_of:
                    lines_of[e["file"]] = line_numbers(corpus / e["file"])
                want = [lines_of[e["file"]][u] for u in (e["uuids"][1:] or e["uuids"][:1])]
                lo, hi = res.get("lines") or [0, 0]
                if res["path"] == e["file"] and any(lo <= w <= hi for w in want):
                    return True
            return False

        rank3 = next((i for i, res in enumerate(shown) if hits(res, (3,))), None)
        rank2 = next((i for i, res in enumerate(shown) if hits(res, (2, 3))), None)
        for s in (st, tot):
            s["ans"] += 1
            s["top1"] += rank3 == 0 and not abstained
            s["t1ge2"] += rank2 == 0 and not abstained
            s["top3"] += rank3 is not None and rank3 < 3
            s["top5"] += rank3 is not None and rank3 < 5
            s["r5"] += rank2 is not None and rank2 < 5
            s["mrr"] += 1 / (rank3 + 1) if rank3 is not None else 0
            s["false_abstain"] += abstained
            sess = {e["session"] for e in r["expect"] if e["grade"] >= 2}
            s["session1"] += bool(shown) and (shown[0].get("session_id") in sess or any(shown[0]["path"] == e["file"] for e in r["expect"] if e["grade"] >= 2))
        if args.show_misses and rank3 != 0:
            print(f"  MISS {r['id']} (rank3 {rank3}, rank2 {rank2}, abst {abstained}): {r['query']!r}")
            for res in shown[:3]:
                print(f"     {res.get('score')} {res.get('date')} {res['path'][-30:]} {res.get('lines')} § {res.get('heading')[:70]}")
    print(f"{'stratum':<13}{'n':>4}{'Top1':>7}{'T1≥2':>7}{'Top3':>7}{'Top5':>7}{'MRR':>7}{'R@5':>7}{'sess1':>7}{'abst':>7}")
    for name, s in sorted(stats.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        a = s["ans"] or 1
        ab = f"{int(s['abstain'])}/{int(s['unans'] or (s['n'] if name == 'unanswerable' else 0))}"
        print(f"{name:<13}{int(s['n']):>4}{100*s['top1']/a:>7.1f}{100*s['t1ge2']/a:>7.1f}{100*s['top3']/a:>7.1f}"
              f"{100*s['top5']/a:>7.1f}{s['mrr']/a:>7.3f}{100*s['r5']/a:>7.1f}{100*s['session1']/a:>7.1f}{ab:>7}"
              f"{'  false abst ' + str(int(s['false_abstain'])) if s['false_abstain'] else ''}")
    engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
