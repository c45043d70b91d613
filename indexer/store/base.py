"""The storage seam: what the engine, search, memory tools and scopes may ask of a store.

A store is three parts kept in agreement — the ledger (documents, sections, chunks, passages,
embeddings, entities, links, meta and the generation), a keyword index and a vector index. The
local store is SQLite (indexer/store/local/catalog.py) + tantivy (fulltext.py) + hnswlib (vectors.py); the
team store is PostgreSQL + pgvector (indexer/store/postgres/store.py). Nothing outside the store modules
writes SQL: callers get typed methods and the rows below.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Protocol, TypedDict, runtime_checkable

import numpy as np

from remembrancer.indexer.store.filters import Filters
from remembrancer.indexer.store.priority import RequestsFirst
from remembrancer.indexer.store.records import DocumentRecord, EntityRecord, LinkRecord, SectionRecord


@dataclass
class SectionRow:
    id: int
    doc_id: int
    path: str
    heading: str
    title: str
    level: int
    start_line: int
    end_line: int
    date: str | None
    stale: bool
    doc_type: str
    doc_stale: bool
    tags: list[str]
    entities: list[str]
    content: str | None   # None (with body): read without its text (Catalog.section_heads_by_id)
    body: str | None


@dataclass
class DocumentSummary:
    """One line of `list`: a document with its section count and size."""
    path: str
    doc_type: str
    date: str | None
    title: str
    sections: int
    chars: int
    tags: list[str]


class DocumentRow(TypedDict):
    """A document as stored (front_matter, tags and warnings as JSON text)."""
    id: int
    path: str
    root: str
    rel: str
    content_hash: str
    size: int
    mtime_ns: int
    doc_type: str
    date: str | None
    title: str
    front_matter: str
    tags: str
    warnings: str
    stale: int
    line_count: int
    indexed_at: float


class LinkRow(TypedDict):
    id: int
    source: str
    target: str
    anchor: str | None
    kind: str
    line: int
    text: str
    resolved: str | None


ChunkRow = tuple[int, int, str, str, str, str]   # chunk id, section id, path, doc_type, heading, text
SectionText = tuple[int, str, str, str]          # section id, heading, content, path (document order)
DocumentName = tuple[str, str, str, str]         # path, rel, root, title


class MetaReads:
    """What every ledger reads from its meta table the same way (each one has its own get_meta)."""

    @property
    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    def model_contract(self) -> dict | None:
        raw = self.get_meta("model_contract")
        return json.loads(raw) if raw else None


@runtime_checkable
class Ledger(Protocol):
    """The catalog: written first, trusted after a crash."""

    generation: int

    # meta and the model contract
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def model_contract(self) -> dict | None: ...
    def counts(self) -> dict[str, int]: ...

    # documents
    def documents(self) -> dict[str, tuple[int, str, int, int]]: ...
    def documents_matching(self, paths, prefixes) -> dict[str, tuple[int, str, int, int]]: ...
    def titles(self, paths) -> dict[str, str]: ...
    def document(self, path: str) -> DocumentRow | None: ...
    def document_paths(self) -> list[str]: ...
    def document_names(self) -> list[DocumentName]: ...
    def document_summaries(self, f: Filters) -> list[DocumentSummary]: ...
    def known_tags(self) -> set[str]: ...

    # writes (one transaction per document)
    def write_document(self, doc: DocumentRecord, sections: list[SectionRecord],
                       new_vectors: Mapping[str, np.ndarray], entity: EntityRecord | None,
                       links: list[LinkRecord] | None = None) -> tuple[list[int], list[int]]:
        """`new_vectors`: this document's texts embedded in this run (the engine passes no other)."""
    def append_sections(self, doc: DocumentRecord, keep: int, sections: list[SectionRecord],
                        new_vectors: Mapping[str, np.ndarray]) -> tuple[list[int], list[int], list[int]] | None:
        """A grown transcript: its first `keep` sections kept, the rest replaced (store/ledger.py)."""
    def delete_document(self, path: str) -> list[int]: ...
    def touch_document(self, path: str, size: int, mtime_ns: int) -> None: ...
    def known_shas(self, shas: list[str]) -> set[str]: ...
    def waiting_count(self) -> int: ...
    def waiting_passages(self, limit: int) -> list[tuple[str, str]]: ...
    def fill_embeddings(self, vectors: Mapping[str, np.ndarray]) -> list[int]: ...
    def set_entity_mentions(self, mentions: dict[int, list[str]]) -> None: ...
    def set_link_resolutions(self, changes: list[tuple[str | None, int]]) -> None: ...
    def read_all_again(self) -> None: ...
    def drop_embeddings(self) -> None: ...
    def compact(self) -> str | None: ...
    def dead_share(self) -> float: ...   # space deleted rows hold, of the store's (0.0 where the database reclaims it)

    # sections, passages, links, entities
    def sections(self, path: str | None = None) -> list[SectionRow]: ...
    def sections_by_id(self, ids: list[int]) -> dict[int, SectionRow]: ...
    def section_heads_by_id(self, ids: list[int]) -> dict[int, SectionRow]: ...   # content and body None
    def section_texts(self) -> list[SectionText]: ...
    def filtered_section_ids(self, f: Filters) -> set[int]: ...
    def count_sections(self, f: Filters) -> int: ...
    def section_ids_of(self, paths: Iterable[str]) -> list[int]: ...
    def section_ids_about(self, record_paths: list[str], name: str, needles: list[str]) -> list[int]: ...
    def literal_counts(self, needle: str, case_insensitive: bool) -> list[tuple[int, str | None, int]]: ...
    # the literal index (substrings, case-insensitive); None: it cannot answer, scan section_texts()
    def sections_containing(self, needles: list[str], content_only: bool = False) -> list[SectionText] | None: ...
    def uses_word(self, word: str) -> bool | None: ...   # some visible content has it whole
    def newest_sections(self, f: Filters, limit: int) -> list[int]: ...
    def section_count(self) -> int: ...
    def all_chunks(self) -> Iterable[ChunkRow]: ...
    def chunks_of(self, path: str) -> Iterable[ChunkRow]: ...
    def chunks_from(self, path: str, first_ord: int) -> Iterable[ChunkRow]: ...   # its sections from first_ord on
    def section_total(self, path: str) -> int: ...
    def passage_vectors(self, passage_ids: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]: ...
    def passages_by_id(self, passage_ids) -> dict[int, tuple[int, bool]]: ...
    def passage_texts(self, passage_ids) -> dict[int, tuple[int, int, str, str]]: ...   # id → (section id, doc id, path, text)
    def passage_ids_in(self, section_ids) -> set[int]: ...
    def passage_ids_of_document(self, doc_id: int) -> list[int]: ...
    def link_rows(self, source_doc_id: int | None = None, resolved_to: str | None = None) -> list[LinkRow]: ...
    def entities(self, unscoped: bool = False) -> list[tuple[str, str, list[str]]]: ...

    # scopes (indexer/store/scope.py, docs/scopes.md): a request answered as if the corpus held only the
    # files under the prefixes — whole segments, exact case, symlinks judged by their targets
    def scoped(self, prefixes: tuple[str, ...]) -> AbstractContextManager: ...
    def record_symlinks(self, targets: dict[str, str]) -> None: ...
    def symlink_targets(self) -> dict[str, str]: ...
    def vectors_in_use(self) -> int: ...
    def chunk_ids_digest(self) -> str: ...
    def passage_ids(self) -> set[int]: ...
    def close(self) -> None: ...


@runtime_checkable
class KeywordIndex(Protocol):
    """BM25 over chunks; filters arrive as allowed section ids and never change the ranking."""

    generation: int

    def search(self, text: str, limit: int, allowed_sections: set[int] | None = None) -> dict[int, float]: ...
    def replace_document(self, path: str, chunks) -> None: ...
    def replace_sections(self, path: str, removed_sections: list[int], chunks) -> None: ...
    def delete_document(self, path: str) -> None: ...
    def commit(self, generation: int) -> None: ...
    def rebuild(self, chunks, generation: int) -> int: ...
    def dead_share(self) -> float: ...   # deleted documents still counted in its statistics, of all


@runtime_checkable
class VectorIndex(Protocol):
    """Passage vectors (labels are passage ids), cosine similarity."""

    dim: int
    generation: int         # what the vectors in memory reflect
    saved_generation: int   # what the saved copy reflects (the engine saves after a quiet spell)

    def search(self, query: np.ndarray, k: int, allowed: set[int] | None = None) -> list[tuple[int, float]]: ...
    # `search`, started where the index can answer beside the caller (the team store's side
    # connections); the callable gives its result
    def search_soon(self, query: np.ndarray, k: int,
                    allowed: set[int] | None = None) -> Callable[[], list[tuple[int, float]]]: ...
    def update(self, removed: list[int], labels: list[int], vectors: np.ndarray) -> None: ...
    def rebuild(self, labels: np.ndarray, vectors: np.ndarray, generation: int) -> None: ...
    def save(self, generation: int) -> None: ...
    def dead_share(self) -> float: ...   # deleted vectors still held, of all held (0.0 where deletes purge)
    def __len__(self) -> int: ...


@runtime_checkable
class Store(Protocol):
    """Where one corpus's index lives: opens the ledger (one connection per thread) and the two
    derived indexes. `ledgers()` gives the calling thread's ledger (a store whose indexes live in
    the ledger's database searches through it). `kind` is "local" or "postgresql"; `describe()`
    is what `status` shows. `indexes_in_ledger`: the keyword and vector indexes are written in the
    ledger's own transaction (nothing for the engine to hand them after a document is written).
    `priority`: the requests being answered, which the store's writer gives way to
    (indexer/store/priority.py)."""

    kind: str
    indexes_in_ledger: bool
    priority: RequestsFirst

    def open_ledger(self, readonly: bool) -> Ledger: ...
    def keyword_index(self, ledgers: Callable[[], Ledger]) -> KeywordIndex: ...
    def vector_index(self, ledgers: Callable[[], Ledger], dim: int) -> VectorIndex: ...
    def drop_vector_index(self) -> None: ...
    def describe(self) -> dict: ...
