"""An edited index ranks as a first index of the same files does, within a bound. An edit deletes the
document's old chunks from the keyword index and adds new ones; tantivy counts deleted documents in
BM25's statistics until a merge that tantivy-py cannot ask for, so the same question scored otherwise
on an edited or upgraded index than on a new one (a conversations question changed its first answer
after an upgrade read every transcript again). Past KEYWORD_DEAD_SHARE of deleted documents the
index is made again from the catalog; below it, an edit costs what it touched."""

from __future__ import annotations

import pytest

from remembrancer.indexer.config import DEFAULT_LAYOUT
from remembrancer.indexer.engine import writer
from remembrancer.indexer.search.answer import SearchRequest, search
from tests.support.corpus import engine_for

QUERIES = ["restore the database from a backup", "pgbouncer transaction pooling", "replication lag on db2",
           "what happened to db1", "disk full"]
# A layout that types the same files the same way, written differently: a change all the same.
RELAID = (("nothing-here/**", "doc"), *DEFAULT_LAYOUT)


def ranked(engine) -> list[tuple]:
    out = []
    for q in QUERIES:
        res = search(engine.view(), SearchRequest(q, limit=8)).to_json()
        out += [(q, r["path"], r["heading"], r["scores"]["bm25"]) for r in res["results"] or res["best_weak"]]
    return out


def first_index(notes, tmp_path, tiny_embedder, monkeypatch, **kw) -> list[tuple]:
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "first"))
    first = engine_for([notes], tiny_embedder, **kw)
    first.refresh()
    try:
        return ranked(first)
    finally:
        first.close()


def edit(notes, rel: str) -> None:
    p = notes / rel
    p.write_text(p.read_text() + "\nOne more line about backups and the disk.\n")


def test_an_index_edited_past_the_bound_ranks_as_a_first_index_does(notes, tmp_path, tiny_embedder, monkeypatch):
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "edited"))
    e = engine_for([notes], tiny_embedder)
    e.refresh()
    for rel in ("hosts/db1.md", "hosts/db2.md", "runbooks/postgres/restore.md"):
        edit(notes, rel)
    assert e.refresh().updated == 3
    assert e.core.fulltext.dead_share() == 0.0   # made again: no deleted document left
    got = ranked(e)
    e.close()
    assert got and got == first_index(notes, tmp_path, tiny_embedder, monkeypatch)


def test_one_edit_costs_what_it_touched(notes, tmp_path, tiny_embedder, monkeypatch):
    """Below the bound nothing is rebuilt: the edited document's old chunks are the only deleted ones."""
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "edited"))
    e = engine_for([notes], tiny_embedder)
    e.refresh()
    monkeypatch.setattr(writer, "KEYWORD_DEAD_SHARE", 0.9)
    edit(notes, "hosts/db1.md")
    e.refresh()
    assert 0.0 < e.core.fulltext.dead_share() < 0.9
    e.close()


@pytest.mark.parametrize("change", ["parser", "layout"])
def test_an_index_read_again_ranks_as_a_first_index_does(notes, tmp_path, tiny_embedder, monkeypatch, change):
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "upgraded"))
    old = engine_for([notes], tiny_embedder)
    old.refresh()
    old.close()
    if change == "parser":
        monkeypatch.setattr(writer, "PARSE_VERSION", writer.PARSE_VERSION + 1)
    layout = RELAID if change == "layout" else DEFAULT_LAYOUT
    upgraded = engine_for([notes], tiny_embedder, layout=layout)
    report = upgraded.refresh()
    assert report.updated == report.scanned > 0, report   # every document read again
    assert report.embedded == 0                           # and nothing embedded again
    got = ranked(upgraded)
    upgraded.close()
    assert got and got == first_index(notes, tmp_path, tiny_embedder, monkeypatch, layout=layout)


def test_a_long_run_makes_the_index_again_once_at_its_end(notes, tmp_path, tiny_embedder, monkeypatch):
    """A run commits along the way (SAVE_EVERY_S) so that its first documents are searchable soon;
    those commits do not rebuild — each would re-add what the run has not reached yet, and a read of
    every document would rebuild again and again — the end of the run settles the index."""
    from remembrancer.indexer.store.local.fulltext import FullText

    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "upgraded"))
    e = engine_for([notes], tiny_embedder)
    e.refresh()
    rebuilds = []
    real = FullText.rebuild
    monkeypatch.setattr(FullText, "rebuild", lambda self, *a, **k: rebuilds.append(1) or real(self, *a, **k))
    monkeypatch.setattr(writer, "SAVE_EVERY_S", 0.0)   # a commit after every document …
    monkeypatch.setattr(writer, "EMBED_GROUP", 1)       # … each written as it is read
    monkeypatch.setattr(writer, "PARSE_VERSION", writer.PARSE_VERSION + 1)
    report = e.refresh()
    assert report.updated == report.scanned > 2
    assert len(rebuilds) <= 1 and e.core.fulltext.dead_share() <= writer.KEYWORD_DEAD_SHARE, rebuilds
    e.close()
