"""The vector graph holds what the notes hold, within a bound. An edit re-embeds the paragraphs it
changed: their new vectors are added and the old ones deleted — and hnswlib only marks a deleted item,
which keeps its memory, its bytes in the vector file and its place on search paths. An editor saving
as you type made a daemon's graph grow with every save. Past VECTOR_DEAD_SHARE of deleted vectors the
graph is made again from the catalog's vectors (nothing is embedded again); below it, an edit costs
what it touched."""

from __future__ import annotations

from remembrancer.indexer.engine import writer
from tests.support.corpus import engine_for

EDITS = 40


def _save(notes, i: int) -> None:
    """One more save of a note being written: its last paragraph says something new each time."""
    p = notes / "hosts" / "db1.md"
    text = p.read_text().split("\nDraft:")[0]
    p.write_text(f"{text}\nDraft: the failover drill number {i} ran in {i * 7 % 60} minutes.\n"
                 f"\nDraft: replica {i} caught up after {i * 3 % 17} seconds.\n")


def _held(engine) -> int:
    return engine.core.vectors.index.get_current_count()


def test_an_edited_graph_holds_what_the_notes_hold_within_the_bound(notes, tmp_path, tiny_embedder, monkeypatch):
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    e = engine_for([notes], tiny_embedder)
    e.refresh()
    for i in range(EDITS):
        _save(notes, i)
        report = e.refresh()
        assert report.updated == 1 and report.embedded >= 2
        assert e.core.vectors.dead_share() <= writer.VECTOR_DEAD_SHARE
    live = len(e.core.vectors.live)
    assert live == e.catalog.vectors_in_use()
    assert _held(e) <= live / (1 - writer.VECTOR_DEAD_SHARE)   # without the bound: live + 2 × EDITS
    e.close()
    reopened = engine_for([notes], tiny_embedder)   # the file on disk is the purged graph
    assert reopened.core.vectors.index.get_current_count() == _held(e) and reopened.core.vectors.live == e.core.vectors.live
    reopened.close()


def test_an_edit_below_the_bound_costs_what_it_touched(notes, tmp_path, tiny_embedder, monkeypatch):
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    e = engine_for([notes], tiny_embedder)
    _save(notes, 1)
    e.refresh()
    before = _held(e)
    _save(notes, 2)   # its two draft paragraphs embedded anew, the old two deleted: held, not purged
    e.refresh()
    assert _held(e) == before + 2 and 0.0 < e.core.vectors.dead_share() < writer.VECTOR_DEAD_SHARE
    _save(notes, 3)   # the next two take the slots the last save freed
    e.refresh()
    assert _held(e) == before + 2 and 0.0 < e.core.vectors.dead_share() < writer.VECTOR_DEAD_SHARE
    e.close()
