"""The local catalog's schema, as numbered migrations applied in order (the team store's are in
indexer/store/postgres/schema.py).

The applied number is the catalog's `PRAGMA user_version`, so an index made by an older
remembrancer upgrades in place on its first writable open: what a migration adds is built from
the rows already there, nothing is re-read or re-embedded. Catalogs from before the numbering have
version 0 and some of these steps already done, so each step is idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

SCHEMA_VERSION = 1   # meta's `schema_version`: the row layout readers check (not the migration count)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    root TEXT NOT NULL,
    rel TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,  -- the file's change stamp (corpus.change_stamp), compared for equality only
    doc_type TEXT NOT NULL,
    date TEXT,
    title TEXT NOT NULL,
    front_matter TEXT NOT NULL,
    tags TEXT NOT NULL,
    warnings TEXT NOT NULL,
    stale INTEGER NOT NULL,
    line_count INTEGER NOT NULL,
    indexed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sections (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ord INTEGER NOT NULL,
    heading TEXT NOT NULL,
    title TEXT NOT NULL,
    level INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    date TEXT,
    stale INTEGER NOT NULL,
    content TEXT NOT NULL,
    body TEXT NOT NULL,
    entities TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sections_doc ON sections(doc_id);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    section_id INTEGER NOT NULL REFERENCES sections(id) ON DELETE CASCADE,
    part INTEGER NOT NULL,
    nparts INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_section ON chunks(section_id);
CREATE TABLE IF NOT EXISTS passages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    section_id INTEGER NOT NULL REFERENCES sections(id) ON DELETE CASCADE,
    ord INTEGER NOT NULL,
    text_sha TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS passages_section ON passages(section_id);
CREATE INDEX IF NOT EXISTS passages_sha ON passages(text_sha);
CREATE TABLE IF NOT EXISTS embeddings (text_sha TEXT PRIMARY KEY, vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS entities (
    name TEXT NOT NULL,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    aliases TEXT NOT NULL,
    PRIMARY KEY (name, doc_id)
);
-- [[wikilinks]] and relative Markdown links (indexer/ingest/links.py); `resolved` is the target's path or
-- NULL, re-resolved when documents come and go, so backlinks are a query on it.
CREATE TABLE IF NOT EXISTS links (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    target TEXT NOT NULL,
    anchor TEXT,
    kind TEXT NOT NULL,
    line INTEGER NOT NULL,
    text TEXT NOT NULL,
    resolved TEXT
);
CREATE INDEX IF NOT EXISTS links_doc ON links(doc_id);
CREATE INDEX IF NOT EXISTS links_resolved ON links(resolved);
-- Filters without a query list sections newest first: this order, read from an index with a LIMIT.
CREATE INDEX IF NOT EXISTS sections_newest ON sections(date DESC, start_line);
"""

# The literal index: every section's heading and text as trigrams (FTS5 over the sections table,
# kept current by triggers inside each document's transaction), so "which sections contain this
# string?" reads the index instead of every section. Case-insensitive; strings of 3+ characters.
LITERAL_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS sections_literal USING fts5(
    heading, content, content='sections', content_rowid='id', tokenize='trigram');
CREATE TRIGGER IF NOT EXISTS sections_literal_add AFTER INSERT ON sections BEGIN
    INSERT INTO sections_literal(rowid, heading, content) VALUES (new.id, new.heading, new.content);
END;
CREATE TRIGGER IF NOT EXISTS sections_literal_drop AFTER DELETE ON sections BEGIN
    INSERT INTO sections_literal(sections_literal, rowid, heading, content)
    VALUES ('delete', old.id, old.heading, old.content);
END;
CREATE TRIGGER IF NOT EXISTS sections_literal_change AFTER UPDATE OF heading, content ON sections BEGIN
    INSERT INTO sections_literal(sections_literal, rowid, heading, content)
    VALUES ('delete', old.id, old.heading, old.content);
    INSERT INTO sections_literal(rowid, heading, content) VALUES (new.id, new.heading, new.content);
END;
"""
# Each section carries its document's type, so "the newest sections of type X" is read from one
# index in order: through the documents join, a filters-only search for journal days walked every
# newer section of other types first (45k rows at 20k documents, ~55 ms). Written with the section
# in the document's transaction; a catalog from before the column gets it filled once at open.
SECTION_TYPES_INDEX = "CREATE INDEX IF NOT EXISTS sections_type_newest ON sections(doc_type, date DESC, start_line)"


def _statements(script: str) -> list[str]:
    """A script's statements (trigger bodies kept whole: they end with `END;`)."""
    out, cur = [], []
    for line in script.strip().splitlines():
        cur.append(line)
        text = "\n".join(cur).strip()
        if text.endswith("END;") or (text.endswith(";") and not text.upper().startswith("CREATE TRIGGER")):
            out.append(text)
            cur = []
    return out



def has_section_types(db) -> bool:
    return any(r[1] == "doc_type" for r in db.execute("PRAGMA main.table_info(sections)"))


def has_literal_index(db) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE name='sections_literal'").fetchone() is not None


def _in_transaction(db, statements) -> None:
    db.execute("BEGIN IMMEDIATE")   # executescript would commit: one statement at a time
    try:
        for stmt in statements:
            db.execute(stmt)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _tables(db) -> None:
    db.executescript(SCHEMA)
    if db.execute("SELECT 1 FROM meta WHERE key='schema_version'").fetchone() is None:
        db.execute("INSERT INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))


def _literal_index(db) -> None:
    """The literal index, filled from the sections already stored."""
    if not has_literal_index(db):
        _in_transaction(db, [*_statements(LITERAL_SCHEMA),
                             "INSERT INTO sections_literal(sections_literal) VALUES ('rebuild')"])


def _section_types(db) -> None:
    """The sections' own copy of their document's type, and its index (filled by fill_section_types,
    which every writable open runs)."""
    if not has_section_types(db):
        db.execute("ALTER TABLE sections ADD COLUMN doc_type TEXT")
    db.execute(SECTION_TYPES_INDEX)


def fill_section_types(db) -> None:
    """Give rows without a type their document's. Run at every writable open (one index lookup):
    an older remembrancer that knows nothing of the column may have written rows since."""
    if db.execute(   # NULLs sort first in the index: one lookup
            "SELECT 1 FROM sections INDEXED BY sections_type_newest WHERE doc_type IS NULL LIMIT 1").fetchone() is None:
        return
    _in_transaction(db, ["UPDATE sections SET doc_type = (SELECT d.doc_type FROM documents d"
                         " WHERE d.id = sections.doc_id) WHERE doc_type IS NULL"])


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable


MIGRATIONS = (
    Migration(1, "tables", _tables),
    Migration(2, "literal index", _literal_index),
    Migration(3, "sections carry their document's type", _section_types),
)
LATEST = MIGRATIONS[-1].version


def applied_version(db) -> int:
    return db.execute("PRAGMA user_version").fetchone()[0]


def migrate(db) -> list[int]:
    """Apply the migrations this catalog lacks, in order; returns their numbers."""
    done = applied_version(db)
    ran = []
    for m in MIGRATIONS:
        if m.version > done:
            m.apply(db)
            db.execute(f"PRAGMA user_version = {m.version}")
            ran.append(m.version)
    return ran
