"""The local store: a SQLite catalog with a tantivy index and an hnswlib file beside it, in one
directory per corpus (the default; see indexer/store/base.py for the interface)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from remembrancer.indexer.store.local.catalog import Catalog, CatalogDamaged
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.store.local.fulltext import FullText
from remembrancer.indexer.store.priority import RequestsFirst
from remembrancer.indexer.store.local.vectors import Vectors
from remembrancer.indexer.writelock import WRITER_LOCK, acquire, describe, writing


class LocalStore:
    kind = "local"
    indexes_in_ledger = False

    def __init__(self, directory: Path, roots_label: str = ""):
        self.dir = directory
        self.catalog_file = directory / "catalog.sqlite3"
        self._roots_label = roots_label
        self.priority = RequestsFirst()   # one per store: its writer gives way to the requests it answers
        self._writer = None   # the index's writer lock (indexer/writelock.py), while this store writes

    def open_ledger(self, readonly: bool) -> Catalog:
        if readonly and not self.catalog_file.exists():
            if self._being_built():
                raise self._not_yet()
            raise UserError(f"no index yet for {self._roots_label or self.dir}",
                            hint="run `remembrancer index --root DIR` first", code="no_index")
        if readonly:
            return self._open_reader()
        if self._writer is None:   # before the catalog: its open may move a damaged one aside
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._writer = acquire(self.dir / WRITER_LOCK, f"the index of {self._roots_label or self.dir}")
        return Catalog(self.catalog_file, readonly=False, priority=self.priority)

    def _open_reader(self) -> Catalog:
        """A read-only catalog. One a live writer is creating (an empty file, then a schema without
        its version yet) is "no index yet", not damaged: the first index was being built."""
        try:
            cat = Catalog(self.catalog_file, readonly=True, priority=self.priority)
        except CatalogDamaged:
            if self._header_unwritten() and self._being_built():
                raise self._not_yet() from None
            raise
        try:
            built = cat.get_meta("schema_version") is not None
        except sqlite3.OperationalError:   # no meta table yet
            built = False
        if not built and self._being_built():
            cat.close()
            raise self._not_yet()
        return cat

    def _header_unwritten(self) -> bool:
        try:
            return self.catalog_file.stat().st_size < 100   # SQLite's header: the file was just created
        except OSError:
            return True

    def _being_built(self) -> bool:
        return writing(self.dir / WRITER_LOCK) is not None

    def _not_yet(self) -> UserError:
        who = describe(writing(self.dir / WRITER_LOCK))
        return UserError(f"no index yet for {self._roots_label or self.dir}: {who} is building it",
                         hint="try again when it is done (`remembrancer status` shows its progress)", code="no_index")

    def close(self) -> None:
        """Let another process write the index (the engine closed)."""
        if self._writer is not None:
            self._writer.release()
            self._writer = None

    def keyword_index(self, ledgers) -> FullText:
        return FullText(self.dir / "fulltext", self.priority, lambda ids: ledgers().chunks_by_ids(ids))

    def vector_index(self, ledgers, dim: int) -> Vectors:
        return Vectors(self.dir / "vectors", dim, self.priority)

    def drop_vector_index(self) -> None:
        for name in ("vectors.hnsw", "vectors.json"):
            (self.dir / "vectors" / name).unlink(missing_ok=True)

    def describe(self) -> dict:
        return {"kind": self.kind, "index_dir": str(self.dir)}
