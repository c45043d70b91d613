"""The local catalog upgrades in place through numbered migrations: an index made before a step
existed gains it from its own rows on the first writable open, with nothing read or embedded again."""

from __future__ import annotations

import sqlite3

from remembrancer.indexer.store.local import migrations
from remembrancer.indexer.store.local.catalog import Catalog
from tests.support.corpus import engine_for, write


def test_a_new_catalog_has_every_migration(tmp_path):
    c = Catalog(tmp_path / "catalog.db")
    try:
        assert migrations.applied_version(c.db) == migrations.LATEST
        assert c.has_literal_index and c.has_section_types
        assert migrations.migrate(c.db) == []   # nothing left to apply
    finally:
        c.close()


def test_an_index_from_before_the_numbering_upgrades_without_reembedding(notes, data_env, tiny_embedder):
    """Version 0 with only the first tables (an index from before the literal index and the
    sections' own types): opened again it gains both, filled from its rows; no passage is embedded."""
    write(notes, "runbooks/lock.md", "# Lock timeouts\n\nSet --lock-timeout to 5s on db1.\n")
    e = engine_for([notes], tiny_embedder)
    e.refresh()
    path = e.catalog.path
    sections_before = [(s.id, s.heading) for p in e.catalog.document_paths() for s in e.catalog.sections(p)]
    e.close()
    db = sqlite3.connect(path, isolation_level=None)
    for t in ("sections_literal_add", "sections_literal_drop", "sections_literal_change"):
        db.execute(f"DROP TRIGGER {t}")
    db.execute("DROP TABLE sections_literal")
    db.execute("DROP INDEX sections_type_newest")
    db.execute("ALTER TABLE sections DROP COLUMN doc_type")
    db.execute("PRAGMA user_version = 0")
    db.close()

    e = engine_for([notes], tiny_embedder)
    c = e.catalog
    assert migrations.applied_version(c.db) == migrations.LATEST
    assert c.has_literal_index and c.has_section_types
    assert [(s.id, s.heading) for p in c.document_paths() for s in c.sections(p)] == sections_before
    assert c.db.execute("SELECT count(*) FROM sections WHERE doc_type IS NULL").fetchone()[0] == 0
    lock = [sid for sid, heading in sections_before if heading == "Lock timeouts"]
    assert [row[0] for row in c.literal_counts("--lock-timeout", True)] == lock   # the literal index answers
    report = e.refresh()
    e.close()
    # the upgrade re-read and re-embedded nothing
    assert (report.embedded, report.added, report.updated, report.removed) == (0, 0, 0, 0)


def test_a_catalog_made_before_the_numbering_with_every_step_is_only_stamped(tmp_path):
    c = Catalog(tmp_path / "catalog.db")
    c.db.execute("PRAGMA user_version = 0")
    c.close()
    c = Catalog(tmp_path / "catalog.db")
    try:
        assert migrations.applied_version(c.db) == migrations.LATEST
    finally:
        c.close()
