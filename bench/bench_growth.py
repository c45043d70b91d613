"""Index size under churn: what a long life of edits, creates, deletes and renames leaves on disk,
against a fresh index of the same final files. On demand, never in CI.

    .venv/bin/python bench/bench_growth.py [--notes 300] [--ops 500,1000,2000] [--seed 7] [--real-model]
                                           [--old-stores] [--keep]
    .venv/bin/python bench/bench_growth.py --slot-cost [--vectors 5000] [--dim 384]

Writes `--notes` notes (10 folders; each note a marker line, 2–6 paragraphs and a Details
section), indexes them in-process, then applies churn as a daemon sees it: each operation — an
edit (half written in place, half a temp file renamed over), a create in a new subfolder, a
delete, a rename into another folder (weights 55/15/12/18) — followed by the targeted update of
the paths it touched (`refresh_paths`), the vector file saved every few operations as a quiet
daemon does. At each checkpoint of `--ops` (cumulative) it prints the on-disk size of each store
— catalog (the SQLite file; its WAL, which a closed index does not have, apart), keyword index (tantivy folder), vector file (hnswlib file + its
sidecar) — against a fresh index of the same final files, as figures and ratios, with the
counts that must agree (passages, live vectors), the vectors the file holds (deleted ones
included), and that every final note is the first answer to its marker and no answer holds a
dead marker. `--old-stores` runs it as the stores were before they reused space, for comparison.

The tiny test model (tests/support/tiny_model.py, 32 dimensions) keeps embedding out of the way;
`--real-model` uses the packaged default model (384 dimensions: vector files ~6× larger).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

WORDS = ("release sync push reminder habit streak widget paywall detox maestro sentry gateway staging "
         "android ios rollout hotfix migration schema cache queue token retry backoff latency").split()
SAVE_EVERY = 5   # operations between two saves of the vector file (a daemon saves when it is quiet)


class Life:
    """The notes and their churn (seeded): which note is where, at which version."""

    def __init__(self, root: Path, seed: int):
        self.root, self.rng = root, random.Random(seed)
        self.files: dict[int, tuple[str, int]] = {}   # note id → (path, version)
        self.next = 0
        self.dead: list[str] = []                    # markers of versions that are gone

    def body(self, fid: int, ver: int) -> str:
        r = self.rng
        paras = [" ".join(r.choice(WORDS) for _ in range(r.randint(20, 60))) + "." for _ in range(r.randint(2, 6))]
        return (f"# Note {fid}\n\nMarker vtok{fid}x{ver} is the current marker.\n\n" + "\n\n".join(paras)
                + "\n\n## Details\n\n" + " ".join(r.choice(WORDS) for _ in range(40)) + f" ending{fid}x{ver}.\n")

    def _write(self, rel: str, text: str, atomic: bool = False) -> None:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if atomic:
            tmp = p.with_name(p.name + ".tmp")
            tmp.write_text(text)
            os.replace(tmp, p)
        else:
            p.write_text(text)

    def create(self, sub: str = "") -> list[str]:
        fid = self.next
        self.next += 1
        rel = f"area{fid % 10}/{sub}n{fid}.md"
        self._write(rel, self.body(fid, 0))
        self.files[fid] = (rel, 0)
        return [rel]

    def marker(self, fid: int) -> str:
        return f"vtok{fid}x{self.files[fid][1]}"

    def step(self, k: int) -> list[str]:
        """One operation; the corpus paths it touched."""
        r = self.rng
        op = r.choices(["edit", "create", "delete", "rename"], [55, 15, 12, 18])[0]
        if op == "create" or len(self.files) < 2:
            return self.create(f"sub{r.randint(0, 3)}/")
        fid = r.choice(sorted(self.files))
        rel, ver = self.files[fid]
        if op == "edit":
            self.dead.append(self.marker(fid))
            self.files[fid] = (rel, ver + 1)
            self._write(rel, self.body(fid, ver + 1), atomic=r.random() < 0.5)
            return [rel]
        if op == "delete":
            self.dead.append(self.marker(fid))
            del self.files[fid]
            (self.root / rel).unlink()
            return [rel]
        new = f"area{r.randint(0, 9)}/moved/n{fid}-r{k}.md"
        (self.root / new).parent.mkdir(parents=True, exist_ok=True)
        os.rename(self.root / rel, self.root / new)
        self.files[fid] = (new, ver)
        return [rel, new]


def tree_bytes(p: Path) -> int:
    if p.is_file():
        return p.stat().st_size
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else 0


def sizes(index_dir: Path) -> dict[str, int]:
    """Bytes on disk per store of one index folder."""
    cat = tree_bytes(index_dir / "catalog.sqlite3")
    vec = tree_bytes(index_dir / "vectors")
    ft = tree_bytes(index_dir / "fulltext")
    wal = tree_bytes(index_dir / "catalog.sqlite3-wal")
    return {"catalog": cat, "keyword": ft, "vectors": vec, "total": cat + vec + ft, "wal": wal}


def facts(engine) -> dict:
    core = engine.core
    held = core.vectors.index.get_current_count() if core.vectors.index is not None else 0
    db = core.writer_catalog.db
    free = db.execute("PRAGMA freelist_count").fetchone()[0] / max(db.execute("PRAGMA page_count").fetchone()[0], 1)
    return {"passages": engine.catalog.counts()["passages"], "live": len(core.vectors.live), "held": held,
            "keyword_docs": core.fulltext.num_docs(), "keyword_dead": core.fulltext.dead_share(),
            "free_pages": free}


def findable(engine, life: Life) -> tuple[int, int, int]:
    """(final markers whose note is the first answer, final markers, dead markers in any answer's text)."""
    from remembrancer.indexer.api import do_search

    def answers(marker: str, limit: int) -> list[dict]:
        return do_search(engine.view(), {"query": marker, "limit": limit})["results"]

    found = 0
    for fid, (rel, _) in life.files.items():
        top = answers(life.marker(fid), 1)
        found += bool(top) and top[0]["path"] == rel
    dead = 0
    for m in life.dead:
        word = re.compile(rf"\b{m}\b")
        dead += any(word.search((r.get("content") or "") + " " + (r.get("snippet") or "")) for r in answers(m, 5))
    return found, len(life.files), dead


def fresh_index(root: Path, data: Path, model) -> tuple[dict, dict]:
    from remembrancer.indexer.config import Config, make_roots
    from remembrancer.indexer.engine import Engine

    os.environ["REMEMBRANCER_DATA_DIR"] = str(data)
    e = Engine(Config(roots=make_roots([root]), model=model))
    e.refresh()
    f = facts(e)
    d = e.core.dir
    e.close()
    return sizes(d), f


def mb(n: int) -> str:
    return f"{n / 1e6:.2f}"


def slot_cost(n: int, dim: int, k: int = 200) -> None:
    """What a new vector costs when it takes a deleted one's slot against when it is appended
    (store/local/vectors.py's REPLACE_AT_MOST rests on it): hnswlib, `n` random unit vectors of
    `dim`, `k` of them deleted, then `k` new ones added each way; ms per vector, fastest of three."""
    import hnswlib
    import numpy as np

    rng = np.random.default_rng(7)

    def unit(m: int) -> np.ndarray:
        v = rng.standard_normal((m, dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    base, new = unit(n), unit(k)
    best = {"append": float("inf"), "take a deleted slot": float("inf")}
    for _ in range(3):
        for way in best:
            index = hnswlib.Index(space="ip", dim=dim)
            index.init_index(max_elements=n + k, ef_construction=200, M=16, allow_replace_deleted=True)
            index.set_num_threads(1)
            index.add_items(base, np.arange(n))
            for label in range(k):
                index.mark_deleted(label)
            t0 = time.perf_counter()
            index.add_items(new, np.arange(n, n + k), replace_deleted=(way != "append"))
            best[way] = min(best[way], (time.perf_counter() - t0) * 1000 / k)
    for way, ms in best.items():
        print(f"{n} vectors of {dim}: {way:<20} {ms:6.2f} ms a vector")
    print(f"ratio {best['take a deleted slot'] / best['append']:.1f}×")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=300)
    ap.add_argument("--ops", default="500,1000,2000", help="checkpoints, cumulative operations")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--real-model", action="store_true", help="the packaged default model instead of the tiny one")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    ap.add_argument("--old-stores", action="store_true",
                    help="as the stores were before space was reused: vectors appended (deleted ones purged "
                         "past half), the catalog never compacted (the figures to compare with)")
    ap.add_argument("--slot-cost", action="store_true",
                    help="only the cost of a new vector taking a deleted slot against an append (hnswlib alone)")
    ap.add_argument("--vectors", type=int, default=5000)
    ap.add_argument("--dim", type=int, default=384)
    args = ap.parse_args()
    if args.slot_cost:
        slot_cost(args.vectors, args.dim)
        return 0
    checkpoints = sorted(int(x) for x in args.ops.split(","))

    tmp = Path(tempfile.mkdtemp(prefix="remembrancer-growth-"))
    model = None
    if not args.real_model:
        from tests.support.tiny_model import build_tiny_model
        model = str(build_tiny_model(tmp / "tiny-model"))
    from remembrancer.indexer.config import Config, make_roots
    from remembrancer.indexer.engine import Engine

    if args.old_stores:
        from remembrancer.indexer.engine import writer
        from remembrancer.indexer.store.local import vectors
        vectors.REPLACE_AT_MOST, writer.VECTOR_DEAD_SHARE, writer.CATALOG_DEAD_SHARE = -1, 0.5, 2.0
    root = tmp / "notes"
    life = Life(root, args.seed)
    for _ in range(args.notes):
        life.create()
    os.environ["REMEMBRANCER_DATA_DIR"] = str(tmp / "data")
    e = Engine(Config(roots=make_roots([root]), model=model))
    t0 = time.perf_counter()
    e.refresh()
    print(f"first index of {args.notes} notes: {time.perf_counter() - t0:.1f}s; {sizes(e.core.dir)}", file=sys.stderr)
    rows, done = [], 0
    for cp in checkpoints:
        t0 = time.perf_counter()
        while done < cp:
            e.refresh_paths([str(root / rel) for rel in life.step(done)])
            done += 1
            if done % SAVE_EVERY == 0:
                e.save_vectors()
        e.save_vectors()
        churned, cf = sizes(e.core.dir), facts(e)   # the catalog's WAL apart: a closed index has none
        found = findable(e, life)
        print(f"{cp} operations in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        fresh, ff = fresh_index(root, tmp / f"fresh-{cp}", model)
        os.environ["REMEMBRANCER_DATA_DIR"] = str(tmp / "data")
        shutil.rmtree(tmp / f"fresh-{cp}", ignore_errors=True)
        rows.append((cp, churned, fresh, cf, ff, found))

    e.close()
    print(f"\n{args.notes} notes at the start; model: {'default (real)' if args.real_model else 'tiny test model'}; "
          f"MB churned / fresh (ratio)")
    print(f"{'ops':>6} {'files':>6} | " + " | ".join(f"{k:^22}" for k in ("catalog", "keyword", "vectors", "total"))
          + " | catalog WAL (open)")
    for cp, c, f, cf, ff, found in rows:
        cells = [f"{mb(c[k]):>7} / {mb(f[k]):>6} (×{c[k] / max(f[k], 1):.2f})" for k in ("catalog", "keyword", "vectors", "total")]
        print(f"{cp:>6} {found[1]:>6} | " + " | ".join(cells) + f" | {mb(c['wal'])}")
    print("\ncounts churned / fresh: passages, live vectors, vectors held by the file (deleted included), "
          "keyword docs, keyword deleted share, catalog free pages' share; markers found")
    for cp, c, f, cf, ff, found in rows:
        print(f"{cp:>6}: passages {cf['passages']}/{ff['passages']}  live {cf['live']}/{ff['live']}  "
              f"held {cf['held']}/{ff['held']}  kw docs {cf['keyword_docs']}/{ff['keyword_docs']}  "
              f"kw dead {cf['keyword_dead']:.2f}/{ff['keyword_dead']:.2f}  free {cf['free_pages']:.2f}/{ff['free_pages']:.2f}  "
              f"final notes found first {found[0]}/{found[1]}, dead markers in answers {found[2]}")
    if args.keep:
        print(f"\nkept: {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
