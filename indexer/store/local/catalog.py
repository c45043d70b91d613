"""The SQLite ledger: the only store that is written first and trusted after a crash.

Documents (with their git blob id), sections, chunks, passages, embeddings (float32 blobs keyed
by the sha256 of the embedded text, so an unchanged paragraph is never embedded twice), the
entity table, the model contract and a generation counter. The tantivy index and the hnswlib
file are derived from these rows and record the generation they reflect; a mismatch at open
means "rebuild me from the catalog" — without re-embedding.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import sqlite3
import time
from array import array
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Iterator, Mapping

import numpy as np

from remembrancer.indexer import terms
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.store.filters import Filters
from remembrancer.indexer.store.priority import RequestsFirst
from remembrancer.indexer.store.base import (DocumentName, DocumentSummary, LinkRow, SectionRow,
                    SectionText)
from remembrancer.indexer.store.records import DocumentRecord, EntityRecord, LinkRecord, SectionRecord
from remembrancer.indexer.store.ledger import SqlLedger
from remembrancer.indexer.store.local import migrations
from remembrancer.indexer.store import scope_views
from remembrancer.indexer.store.common import filter_where, literal_indexable, section_row, string_list
from remembrancer.indexer.store.scope_views import SCOPED_TABLES, SYMLINKS, ViewDialect

log = logging.getLogger(__name__)

IN_BATCH = 500   # values bound per `IN (...)` query (SQLite's old default limit is 999 parameters)
KEPT_ROWS = 50_000   # rows of a kind kept in memory between searches (Catalog._kept_rows)
WRITE_SLICE = 4   # sections written between two chances for requests to go first (indexer/store/priority.py)
WAL_KEPT = 4 * 1024 * 1024   # bytes of WAL file kept after a checkpoint (SQLite keeps its largest size otherwise)
DROPPED = "dropped_passages"   # meta key: passages deleted since the last compaction (Catalog.dead_share)




SECTION_SELECT = """
SELECT s.id, s.doc_id, d.path, s.heading, s.title, s.level, s.start_line, s.end_line, s.date,
       s.stale, d.doc_type, d.stale, d.tags, s.entities, s.content, s.body
FROM sections s JOIN documents d ON d.id = s.doc_id
"""
# The same rows without their text (content and body None): what ranking reads of ~500 candidates
# per search, most of which are never shown — their text was half the cost of reading them.
SECTION_HEAD_SELECT = SECTION_SELECT.replace("s.content, s.body", "NULL, NULL")


def _phrase(needle: str) -> str:
    """An FTS5 query matching `needle` as one string (trigram tokenizer: a substring match)."""
    return '"' + needle.replace('"', '""') + '"'




# -- a damaged catalog ----------------------------------------------------------------------------
# The files are canonical: a catalog SQLite cannot read (truncated, overwritten, garbage) is moved
# aside with the derived stores built from it, and a fresh index is built from the files.
_DAMAGE_WORDS = ("not a database", "malformed", "file is encrypted", "disk image", "corrupt")


def is_damage(exc: BaseException) -> bool:
    """A SQLite error that means the file itself is damaged (not "locked", not "no such table")."""
    return isinstance(exc, sqlite3.DatabaseError) and any(w in str(exc).lower() for w in _DAMAGE_WORDS)


def store_fault(exc: BaseException, where: Path) -> UserError | None:
    """The user error for a write to the index at `where` that failed because its filesystem is
    full or read-only, or None for any other failure. Judged by the error chain's errno and by
    the filesystem itself (statvfs), whatever a library made of it: SQLite says "disk I/O error",
    "database or disk is full" or, after a failed statement, "cannot rollback - no transaction
    is active"; tantivy and hnswlib have their own words."""
    chain, x = [], exc
    while x is not None and len(chain) < 8:
        chain.append(x)
        x = x.__cause__ or x.__context__
    # inotify_add_watch's ENOSPC ("No space left on device") is its watch limit, not a disk: never
    # said to be one (the daemon polls what it cannot watch and says which limit to raise: daemon/watch_limit.py)
    chain = [x for x in chain if not is_inotify_limit(x)]
    if not chain:
        return None
    errnos = {x.errno for x in chain if isinstance(x, OSError)}
    text = " ".join(str(x) for x in chain).lower()
    probe = Path(where)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        fs = os.statvfs(probe)
        fs_readonly, fs_full = bool(fs.f_flag & os.ST_RDONLY), fs.f_bavail == 0
    except OSError:
        fs_readonly = fs_full = False
    after = "searches answer from the index as it is until then"
    if errno.EROFS in errnos or "read-only file system" in text or fs_readonly:
        return UserError(f"the index cannot be written: {where} is on a read-only filesystem", code="store_readonly",
                         hint=f"remount it read-write, or set REMEMBRANCER_DATA_DIR to a writable folder; {after}")
    if errnos & {errno.ENOSPC, errno.EDQUOT} or "no space left" in text or "disk is full" in text or fs_full:
        return UserError(f"the index cannot be written: the disk holding {where} is full", code="store_full",
                         hint=f"free some space on it, or set REMEMBRANCER_DATA_DIR to a folder on a disk "
                              f"with room, then run `remembrancer index` again; {after}")
    return None


def is_inotify_limit(exc: BaseException) -> bool:
    """An OSError that is inotify out of watches or instances (watchdog words it so): its ENOSPC is no
    full disk. The one test of it (daemon/watch_limit.is_watch_limit reads an exception's chain with it)."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EMFILE) and "inotify" in str(exc).lower()


class CatalogDamaged(UserError):
    def __init__(self, path: Path, reason: str):
        super().__init__(f"the index catalog {path} is damaged ({reason})", code="index_broken",
                         hint="run `remembrancer index` (with your --root options): it moves the damaged "
                              "index aside and rebuilds it from the files")


def _header_problem(path: Path, *, sizes: bool = True) -> str | None:
    """What the file's 100-byte SQLite header says is wrong (a truncated copy, a foreign file), in O(1).

    `sizes`: also compare the page count with the file size — only with no writer and no WAL frames
    waiting (a checkpoint in progress writes the header before the file has grown)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(100)
    except OSError as e:
        return f"cannot be read: {e.strerror}"
    if size == 0:
        return "the file is empty"  # SQLite would take it for a new database beside the old derived stores
    if len(head) < 100 or not head.startswith(b"SQLite format 3\x00"):
        return "not a SQLite database"
    wal = path.with_name(path.name + "-wal")
    if not sizes or (wal.exists() and wal.stat().st_size > 0):
        return None
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages, counter, valid_for = (int.from_bytes(head[i:i + 4], "big") for i in (28, 24, 92))
    if size % page:
        return f"its size ({size:,} bytes) is not a whole number of {page}-byte pages"
    if counter == valid_for and pages * page > size:
        return f"truncated: {size:,} of {pages * page:,} bytes"
    return None


def _probe(db: sqlite3.Connection) -> None:
    """Touch the schema and the small tables, so a damaged file fails here rather than mid-run."""
    db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    for table in ("meta", "documents"):
        if db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone():
            db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()


def move_aside(index_dir: Path, reason: str) -> Path:
    """Move the whole index (catalog and the stores derived from it) into `damaged-<time>/`, so a
    fresh build cannot mistake an old full-text or vector generation for its own."""
    aside = index_dir / time.strftime("damaged-%Y%m%d-%H%M%S")
    n = 1
    while aside.exists():
        n += 1
        aside = index_dir / time.strftime(f"damaged-%Y%m%d-%H%M%S-{n}")
    aside.mkdir(mode=0o700)
    for entry in index_dir.iterdir():
        if entry != aside and not entry.name.startswith("damaged-") and entry.name != "writer.lock":   # still held
            os.replace(entry, aside / entry.name)
    log.warning("index catalog %s was damaged (%s): moved the index aside to %s and rebuilding it from "
                "the files", index_dir / "catalog.sqlite3", reason, aside)
    return aside


# -- private files -------------------------------------------------------------------------------------
def _create_private(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))


class Catalog(SqlLedger):
    """The catalog in SQLite (WAL: a reader sees one snapshot while the writer replaces a document)."""

    SECTION_SELECT = SECTION_SELECT

    def __init__(self, path: Path, readonly: bool = False, priority: RequestsFirst | None = None):
        self.path = path
        self.priority = priority or RequestsFirst()
        self._maybe_orphaned: set[str] = set()
        self._reusable: dict[str, list[int]] = {}   # text sha → ids of passages the write's delete removed
        self._kept: dict[str, dict] = {}   # rows read by id, by kind, valid while _kept_mark holds
        self._kept_mark: tuple | None = None
        self._scope: tuple[str, ...] = ()   # the prefixes of the request being served (scoped)
        self.recovered: str | None = None  # why a damaged catalog was moved aside at open, and where
        if readonly:  # a writer may be checkpointing right now: only the magic is checked, SQLite does the rest
            problem = _header_problem(path, sizes=False)
            if problem:
                raise CatalogDamaged(path, problem)
            self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            try:
                _probe(self.db)
            except sqlite3.DatabaseError as e:
                self.db.close()
                if is_damage(e):
                    raise CatalogDamaged(path, str(e)) from None
                if not isinstance(e, sqlite3.OperationalError) or store_fault(e, path.parent) is None:
                    raise
                # A WAL catalog with no shared-memory file, on a read-only or full filesystem where
                # none can be made: read the file as it is (no writer can be changing it there).
                self.db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, check_same_thread=False)
                _probe(self.db)
        else:
            problem = _header_problem(path) if path.exists() else None
            if problem is None:
                try:
                    self._open_writable()
                except sqlite3.DatabaseError as e:
                    if not is_damage(e):
                        raise
                    getattr(self, "db", None) and self.db.close()
                    problem = str(e)
            if problem is not None:
                aside = move_aside(path.parent, problem)
                self.recovered = (f"the index catalog was damaged ({problem}); moved the old index to "
                                  f"{aside} and rebuilt it from the files")
                self._open_writable()
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.execute("PRAGMA busy_timeout=5000")
        self.has_literal_index = migrations.has_literal_index(self.db)
        self.has_section_types = migrations.has_section_types(self.db)

    def _open_writable(self) -> None:
        _create_private(self.path)
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(f"PRAGMA journal_size_limit={WAL_KEPT}")
        _probe(self.db)
        migrations.migrate(self.db)
        migrations.fill_section_types(self.db)

    def close(self) -> None:
        self.db.close()

    # -- meta ---------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # -- documents ----------------------------------------------------------------------------
    def documents(self) -> dict[str, tuple[int, str, int, int]]:
        """path → (id, content_hash, size, change stamp) for change detection."""
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in
                self.db.execute("SELECT path, id, content_hash, size, mtime_ns FROM documents")}

    def documents_matching(self, paths, prefixes) -> dict[str, tuple[int, str, int, int]]:
        """documents() for the given paths and for every document under the given folder
        prefixes ("dir/"): what a targeted update compares with the files it was told about."""
        sql = "SELECT path, id, content_hash, size, mtime_ns FROM documents"
        rows = list(self._rows_in(sql + " WHERE path IN ({marks})", paths))
        for pre in prefixes:   # a range on the path index: "dir/" ≤ path < "dir0"
            rows += self.db.execute(sql + " WHERE path >= ? AND path < ?", (pre, pre[:-1] + chr(ord(pre[-1]) + 1)))
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def document(self, path: str) -> dict | None:
        cur = self.db.execute("SELECT * FROM documents WHERE path=?", (path,))
        row = cur.fetchone()
        if row is None:
            return None
        return dict(zip([c[0] for c in cur.description], row))

    def document_by_hash(self, content_hash: str) -> dict | None:
        cur = self.db.execute("SELECT * FROM documents WHERE content_hash=? LIMIT 1", (content_hash,))
        row = cur.fetchone()
        return dict(zip([c[0] for c in cur.description], row)) if row else None

    def touch_document(self, path: str, size: int, mtime_ns: int) -> None:
        """Content unchanged but stat changed: remember the new stat so the next run skips the read."""
        self.db.execute("UPDATE documents SET size=?, mtime_ns=? WHERE path=?", (size, mtime_ns, path))

    def _all(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self.db.execute(sql, params).fetchall()

    def _all_in(self, sql: str, column: str, values) -> list[tuple]:
        return list(self._rows_in(sql.replace("{in}", column + " IN ({marks})"), values))

    # -- writes: the sequence is SqlLedger's (indexer/store/ledger.py); these are its rows ---------------
    @contextmanager
    def _transaction(self):
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _add_embeddings(self, vectors: Mapping[str, np.ndarray]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO embeddings(text_sha, vector) VALUES (?, ?)",
                            [(sha, np.asarray(vec, dtype=np.float32).tobytes()) for sha, vec in vectors.items()])

    def _insert_document(self, doc: DocumentRecord) -> int:
        return self.db.execute(f"INSERT INTO documents({DocumentRecord.COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                               doc.values(time.time())).lastrowid

    def _insert_sections(self, doc_id: int, doc: DocumentRecord, sections: list[SectionRecord],
                         new_vectors: Mapping[str, np.ndarray], first_ord: int = 0) -> list[int]:
        db = self.db
        added: list[int] = []
        for ord_, s in enumerate(sections, first_ord):
            if ord_ > first_ord and ord_ % WRITE_SLICE == 0:
                self.priority.give_way()   # a large document: requests first (readers do not wait on this transaction)
            sid = db.execute(f"INSERT INTO sections({SectionRecord.COLUMNS}, doc_type) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                             (*s.values(doc_id, ord_), doc.doc_type)).lastrowid
            db.executemany("INSERT INTO chunks(section_id, part, nparts, start_line, end_line, text) VALUES (?,?,?,?,?,?)",
                           [(sid, c.part, c.nparts, c.start_line, c.end_line, c.text) for c in s.chunks])
            for p_ord, (sha, ptext) in enumerate(s.passages):
                again = self._reusable.get(sha)
                added.append(db.execute("INSERT INTO passages(id, section_id, ord, text_sha, text) VALUES (?,?,?,?,?)",
                                        (again.pop() if again else None, sid, p_ord, sha, ptext)).lastrowid)
        self._reusable = {}
        return added

    def _upsert_entity(self, doc_id: int, entity: EntityRecord) -> None:
        self.db.execute("INSERT OR REPLACE INTO entities(name, doc_id, aliases) VALUES (?,?,?)",
                        (entity.name, doc_id, json.dumps(entity.aliases)))

    def _insert_links(self, rows: list[tuple]) -> None:
        self.db.executemany(f"INSERT INTO links({LinkRecord.COLUMNS}) VALUES (?,?,?,?,?,?,?)", rows)

    def _update_document(self, doc_id: int, doc: DocumentRecord) -> None:
        columns = DocumentRecord.column_names()
        self.db.execute(f"UPDATE documents SET {', '.join(c + ' = ?' for c in columns)} WHERE id = ?",
                        (*doc.values(time.time()), doc_id))

    def _delete_sections_from(self, doc_id: int, first_ord: int) -> tuple[list[int], list[int]]:
        self._reusable = {}
        rows = self.db.execute("SELECT p.id, p.text_sha FROM passages p JOIN sections s ON s.id = p.section_id"
                               " WHERE s.doc_id = ? AND s.ord >= ?", (doc_id, first_ord)).fetchall()
        sids = [r[0] for r in self.db.execute("SELECT id FROM sections WHERE doc_id = ? AND ord >= ?",
                                               (doc_id, first_ord))]
        self.db.execute("DELETE FROM sections WHERE doc_id = ? AND ord >= ?", (doc_id, first_ord))
        self._count_dropped(len(rows))
        self._maybe_orphaned.update(r[1] for r in rows)
        for pid, sha in rows:
            self._reusable.setdefault(sha, []).append(pid)
        return [r[0] for r in rows], sids

    def _delete_document(self, path: str) -> list[int]:
        self._reusable = {}   # only this document's own passages are given back, in this write
        row = self.db.execute("SELECT id FROM documents WHERE path=?", (path,)).fetchone()
        if row is None:
            return []
        rows = self.db.execute(
            "SELECT p.id, p.text_sha FROM passages p JOIN sections s ON s.id = p.section_id WHERE s.doc_id=?",
            (row[0],)).fetchall()
        self.db.execute("DELETE FROM documents WHERE id=?", (row[0],))
        self._count_dropped(len(rows))
        self._maybe_orphaned.update(r[1] for r in rows)
        # A rewrite gives unchanged text its passage id back (_insert_sections): the vector file
        # then keeps its entry instead of inserting it again (a grown transcript's old exchanges).
        for pid, sha in rows:
            self._reusable.setdefault(sha, []).append(pid)
        return [r[0] for r in rows]

    def _count_dropped(self, n: int) -> None:
        """Count deleted passages (in the write's transaction) toward the next compaction."""
        if n:
            self.db.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE"
                            " SET value = CAST(value AS INTEGER) + CAST(excluded.value AS INTEGER)", (DROPPED, str(n)))

    def dead_share(self) -> float:
        """How much of the file is space deleted rows left, estimated: passages deleted since the
        last compaction (each took its section's, chunk's, embedding's and literal-index rows
        with it), of those plus the live ones — or SQLite's free pages, of all pages, if more.
        SQLite reuses a free page but not the unused part of a half-emptied one, and FTS5 keeps a
        deleted row's entries until its segments merge: an edited catalog grew past twice a fresh
        one's size. `compact` gives the space back."""
        dropped = int(self.get_meta(DROPPED) or 0)
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        free = self.db.execute("PRAGMA freelist_count").fetchone()[0] / pages if pages else 0.0
        if not dropped:
            return free
        live = self.db.execute("SELECT count(*) FROM passages").fetchone()[0]
        return max(free, dropped / (dropped + live))

    def _drop_orphan_embeddings(self) -> None:
        """Drop the embeddings of removed passages that no passage uses any more."""
        shas, self._maybe_orphaned = list(self._maybe_orphaned), set()
        list(self._rows_in(   # a DELETE yields no rows; listing runs every batch
            "DELETE FROM embeddings WHERE text_sha IN ({marks})"
            " AND text_sha NOT IN (SELECT text_sha FROM passages WHERE text_sha = embeddings.text_sha)", shas))

    def drop_orphan_embeddings(self) -> int:
        """Every embedding no passage uses (after a complete run): one indexed anti-join."""
        return self.db.execute("DELETE FROM embeddings WHERE NOT EXISTS"
                               " (SELECT 1 FROM passages p WHERE p.text_sha = embeddings.text_sha)").rowcount

    def _bump_generation(self) -> None:
        self.set_meta("generation", str(self.generation + 1))

    def set_entity_mentions(self, mentions: dict[int, list[str]]) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.executemany("UPDATE sections SET entities=? WHERE id=?",
                                [(json.dumps(v), k) for k, v in mentions.items()])
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def set_link_resolutions(self, changes: list[tuple[str | None, int]]) -> None:
        """(resolved path or None, link id) pairs, in one transaction (links only: no generation bump)."""
        if not changes:
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.executemany("UPDATE links SET resolved=? WHERE id=?", changes)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    # -- reads --------------------------------------------------------------------------------
    def link_rows(self, source_doc_id: int | None = None, resolved_to: str | None = None) -> list[LinkRow]:
        """Links with their source document: every link, one document's outbound links, or the
        backlinks of `resolved_to` (its links to itself left out)."""
        where, params = "", ()
        if source_doc_id is not None:
            where, params = " WHERE l.doc_id = ?", (source_doc_id,)
        elif resolved_to is not None:
            where, params = " WHERE l.resolved = ? AND d.path != ?", (resolved_to, resolved_to)
        sql = ("SELECT l.id, d.path, l.target, l.anchor, l.kind, l.line, l.text, l.resolved FROM links l"
               " JOIN documents d ON d.id = l.doc_id" + where + " ORDER BY d.path, l.line, l.id")
        keys = ("id", "source", "target", "anchor", "kind", "line", "text", "resolved")
        return [dict(zip(keys, r)) for r in self.db.execute(sql, params)]

    def entities(self, unscoped: bool = False) -> list[tuple[str, str, list[str]]]:
        """(name, record path, aliases); `unscoped` reads past a scope's views (caches do)."""
        schema = "main." if unscoped else ""
        return [(r[0], r[1], string_list(r[2])) for r in self.db.execute(
            f"SELECT e.name, d.path, e.aliases FROM {schema}entities e JOIN {schema}documents d ON d.id = e.doc_id"
            " ORDER BY e.name")]

    def filtered_section_ids(self, f: Filters) -> set[int]:
        """The sections the (validated) filters let through."""
        where, params = filter_where(f)
        return {r[0] for r in self.db.execute(
            f"SELECT s.id FROM sections s JOIN documents d ON d.id = s.doc_id WHERE {where}", params)}

    def count_sections(self, f: Filters) -> int:
        """How many sections the (validated) filters let through, counted in SQL (an emptied
        result says what each filter alone would match: listing 20k ids to count them cost ~45 ms).
        The documents are joined only for a filter on them (path, tags; a type once the sections
        carry it is their own)."""
        own_type = self.has_section_types
        where, params = filter_where(f, any_of=_own_type if own_type else None)
        join = " JOIN documents d ON d.id = s.doc_id" if (f.path or f.tags or (f.types and not own_type)) else ""
        return self.db.execute(f"SELECT COUNT(*) FROM sections s{join} WHERE {where}", params).fetchone()[0]

    def section_ids_of(self, paths: Iterable[str]) -> list[int]:
        """The sections of the documents at `paths`."""
        return [r[0] for r in self._rows_in(
            "SELECT s.id FROM sections s JOIN documents d ON d.id = s.doc_id WHERE d.path IN ({marks})", paths)]

    def section_texts(self) -> list[SectionText]:
        """(section id, heading, content, path) of every section in document order, past any scope
        (the engine's per-generation caches filter by scope themselves)."""
        return self.db.execute(
            "SELECT s.id, s.heading, s.content, d.path FROM main.sections s"
            " JOIN main.documents d ON d.id = s.doc_id ORDER BY d.id, s.ord").fetchall()

    def document_names(self) -> list[DocumentName]:
        """(path, rel, root, title) of every document in the order they were stored: what a link
        can name (the resolver's first-come rule depends on the order)."""
        return self.db.execute("SELECT path, rel, root, title FROM documents ORDER BY id").fetchall()

    def document_summaries(self, f: Filters) -> list[DocumentSummary]:
        """The documents the filters let through, by path (`list`); one with no section (an empty file,
        front matter alone) is listed with 0, as `status` counts it. A date filter needs a section."""
        where, params = filter_where(f)
        rows = self.db.execute(
            "SELECT d.path, d.doc_type, d.date, d.title, COUNT(s.id), SUM(length(s.content)), d.tags"
            f" FROM documents d LEFT JOIN sections s ON s.doc_id = d.id WHERE {where}"
            " GROUP BY d.id ORDER BY d.path", params).fetchall()
        return [DocumentSummary(p, t, dt, title, n, chars or 0, json.loads(tags))
                for p, t, dt, title, n, chars, tags in rows]

    def known_tags(self) -> set[str]:
        out: set[str] = set()
        for (raw,) in self.db.execute("SELECT DISTINCT tags FROM documents"):
            out.update(json.loads(raw))
        return out

    def sections_by_id(self, ids: list[int]) -> dict[int, SectionRow]:
        return {r[0]: section_row(r) for r in self._rows_in(SECTION_SELECT + " WHERE s.id IN ({marks})", ids)}

    def section_heads_by_id(self, ids: list[int]) -> dict[int, SectionRow]:
        """As sections_by_id, without the sections' text (content and body are None). Every search
        reads its ~500 candidates' heads, mostly sections the searches before read too: kept
        (_kept_rows)."""
        return self._kept_rows("heads", ids, lambda some: {
            r[0]: section_row(r) for r in self._rows_in(SECTION_HEAD_SELECT + " WHERE s.id IN ({marks})", some)})

    def _kept_rows(self, kind: str, ids, read) -> dict:
        """`read(ids)` for the ids not read before, the rest from memory — kept until the catalog
        changes in any way (_change_mark), not per generation: a section's entity mentions are
        rewritten without one. At most KEPT_ROWS of a kind (then they start again); nothing read
        inside a transaction is kept (it may yet be rolled back)."""
        if self.db.in_transaction:
            return read(list(ids))
        mark = self._change_mark()
        if mark != self._kept_mark:
            self._kept, self._kept_mark = {}, mark
        kept = self._kept.get(kind)
        if kept is None or len(kept) > KEPT_ROWS:   # a new dict, not clear(): another thread may be reading this one
            kept = self._kept[kind] = {}
        ids = list(ids)
        found = {i: kept[i] for i in ids if i in kept}
        missing = [i for i in ids if i not in found]
        if missing:
            got = read(missing)
            kept.update(got)
            found.update(got)
        return {i: found[i] for i in ids if i in found}

    def _change_mark(self) -> tuple:
        """A value that moves whenever what this connection reads may have changed: another
        connection's commit (SQLite's data_version), a write of this connection's own
        (total_changes, committed or not), or the scope its views show (a row one scope reads is
        never served to another)."""
        return self.db.execute("PRAGMA data_version").fetchone()[0], self.db.total_changes, self._scope

    def all_chunks(self):
        """(chunk id, section id, path, doc_type, heading, text) for rebuilding the full-text index."""
        return self.db.execute(
            "SELECT c.id, c.section_id, d.path, d.doc_type, s.heading, c.text FROM chunks c"
            " JOIN sections s ON s.id = c.section_id JOIN documents d ON d.id = s.doc_id ORDER BY c.id")

    def chunks_of(self, path: str):
        return self.db.execute(
            "SELECT c.id, c.section_id, d.path, d.doc_type, s.heading, c.text FROM chunks c"
            " JOIN sections s ON s.id = c.section_id JOIN documents d ON d.id = s.doc_id"
            " WHERE d.path=? ORDER BY c.id", (path,))

    def chunks_by_ids(self, ids: list[int]) -> list:
        """The rows of `all_chunks` with these chunk ids (those still in the catalog)."""
        out = []
        for i in range(0, len(ids), 900):   # SQLite's bound-parameter limit
            part = ids[i:i + 900]
            out += self.db.execute(
                "SELECT c.id, c.section_id, d.path, d.doc_type, s.heading, c.text FROM chunks c"
                " JOIN sections s ON s.id = c.section_id JOIN documents d ON d.id = s.doc_id"
                f" WHERE c.id IN ({','.join('?' * len(part))}) ORDER BY c.id", part).fetchall()
        return out

    def passage_vectors(self, passage_ids: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(labels, vectors) for every passage (or the given ones), straight from the stored blobs."""
        if passage_ids is None:
            rows = self.db.execute("SELECT p.id, e.vector FROM passages p JOIN embeddings e ON e.text_sha = p.text_sha"
                                   " ORDER BY p.id").fetchall()
        else:
            rows = list(self._rows_in("SELECT p.id, e.vector FROM passages p JOIN embeddings e"
                                      " ON e.text_sha = p.text_sha WHERE p.id IN ({marks})", passage_ids))
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        labels = np.array([r[0] for r in rows], dtype=np.int64)
        vectors = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
        return labels, vectors

    def embeddings_for(self, shas) -> dict[str, np.ndarray]:
        """Stored vectors by text sha (a second store can be filled without embedding again)."""
        return {sha: np.frombuffer(blob, dtype=np.float32) for sha, blob in
                self._rows_in("SELECT text_sha, vector FROM embeddings WHERE text_sha IN ({marks})", shas)}

    def _rows_in(self, sql: str, values) -> Iterator[tuple]:
        """Run `sql` for `values` in its `IN ({marks})`, in batches under SQLite's limit on bound
        parameters, yielding every row."""
        values = list(values)
        for i in range(0, len(values), IN_BATCH):
            batch = values[i:i + IN_BATCH]
            yield from self.db.execute(sql.format(marks=",".join("?" * len(batch))), batch)

    def read_all_again(self) -> None:
        """Make every document look changed, so the next refresh reads it again (its unchanged
        passages keep their embeddings): a parser, layout or redaction change needs this."""
        self.db.execute("UPDATE documents SET content_hash='', size=-1")

    def drop_embeddings(self) -> None:
        """--reembed: forget the stored contract and every embedding; every document is read again."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("DELETE FROM embeddings")
            self.db.execute("DELETE FROM meta WHERE key='model_contract'")
            self.read_all_again()
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def compact(self) -> str | None:
        """Give back the space deleted rows left and empty the WAL (no old text may survive a
        redaction-policy change): the literal index's segments merged into one (FTS5 `optimize`
        drops deleted rows' entries), then the file written again (VACUUM: no free page, pages
        full). Each step is one SQLite transaction: a crash leaves the catalog as it was before
        or after it. Returns why it could not, or None."""
        try:
            if self.has_literal_index:
                self.db.execute("INSERT INTO sections_literal(sections_literal) VALUES ('optimize')")
            self.set_meta(DROPPED, "0")
            self.db.execute("VACUUM")
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError as e:
            return str(e)
        return None

    @contextmanager
    def scoped(self, prefixes: tuple[str, ...]):
        """Serve one request as if only documents under `prefixes` existed (TEMP views on this
        connection shadow the tables; see indexer/store/scope.py)."""
        with _scope_views(self.db, prefixes):
            outer, self._scope = self._scope, tuple(prefixes)
            try:
                yield
            finally:
                self._scope = outer

    def record_symlinks(self, targets: dict[str, str]) -> None:
        """Remember which indexed files are symlinks, and to what (corpus paths), after a walk:
        a scope judges a symlink by its target too."""
        db = self.db
        db.execute(f"CREATE TABLE IF NOT EXISTS main.{SYMLINKS} (path TEXT PRIMARY KEY, target TEXT NOT NULL)")
        if self.symlink_targets() == targets:
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(f"DELETE FROM main.{SYMLINKS}")
            db.executemany(f"INSERT INTO main.{SYMLINKS}(path, target) VALUES (?, ?)", sorted(targets.items()))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def symlink_targets(self) -> dict[str, str]:
        if not _has_symlinks_table(self.db):
            return {}
        return dict(self.db.execute(f"SELECT path, target FROM main.{SYMLINKS}").fetchall())

    def vectors_in_use(self) -> int:
        """Stored vectors the visible passages use (a scope's count; the embeddings table is shared)."""
        return self.db.execute("SELECT COUNT(DISTINCT text_sha) FROM passages"
                               " WHERE text_sha IN (SELECT text_sha FROM main.embeddings)").fetchone()[0]

    def chunk_ids_digest(self) -> str:
        """A digest of the visible chunk ids (never reused: equal digests, equal chunk texts)."""
        ids = array("q", (r[0] for r in self.db.execute("SELECT id FROM chunks ORDER BY id")))
        return hashlib.sha1(ids.tobytes()).hexdigest()

    def passage_ids(self) -> set[int]:
        """Every visible passage (a scope's vector searches may return only these)."""
        return {r[0] for r in self.db.execute("SELECT id FROM passages")}

    def passages_by_id(self, passage_ids) -> dict[int, tuple[int, bool]]:
        """passage id → (section id, heading only?) for the given passages — a vector search's hits.
        Read as asked and kept (_kept_rows), not a map of every passage: during a long ingest the
        catalog changes with every document, and rebuilding such a map per search cost more than
        the search."""
        def read(some):
            rows = self._rows_in("SELECT id, section_id, ord FROM passages WHERE id IN ({marks})", some)
            return {pid: (sid, ord_ == 0) for pid, sid, ord_ in rows}   # a section's first passage: its heading alone
        return self._kept_rows("passages", map(int, passage_ids), read)

    def passage_texts(self, passage_ids) -> dict[int, tuple[int, int, str, str]]:
        """passage id → (section id, document id, path, embedded text) for a few passages (search's best ones)."""
        return {pid: (sid, doc_id, path, text) for pid, sid, doc_id, path, text in self._rows_in(
            "SELECT p.id, s.id, d.id, d.path, p.text FROM passages p JOIN sections s ON s.id = p.section_id"
            " JOIN documents d ON d.id = s.doc_id WHERE p.id IN ({marks})", map(int, passage_ids))}

    def passage_ids_in(self, section_ids) -> set[int]:
        """The passages of the given sections (a filtered vector search may return only these)."""
        return {r[0] for r in self._rows_in("SELECT id FROM passages WHERE section_id IN ({marks})", map(int, section_ids))}

    # -- the literal index, newest-first lists ------------------------------------------------------
    def sections_containing(self, needles: list[str], content_only: bool = False) -> list[tuple] | None:
        """(section id, heading, content, path) of the visible sections whose heading or content
        (only the content with `content_only`) may contain any of `needles`, case-insensitively,
        in document order: every section that does, read from the literal index. Callers test the
        text themselves (the index folds case like Unicode, Python's lower() differs at the edges).
        None when the index cannot answer: a needle under LITERAL_MIN characters, or a catalog
        opened read-only before it had the index — the caller scans instead."""
        if not self.has_literal_index or not needles or not all(map(literal_indexable, needles)):
            return None
        match = ("content : " if content_only else "") + "(" + " OR ".join(map(_phrase, needles)) + ")"
        return self.db.execute(
            "SELECT s.id, s.heading, s.content, d.path FROM sections s JOIN documents d ON d.id = s.doc_id"
            " WHERE s.id IN (SELECT rowid FROM sections_literal WHERE sections_literal MATCH ?)"
            " ORDER BY d.id, s.ord", (match,)).fetchall()

    def uses_word(self, word: str) -> bool | None:
        """Whether some visible section's content uses `word` (lower-case) whole, from the literal
        index's candidates, read lazily: the first that does ends the lookup. None when the index
        cannot answer (as sections_containing)."""
        if not self.has_literal_index or not literal_indexable(word):
            return None
        # The index drives the join, so rows come as the match finds them: through `s.id IN (…)`
        # SQLite listed every match first (a common word: 28k rows, ~23 ms, before the first one).
        return terms.uses_whole(word, (r[0].lower() for r in self.db.execute(
            "SELECT s.content FROM sections_literal l JOIN sections s ON s.id = l.rowid"
            " WHERE sections_literal MATCH ?", ("content : " + _phrase(word),))))

    def sections_beyond_ascii(self, after: int, max_chars: int) -> tuple[int, list[tuple[int, str]]]:
        """(the last section id, [(section id, content)]) of the sections after id `after`, past any
        scope, whose content holds a character beyond ASCII (its length in bytes is not its length
        in characters) or is over `max_chars` characters long. Section ids only grow and a
        section's text never changes, so a caller that keeps the answer asks only for the new ones."""
        last = self.db.execute("SELECT max(id) FROM main.sections").fetchone()[0] or 0
        return last, self.db.execute(
            "SELECT id, content FROM main.sections WHERE id > ? AND id <= ? AND (length(content) > ?"
            " OR length(CAST(content AS BLOB)) <> length(content))", (after, last, max_chars)).fetchall()

    def visible_section_ids(self, ids) -> set[int]:
        """Those of the section ids that exist and the request's scope sees."""
        return {r[0] for r in self._rows_in("SELECT id FROM sections WHERE id IN ({marks})", ids)}

    def literal_counts(self, needle: str, case_insensitive: bool) -> list[tuple[int, str | None, int]]:
        """(section id, date, occurrences) of the visible sections whose content holds `needle`
        (already lower-cased by the caller when case-insensitive: SQLite's ASCII lower() applies
        to the content); the literal index picks the candidates."""
        col = "lower(s.content)" if case_insensitive else "s.content"
        where, params = f"instr({col}, ?) > 0", [needle]
        if self.has_literal_index and literal_indexable(needle):
            where = "s.id IN (SELECT rowid FROM sections_literal WHERE sections_literal MATCH ?) AND " + where
            params.insert(0, "content : " + _phrase(needle))
        return self.db.execute(
            f"SELECT s.id, s.date, (length({col}) - length(replace({col}, ?, ''))) / length(?) AS n"
            f" FROM sections s WHERE {where}", (needle, needle, *params)).fetchall()

    def newest_sections(self, f: Filters, limit: int) -> list[int]:
        """Ids of the first `limit` sections the (validated) filters let through, newest first —
        date, then the earlier section of a day, then id — among those with text of their own (a
        journal day's bare "# 2030-02-17" heading lists nothing), or among all when none has.
        Read in index order (sections_newest, or per type sections_type_newest: each type's own
        first `limit`, merged), so the cost follows `limit`."""
        if not (f.types and self.has_section_types):
            return self._newest(f, limit, with_text=True) or self._newest(f, limit, with_text=False)
        per_type = [replace(f, types=[t]) for t in dict.fromkeys(f.types)]
        rows = [r for g in per_type for r in self._newest(g, limit, with_text=True, keys=True)]
        if not rows:
            rows = [r for g in per_type for r in self._newest(g, limit, with_text=False, keys=True)]
        rows.sort(key=lambda r: (r[2], r[0]))   # start_line, id …
        rows.sort(key=lambda r: (r[1] is not None, r[1] or ""), reverse=True)   # … under date, newest first, NULL last (stable)
        return [r[0] for r in rows[:limit]]

    def _newest(self, f: Filters, limit: int, with_text: bool, keys: bool = False) -> list:
        """One read of newest_sections in index order: ids, or (id, date, start_line) with `keys`.
        One type is looked up on the sections' own copy of it (migrations.SECTION_TYPES_INDEX)."""
        one_type = len(f.types) == 1 and self.has_section_types
        where, params = filter_where(f, any_of=_own_type if one_type else None)
        sql = (f"SELECT s.id, s.date, s.start_line, s.body FROM sections s JOIN documents d ON d.id = s.doc_id WHERE ({where})"
               + (" AND trim(s.body, char(9,10,11,12,13,32)) <> ''" if with_text else "")
               + " ORDER BY s.date DESC, s.start_line, s.id")
        out = []
        if not with_text:
            sql, params = sql + " LIMIT ?", [*params, limit]
        # SQL trims fewer characters than str.strip(): a superset, checked in Python
        for sid, date, start, body in self.db.execute(sql, params):
            if with_text and not (body or "").strip():
                continue
            out.append((sid, date, start) if keys else sid)
            if len(out) >= limit:
                break
        return out

    def section_ids_about(self, record_paths: list[str], name: str, needles: list[str]) -> list[int]:
        """An entity's history: the visible sections of its records and of those that mention it.
        Mentions come from the text, so only sections holding one of `needles` (its names and
        aliases, lower-cased) can name it: the literal index finds those, the mentions decide."""
        records = ("SELECT s.id FROM sections s JOIN documents d ON d.id = s.doc_id"
                   f" WHERE d.path IN ({','.join('?' * len(record_paths))})")
        mention = "EXISTS (SELECT 1 FROM json_each(s.entities) WHERE value = ?)"
        if not needles:
            return [r[0] for r in self.db.execute(records, record_paths)]
        if not self.has_literal_index or not all(map(literal_indexable, needles)):   # every section's mentions
            return [r[0] for r in self.db.execute(records.replace(" WHERE ", " WHERE (") + f") OR {mention}",
                                                  (*record_paths, name))]
        match = "(" + " OR ".join(map(_phrase, needles)) + ")"
        return [r[0] for r in self.db.execute(
            records + " UNION SELECT s.id FROM sections s WHERE s.id IN"
            f" (SELECT rowid FROM sections_literal WHERE sections_literal MATCH ?) AND {mention}",
            (*record_paths, match, name))]

    def counts(self) -> dict[str, int]:
        q = lambda t: self.db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]  # noqa: E731
        return {"documents": q("documents"), "sections": q("sections"), "chunks": q("chunks"),
                "passages": q("passages"), "vectors": q("embeddings")}


# -- scopes: TEMP views named like the tables, holding only the visible rows (indexer/store/scope_views.py)


def _own_type(col, values) -> tuple[str, list]:
    """filter_where's type condition on the sections' own copy of their document's type."""
    return f"s.doc_type IN ({','.join('?' * len(values))})", list(values)


def _has_symlinks_table(db) -> bool:
    return db.execute("SELECT 1 FROM main.sqlite_master WHERE type='table' AND name=?", (SYMLINKS,)).fetchone() \
        is not None


@contextmanager
def _scope_views(db, prefixes: tuple[str, ...]):
    """Shadow the catalog's tables on connection `db` for the duration of one request."""
    if not prefixes:
        yield
        return
    _drop(db)
    for sql in scope_views.statements(prefixes, ViewDialect("main", symlinks=_has_symlinks_table(db))):
        db.execute(sql)
    try:
        yield
    finally:
        _drop(db)


def _drop(db) -> None:
    for t in SCOPED_TABLES:
        db.execute(f"DROP VIEW IF EXISTS temp.{t}")
