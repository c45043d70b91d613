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

    def section_total(self, path: str) -> int:
        """How many sections one document has (0 when it is not stored)."""
        return self._all("SELECT count(*) FROM sections s JOIN documents d ON d.id = s.doc_id WHERE d.path = ?",
                         (path,))[0][0]

    def chunks_from(self, path: str, first_ord: int) -> list[tuple]:
        """The chunk rows (as `chunks_of` gives them) of a document's sections from `first_ord` on."""
        return self._all("SELECT c.id, c.section_id, d.path, d.doc_type, s.heading, c.text FROM chunks c"
                         " JOIN sections s ON s.id = c.section_id JOIN documents d ON d.id = s.doc_id"
                         " WHERE d.path = ? AND s.ord >= ? ORDER BY c.id", (path, first_ord))

    # Passages whose text has no vector: written while the model (or its server) was unavailable.
    _WAITING = " FROM passages p WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.text_sha = p.text_sha)"

    def waiting_count(self) -> int:
        """How many distinct passage texts wait for a vector (found by keywords only until they get one)."""
        return self._all("SELECT count(DISTINCT p.text_sha)" + self._WAITING)[0][0]

    def waiting_passages(self, limit: int) -> list[tuple[str, str]]:
        """(text sha, text) of up to `limit` distinct texts that wait for a vector."""
        return [(r[0], r[1]) for r in self._all("SELECT p.text_sha, min(p.text)" + self._WAITING
                                                + " GROUP BY p.text_sha ORDER BY p.text_sha LIMIT ?", (limit,))]

    def fill_embeddings(self, vectors: Mapping[str, np.ndarray]) -> list[int]:
        """Store vectors for waiting texts; returns the ids of the passages that now have one."""
        with self._write():
            self._add_embeddings(vectors)
            self._fill_passages(list(vectors))
            ids = [r[0] for r in self._all_in("SELECT id FROM passages WHERE {in}", "text_sha", list(vectors))]
            self._bump_generation()
        return ids

    def passage_ids_of_document(self, doc_id: int) -> list[int]:
        return [r[0] for r in self._all("SELECT p.id FROM passages p JOIN sections s ON s.id = p.section_id"
                                        " WHERE s.doc_id = ?", (doc_id,))]

    _maybe_orphaned: set[str]   # embeddings whose last passage a delete in this transaction may have removed

    def write_document(self, doc: DocumentRecord, sections: list[SectionRecord],
                       new_vectors: Mapping[str, np.ndarray], entity: EntityRecord | None,
                       links: list[LinkRecord] | None = None) -> tuple[list[int], list[int]]:
        """Replace one document; returns (removed passage ids, added passage ids). `new_vectors`
        holds the embeddings of this document's texts not stored yet. A dialect may give unchanged
        text its old passage id back: such an id is neither removed nor added."""
        with self._write():
            removed = self._delete_document(doc.path)
            self._add_embeddings(new_vectors)
            doc_id = self._insert_document(doc)
            added = self._insert_sections(doc_id, doc, sections, new_vectors)
            kept = set(removed) & set(added)
            if kept:
                removed = [i for i in removed if i not in kept]
                added = [i for i in added if i not in kept]
            if entity is not None:
                self._upsert_entity(doc_id, entity)
            if links:
                self._insert_links([lk.values(doc_id) for lk in links])
            self._drop_orphan_embeddings()
            self._bump_generation()
        return removed, added

    def append_sections(self, doc: DocumentRecord, keep: int, sections: list[SectionRecord],
                        new_vectors: Mapping[str, np.ndarray]) -> tuple[list[int], list[int], list[int]] | None:
        """Keep a stored document's first `keep` sections and replace the rest with `sections` (a
        transcript that grew: ingest/conversation.py), its row updated; returns (removed passage ids,
        added passage ids, removed section ids), or None — nothing written — when the document is
        not stored with at least `keep` sections (then the caller writes it whole)."""
        with self._write():
            found = self._all("SELECT d.id, count(s.id) FROM documents d LEFT JOIN sections s ON s.doc_id = d.id"
                              " WHERE d.path = ? GROUP BY d.id", (doc.path,))
            if not found or found[0][1] < keep:
                return None
            doc_id = found[0][0]
            removed, gone_sections = self._delete_sections_from(doc_id, keep)
            self._add_embeddings(new_vectors)
            self._update_document(doc_id, doc)
            added = self._insert_sections(doc_id, doc, sections, new_vectors, first_ord=keep)
            kept = set(removed) & set(added)
            removed = [i for i in removed if i not in kept]
            added = [i for i in added if i not in kept]
            self._drop_orphan_embeddings()
            self._bump_generation()
        return removed, added, gone_sections

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

    def _fill_passages(self, shas: list[str]) -> None:
        """Passages of these texts take their stored vectors (where the dialect keeps a copy)."""

    def _insert_document(self, doc: DocumentRecord) -> int:
        raise NotImplementedError

    def _insert_sections(self, doc_id: int, doc: DocumentRecord, sections: list[SectionRecord],
                         new_vectors: Mapping[str, np.ndarray], first_ord: int = 0) -> list[int]:
        """Sections (numbered from `first_ord`), chunks and passages (with what the dialect derives
        from them); the new passage ids."""
        raise NotImplementedError

    def _update_document(self, doc_id: int, doc: DocumentRecord) -> None:
        """The stored document row `doc_id` rewritten from `doc` (its id, and so its sections, kept)."""
        raise NotImplementedError

    def _delete_sections_from(self, doc_id: int, first_ord: int) -> tuple[list[int], list[int]]:
        """Remove document `doc_id`'s sections numbered `first_ord` and on (with their chunks and
        passages); returns (their passage ids, their section ids)."""
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
