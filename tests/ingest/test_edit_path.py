"""The edit → searchable path of the daemon: the change queue's debounce (a save's events are one
batch; a stream is cut at MAX_WAIT_S) and the link resolver a full pass leaves for the next edit
(engine.prepare_targeted: built when quiet, the same links as the one the edit would build)."""

from __future__ import annotations

import threading

from remembrancer.daemon import watch
from remembrancer.daemon.updates import Updater
from tests.support.corpus import engine_for, write


def test_a_saves_events_are_one_batch():
    q = watch.ChangeQueue()
    for p in ("/r/a.md.tmp", "/r/a.md", "/r/b.md"):   # a temp file, the rename onto the target, another file
        q.put(p)
    assert q.wait_batch(timeout=5) == ({"/r/a.md.tmp", "/r/a.md", "/r/b.md"}, False)
    assert q.wait_batch(timeout=0.05) is None   # nothing left over


def test_a_stream_of_events_is_cut_at_the_longest_wait(monkeypatch):
    monkeypatch.setattr(watch, "QUIET_S", 30.0)     # never quiet …
    monkeypatch.setattr(watch, "MAX_WAIT_S", 0.2)   # … so only the cap can end the batch
    q = watch.ChangeQueue()
    stop = threading.Event()

    def stream():
        i = 0
        while not stop.is_set():
            q.put(f"/r/{i}.md")
            i += 1
            stop.wait(0.01)

    t = threading.Thread(target=stream)
    t.start()
    try:
        got = q.wait_batch(timeout=None)   # would wait forever without the cap
    finally:
        stop.set()
        t.join()
    assert got is not None and got[0] and not got[1]


def test_a_full_request_survives_coalescing():
    q = watch.ChangeQueue()
    q.put("/r/a.md")
    q.put(full=True)
    q.put("/r/b.md")
    assert q.wait_batch(timeout=5) == ({"/r/a.md", "/r/b.md"}, True)


def _linked_corpus(root):
    write(root, "hosts/pg1.md", "---\nhost: pg1\naliases: [pg-primary]\n---\n# pg1\n\nThe primary.\n")
    write(root, "runbooks/restore.md", "# Restore\n\nSee [[pg1]] and [[Failover]] and [[pg-primary]].\n")
    write(root, "runbooks/failover.md", "# Failover\n\nPromote the replica.\n")
    for i in range(5):
        write(root, f"journal/2030-01-0{i + 1}.md", f"# 2030-01-0{i + 1}\n\nChecked [[pg1]] {i}.\n")


def _edits(root):
    write(root, "runbooks/restore.md", "# Restore\n\nSee [[pg1]], [[Failover]], [[Switchover]] and [[pg-primary]].\n")
    write(root, "runbooks/switchover.md", "# Switchover\n\nHand over to [[pg1]].\n")
    (root / "runbooks" / "failover.md").unlink()


def _links_after_edits(tmp_path, name, embedder, prepare: bool):
    root = tmp_path / name
    _linked_corpus(root)
    e = engine_for([root], embedder)
    try:
        e.refresh()
        assert e.writer._resolver is None   # a full pass leaves none …
        if prepare:
            e.prepare_targeted()
            assert e.writer._resolver is not None   # … prepare_targeted builds it
        _edits(root)
        for rel in ("runbooks/restore.md", "runbooks/switchover.md", "runbooks/failover.md"):
            e.refresh_paths([str(root / rel)])
        return sorted((lk["source"], lk["target"], lk["resolved"]) for lk in e.catalog.link_rows())
    finally:
        e.close()


def test_a_prepared_resolver_links_as_the_edit_would(tmp_path, data_env, tiny_embedder):
    prepared = _links_after_edits(tmp_path, "a", tiny_embedder, prepare=True)
    assert prepared == _links_after_edits(tmp_path, "b", tiny_embedder, prepare=False)
    resolved = {(s, t): r for s, t, r in prepared}
    assert resolved[("runbooks/restore.md", "Switchover")] == "runbooks/switchover.md"
    assert resolved[("runbooks/restore.md", "Failover")] is None   # deleted: the backlink follows


def test_the_updater_prepares_after_a_full_pass_only(tmp_path, data_env, tiny_embedder):
    root = tmp_path / "n"
    _linked_corpus(root)
    e = engine_for([root], tiny_embedder)
    try:
        u = Updater(e)
        u.apply((), full=True)
        assert e.writer._resolver is None
        u.when_quiet()
        assert e.writer._resolver is not None
        e.writer._resolver = None
        u.apply([str(root / "runbooks" / "failover.md")], full=False)   # unchanged: nothing written
        u.when_quiet()
        assert e.writer._resolver is None   # a targeted pass leaves it to the edit that needs it
    finally:
        e.close()


def test_after_a_full_pass_the_kept_heap_is_frozen_out_of_the_collectors_walks(tmp_path, data_env, tiny_embedder):
    """What the daemon keeps after a full pass goes to the collector's permanent generation, so a
    full collection during a search walks only what was made since (~60 ms → ~1 ms at 20,000
    documents); cycles from before are collected first, not frozen with the rest."""
    import gc

    root = tmp_path / "n"
    _linked_corpus(root)
    e = engine_for([root], tiny_embedder)
    gc.unfreeze()
    try:
        u = Updater(e)
        u.apply((), full=True)

        class Cycle:
            pass

        c = Cycle()
        c.me = c
        gone = __import__("weakref").ref(c)
        del c
        u.when_quiet()
        assert gc.get_freeze_count() > 1000
        assert gone() is None   # collected before the freeze
        gc.unfreeze()
        u.apply([str(root / "runbooks" / "failover.md")], full=False)
        u.when_quiet()
        assert gc.get_freeze_count() == 0   # a targeted pass freezes nothing
    finally:
        gc.unfreeze()
        e.close()
