"""Code at scale: indexing source files as a code corpus against the same bytes as Markdown notes
in the same run (the issue's bar: within 2× per file), and the cost of one edited file.

    .venv/bin/python bench/bench_code.py [--src indexer] [--edits 5]

1. `--src` (default: this checkout's `indexer/` folder) indexed as a code corpus from scratch (tree-sitter
   definitions, the default model): seconds, passages, sections; the same files copied with a `.md`
   ending and indexed as notes from scratch in the same run; the ratio per file.
2. `--edits` times one function is appended to a file and `refresh_paths` is timed: p50 / max ms.
3. the parse alone: every file cut into its definitions (no embedding), ms per file.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default=str(ROOT / "indexer"))
    ap.add_argument("--edits", type=int, default=5)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-code-"))
    os.environ["REMEMBRANCER_DATA_DIR"] = str(tmp / "data")
    from remembrancer.indexer.config import CODE, CODE_SUFFIXES, Config, make_roots
    from remembrancer.indexer.engine import Engine
    from remembrancer.indexer.ingest import code
    from remembrancer.indexer.models.embed import load_default_embedder

    embedder = load_default_embedder()
    src = tmp / "src"
    shutil.copytree(args.src, src, ignore=shutil.ignore_patterns("__pycache__"))
    files = [p for p in src.rglob("*") if p.is_file() and p.name.lower().endswith(CODE_SUFFIXES)]
    as_md = tmp / "md"
    for p in files:
        out = as_md / p.relative_to(src).with_suffix(p.suffix + ".md")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(p.read_bytes())
    size = sum(p.stat().st_size for p in files)
    t0 = time.perf_counter()
    for p in files:
        code.pieces(p.read_text(encoding="utf-8", errors="replace"), p.name)
    parse_ms = (time.perf_counter() - t0) * 1000 / max(len(files), 1)
    c = Engine(Config(code=make_roots([src], kind=CODE)).code_config(), embedder=embedder)
    t0 = time.perf_counter()
    rc = c.refresh()
    code_s = time.perf_counter() - t0
    n = Engine(Config(roots=make_roots([as_md])), embedder=embedder)
    t0 = time.perf_counter()
    rn = n.refresh()
    notes_s = time.perf_counter() - t0
    n.close()
    edits = []
    target = max(files, key=lambda p: p.stat().st_size)
    for i in range(args.edits):
        with target.open("a", encoding="utf-8") as fh:
            fh.write(f"\n\ndef bench_added_{i}(x):\n    return x + {i}\n")
        t0 = time.perf_counter()
        c.writer.refresh_paths([str(target)])
        edits.append((time.perf_counter() - t0) * 1000)
    sections = c.catalog.counts()["sections"]
    c.close()
    print(f"{len(files)} files, {size / 1024:.0f} KB (syntax-aware: {code.syntax_aware()})")
    print(f"as code:  {code_s:6.1f} s, {rc.embedded} passages, {sections} sections, {code_s / len(files) * 1000:.0f} ms/file")
    print(f"as notes: {notes_s:6.1f} s, {rn.embedded} passages, {notes_s / len(files) * 1000:.0f} ms/file")
    print(f"ratio code / notes per file: {code_s / notes_s:.2f}x")
    print(f"parse alone: {parse_ms:.1f} ms/file; one edited file ({target.name}, "
          f"{target.stat().st_size / 1024:.0f} KB): p50 {statistics.median(edits):.0f} ms, max {max(edits):.0f} ms")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
