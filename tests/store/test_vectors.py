"""The hnswlib vector file under a writer and searches at once (indexer/store/local/vectors.py): a large
document's vectors go in slices, requests go first between slices (indexer/store/priority.py), and the
swap from a document's old vectors to its new ones is one step."""

import threading

import numpy as np

from remembrancer.indexer.store import priority
from remembrancer.indexer.store.local import vectors as V
from remembrancer.indexer.store.local.vectors import Vectors

DIM = 16


def unit_rows(seed: int, n: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_a_sliced_update_builds_the_graph_one_add_would(tmp_path, monkeypatch):
    """Same items, same order, one thread: the saved graph is byte for byte the one a single
    add_items of the whole document makes (slicing changes when searches may run, not the graph)."""
    files = {}
    for name, slice_ in (("whole", 10**9), ("sliced", 64)):
        monkeypatch.setattr(V, "ADD_SLICE", slice_)
        v = Vectors(tmp_path / name, DIM)
        v.update([], list(range(1, 201)), unit_rows(0, 200))
        v.update(list(range(1, 51)), list(range(201, 1201)), unit_rows(1, 1000))
        v.save(2)
        files[name] = (v.file.read_bytes(), sorted(v.live))
    assert files["whole"] == files["sliced"]


def test_searches_see_the_old_vectors_until_the_last_slice_is_in(tmp_path, monkeypatch):
    """A document re-embedded with 300 passages (several slices): every search between slices finds only
    its old vectors, on the approximate path and the exact one; afterwards only its new ones."""
    for exact_below in (10, 10**6):   # the hnswlib graph, then the exact copy
        monkeypatch.setattr(V, "EXACT_BELOW", exact_below)
        v = Vectors(tmp_path / f"v{exact_below}", DIM)
        old = list(range(1, 101))
        v.update([], old, unit_rows(2, 100))
        new = list(range(101, 401))
        seen: list[set[int]] = []
        real = v.priority.give_way

        def search_between_slices():
            real()
            seen.append({label for label, _ in v.search(unit_rows(3, 1)[0], 50)})

        monkeypatch.setattr(v.priority, "give_way", search_between_slices)
        v.update(old, new, unit_rows(4, 300))
        assert len(seen) == -(-300 // V.ADD_SLICE) > 1
        assert all(s and s <= set(old) for s in seen), seen
        after = {label for label, _ in v.search(unit_rows(3, 1)[0], 50)}
        assert after and after <= set(new)
        assert v.live == set(new)


def test_the_writer_gives_way_while_a_request_is_answered(tmp_path, monkeypatch):
    """Before each slice the writer waits while a request is being answered (a lock is not fair:
    the releasing thread usually wins it back); it goes on once the request is done, and a
    request that never ends holds it for GIVE_WAY_MAX_S at most per slice."""
    monkeypatch.setattr(priority, "GIVE_WAY_MAX_S", 60.0)
    v = Vectors(tmp_path / "v", DIM)
    v.update([], list(range(1, 11)), unit_rows(5, 10))
    answering = v.priority.request()
    answering.__enter__()
    writer = threading.Thread(target=v.update, args=([], list(range(11, 211)), unit_rows(6, 200)))
    writer.start()
    writer.join(0.5)
    assert writer.is_alive() and len(v) == 10   # held before its first slice
    answering.__exit__(None, None, None)
    writer.join(60)
    assert not writer.is_alive() and len(v) == 210
    monkeypatch.setattr(priority, "GIVE_WAY_MAX_S", 0.01)
    with v.priority.request():   # a request that outlasts the whole update
        v.update([], list(range(211, 411)), unit_rows(7, 200))
    assert len(v) == 410


def test_the_engine_gives_way_between_documents_and_inside_a_large_one(tmp_path, data_env, tiny_embedder, monkeypatch):
    """Every place a large write is cut: before each document, every WRITE_SLICE sections of its
    catalog rows, every WRITE_SLICE chunks into tantivy, every ADD_SLICE vectors."""
    from remembrancer.indexer.store.local import catalog
    from remembrancer.indexer.store.local import fulltext
    from tests.support.corpus import engine_for, write

    root = tmp_path / "notes"
    write(root, "small.md", "# Small\n\nbackup restore\n")
    write(root, "large.md", "# Large\n\n" + "".join(f"## Part {i}\n\nbackup restore database {i}\n\n" for i in range(200)))
    e = engine_for([root], tiny_embedder)
    calls: list[str] = []
    real = e.store.priority.give_way

    def counted():
        import inspect
        calls.append(inspect.stack()[1].function)
        real()

    monkeypatch.setattr(e.store.priority, "give_way", counted)
    e.refresh()
    assert calls.count("_write") == 2                       # one per document
    assert calls.count("_insert_sections") == 200 // catalog.WRITE_SLICE   # 201 sections of large.md
    chunks = len(list(e.catalog.chunks_of("large.md")))
    assert calls.count("replace_document") == (chunks - 1) // fulltext.WRITE_SLICE
    assert len(e.core.vectors) > 2 * V.ADD_SLICE and calls.count("update") >= len(e.core.vectors) // V.ADD_SLICE
    e.close()


def test_top_k_is_what_a_stable_sort_of_every_similarity_gives():
    """The exact search partitions instead of sorting all similarities: the same k indices, in the
    same order, equal values in index order — ties at the edge of the k included."""
    rng = np.random.default_rng(7)
    for n, k in ((1, 1), (10, 3), (500, 300), (9000, 300), (40, 40), (40, 60)):
        for values in (rng.standard_normal(n).astype(np.float32),
                       np.round(rng.standard_normal(n), 1).astype(np.float32),   # many ties
                       np.zeros(n, dtype=np.float32)):                           # all equal
            want = np.argsort(-values, kind="stable")[:k]
            assert np.array_equal(V.top_k(values, k), want), (n, k)
