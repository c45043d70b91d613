"""What both ledgers do alike — the write sequence, and the reads whose SQL is the same — over the
hooks each dialect supplies.

A document is replaced in one transaction, always in this order: its old rows out (noting the
embeddings they used), this document's new embeddings, the document row, its sections with their
chunks and passages, its entity, its links; then embeddings no passage uses any more go, and the
generation moves — so a reader sees the old document or the new one, and a derived index knows
it is behind. SQLite (store/local/catalog.py) and PostgreSQL (store/postgres/store.py) differ only
in how each step writes its rows (row by row, or COPY with ids allocated first)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Mapping

import numpy as np

from remembrancer.indexer.store.base import MetaReads, SectionRow
from remembrancer.indexer.store.common import section_row
from remembrancer.indexer.store.records import DocumentRecord, EntityRecord, LinkRecord, SectionRecord


# The columns of a section as search reads it (common.section_row), each store adding its casts.
SECTION_ORDER = " ORDER BY d.path, s.ord"


class SqlLedger(MetaReads):
    """A ledger's writes and common reads: the SQL here, written with `?` marks and `{in}` for a
    list of values; the dialect runs it (`_all`, `_all_in`) and writes the rows (the hooks below)."""

    SECTION_SELECT: str   # the dialect's section query (columns as common.section_row reads them)

    # -- reads ----------------------------------------------------------------------------------------
    def document_paths(self) -> list[str]:
        return [r[0] for r in self._all("SELECT path FROM documents")]

    def titles(self, paths) -> dict[str, str]:
        return {r[0]: r[1] for r in self._all_in("SELECT path, title FROM documents WHERE {in}", "path", paths)}

    def known_shas(self, shas: list[str]) -> set[str]:
        return {r[0] for r in self._all_in("SELECT text_sha FROM embeddings WHERE {in}", "text_sha", shas)}

    def section_count(self) -> int:
        return self._all("SELECT count(*) FROM sections")[0][0]

    def sections(self, path: str | None = None) -> list[SectionRow]:
        """Every section (or one document's), in document order."""
        where, params = (" WHERE d.path = ?", (path,)) if path is not None else ("", ())
        return [section_row(r) for r in self._all(self.SECTION_SELECT + where + SECTION_ORDER, params)]

    def passage_ids_of_document(self, doc_id: int) -> list[int]:
        return [r[0] for r in self._all("SELECT p.id FROM passages p JOIN sections s ON s.id = p.section_id"
                                        " WHERE s.doc_id = ?", (doc_id,))]

    _maybe_orphaned: set[str]   # embeddings whose last passage a delete in this transaction may have removed

    def write_document(self, doc: DocumentRecord, sections: list[SectionRecord],
                       new_vectors: Mapping[str, np.ndarray], entity: EntityRecord | None,
                       links: list[LinkRecord] | None = None) -> tuple[list[int], list[int]]:
        """Replace one document; returns (removed passage ids, added passage ids). `new_vectors`
        holds the embeddings of this document's texts not stored yet."""
        with self._write():
            removed = self._delete_document(doc.path)
            self._add_embeddings(new_vectors)
            doc_id = self._insert_document(doc)
            added = self._insert_sections(doc_id, doc, sections, new_vectors)
            if entity is not None:
                self._upsert_entity(doc_id, entity)
            if links:
                self._insert_links([lk.values(doc_id) for lk in links])
            self._drop_orphan_embeddings()
            self._bump_generation()
        return removed, added

    def delete_document(self, path: str) -> list[int]:
        """Remove one document; returns the ids of the passages that went with it."""
        with self._write():
            removed = self._delete_document(path)
            self._drop_orphan_embeddings()
            self._bump_generation()
        return removed

    @contextmanager
    def _write(self) -> Iterator[None]:
        try:
            with self._transaction():
                yield
        except BaseException:
            self._maybe_orphaned.clear()   # the deletes that noted them were rolled back
            raise

    # -- the dialect's hooks ------------------------------------------------------------------------
    def _all(self, sql: str, params: tuple = ()) -> list[tuple]:
        """Every row of `sql` (`?` marks its parameters)."""
        raise NotImplementedError

    def _all_in(self, sql: str, column: str, values) -> list[tuple]:
        """Every row of `sql` whose `{in}` stands for `column` being one of `values`."""
        raise NotImplementedError

    def _transaction(self):
        """A write transaction (a context manager): committed on exit, rolled back on an error."""
        raise NotImplementedError

    def _delete_document(self, path: str) -> list[int]:
        raise NotImplementedError

    def _add_embeddings(self, vectors: Mapping[str, np.ndarray]) -> None:
        raise NotImplementedError

    def _insert_document(self, doc: DocumentRecord) -> int:
        raise NotImplementedError

    def _insert_sections(self, doc_id: int, doc: DocumentRecord, sections: list[SectionRecord],
                         new_vectors: Mapping[str, np.ndarray]) -> list[int]:
        """Sections, chunks and passages (with what the dialect derives from them); the new passage ids."""
        raise NotImplementedError

    def _upsert_entity(self, doc_id: int, entity: EntityRecord) -> None:
        raise NotImplementedError

    def _insert_links(self, rows: list[tuple]) -> None:
        """Rows of (doc_id, target, anchor, kind, line, text, resolved): LinkRecord.values."""
        raise NotImplementedError

    def _drop_orphan_embeddings(self) -> None:
        raise NotImplementedError

    def _bump_generation(self) -> None:
        raise NotImplementedError
