"""The hnswlib vector file, derived from the catalog's embedding blobs.

Labels are passage ids (never reused: the catalog's AUTOINCREMENT), so a deleted passage is
`mark_deleted` and a new one added. A deleted vector keeps its slot (memory, bytes in the file)
until a new vector takes it: the index is made and loaded with `allow_replace_deleted`, and an
update of at most REPLACE_AT_MOST new labels adds them with `replace_deleted=True`, so an edit's
new vectors fill the slots earlier edits freed and the file stays the size of the most vectors
live at once (a file written without the flag loads the same way: hnswlib finds its deleted
slots from their marks). A larger update appends: a vector that takes a slot costs about ten
added ones (hnswlib repairs the old item's neighbours: 3.6 ms against 0.39 ms a vector at 5,000
384-d vectors, `bench/bench_growth.py --slot-cost`), which an edit's few pay and a 5,000-passage
document should not. What is left deleted
(notes removed, large documents edited) is purged by a rebuild past VECTOR_DEAD_SHARE
(indexer/engine/writer.py). hnswlib's `save_index` writes in place, so saves go to a
temp file, fsync, rename, fsync the folder: a crash leaves the previous file whole. Its `ef`
is not saved and its `dim` is not checked at load — both are kept in a JSON sidecar and
enforced here. A search over fewer than EXACT_BELOW vectors — filtered or not — is exact
(numpy, one row at a time in a fixed order), so a filter can never starve the result and a
scope's search computes the very similarities a corpus of only its files would (indexer/store/scope.py).
Items are added on one thread: hnswlib's parallel insertion builds a different graph on every run
(the same corpus gave different top-3 lists on 10 of 60 questions); one thread makes equal inputs
give an equal graph where the index is searched approximately.

hnswlib must not add and query at once, so both hold one lock; a large document's vectors are
added in slices of ADD_SLICE, and before each slice the writer gives way to searches
(indexer/store/priority.py: a lock is not fair, the thread that releases it usually gets it back; a
5,000-passage document held every search for seconds). The same items in the same order make
the same graph, sliced or not. Searches see a document's old vectors until its last slice is
in, then its new ones: the swap is one step.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import threading
from pathlib import Path

import numpy as np

from remembrancer.indexer.store.common import EF_SEARCH, EXACT_BELOW
from remembrancer.indexer.store.priority import RequestsFirst

log = logging.getLogger(__name__)

M = 16
EF_CONSTRUCTION = 200
ADD_SLICE = 16         # vectors added per hold of the lock (about a ms of hnswlib work)
REPLACE_AT_MOST = 64   # new vectors of one update that take deleted ones' slots (more: appended)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


class Vectors:
    def __init__(self, directory: Path, dim: int, priority: RequestsFirst | None = None):
        self.dir = directory
        self.dim = dim
        self.file = directory / "vectors.hnsw"
        self.meta_file = directory / "vectors.json"
        self.lock = threading.RLock()   # hnswlib is not safe to add and query at once
        self.priority = priority or RequestsFirst()   # a search is a request: the writer gives way to it
        self._adding = False             # an update's slices are going in (their labels not live yet)
        self.index = None
        self.live: set[int] = set()
        self.generation = -1         # the catalog generation the vectors in memory reflect
        self.saved_generation = -1   # … and the one the file on disk reflects
        self._matrix: tuple[np.ndarray, np.ndarray] | None = None   # (sorted live labels, their vectors)
        self._load()

    def _load(self) -> None:
        import hnswlib

        try:
            meta = json.loads(self.meta_file.read_text())
            if meta.get("dim") != self.dim:
                raise ValueError(f"dim {meta.get('dim')} != {self.dim}")
            idx = hnswlib.Index(space="ip", dim=self.dim)
            idx.load_index(str(self.file), max_elements=max(int(meta["capacity"]), 1), allow_replace_deleted=True)
            idx.set_ef(EF_SEARCH)
            live = set(int(x) for x in meta["live"])
            if idx.get_current_count() < len(live):
                raise ValueError("file holds fewer vectors than recorded")
            self.index, self.live, self.generation = idx, live, int(meta["generation"])
            self.saved_generation = self.generation
        except FileNotFoundError:
            self.index, self.live, self.generation = None, set(), -1
        except Exception as e:  # truncated or foreign file: derived data, rebuilt by the caller
            log.warning("vector file %s unusable (%s); it will be rebuilt from the catalog", self.file, e)
            self.index, self.live, self.generation = None, set(), -1

    def _new_index(self, capacity: int):
        import hnswlib

        idx = hnswlib.Index(space="ip", dim=self.dim)
        idx.init_index(max_elements=max(capacity, 16), ef_construction=EF_CONSTRUCTION, M=M, random_seed=42,
                       allow_replace_deleted=True)
        idx.set_ef(EF_SEARCH)
        return idx

    def rebuild(self, labels: np.ndarray, vectors: np.ndarray, generation: int) -> None:
        """A new graph of exactly these vectors, built beside the one searches use and swapped in:
        a daemon's rebuild of tens of thousands of vectors takes seconds, and no search waits for it."""
        index = self._new_index(int(len(labels) * 1.25) + 16)
        if len(labels):
            index.add_items(vectors, labels, num_threads=1)
        with self.lock:
            self.index = index
            self.live = set(int(x) for x in labels)
            self._matrix = None
        self.save(generation)

    def dead_share(self) -> float:
        """Deleted vectors the graph still holds, as a share of all it holds: hnswlib only marks a
        deleted item, which keeps its memory, its bytes in the file and its place on search paths."""
        with self.lock:
            held = self.index.get_current_count() if self.index is not None else 0
            return (held - len(self.live)) / held if held else 0.0

    def update(self, removed: list[int], labels: list[int], vectors: np.ndarray) -> None:
        with self.lock:
            if self.index is None:
                self.index = self._new_index(len(labels) + 16)
            held = self.index.get_current_count()
            reuse = len(labels) <= REPLACE_AT_MOST
            need = held + (max(0, len(labels) - (held - len(self.live))) if reuse else len(labels))
            if labels and need > self.index.get_max_elements():
                self.index.resize_index(max(need, int(self.index.get_max_elements() * 1.5)))
            # A label hnswlib holds already must not take a deleted slot: its old slot would keep the
            # label and the lookup would lose one of the two. A live one is updated in place; the
            # catalog never gives a deleted passage's id again (AUTOINCREMENT), so no other can be held.
            again = [i for i, x in enumerate(labels) if int(x) in self.live]
        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(labels), self.dim)
        ids = np.asarray(labels, dtype=np.int64)
        if again:
            fresh = np.setdiff1d(np.arange(len(ids)), again)
            order = np.concatenate([np.asarray(again, dtype=np.int64), fresh])
            vecs, ids = vecs[order], ids[order]
        try:
            for start in range(0, len(ids), ADD_SLICE):
                self.priority.give_way()
                with self.lock:
                    self._adding = True
                    # One thread: a document's few vectors gain nothing from two (thread start-up cost
                    # more than the insert), and one gives the same graph on every run (threads race).
                    # A new label takes a deleted vector's slot when there is one, in an update of
                    # at most REPLACE_AT_MOST (the module's docstring).
                    end = min(start + ADD_SLICE, len(ids))
                    if start < len(again):   # the live ones, first: updated in place
                        cut = min(end, len(again))
                        self.index.add_items(vecs[start:cut], ids[start:cut], num_threads=1)
                        start = cut
                    if start < end:
                        self.index.add_items(vecs[start:end], ids[start:end], num_threads=1, replace_deleted=reuse)
        finally:
            with self.lock:
                self._adding = False
        with self.lock:   # the old vectors go and the new ones count in one step
            for label in removed:
                if label in self.live:
                    self.index.mark_deleted(label)
                    self.live.discard(label)
            self.live.update(int(x) for x in labels)
            self._update_matrix(removed, labels, vectors)

    def _update_matrix(self, removed, labels, vectors) -> None:
        """Keep the exact-search copy in step with an update (dropped and rebuilt if out of order,
        dropped for good once the index is too big to be searched exactly)."""
        if self._matrix is None or len(self.live) >= EXACT_BELOW:
            self._matrix = None
            return
        have, mat = self._matrix
        if len(removed):
            keep = ~np.isin(have, np.asarray(list(removed), dtype=np.int64))
            have, mat = have[keep], mat[keep]
        if len(labels):
            new = np.asarray(labels, dtype=np.int64)
            if len(have) and new.min() <= have[-1]:
                self._matrix = None
                return
            have = np.concatenate([have, new])
            mat = np.concatenate([mat, np.asarray(vectors, dtype=np.float32).reshape(len(new), self.dim)])
        self._matrix = (have, mat)

    def save(self, generation: int) -> None:
        """Atomic save: both temp files written, checked and fsynced, then renamed over the old pair.

        hnswlib writes through an unchecked std::ofstream: on a full disk `save_index` returns
        normally with a short file. So its size is checked against what hnswlib meant to write;
        a failed save removes its temp files and leaves the previous pair as it was."""
        with self.lock:
            self.dir.mkdir(parents=True, exist_ok=True)
            if self.index is None:
                self.index = self._new_index(16)
            index, live = self.index, sorted(self.live)
        # Written outside the lock: a search only reads the graph, as the save does, and every
        # change (update, rebuild) runs on the writer thread, which is here — so searches go on
        # while a large file is written.
        tmp = self.file.with_suffix(".hnsw.tmp")
        mtmp = self.meta_file.with_suffix(".json.tmp")
        try:
            index.save_index(str(tmp))
            if os.path.getsize(tmp) != index.index_file_size():
                raise OSError(errno.ENOSPC, f"short write of {tmp.name} ({os.path.getsize(tmp)} of "
                                            f"{index.index_file_size()} bytes): disk full?")
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            meta = {"dim": self.dim, "generation": generation, "capacity": index.get_max_elements(), "live": live}
            with open(mtmp, "w") as f:
                json.dump(meta, f)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            for t in (tmp, mtmp):
                t.unlink(missing_ok=True)
            raise
        os.replace(tmp, self.file)
        os.replace(mtmp, self.meta_file)  # a crash between the two: old generation → rebuilt at open
        _fsync_dir(self.dir)
        self.generation = self.saved_generation = generation
    
    def search(self, query: np.ndarray, k: int, allowed: set[int] | None = None) -> list[tuple[int, float]]:
        """(label, cosine similarity) best first; `allowed` restricts labels."""
        with self.priority.request(), self.lock:
            return self._search(query, k, allowed)

    def search_soon(self, query: np.ndarray, k: int, allowed: set[int] | None = None):
        rows = self.search(query, k, allowed)   # in memory: nothing to wait on beside the caller
        return lambda: rows

    def _search(self, query: np.ndarray, k: int, allowed: set[int] | None) -> list[tuple[int, float]]:
        if self.index is None or not self.live:
            return []
        pool = self.live if allowed is None else (allowed & self.live)
        if not pool:
            return []
        k = min(k, len(pool))
        q = np.asarray(query, dtype=np.float32).reshape(1, -1)
        if len(pool) < EXACT_BELOW:
            return self._exact(q[0], None if allowed is None else pool, k)
        self.index.set_ef(max(EF_SEARCH, k))
        try:
            if allowed is None and not self._adding:
                labels, dists = self.index.knn_query(q, k=k)
            else:   # (between an update's slices its labels are in the graph but not live yet)
                labels, dists = self.index.knn_query(q, k=k, filter=lambda x: x in pool)
        except RuntimeError:  # fewer than k reachable items: ask for what is there
            return self._exact(q[0], None if allowed is None else pool, k)
        return [(int(lbl), 1.0 - float(d)) for lbl, d in zip(labels[0], dists[0])]

    def _exact(self, q: np.ndarray, pool: set[int] | None, k: int) -> list[tuple[int, float]]:
        """Similarities computed row by row (einsum, not BLAS: a row's value must not depend on
        which other rows are searched with it), best first, ties by label."""
        if len(self.live) >= EXACT_BELOW:   # a big index, a small pool: fetch just the pool's vectors
            labels = np.array(sorted(self.live if pool is None else pool), dtype=np.int64)
            mat = np.asarray(self.index.get_items(labels), dtype=np.float32).reshape(-1, self.dim)
        else:   # a copy of every vector (fetching them costs more than the search), kept in step by update()
            if self._matrix is None or len(self._matrix[0]) != len(self.live):
                labels = np.array(sorted(self.live), dtype=np.int64)
                self._matrix = (labels, np.asarray(self.index.get_items(labels), dtype=np.float32).reshape(-1, self.dim))
            labels, mat = self._matrix
            if pool is not None:
                rows = np.searchsorted(labels, np.array(sorted(pool), dtype=np.int64))
                labels, mat = labels[rows], mat[rows]
        sims = np.einsum("ij,j->i", mat, np.asarray(q, dtype=np.float32))
        return [(int(labels[i]), float(sims[i])) for i in top_k(sims, k)]

    def __len__(self) -> int:
        return len(self.live)


def top_k(sims: np.ndarray, k: int) -> np.ndarray:
    """The indices of the k largest values, best first, equal values in index order — what a
    stable sort of the whole array gives, without sorting it: a partition finds the k-th value,
    and only the values at or above it (ties at the edge included) are sorted (~0.5 ms saved per
    search at 9,000 vectors)."""
    neg = -sims
    if k < len(neg):
        edge = np.partition(neg, k - 1)[k - 1]
        keep = np.flatnonzero(neg <= edge)   # in index order, so the stable sort keeps ties by index
        return keep[np.argsort(neg[keep], kind="stable")][:k]
    return np.argsort(neg, kind="stable")[:k]
