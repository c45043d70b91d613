"""What ingest hands a store for one document: typed records, the same for both stores.

The write seam is the one place a parsed file becomes rows; a record per row kind keeps both
dialects (SQLite and PostgreSQL) writing the same fields, and a typo a type error, not a KeyError
in the middle of a transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from remembrancer.indexer.ingest.chunks import Chunk


@dataclass(slots=True)
class DocumentRecord:
    """One file's row: where it is, what it is, when it was true, and how it was read."""

    path: str
    root: str
    rel: str
    content_hash: str
    size: int
    mtime_ns: int
    doc_type: str
    date: str | None
    title: str
    front_matter: dict[str, Any]   # the YAML mapping as written (redacted)
    tags: list[str]
    warnings: list[str]
    stale: bool
    line_count: int

    # the columns every store inserts, in this order
    COLUMNS = ("path, root, rel, content_hash, size, mtime_ns, doc_type, date, title,"
               " front_matter, tags, warnings, stale, line_count, indexed_at")

    @classmethod
    def column_names(cls) -> list[str]:
        """COLUMNS one by one (an UPDATE names each)."""
        return [c.strip() for c in cls.COLUMNS.split(",")]

    def values(self, indexed_at: float) -> tuple:
        """The row for COLUMNS, the same in every store (JSON as text)."""
        return (self.path, self.root, self.rel, self.content_hash, self.size, self.mtime_ns,
                self.doc_type, self.date, self.title, json.dumps(self.front_matter, default=str),
                json.dumps(self.tags), json.dumps(self.warnings), int(self.stale),
                self.line_count, indexed_at)


@dataclass(slots=True)
class SectionRecord:
    """One section: its text, what BM25 sees (chunks) and what is embedded (passages: sha, text)."""

    heading: str
    title: str
    level: int
    start_line: int
    end_line: int
    date: str | None
    stale: bool
    content: str
    body: str
    entities: list[str]
    chunks: list[Chunk]
    passages: list[tuple[str, str]]

    # the columns both stores insert for a section, after its id (if allocated) and before its doc type (if kept)
    COLUMNS = "doc_id, ord, heading, title, level, start_line, end_line, date, stale, content, body, entities"

    def values(self, doc_id: int, ord_: int) -> tuple:
        """The row for COLUMNS: the section as the `ord_`-th of document `doc_id` (entities as JSON text)."""
        return (doc_id, ord_, self.heading, self.title, self.level, self.start_line, self.end_line,
                self.date, int(self.stale), self.content, self.body, json.dumps(self.entities))


@dataclass(slots=True)
class LinkRecord:
    """A link as written; `resolved` (the target document's path) is filled in when it is written."""

    target: str
    kind: str
    line: int
    anchor: str | None = None
    text: str = ""
    resolved: str | None = None

    COLUMNS = "doc_id, target, anchor, kind, line, text, resolved"

    def values(self, doc_id: int) -> tuple:
        """The row for COLUMNS, in document `doc_id`."""
        return (doc_id, self.target, self.anchor, self.kind, self.line, self.text or "", self.resolved)


@dataclass(frozen=True, slots=True)
class EntityRecord:
    """A host or service a record defines, with the other names its notes use for it."""

    name: str
    aliases: list[str] = field(default_factory=list)
