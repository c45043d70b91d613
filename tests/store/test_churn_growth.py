"""An index edited for a long time stays about the size of a fresh index of the same files
(indexer/store/local/vectors.py, Catalog.dead_share/compact): new vectors take the slots of deleted
ones, and the catalog is compacted once deleted rows hold a share of it. Before, the vector file of
a few dozen notes edited 300 times held up to twice their vectors, and the catalog grew past twice
a fresh one's size — while search answered the same."""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest

from remembrancer.indexer.api import do_search
from remembrancer.indexer.store.local import vectors as V
from remembrancer.indexer.store.local.vectors import Vectors
from tests.support.corpus import engine_for, write

NOTES = 30
EDITS = 300
CHECK_EVERY = 20
WORDS = ("release sync push reminder habit streak widget paywall gateway staging rollout hotfix migration "
         "schema cache queue token retry backoff latency").split()


def _body(rng: random.Random, fid: int, ver: int) -> str:
    paras = "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 40))) + "."
                        for _ in range(rng.randint(2, 4)))
    return f"# Note {fid}\n\nMarker vtok{fid}x{ver} is the current marker.\n\n{paras}\n"


def _sizes(engine) -> dict[str, int]:
    d = engine.core.dir
    return {"vectors": (d / "vectors" / "vectors.hnsw").stat().st_size,
            "catalog": sum(p.stat().st_size for p in d.glob("catalog.sqlite3*") if p.name != "catalog.sqlite3-shm")}


@pytest.mark.slow   # ~40–60 s: 300 real index passes
def test_churn_keeps_the_index_near_a_fresh_ones_size_and_search_exact(tmp_path, monkeypatch, tiny_embedder):
    rng = random.Random(5)
    root = tmp_path / "notes"
    versions = {i: 0 for i in range(NOTES)}
    for i in range(NOTES):
        write(root, f"area{i % 3}/n{i}.md", _body(rng, i, 0))
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "churned"))
    e = engine_for([root], tiny_embedder)
    e.refresh()
    worst = 0.0
    for k in range(EDITS):
        i = rng.randrange(NOTES)
        versions[i] += 1
        p = write(root, f"area{i % 3}/n{i}.md", _body(rng, i, versions[i]))
        e.refresh_paths([str(p)])
        if k % CHECK_EVERY == CHECK_EVERY - 1:
            e.save_vectors()
            worst = max(worst, e.core.vectors.index.get_current_count() / len(e.core.vectors.live))
    e.save_vectors()
    churned = _sizes(e)

    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "fresh"))
    fresh_engine = engine_for([root], tiny_embedder)
    fresh_engine.refresh()
    fresh = _sizes(fresh_engine)
    live = fresh_engine.core.vectors.live
    fresh_engine.close()

    assert len(e.core.vectors.live) == len(live) == e.catalog.counts()["passages"]
    assert worst <= 1.5, worst   # vectors held, deleted ones included, of live ones: up to 2 before
    assert churned["vectors"] <= 1.5 * fresh["vectors"], (churned, fresh)
    assert churned["catalog"] <= 1.5 * fresh["catalog"], (churned, fresh)

    # every final text is found, no deleted one; the graph itself answers each live vector with itself
    dead = [f"vtok{i}x{v}" for i, last in versions.items() for v in range(last)]
    for i, v in versions.items():
        out = do_search(e.view(), {"query": f"vtok{i}x{v}", "limit": 3})
        assert out["results"] and out["results"][0]["path"] == f"area{i % 3}/n{i}.md", (i, out["results"][:1])
        assert f"vtok{i}x{v}" in out["results"][0]["content"]
    for m in rng.sample(dead, 40):
        out = do_search(e.view(), {"query": m, "limit": 5})
        gone = re.compile(rf"\b{m}\b")
        assert not any(gone.search((r.get("content") or "") + " " + (r.get("snippet") or "")) for r in out["results"]), m
    vec = e.core.vectors
    labels = np.array(sorted(vec.live), dtype=np.int64)
    got, dist = vec.index.knn_query(np.asarray(vec.index.get_items(labels), dtype=np.float32), k=3)
    assert set(got.ravel().tolist()) <= vec.live   # (the tiny model gives many passages one vector:
    assert (dist[:, 0] < 1e-4).mean() >= 0.99      # the first answer is the query's own vector, or its twin)
    e.close()


def unit_rows(seed: int, n: int, dim: int = 16) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("exact_below", [10, 10**6])
def test_a_file_written_without_slot_reuse_loads_and_its_deleted_slots_are_taken(tmp_path, monkeypatch, exact_below):
    """A vector file saved before slots were reused (hnswlib index made without
    allow_replace_deleted) still loads; its deleted vectors' slots are taken by the next new ones."""
    import hnswlib

    monkeypatch.setattr(V, "EXACT_BELOW", exact_below)
    v = Vectors(tmp_path / "v", 16)
    v.update([], list(range(1, 101)), unit_rows(0, 100))
    v.save(1)
    old = hnswlib.Index(space="ip", dim=16)   # the same file as the old code wrote it
    old.init_index(max_elements=200, ef_construction=V.EF_CONSTRUCTION, M=V.M, random_seed=42)
    old.add_items(unit_rows(0, 100), np.arange(1, 101), num_threads=1)
    for label in range(1, 41):
        old.mark_deleted(label)
    old.save_index(str(v.file))
    v.meta_file.write_text(json.dumps({"dim": 16, "generation": 1, "capacity": 200, "live": list(range(41, 101))}))
    loaded = Vectors(tmp_path / "v", 16)
    assert loaded.live == set(range(41, 101)) and loaded.index.get_current_count() == 100
    loaded.update([], list(range(101, 131)), unit_rows(1, 30))
    assert loaded.index.get_current_count() == 100 and loaded.live == set(range(41, 131))
    hits = loaded.search(unit_rows(1, 30)[0], 5)
    assert hits[0][0] == 101 and all(label in loaded.live for label, _ in hits)
    loaded.update([], [105], unit_rows(2, 1))   # a live label again: updated in place, no slot taken
    assert loaded.index.get_current_count() == 100 and loaded.search(unit_rows(2, 1)[0], 1)[0][0] == 105
