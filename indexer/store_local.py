"""The local store: a SQLite catalog with a tantivy index and an hnswlib file beside it, in one
directory per corpus (the default; see indexer/store.py for the interface)."""

from __future__ import annotations

from pathlib import Path

from .catalog import Catalog
from .errors import UserError
from .fulltext import FullText
from .priority import RequestsFirst
from .vectors import Vectors
from .writelock import WRITER_LOCK, acquire


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
            raise UserError(f"no index yet for {self._roots_label or self.dir}",
                            hint="run `remembrancer index --root DIR` first", code="no_index")
        if not readonly and self._writer is None:   # before the catalog: its open may move a damaged one aside
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._writer = acquire(self.dir / WRITER_LOCK, f"the index of {self._roots_label or self.dir}")
        return Catalog(self.catalog_file, readonly=readonly, priority=self.priority)

    def close(self) -> None:
        """Let another process write the index (the engine closed)."""
        if self._writer is not None:
            self._writer.release()
            self._writer = None

    def keyword_index(self, ledgers) -> FullText:
        return FullText(self.dir / "fulltext", self.priority)

    def vector_index(self, ledgers, dim: int) -> Vectors:
        return Vectors(self.dir / "vectors", dim, self.priority)

    def drop_vector_index(self) -> None:
        for name in ("vectors.hnsw", "vectors.json"):
            (self.dir / "vectors" / name).unlink(missing_ok=True)

    def describe(self) -> dict:
        return {"kind": self.kind, "index_dir": str(self.dir)}
