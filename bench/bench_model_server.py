"""The embedding model behind an HTTP server against the same model in-process, in the same run.

A model server (tests/support/model_server.py: the OpenAI-compatible embeddings API over the default
model, a separate process on this machine) and the in-process default model index one corpus each
into a fresh data dir, then answer the corpus's questions.

    .venv/bin/python bench/bench_model_server.py [--eval-dir ../shared/eval] [--set memory-dev]
        [--batch 64] [--repeat 3]

Prints, local and over HTTP: indexing seconds, passages embedded per second (wall) and their ratio
(the issue asks for ≥ 0.8×); every stored vector compared (max abs difference; the digests of
bench/eval_all.py are the ranking's proof); search wall ms p50 / p95 for the set's questions (each
question's fastest of `--repeat`, the query cache emptied before each) and what HTTP adds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _index(corpus: Path, model, data: Path):
    from remembrancer.indexer.config import Config, make_roots
    from remembrancer.indexer.engine import Engine

    os.environ["REMEMBRANCER_DATA_DIR"] = str(data)
    e = Engine(Config(roots=make_roots([corpus]), model=model))
    t0 = time.perf_counter()
    report = e.refresh()
    return e, time.perf_counter() - t0, report


def _search_ms(engine, questions: list[str], repeat: int) -> list[float]:
    from remembrancer.indexer.api import do_search

    out = []
    for q in questions:
        best = float("inf")
        for _ in range(repeat):
            engine.core.embedder._queries = type(engine.core.embedder._queries)()   # asked anew
            t0 = time.perf_counter()
            do_search(engine.view(), {"query": q, "limit": 5})
            best = min(best, (time.perf_counter() - t0) * 1000)
        out.append(best)
    return out


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eval-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "eval"))
    ap.add_argument("--set", default="memory-dev")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from remembrancer.indexer.models.spec import Endpoint, ServerModel
    from tests.support.model_server import ModelServer

    eval_dir = Path(args.eval_dir)
    corpus = eval_dir / "corpora" / args.set
    if not corpus.is_dir():
        print(f"no corpus {corpus}: pass --eval-dir and --set", file=sys.stderr)
        return 2
    queries = next((q for q in (eval_dir / "queries" / f"{args.set}{suffix}.jsonl" for suffix in ("", ".dev"))
                    if q.is_file()), None)
    if queries is None:
        print(f"no query file for {args.set} in {eval_dir / 'queries'}", file=sys.stderr)
        return 2
    questions = [json.loads(line)["query"] for line in queries.read_text().splitlines() if line.strip()]
    tmp = Path(tempfile.mkdtemp(prefix="bench-model-server-"))
    with ModelServer("--model", "default", "--name", "all-MiniLM-L6-v2") as server:
        spec = ServerModel(documents=Endpoint(url=server.url, name="all-MiniLM-L6-v2", timeout=120), batch=args.batch)
        rows = {}
        for name, model in (("local", None), ("http", spec)):
            engine, seconds, report = _index(corpus, model, tmp / name)
            rows[name] = {"engine": engine, "seconds": seconds, "embedded": report.embedded, "waiting": report.waiting}
        a, b = (rows[n]["engine"].catalog.passage_vectors() for n in ("local", "http"))
        same_labels = a[0].shape == b[0].shape
        diff = float(abs(a[1] - b[1]).max()) if same_labels and len(a[1]) else float("nan")
        for name in ("local", "http"):
            rows[name]["ms"] = _search_ms(rows[name]["engine"], questions, args.repeat)
        served = server.stats()
    print(f"{args.set}: {rows['local']['embedded']} passage texts embedded; server batch {args.batch}, "
          f"{served['requests']} requests")
    for name in ("local", "http"):
        r = rows[name]
        print(f"  {name:<5} index {r['seconds']:6.1f} s  {r['embedded'] / r['seconds']:6.1f} passages/s  "
              f"waiting {r['waiting']}  search p50 {statistics.median(r['ms']):5.1f} ms  p95 {_pct(r['ms'], 95):5.1f} ms")
    ratio = (rows["http"]["embedded"] / rows["http"]["seconds"]) / (rows["local"]["embedded"] / rows["local"]["seconds"])
    print(f"  throughput over HTTP: {ratio:.2f}× local")
    print(f"  search p95 added by HTTP: {_pct(rows['http']['ms'], 95) - _pct(rows['local']['ms'], 95):+.1f} ms "
          f"(p50 {statistics.median(rows['http']['ms']) - statistics.median(rows['local']['ms']):+.1f} ms)")
    print(f"  stored vectors: {'same passages' if same_labels else 'DIFFERENT passages'}, max abs difference {diff:g}")
    for r in rows.values():
        r["engine"].close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
