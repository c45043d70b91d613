"""The three local stores read back from disk and checked against each other (and against the
corpus): what "consistent" means after a crash, a fault or a race — what a restarted daemon loads."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np

from remembrancer.indexer.ingest.corpus import blob_id


def check_index(index_dir: Path, files: dict[str, bytes] | None = None) -> dict:
    """Catalog, tantivy and the hnswlib file agree; with `files` (corpus path → bytes on disk),
    the catalog holds exactly those documents at exactly those contents.

    Returns counts and a list of problems (empty when consistent) so the bench can count them.
    """
    import hnswlib
    import tantivy

    problems: list[str] = []
    db = sqlite3.connect(index_dir / "catalog.sqlite3")  # read-write: recovers a killed writer's WAL
    try:
        docs = db.execute("SELECT path, content_hash FROM documents").fetchall()
        paths = [p for p, _ in docs]
        if len(paths) != len(set(paths)):
            problems.append("duplicate document paths")
        if files is not None:
            missing, extra = set(files) - set(paths), set(paths) - set(files)
            if missing or extra:
                problems.append(f"documents != files: missing {sorted(missing)[:5]}, extra {sorted(extra)[:5]}")
            stale = [p for p, h in docs if p in files and h != blob_id(files[p])]
            if stale:
                problems.append(f"catalog holds old contents of {stale[:5]}")
        for table, parent, key in (("sections", "documents", "doc_id"), ("chunks", "sections", "section_id"),
                                   ("passages", "sections", "section_id")):
            n = db.execute(f"SELECT COUNT(*) FROM {table} t LEFT JOIN {parent} p ON p.id = t.{key}"
                           " WHERE p.id IS NULL").fetchone()[0]
            if n:
                problems.append(f"{n} orphan rows in {table}")
        passages = dict(db.execute("SELECT p.id, e.vector FROM passages p"
                                   " LEFT JOIN embeddings e ON e.text_sha = p.text_sha"))
        no_vec = [p for p, v in passages.items() if v is None]
        if no_vec:
            problems.append(f"{len(no_vec)} passages without an embedding")
        chunk_ids = {r[0] for r in db.execute("SELECT id FROM chunks")}
        gen = int((db.execute("SELECT value FROM meta WHERE key='generation'").fetchone() or ["0"])[0])
    finally:
        db.close()

    # hnswlib: the sidecar's live set, and the file itself, hold exactly the catalog's passages
    vdir = index_dir / "vectors"
    if passages or (vdir / "vectors.json").exists():
        try:
            vmeta = json.loads((vdir / "vectors.json").read_text())
            live = set(vmeta["live"])
            if live != set(passages):
                problems.append(f"vector sidecar: {len(live - set(passages))} extra, "
                                f"{len(set(passages) - live)} missing labels")
            if vmeta["generation"] != gen:
                problems.append(f"vector generation {vmeta['generation']} != catalog {gen}")
            idx = hnswlib.Index(space="ip", dim=int(vmeta["dim"]))
            idx.load_index(str(vdir / "vectors.hnsw"), max_elements=max(int(vmeta["capacity"]), 1))
            ids = set(int(x) for x in idx.get_ids_list())
            if not live <= ids:
                problems.append(f"{len(live - ids)} live labels missing from the hnsw file")
            for label in sorted(ids - live)[:200]:
                try:
                    idx.get_items([label])
                    problems.append(f"label {label} is live in the hnsw file but not in the catalog")
                    break
                except RuntimeError:
                    pass  # marked deleted: right
            both = sorted(live & set(passages) & ids)
            if both:
                got = np.asarray(idx.get_items(both), dtype=np.float32)
                want = np.stack([np.frombuffer(passages[p], dtype=np.float32) for p in both if passages[p]])
                if got.shape != want.shape or not np.allclose(got, want, atol=1e-5):
                    problems.append("hnsw vectors differ from the catalog's embeddings")
        except Exception as e:  # an unreadable file is an inconsistency too
            problems.append(f"vector file unusable: {type(e).__name__}: {e}")

    # tantivy: exactly the catalog's chunks, at the catalog's generation
    try:
        ft_gen = int((index_dir / "fulltext" / "generation").read_text())
    except (OSError, ValueError):
        ft_gen = -1
    if ft_gen != gen:
        problems.append(f"full-text generation {ft_gen} != catalog {gen}")
    try:
        index = tantivy.Index.open(str(index_dir / "fulltext"))
        searcher = index.searcher()
        hits = searcher.search(tantivy.Query.all_query(), max(searcher.num_docs, 1) + 10).hits
        ft_chunks = [searcher.doc(a)["chunk_id"][0] for _, a in hits]
        if len(ft_chunks) != len(set(ft_chunks)):
            problems.append("duplicate chunks in the full-text index")
        if set(ft_chunks) != chunk_ids:
            problems.append(f"full-text chunks: {len(set(ft_chunks) - chunk_ids)} extra, "
                            f"{len(chunk_ids - set(ft_chunks))} missing")
    except Exception as e:
        problems.append(f"full-text index unusable: {type(e).__name__}: {e}")
    return {"documents": len(paths), "passages": len(passages), "chunks": len(chunk_ids),
            "generation": gen, "problems": problems}


def corpus_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))}
