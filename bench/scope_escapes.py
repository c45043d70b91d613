"""Scope-escape generators for bench/bench_robustness.py (`--only scope`).

A corpus where the scope `journal` is surrounded by things that look like it: folders differing
only in case (`JOURNAL/`, `Journal/`, random casings), prefix look-alikes (`journal-archive/`,
`journal.old/`, `journal_x/`, `journal2/`, `journal%/`, `jour_al/`, `journal /`, full-width and
zero-width variants), and symlinks from inside the scope to outside files (direct, chained
through another in-scope link, into a look-alike folder, to an absolute path outside the root)
plus symlinked folders. Every outside file carries a unique canary word (asked for) and a marker (never asked for).

Then every read method is asked, under every spelling of the scope (`journal`, `journal/`,
`./journal`, `journal//`), for every canary (search, exact search, latest), every outside path
(read, outline, neighbors, verify) and the whole corpus (list, status, history): an answer
holding an outside marker or an outside file's path is a leak. Scope values that escape (`..`, absolute, empty, unknown, wrong
case) must be structured errors. Finally the cost of the scope's own keyword index (indexer/
scope.py KeywordIndexes): a scoped search right after a catalog change (index rebuilt) and a
settled one, against the unscoped search, on a generated corpus.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from pathlib import Path

SCOPE = "journal"
SPELLINGS = [["journal"], ["journal/"], ["./journal"], ["journal//"], ["journal", "journal/"]]
BAD_SCOPES = [["../hosts"], ["journal/../hosts"], ["/etc"], [""], ["JOURNAL-NOPE"], ["journals"], ["journa"],
              ["journal\x00"], [7], "journal\n"]
LOOKALIKES = ["journal-archive", "journal.old", "journal_x", "journal2", "journal%", "jour_al", "journal ",
              "\uff4aournal", "journal\u200b", "journ%l"]


def _doc(title: str, body: str) -> str:
    return f"# {title}\n\n{body}\n"


def build(root: Path, rng: random.Random, n_case: int = 12) -> dict:
    """The corpus; returns {"canaries": [...], "outside_paths": [...], "inside": [...]}."""
    canaries, outside = [], []

    def outside_doc(rel: str) -> None:
        c = f"canary{len(canaries):04d}x"
        canaries.append(c)
        outside.append(rel)
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(_doc(f"{c} outside", f"Secret outside words {c} zqoutside{len(canaries)}; replication backup "
                                          "restore."), "utf-8")

    inside = []
    for i in range(5):
        rel = f"{SCOPE}/2030-02-{10 + i}.md"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(_doc(f"2030-02-{10 + i}", "Inside the journal: replication backup restore. "
                                     "See [[hosts-db1]] and [outside](../hosts/db1.md)."), "utf-8")
        inside.append(rel)
    outside_doc("hosts/db1.md")
    outside_doc("hosts/hosts-db1.md")
    casings = {"JOURNAL", "Journal", "jOURNAL"}
    while len(casings) < n_case:
        casings.add("".join(c.upper() if rng.random() < 0.5 else c for c in SCOPE))
    casings.discard(SCOPE)
    for name in sorted(casings) + LOOKALIKES:
        try:
            outside_doc(f"{name}/escape.md")
        except OSError:
            continue
    # Symlinks from inside the scope to outside (direct, chained, into a look-alike), a folder link,
    # and one to an absolute path outside the root.
    os.symlink("../hosts/db1.md", root / SCOPE / "direct.md")
    os.symlink("chained-2.md", root / SCOPE / "chained-1.md")
    os.symlink("../hosts/hosts-db1.md", root / SCOPE / "chained-2.md")
    os.symlink("../journal-archive/escape.md", root / SCOPE / "archive.md")
    os.symlink("../hosts", root / SCOPE / "hosts-folder")
    far = root.parent / "far-away.md"
    outside_doc_text = _doc("far", f"canary-far {len(canaries)}")
    far.write_text(outside_doc_text + "zqoutside-far\n", "utf-8")
    os.symlink(str(far), root / SCOPE / "far.md")
    canaries.append("canary-far")
    return {"canaries": canaries, "outside_paths": outside + [f"{SCOPE}/direct.md", f"{SCOPE}/chained-1.md",
                                                                f"{SCOPE}/archive.md", f"{SCOPE}/far.md",
                                                                f"{SCOPE}/hosts-folder/db1.md"],
            "inside": inside}


def run(tmp: Path, embedder, docs: int = 2000, searches: int = 30, seed: int = 14, cost: bool = True) -> dict:
    from remembrancer.indexer import api
    from remembrancer.indexer.answers import Freshness
    from remembrancer.indexer.errors import UserError
    from tests.support.corpus import engine_for

    rng = random.Random(seed)
    root = tmp / "corpus"
    root.mkdir(parents=True)
    world = build(root, rng)
    engine = engine_for([root], embedder)
    engine.refresh()
    asks: list[tuple[str, dict]] = [("list", {}), ("status", {}), ("history", {"entity": "db1"})]
    for c in world["canaries"]:
        asks += [("search", {"query": c}), ("search", {"query": c, "exact": True}), ("latest", {"terms": [c]}),
                 ("search", {"query": f"secret outside words {c}"})]
    for p in world["outside_paths"]:
        asks += [("read", {"path": p}), ("outline", {"path": p}), ("neighbors", {"path": p}), ("verify", {"path": p})]
    for p in world["inside"]:
        asks += [("neighbors", {"path": p}), ("read", {"path": p})]
    counts = {"calls": 0, "answers": 0, "structured_errors": 0, "leaks": 0, "crashes": 0,
              "bad_scopes": 0, "bad_scopes_refused": 0}
    leaks: list[str] = []

    def call(method, params, scope):
        if method == "status":
            with engine.view(scope) as view:
                return view.status().to_json()
        return api.dispatch_read(engine, method, {**params, "scope": scope}, lambda view: Freshness("fresh"))

    for scope in SPELLINGS:
        for method, params in asks:
            counts["calls"] += 1
            try:
                out = call(method, params, scope)
                counts["answers"] += 1
            except UserError as e:
                out = e.to_dict()
                counts["structured_errors"] += 1
            except Exception as e:  # noqa: BLE001 - counted: any crash is a finding
                counts["crashes"] += 1
                leaks.append(f"crash {method} {params}: {type(e).__name__}: {e}")
                continue
            text = json.dumps(out, ensure_ascii=False)
            if params.get("path"):   # an error may repeat the path asked for
                for echo in (json.dumps(params["path"], ensure_ascii=False)[1:-1], json.dumps(repr(params["path"]))[2:-2]):
                    text = text.replace(echo, "")
            # Outside text carries a marker no question uses; outside look-alike files are escape.md.
            found = [m for m in ("zqoutside", "escape.md", "hosts-folder/") if m in text]
            if found:
                counts["leaks"] += 1
                if len(leaks) < 10:
                    leaks.append(f"{method} {params} scope={scope}: {found[:3]}")
    for bad in BAD_SCOPES:
        counts["bad_scopes"] += 1
        try:
            api.dispatch_read(engine, "search", {"query": "replication", "scope": bad}, lambda view: Freshness("fresh"))
        except UserError as e:
            counts["bad_scopes_refused"] += e.param == "scope"
        except Exception as e:  # noqa: BLE001
            counts["crashes"] += 1
            leaks.append(f"crash scope={bad!r}: {type(e).__name__}: {e}")
    engine.close()
    return {**counts, "canaries": len(world["canaries"]), "outside_paths": len(world["outside_paths"]),
            "examples": leaks, **({"keyword_index": keyword_index_cost(tmp / "cost", embedder, docs, searches)}
                                  if cost else {})}


def keyword_index_cost(tmp: Path, embedder, docs: int, searches: int) -> dict:
    """Median search latency: unscoped; scoped settled; scoped right after an edit outside the
    scope (nothing rebuilt) and inside it (the scope's keyword index rebuilt). Half of the
    generated documents are in the scope."""
    from remembrancer.indexer import api
    from remembrancer.indexer.answers import Freshness
    from tests.support.corpus import engine_for

    rng = random.Random(7)
    words = [f"w{i}" for i in range(3000)] + ["replication", "backup", "restore", "lag", "pool", "clients"]
    root = tmp / "corpus"
    for i in range(docs):
        folder = SCOPE if i % 2 == 0 else "hosts"
        body = "\n\n".join(f"## Part {j}\n\n" + " ".join(rng.choice(words) for _ in range(120)) for j in range(3))
        p = root / folder / f"d{i:05d}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# Doc {i}\n\n{body}\n", "utf-8")
    engine = engine_for([root], embedder)
    engine.refresh()
    chunks = engine.catalog.db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    queries = [" ".join(rng.choice(words) for _ in range(3)) for _ in range(searches)]

    def timed(scope, change: str | None) -> list[float]:
        out = []
        for i, q in enumerate(queries):
            if change:   # one document edited, inside or outside the scope: the generation moves
                p = root / change / ("d00000.md" if change == SCOPE else "d00001.md")
                p.write_text(p.read_text("utf-8") + f"\nedit {i}\n", "utf-8")
                engine.refresh()
            t0 = time.perf_counter()
            api.dispatch_read(engine, "search", {"query": q, "scope": scope}, lambda view: Freshness("fresh"))
            out.append((time.perf_counter() - t0) * 1000)
        return out

    timed([], None)   # warm
    unscoped = timed([], None)
    settled = timed([SCOPE], None)
    builds_before = engine._cache.keyword_indexes.builds
    after_outside = timed([SCOPE], "hosts")
    rebuilt_outside = engine._cache.keyword_indexes.builds - builds_before
    after_change = timed([SCOPE], SCOPE)
    rebuilt = engine._cache.keyword_indexes.builds - builds_before - rebuilt_outside
    engine.close()
    med = statistics.median
    return {"documents": docs, "chunks": chunks, "scoped_chunks": "about half", "searches": searches,
            "unscoped_ms_p50": round(med(unscoped), 2), "scoped_settled_ms_p50": round(med(settled), 2),
            "scoped_after_outside_edit_ms_p50": round(med(after_outside), 2),
            "keyword_index_rebuilds_after_outside_edits": rebuilt_outside,
            "scoped_after_inside_edit_ms_p50": round(med(after_change), 2),
            "keyword_index_rebuilds_after_inside_edits": rebuilt,
            "settled_vs_unscoped": round(med(settled) / med(unscoped), 2),
            "after_outside_edit_vs_unscoped": round(med(after_outside) / med(unscoped), 2),
            "after_change_vs_unscoped": round(med(after_change) / med(unscoped), 2)}
