"""Commits at scale: indexing a real history against the same texts as Markdown notes in the same
run, growth with the history's length, a pass that finds nothing new, and one new commit read
HEAD to HEAD (the default model, in-process: the daemon's ingest path).

    .venv/bin/python bench/bench_commits.py [--repo .] [--sizes 150 300 600] [--appends 5]

The history is `--repo`'s (default: this checkout), cloned shallow at each size (`--depth N`: the
newest N commits). For each size:
1. first index of the commits corpus: seconds, passages embedded, ms per commit;
2. baseline: every commit's rendered text (what the commits corpus indexes) written as one
   Markdown file each, indexed as notes from scratch — the ratio commits / notes is what reading
   git costs over reading files;
3. a pass that finds nothing new (best of 3), and `--appends` new commits each read HEAD to HEAD
   (`refresh_paths`, what a hook's notify or a search's catch-up runs): p50 / max ms;
4. the walk alone (the hash list a full pass compares), and the HEAD check every daemon read pays
   (the indexed HEADs from the catalog against the repositories': daemon/corpora.py `_read_head`),
   each the mean of 200.
Peak RSS of the process is printed at the end (the model included).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
ROOT = Path(__file__).resolve().parent.parent


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.com"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default=str(ROOT))
    ap.add_argument("--sizes", nargs="*", type=int, default=[150, 300, 600])
    ap.add_argument("--appends", type=int, default=5)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-commits-"))
    os.environ["REMEMBRANCER_DATA_DIR"] = str(tmp / "data")
    from remembrancer.indexer.config import Config, load_config, make_roots
    from remembrancer.indexer.engine import Engine
    from remembrancer.indexer.ingest import commit_log
    from remembrancer.indexer.models.embed import load_default_embedder

    embedder = load_default_embedder()
    print(f"{'commits':>8} {'index s':>8} {'passages':>9} {'ms/commit':>10} {'as notes s':>11} {'ratio':>6} "
          f"{'no-change ms':>13} {'new commit p50/max ms':>22}")
    first_per_commit = None
    for n in args.sizes:
        repo = tmp / f"h{n}"
        _git(tmp, "clone", "-q", "--depth", str(n), f"file://{Path(args.repo).resolve()}", str(repo))
        cfg = commit_log.commits_config(load_config([repo]))
        e = Engine(cfg, embedder=embedder)
        t0 = time.perf_counter()
        report = e.refresh()
        took = time.perf_counter() - t0
        walked = commit_log.walk(cfg.roots)
        texts = tmp / f"n{n}"
        texts.mkdir()
        for f in walked.files:   # the same texts, as notes: heading, body, facts
            body = commit_log.render(f).decode("utf-8", "replace")
            subject, _, rest = body.partition("\n")
            (texts / f"{f.rel}.md").write_text(f"# {subject}\n{rest}")
        notes = Engine(Config(roots=make_roots([texts])), embedder=embedder)
        t0 = time.perf_counter()
        notes.refresh()
        as_notes = time.perf_counter() - t0
        notes.close()
        idle = []
        for _ in range(3):
            t0 = time.perf_counter()
            e.refresh()
            idle.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        for _ in range(200):
            commit_log.walk(cfg.roots)
        walk_ms = (time.perf_counter() - t0) * 5
        t0 = time.perf_counter()
        for _ in range(200):
            with e.view() as view:
                indexed = json.loads(view.catalog.get_meta("heads") or "{}")
            assert e.core.current_heads() == indexed
        head_ms = (time.perf_counter() - t0) * 5
        appends = []
        for i in range(args.appends):
            _git(repo, "commit", "-q", "--allow-empty", "-m", f"bench: new commit {i}\n\nA body to embed, number {i}.")
            t0 = time.perf_counter()
            r = e.writer.refresh_paths([])
            appends.append((time.perf_counter() - t0) * 1000)
            assert r.added == 1, r
        e.close()
        per = took / max(report.added, 1) * 1000
        first_per_commit = first_per_commit or per
        print(f"{report.added:>8} {took:>8.1f} {report.embedded:>9} {per:>10.1f} {as_notes:>11.1f} "
              f"{took / as_notes:>6.2f} {min(idle):>13.1f} "
              f"{statistics.median(appends):>10.1f} / {max(appends):<9.1f}  (ms/commit ×{per / first_per_commit:.2f} "
              f"of the first size; walk {walk_ms:.1f} ms, HEAD check {head_ms:.2f} ms)")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
