"""The team store: the index in PostgreSQL + pgvector, one writer and any number of readers.

Same interface as the local store (indexer/store/base.py). The keyword index and the vectors live in
the same database as the catalog and are written in the document's own transaction, so there is
nothing to rebuild after a crash: their generation is the catalog's. A reader serves each request
inside one REPEATABLE READ transaction (`scoped`), so a search sees one generation throughout,
and a scope is a set of TEMP views shadowing the tables, as in the local store.

One writer: the writer's ledger connection holds a session advisory lock for its lifetime; a
second writer is refused with the first one's identity.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import socket
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterable, Mapping
from urllib.parse import urlsplit

import numpy as np

from remembrancer.indexer.store.postgres import connect as pg_connect
from remembrancer.indexer.store.postgres import keywords as kw
from remembrancer.indexer.store.postgres import schema as pg_schema
from remembrancer.indexer import terms
from remembrancer.indexer.store import scope_views
from remembrancer.indexer.store.common import EF_SEARCH, EXACT_BELOW, filter_where, literal_indexable, section_row
from remembrancer.indexer.store.scope_views import ViewDialect
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.store.filters import Filters
from remembrancer.indexer.store.priority import RequestsFirst
from remembrancer.indexer.store.base import DocumentSummary, SectionRow
from remembrancer.indexer.store.ledger import SqlLedger
from remembrancer.indexer.store.records import DocumentRecord, EntityRecord, LinkRecord, SectionRecord

log = logging.getLogger(__name__)

WRITER_LOCK = 0x72656D57          # advisory lock key held by the one writer ("remW")
FILTERED_ENOUGH = 0.5             # of the candidates asked, what a filtered graph search must find
MAX_EF_SEARCH = 1000              # pgvector's limit: a graph search answers at most this many
# A graph search costs about as much per candidate asked (hnsw.ef_search) as reading this many
# passages exactly (bench/bench_team.py at 100k sections, under load: ef 1,000 ≈ 235 ms, exact ≈ 1.6 µs
# a passage; quiet, 53 ms and 1.0-1.5 µs: the graph is chosen where it is clearly cheaper)
GRAPH_COST_PER_EF = 150
SPLIT_POOL = 8000                 # passages: a reader reads a larger pool exactly in two halves at once
COMPACT_FRACTION = 0.05           # chunks changed since the keyword postings were packed, to pack again
WRITER_APP = "remembrancer-writer"
BUILD_MEMORY = "512MB"            # maintenance_work_mem while the HNSW index is built
GRAMS = "public." + pg_schema.LITERAL_GRAMS   # a section's trigrams (the literal index's expression)
ASCII_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
NO_ACCESS_HINT = ("ask the store's admin to make your login a reader of this store: "
                  "`remembrancer team grant-reader ROLE --all` (or `--scope PREFIX`)")
NO_PGVECTOR_HINT = ("install pgvector on the server (the pgvector/pgvector Docker image has it; a managed"
                    " PostgreSQL: enable its `vector` extension), or point --store at one that has it")
RUN_WARNING_KEYS = ("last_warnings", "last_warning_paths")
PG_VIEWS = ViewDialect("public", collate=' COLLATE "C"', null_text="NULL::text")

SECTION_COLUMNS = ("s.id, s.doc_id, d.path, s.heading, s.title, s.level, s.start_line, s.end_line, s.date,"
                   " s.stale, d.doc_type, d.stale, d.tags::text, s.entities::text, s.content, s.body")
SECTION_FROM = "FROM sections s JOIN documents d ON d.id = s.doc_id"
SECTION_SELECT = f"SELECT {SECTION_COLUMNS} {SECTION_FROM}"
SECTION_HEAD_SELECT = SECTION_SELECT.replace("s.content, s.body", "NULL, NULL")   # as the local catalog's
# Up to KEYED_BELOW sections read by id look their document up by its key: `OFFSET 0` keeps the
# planner from hashing every document instead, a cost that grows with the store (the rerank's 500
# candidates at 10k documents: 10.8 → 5.2 ms; 2,000: 16.7 → 20.8 ms, the hash join the cheaper)
KEYED_BELOW = 1000
KEYED_DOCUMENT = ("FROM sections s JOIN LATERAL (SELECT d.path, d.doc_type, d.stale, d.tags FROM documents d"
                  " WHERE d.id = s.doc_id OFFSET 0) d ON true")
DOCUMENT_COLUMNS = ("id, path, root, rel, content_hash, size, mtime_ns, doc_type, date, title, front_matter,"
                    " tags::text AS tags, warnings, stale, line_count, indexed_at")
CHUNK_SELECT = ("SELECT c.id, c.section_id, d.path, d.doc_type, s.heading, c.text FROM chunks c"
                " JOIN sections s ON s.id = c.section_id JOIN documents d ON d.id = s.doc_id")


def _psycopg():
    try:
        import psycopg
    except ImportError:
        raise UserError("the PostgreSQL store needs psycopg", param="store",
                        hint="pip install 'remembrancer[team]'") from None
    return psycopg


_DSN_PASSWORD = re.compile(r"""(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)""", re.I)


WRITER_BUSY_HINT = ("one writer per store: stop the other `remembrancer serve --store`, or run readers "
                    "(`remembrancer mcp --store URL`) here")


def writer_lock_taken(where: str, holder: "pg_schema.LockHolder | None") -> UserError:
    """Why the writer's lock could not be taken, by who holds it."""
    if holder is None:
        return UserError(f"the store {where} already has a writer: another process", param="store",
                         code="writer_busy", hint=WRITER_BUSY_HINT)
    if not holder.owns_store:
        return UserError(f"{holder.who()} holds the writer's lock of the store {where} but does not own the store: it "
                         "is not a writer, and it keeps the writer out", param="store", code="writer_lock_squatted",
                         hint=f"end it (as a superuser or a member of pg_signal_backend: SELECT "
                              f"pg_terminate_backend({holder.pid})) and keep logins you do not trust off this "
                              "database (REVOKE CONNECT)")
    when = f", since {holder.since:%Y-%m-%d %H:%M:%S %Z}" if holder.since is not None else ""
    return UserError(f"the store {where} already has a writer: {holder.who(when)}", param="store",
                     code="writer_busy", hint=WRITER_BUSY_HINT)


def safe_url(url: str) -> str:
    """The store's address without its password (for status, logs, errors and answers), in each
    form libpq takes one: `user:pw@` in a URL, `?password=` in its query, `password=` in a
    key=value string. Never raises: an address too malformed to parse is masked by its shape."""
    if "://" not in url:
        return _DSN_PASSWORD.sub(r"\1***", url)
    try:
        parts = urlsplit(url)
    except ValueError:   # e.g. an unclosed IPv6 bracket: still said, never with its password
        return _masked_by_shape(url)
    if parts.query:
        query = "&".join(f"{k}=***" if k.lower() == "password" and v else (f"{k}={v}" if v or "=" in pair else k)
                         for pair in parts.query.split("&") for k, _, v in [pair.partition("=")])
        parts = parts._replace(query=query)
    netloc = parts.netloc
    if parts.password:   # `user:@host` names no password
        netloc = f"{parts.username or ''}:***@{netloc.rsplit('@', 1)[1]}"
    return (f"{parts.scheme}://{netloc}{parts.path}" + (f"?{parts.query}" if parts.query else "")
            + (f"#{parts.fragment}" if parts.fragment else ""))   # urlunsplit drops an empty host's "//"


def _masked_by_shape(url: str) -> str:
    """A URL urlsplit refuses, masked without parsing it: whatever stands between the user's name
    and the last `@` (a password may hold `@` or `/`), and any `password=` value. It masks more
    than it must rather than less."""
    scheme, _, rest = url.partition("://")
    at = rest.rfind("@")
    if at >= 0 and ":" in rest[:at]:
        rest = f"{rest[:at].split(':', 1)[0]}:***{rest[at:]}"
    return f"{scheme}://" + _DSN_PASSWORD.sub(r"\1***", rest)


def has_password(url: str) -> bool:
    """Whether the store's address itself holds a password (visible in `ps`, unit files, shell history)."""
    return safe_url(url) != url


def _vec_text(v) -> str:
    """pgvector's text form (float32 values widened to Python floats: exact, and fast to format)."""
    return "[" + ",".join(map(repr, np.asarray(v, dtype=np.float32).tolist())) + "]"


def _binary_vector_dumper(oid: int):
    """COPY's dumper for pgvector's binary form (uint16 dim, uint16 0, big-endian float32s):
    a writer's vectors cost no decimal formatting and the server no parsing. Bytes pass as they
    are (a vector read back from the store in binary)."""
    import struct

    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class VectorBinaryDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj):
            if isinstance(obj, (bytes, memoryview)):
                return obj
            v = np.asarray(obj, dtype=">f4")
            return struct.pack(">HH", len(v), 0) + v.tobytes()
    VectorBinaryDumper.oid = oid
    return VectorBinaryDumper


def _vec_parse(text: str) -> np.ndarray:
    return np.array(text[1:-1].split(","), dtype=np.float32)




def _filter_where(f: Filters) -> tuple[str, list]:
    """The local catalog's filter clause in PostgreSQL's dialect."""
    return filter_where(f, mark="%s", any_of=lambda col, values: (f"{col} = ANY(%s)", [list(values)]),
                        has_tag=lambda: "d.tags ? %s", true="true")


def _create_vector_index(conn, dim: int) -> None:
    """The HNSW index over the passages' vectors, unless it exists."""
    with conn.transaction():
        conn.execute(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'")   # a graph that fits builds in memory
        conn.execute(f"CREATE INDEX IF NOT EXISTS passages_embedding_hnsw ON passages USING hnsw"
                     f" ((embedding::vector({dim})) vector_cosine_ops)")


STORE_URL_HINT = "give it as postgresql://USER@HOST[:PORT]/DATABASE (the password in ~/.pgpass); see docs/team.md"


def check_url(url: str) -> str:
    """A store's address is a PostgreSQL URL that parses (said before anything connects, or a unit
    is written): an empty --store, another scheme or a malformed URL (an unclosed IPv6 bracket)
    is a bad input by name, never a traceback or a silent fall back to the local index."""
    if not isinstance(url, str) or not url.strip():
        raise UserError("--store is empty", param="store", hint="give the team store's postgresql:// URL, or leave --store out "
                                                        "to use this machine's index")
    if not url.startswith(("postgresql://", "postgres://")):
        raise UserError(f"--store must be a postgresql:// URL, got {safe_url(url)!r}", param="store")
    try:
        parts = urlsplit(url)
    except ValueError as e:   # libpq's own reading of it would only be less clear
        raise UserError(f"--store is not a valid URL ({e}): {safe_url(url)!r}", param="store",
                        hint=STORE_URL_HINT) from None
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:   # no psycopg: the store itself says what to install
        return url
    try:
        conninfo_to_dict(url)   # libpq's own parse: an unknown ?parameter, a bad %-escape
    except Exception as e:  # noqa: BLE001 — psycopg.ProgrammingError, said as the bad input it is
        said = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        userinfo = parts.netloc.rpartition("@")[0]
        if userinfo:   # libpq quotes the token it refused: never a piece of the password
            said = re.sub(r'"([^"]*)"', lambda m: '"***"' if m.group(1) and m.group(1) in userinfo else m.group(0), said)
        raise UserError(f"--store is not a valid PostgreSQL URL ({said}): {safe_url(url)!r}", param="store",
                        hint=STORE_URL_HINT) from None
    return url


def lost(url: str, e: Exception) -> UserError:
    """The structured error for a connection the server dropped (a restart, the network) or that
    got no answer in time (pg_connect: a frozen server): the next request connects again
    (PgLedger._reconnect_if_lost). A statement the server itself cancelled at the reader's
    statement_timeout is said as such: the server is there, the question took too long."""
    if pg_connect.no_answer(e):
        return UserError(f"no answer from the store {safe_url(url)}: {str(e).strip()}", param="store",
                         code="store_unreachable", hint="retry; check the server and the network to it")
    if isinstance(e, _psycopg().errors.QueryCanceled):
        return UserError(f"the store {safe_url(url)} took too long to answer: {str(e).strip()}", param="store",
                         code="store_timeout", hint="retry, or narrow the question; a slower store needs a longer "
                         "statement_timeout (the URL's options=-c statement_timeout=60s)")
    return UserError(f"lost the connection to the store {safe_url(url)}: {str(e).strip()}", param="store",
                     code="store_unreachable", hint="retry; check the server")


def unreachable(url: str, e: Exception) -> UserError:
    """The structured error for a store that refused the connection."""
    return UserError(f"cannot connect to the store {safe_url(url)}: {str(e).strip()}", param="store",
                     hint="check the URL, the server and the role's password", code="store_unreachable")


class PgLedger(SqlLedger):
    """The catalog in PostgreSQL (one connection; the engine keeps one per thread)."""

    SECTION_SELECT = SECTION_SELECT

    def __init__(self, store: "PgStore", readonly: bool):
        self.store = store
        self.readonly = readonly
        self.conn = self._connect()
        self._in_request = False
        self._meta: dict[str, str | None] = {}
        self._ef: int | None = None
        self._maybe_orphaned: set[str] = set()
        self._bulk = False
        self._prefixes: tuple[str, ...] = ()
        self._sides: list[Side | None] = []   # a reader's side connections (nearest_soon)
        self._snapshot: str | None = None      # the request's, exported for them
        # a scoped reader's role (indexer/store/postgres/roles.py grants it): the database shows it only its prefixes
        self.role_scope = pg_schema.session_scope(self.conn) if readonly else None
        if not readonly:
            self._take_writer_lock()
            # The files are canonical: a transaction lost to a server crash (never a torn one) is
            # re-read on the next pass, so the writer need not wait for each commit's WAL flush.
            self._q("SET synchronous_commit TO off")
            vector_oid = self._q("SELECT 'vector'::regtype::oid").fetchone()[0]
            self.conn.adapters.register_dumper(None, _binary_vector_dumper(vector_oid))
            self._types = {"embeddings": ["text", vector_oid],
                           "passages": ["bigint", "bigint", "integer", "text", "text", vector_oid],
                           "postings": ["smallint", "text", "bigint", "bigint", "integer", "integer"]}
            self._bulk = self._start_or_resume_first_load()

    def _start_or_resume_first_load(self) -> bool:
        """Whether this writer makes (or carries on) a first load: into an empty store, or one a
        killed first load left (its flag in meta). A first load builds the HNSW index and
        pg_schema.DEFERRED_INDEXES once at its end (`_finish_first_load`): pgvector and
        PostgreSQL build an index far faster than they insert into one row by row. Until then
        readers' queries scan or search exactly, which is correct, only slower. A store without
        some of them otherwise (an older writer killed in its first load) gets them now."""
        with self.conn.transaction():
            first = self._q("SELECT EXISTS (SELECT 1 FROM meta WHERE key = %s) OR NOT EXISTS (SELECT 1 FROM documents)",
                            (pg_schema.FIRST_LOAD,)).fetchone()[0]
            if first:
                self._q("DROP INDEX IF EXISTS passages_embedding_hnsw")
                for _, _, drop in pg_schema.DEFERRED_INDEXES:
                    self._q(drop)
                self._q("INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
                        (pg_schema.FIRST_LOAD, str(time.time())))
        if not first:
            self._build_deferred_indexes()
            contract = self.model_contract()
            if contract:
                _create_vector_index(self.conn, int(contract["dim"]))
        return first

    def _build_deferred_indexes(self) -> None:
        """Build those of pg_schema.DEFERRED_INDEXES the store lacks, each in its own transaction
        (a reader waits, if at all, for one of them)."""
        have = {r[0] for r in self._q("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")}
        for name, build, _ in pg_schema.DEFERRED_INDEXES:
            if name in have:
                continue
            with self.conn.transaction():
                self._q(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'")
                for sql_text in build:
                    self._q(sql_text)

    def _finish_first_load(self) -> None:
        """The end of a first load: its indexes built and the keyword postings packed, then the
        flag cleared (a writer killed before that builds them again as the first load it carries
        on). The HNSW index, the largest build, is built on a connection of its own meanwhile:
        the other builds and the packing (other tables) need not wait for it."""
        from concurrent.futures import ThreadPoolExecutor

        contract = self.model_contract()
        with ThreadPoolExecutor(1) as aside:
            vectors = aside.submit(self._build_vector_index_aside, int(contract["dim"])) if contract else None
            self._build_deferred_indexes()
            self._compact_if_changed()
            if vectors is not None:
                vectors.result()   # its error, if any, is the pass's
        self._q("DELETE FROM meta WHERE key = %s", (pg_schema.FIRST_LOAD,))
        self._bulk = False

    def _build_vector_index_aside(self, dim: int) -> None:
        with pg_connect.connect(self.store.url, reader=False, autocommit=True,
                                application_name=f"{WRITER_APP} index build") as conn:
            conn.execute("SET search_path TO public")
            _create_vector_index(conn, dim)

    def _connect(self):
        psycopg = _psycopg()
        app = f"{WRITER_APP} {socket.gethostname()} pid {os.getpid()}" if not self.readonly else "remembrancer-reader"
        try:
            conn = pg_connect.connect(self.store.url, reader=self.readonly, autocommit=True, prepare_threshold=None,
                                      application_name=app)
            conn.execute("SET search_path TO public")
        except psycopg.OperationalError as e:
            raise unreachable(self.store.url, e) from None
        return conn

    def _reconnect_if_lost(self) -> None:
        """A reader whose connection died (server restart, network) connects again between
        requests; the writer never does (its lock went with the connection). A connection the
        server ended while it was idle is not `broken` until it is used: the server's goodbye is
        waiting on its socket, read here without a round trip, so the first request after a
        restart is answered rather than refused."""
        if self.readonly and (self.conn.broken or _ended_while_idle(self.conn)):
            self.conn = self._connect()
            self._ef = None

    def ended_while_idle(self) -> bool:
        """Whether the server has ended this idle connection (read from its socket, no round trip)."""
        return _ended_while_idle(self.conn)

    def goodbye(self) -> str:
        """The server's last word on an ended connection (its FATAL message), in one line."""
        try:
            return " ".join((self.conn.pgconn.error_message or b"").decode("utf-8", "replace").split())[:300]
        except Exception:  # noqa: BLE001 — only a log line
            return ""

    def _take_writer_lock(self) -> None:
        got = self.conn.execute("SELECT pg_try_advisory_lock(%s)", (WRITER_LOCK,)).fetchone()[0]
        if got:
            return
        holder = pg_schema.lock_holder(self.conn.execute, WRITER_LOCK)
        self.conn.close()
        raise writer_lock_taken(safe_url(self.store.url), holder)

    def connections(self) -> list:
        """This ledger's connections, its side connections' too (bench/bench_team.py times their CPU)."""
        return [self.conn, *(side.ledger.conn for side in self._sides if side is not None)]

    def close(self) -> None:
        for side in self._sides:
            if side is not None:
                side.close()
        self.conn.close()

    def _q(self, sql, params=None):
        if self.readonly and not self._in_request and (self.conn.broken or self.conn.closed):
            self._reconnect_if_lost()   # lost since (a restart, no answer in time): outside a request, connect again
        return self.conn.execute(sql, params or None)   # no parameters: a literal `%` stays a `%`

    # -- meta ---------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        if self.role_scope is not None and key in RUN_WARNING_KEYS:   # meta's copy names outside files
            return self._visible_run_warnings(key)
        if self._in_request and key in self._meta:   # one snapshot per request: meta cannot change in it
            return self._meta[key]
        row = self._q("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        value = row[0] if row else None
        if self._in_request:
            self._meta[key] = value
        return value

    def set_meta(self, key: str, value: str) -> None:
        self._q("INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (key, value))
        if key in RUN_WARNING_KEYS:
            self._store_run_warnings()
        if key == "model_contract" and not self._bulk:   # the index needs the dimension
            _create_vector_index(self.conn, int(json.loads(value)["dim"]))
        elif key == "last_indexed_at" and self._bulk:   # the end of a first load (it packs the postings too)
            self._finish_first_load()
        elif key == "last_indexed_at":   # the end of a later pass
            self._compact_if_changed()

    def _compact_if_changed(self) -> None:
        """Compact the keyword postings when the chunks written or deleted since the last
        compaction exceed COMPACT_FRACTION of the store's (a reader reads those one index tuple
        each; the rest packed)."""
        if self.conn.info.transaction_status:   # inside a transaction: the next pass will
            return
        mark, changed, total = self._q(
            f"SELECT m.value::bigint, (SELECT count(*) FROM chunks WHERE id > m.value::bigint)"
            " + (SELECT count(*) FROM postings_dead), (SELECT count(*) FROM chunks)"
            f" FROM meta m WHERE m.key = '{pg_schema.PACKED_THROUGH}'").fetchone()
        if changed and changed > COMPACT_FRACTION * total:
            self.compact_keywords()

    def compact_keywords(self) -> None:
        """Rebuild the packed postings (pg_schema migration 9) from `postings`, in one transaction:
        a reader sees the old packed copy, mark and dead chunks, or the new ones. Only the one
        writer writes chunks, so no chunk below the new mark can commit later."""
        with self.conn.transaction():
            mark = self._q("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0]
            self._q("DELETE FROM postings_packed")
            self._q(f"INSERT INTO postings_packed(field, term, postings, sections) SELECT p.field, p.term,"
                    f" {kw.PACKED_POSTINGS_SQL}, {kw.PACKED_SECTIONS_SQL} FROM postings p WHERE p.chunk_id <= %s"
                    " GROUP BY p.field, p.term", (mark,))
            self._q("DELETE FROM postings_dead")
            self._q("UPDATE meta SET value = %s WHERE key = %s", (str(mark), pg_schema.PACKED_THROUGH))
        # the old copies' space back; the postings' pages marked all-visible (the delta is read
        # from their key alone), rather than when autovacuum comes by
        self._q("VACUUM (ANALYZE) postings_packed, postings_dead, postings, sections")

    def _store_run_warnings(self) -> None:
        """The last run's warnings one row each, with the path each is about (a scoped role reads
        the rows about what it may see: row-level security, pg_schema.SCOPED_POLICIES)."""
        from remembrancer.indexer.store.scope import warning_path

        warnings = json.loads(self.get_meta("last_warnings") or "[]")
        paths = json.loads(self.get_meta("last_warning_paths") or "null")
        if not isinstance(paths, list) or len(paths) != len(warnings):
            paths = [warning_path(w) for w in warnings]
        with self.conn.transaction():
            self._q("DELETE FROM run_warnings")
            self._copy(self.conn.cursor(), "run_warnings(ord, path, text)",
                       [(i, p, w) for i, (w, p) in enumerate(zip(warnings, paths))])

    def _visible_run_warnings(self, key: str) -> str:
        rows = self._q("SELECT path, text FROM run_warnings ORDER BY ord").fetchall()
        return json.dumps([r[1] for r in rows] if key == "last_warnings" else [r[0] for r in rows])

    def counts(self) -> dict[str, int]:
        row = self._q("SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM sections),"
                      " (SELECT count(*) FROM chunks), (SELECT count(*) FROM passages),"
                      " (SELECT count(*) FROM embeddings)").fetchone()
        return dict(zip(("documents", "sections", "chunks", "passages", "vectors"), row))

    # -- documents ----------------------------------------------------------------------------
    def documents(self) -> dict[str, tuple[int, str, int, int]]:
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in
                self._q("SELECT path, id, content_hash, size, mtime_ns FROM documents")}

    def documents_matching(self, paths, prefixes) -> dict[str, tuple[int, str, int, int]]:
        """documents() for the given paths and every document under the given folder prefixes."""
        sql = "SELECT path, id, content_hash, size, mtime_ns FROM documents WHERE "
        rows = self._q(sql + "path = ANY(%s)", (list(paths),)).fetchall()
        for pre in prefixes:
            rows += self._q(sql + "starts_with(path, %s)", (pre,)).fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def document(self, path: str) -> dict | None:
        cur = self._q(f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE path = %s", (path,))
        row = cur.fetchone()
        return dict(zip([c.name for c in cur.description], row)) if row else None

    def root_names(self) -> list[str]:
        """The roots the stored documents came from (what a reader without a checkout calls them)."""
        return [r[0] for r in self._q("SELECT DISTINCT root FROM documents ORDER BY root")]

    def document_names(self) -> list[tuple[str, str, str, str]]:
        return [tuple(r) for r in self._q("SELECT path, rel, root, title FROM documents ORDER BY id")]

    def document_summaries(self, f: Filters) -> list[DocumentSummary]:
        where, params = _filter_where(f)
        rows = self._q("SELECT d.path, d.doc_type, d.date, d.title, count(s.id), sum(length(s.content)), d.tags"
                       f" FROM documents d LEFT JOIN sections s ON s.doc_id = d.id WHERE {where}"
                       " GROUP BY d.id, d.path, d.doc_type, d.date, d.title, d.tags ORDER BY d.path",
                       params).fetchall()   # a scope's view has no key to group by
        return [DocumentSummary(p, t, dt, title, n, int(chars or 0), list(tags)) for p, t, dt, title, n, chars, tags in rows]

    def known_tags(self) -> set[str]:
        return {r[0] for r in self._q("SELECT DISTINCT jsonb_array_elements_text(tags) FROM documents")}

    def touch_document(self, path: str, size: int, mtime_ns: int) -> None:
        self._q("UPDATE documents SET size = %s, mtime_ns = %s WHERE path = %s", (size, mtime_ns, path))

    # -- writes -------------------------------------------------------------------------------
    def _ids(self, *counts: int) -> list[list[int]]:
        """New section, chunk and passage ids (`counts` of each), in one round trip."""
        seqs = ("sections_id_seq", "chunks_id_seq", "passages_id_seq")
        sql = ", ".join(f"ARRAY(SELECT nextval('{seq}') FROM generate_series(1, %s))" for seq in seqs[:len(counts)])
        return [list(ids) for ids in self._q("SELECT " + sql, counts).fetchone()]

    def _all(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self._q(sql.replace("?", "%s"), params).fetchall()   # SqlLedger's SQL holds no `?` operator

    def _all_in(self, sql: str, column: str, values) -> list[tuple]:
        return self._q(sql.replace("{in}", column + " = ANY(%s)"), (list(values),)).fetchall()

    # -- writes: the sequence is SqlLedger's (indexer/store/ledger.py); these are its rows: COPY, with the
    # ids allocated first, the keyword postings and statistics beside the chunks, each passage with its vector
    def _transaction(self):
        return self.conn.transaction()

    def _add_embeddings(self, vectors: Mapping[str, np.ndarray]) -> None:
        """This document's new vectors the store lacks (another document of the batch may have stored a
        shared one already)."""
        mine = list(vectors)
        if mine:
            have = {r[0] for r in self._q("SELECT text_sha FROM embeddings WHERE text_sha = ANY(%s)", (mine,))}
            self._copy(self.conn.cursor(), "embeddings(text_sha, vector)",
                       [(sha, vectors[sha]) for sha in mine if sha not in have], self._types["embeddings"])

    def _fill_passages(self, shas: list[str]) -> None:
        self._q("UPDATE passages p SET embedding = e.vector FROM embeddings e"
                " WHERE e.text_sha = p.text_sha AND p.embedding IS NULL AND p.text_sha = ANY(%s)", (shas,))

    def _insert_document(self, doc: DocumentRecord) -> int:
        return self._q(f"INSERT INTO documents({DocumentRecord.COLUMNS})"
                       " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s::jsonb,%s,%s,%s,%s) RETURNING id",
                       doc.values(time.time())).fetchone()[0]

    def _insert_sections(self, doc_id: int, doc: DocumentRecord, sections: list[SectionRecord],
                         new_vectors: Mapping[str, np.ndarray], first_ord: int = 0) -> list[int]:
        sids, cids, pids = self._ids(len(sections), sum(len(s.chunks) for s in sections),
                                     sum(len(s.passages) for s in sections))
        cids, pid_iter = iter(cids), iter(pids)
        sec_rows, chunk_rows, passage_rows, postings = [], [], [], []
        tokens = [0, 0, 0, 0]
        for ord_, (sid, s) in enumerate(zip(sids, sections), first_ord):
            sec_rows.append((sid, *s.values(doc_id, ord_)))
            for c in s.chunks:
                cid = next(cids)
                fields = kw.chunk_terms(s.heading, c.text)
                lens = [sum(fields[f].values()) for f in kw.FIELDS]
                chunk_rows.append((cid, sid, c.part, c.nparts, c.start_line, c.end_line, c.text,
                                   "{" + ",".join(map(str, lens)) + "}"))
                for f in kw.FIELDS:
                    tokens[f] += lens[f]
                    dl = kw.quantized_length(lens[f])
                    postings += [(f, term, cid, sid, tf, dl) for term, tf in fields[f].items()]
            for p_ord, (sha, ptext) in enumerate(s.passages):
                passage_rows.append([next(pid_iter), sid, p_ord, sha, ptext, None])
        # Each passage is written once, with its vector (new, or already in the store).
        vecs = dict(new_vectors)
        stored = list({r[3] for r in passage_rows} - vecs.keys())
        if stored:   # read in pgvector's binary form, written back as it is
            vecs.update(self.conn.cursor(binary=True).execute(
                "SELECT text_sha, vector FROM embeddings WHERE text_sha = ANY(%s)", (stored,)).fetchall())
        for r in passage_rows:
            r[5] = vecs.get(r[3])
        cur = self.conn.cursor()
        self._copy(cur, f"sections(id, {SectionRecord.COLUMNS})", sec_rows)
        self._copy(cur, "chunks(id, section_id, part, nparts, start_line, end_line, text, lens)", chunk_rows)
        self._copy(cur, "passages(id, section_id, ord, text_sha, text, embedding)", passage_rows,
                   self._types["passages"])
        self._copy(cur, "postings(field, term, chunk_id, section_id, tf, dl)", postings, self._types["postings"])
        self._add_field_stats(len(chunk_rows), tokens, +1)
        return pids

    def _upsert_entity(self, doc_id: int, entity: EntityRecord) -> None:
        self._q("INSERT INTO entities(name, doc_id, aliases) VALUES (%s,%s,%s::jsonb)"
                " ON CONFLICT (name, doc_id) DO UPDATE SET aliases = EXCLUDED.aliases",
                (entity.name, doc_id, json.dumps(entity.aliases)))

    def _insert_links(self, rows: list[tuple]) -> None:
        self._copy(self.conn.cursor(), f"links({LinkRecord.COLUMNS})", rows)

    @staticmethod
    def _copy(cur, target: str, rows: list[tuple], binary_types: list | None = None) -> None:
        """COPY `rows` into `target`: as text, or in binary with the columns' `binary_types`."""
        if not rows:
            return
        with cur.copy(f"COPY {target} FROM STDIN" + (" (FORMAT BINARY)" if binary_types else "")) as cp:
            if binary_types:
                cp.set_types(binary_types)
            for r in rows:
                cp.write_row(r)

    def _add_field_stats(self, n_chunks: int, tokens: list[int], sign: int) -> None:
        """Keep the per-field chunk count and token total in step with the chunks (a term's document
        frequency needs no upkeep: the reader counts its postings)."""
        if n_chunks:
            self._q("INSERT INTO field_stats(field, docs, tokens) SELECT f, %s, t FROM unnest(%s::smallint[], %s::bigint[])"
                    " AS x(f, t) ON CONFLICT (field) DO UPDATE SET docs = field_stats.docs + EXCLUDED.docs,"
                    " tokens = field_stats.tokens + EXCLUDED.tokens",
                    (n_chunks * sign, list(kw.FIELDS), [t * sign for t in tokens]))

    def _delete_document(self, path: str) -> list[int]:
        row = self._q("SELECT id FROM documents WHERE path = %s", (path,)).fetchone()
        if row is None:
            return []
        removed, _ = self._drop_postings(row[0], 0)
        self._q("DELETE FROM documents WHERE id = %s", (row[0],))   # cascades to sections, chunks, passages
        return removed

    def _update_document(self, doc_id: int, doc: DocumentRecord) -> None:
        columns = DocumentRecord.column_names()
        self._q(f"UPDATE documents SET {', '.join(c + (' = %s::jsonb' if c == 'front_matter' else ' = %s') for c in columns)}"
                " WHERE id = %s", (*doc.values(time.time()), doc_id))

    def _delete_sections_from(self, doc_id: int, first_ord: int) -> tuple[list[int], list[int]]:
        removed, sids = self._drop_postings(doc_id, first_ord)
        self._q("DELETE FROM sections WHERE doc_id = %s AND ord >= %s", (doc_id, first_ord))   # cascades
        return removed, sids

    def _drop_postings(self, doc_id: int, first_ord: int) -> tuple[list[int], list[int]]:
        """Before document `doc_id`'s sections from `first_ord` on are deleted: their postings go
        first (they hold no foreign key: migration 5), with the field totals of their chunks; chunks
        the compacted postings hold are marked dead until the next compaction. Returns (their
        passage ids, their section ids); their embeddings are noted as maybe orphaned."""
        rows = self._q("SELECT p.id, p.text_sha FROM passages p JOIN sections s ON s.id = p.section_id"
                       " WHERE s.doc_id = %s AND s.ord >= %s", (doc_id, first_ord)).fetchall()
        sids = [r[0] for r in self._q("SELECT id FROM sections WHERE doc_id = %s AND ord >= %s", (doc_id, first_ord))]
        stats = self._q("WITH c AS (SELECT c.id, c.lens FROM chunks c JOIN sections s ON s.id = c.section_id"
                        " WHERE s.doc_id = %s AND s.ord >= %s), gone AS (DELETE FROM postings p USING c"
                        " WHERE p.chunk_id = c.id), dead AS (INSERT INTO postings_dead SELECT c.id FROM c"
                        f" WHERE c.id <= (SELECT value::bigint FROM meta WHERE key = '{pg_schema.PACKED_THROUGH}'))"
                        " SELECT count(*), coalesce(sum(lens[1]), 0), coalesce(sum(lens[2]), 0),"
                        " coalesce(sum(lens[3]), 0), coalesce(sum(lens[4]), 0) FROM c", (doc_id, first_ord)).fetchone()
        self._add_field_stats(stats[0], [int(x) for x in stats[1:]], -1)
        self._maybe_orphaned.update(r[1] for r in rows)
        return [r[0] for r in rows], sids

    def _drop_orphan_embeddings(self) -> None:
        shas, self._maybe_orphaned = list(self._maybe_orphaned), set()
        if shas:
            self._q("DELETE FROM embeddings e WHERE e.text_sha = ANY(%s)"
                    " AND NOT EXISTS (SELECT 1 FROM passages p WHERE p.text_sha = e.text_sha)", (shas,))

    def _bump_generation(self) -> None:
        self._q("INSERT INTO meta(key, value) VALUES ('generation', '1') ON CONFLICT (key)"
                " DO UPDATE SET value = (meta.value::bigint + 1)::text")

    def set_entity_mentions(self, mentions: dict[int, list[str]]) -> None:
        """One statement, and only the sections whose mentions changed are rewritten: after a
        first index every section is asked again, and each rewritten row is a new row version
        whose trigram index entries are computed again."""
        if not mentions:
            return
        ids = list(mentions)
        with self.conn.transaction():
            self._q("UPDATE sections s SET entities = m.entities FROM unnest(%s::bigint[], %s::jsonb[]) AS m(id, entities)"
                    " WHERE s.id = m.id AND s.entities IS DISTINCT FROM m.entities",
                    (ids, [json.dumps(mentions[i]) for i in ids]))

    def set_link_resolutions(self, changes: list[tuple[str | None, int]]) -> None:
        if changes:
            with self.conn.transaction():
                self.conn.cursor().executemany("UPDATE links SET resolved = %s WHERE id = %s", changes)

    def read_all_again(self) -> None:
        self._q("UPDATE documents SET content_hash = '', size = -1")

    def drop_embeddings(self) -> None:
        with self.conn.transaction():
            self._q("DROP INDEX IF EXISTS passages_embedding_hnsw")
            self._q("UPDATE passages SET embedding = NULL")
            self._q("DELETE FROM embeddings")
            self._q("DELETE FROM meta WHERE key = 'model_contract'")
            self.read_all_again()

    def dead_share(self) -> float:
        return 0.0   # deleted rows' space is autovacuum's to reclaim

    def compact(self) -> str | None:
        """Old text of re-redacted rows: VACUUM reclaims dead tuples (it cannot run in a transaction)."""
        try:
            for t in ("documents", "sections", "chunks", "passages", "postings", "embeddings"):
                self._q(f"VACUUM {t}")
        except Exception as e:  # noqa: BLE001 — reported, the run itself succeeded
            return str(e)
        return None

    # -- reads --------------------------------------------------------------------------------
    def sections_by_id(self, ids) -> dict[int, SectionRow]:
        return self._sections_by_id(SECTION_SELECT, ids)

    def section_heads_by_id(self, ids) -> dict[int, SectionRow]:
        """As sections_by_id, without the sections' text (content and body are None)."""
        return self._sections_by_id(SECTION_HEAD_SELECT, ids)

    def _sections_by_id(self, select: str, ids) -> dict[int, SectionRow]:
        ids = [int(i) for i in ids]
        if not ids:
            return {}
        if len(ids) < KEYED_BELOW:
            select = select.replace(SECTION_FROM, KEYED_DOCUMENT)
        return {r[0]: section_row(r) for r in self._q(select + " WHERE s.id = ANY(%s)", (ids,))}

    def section_texts(self) -> list[tuple[int, str, str, str]]:
        return [tuple(r) for r in self._q(
            "SELECT s.id, s.heading, s.content, d.path FROM public.sections s"
            " JOIN public.documents d ON d.id = s.doc_id ORDER BY d.id, s.ord")]

    def filtered_section_ids(self, f: Filters) -> set[int]:
        where, params = _filter_where(f)
        # one packed bytea, not a row per section (a type filter keeps tens of thousands)
        ids = self.conn.cursor(binary=True).execute(
            f"SELECT string_agg(int8send(s.id), ''::bytea) FROM sections s JOIN documents d ON d.id = s.doc_id"
            f" WHERE {where}", params).fetchone()[0]
        return set(kw.packed(ids, kw.POSTING).tolist())

    def count_sections(self, f: Filters) -> int:
        where, params = _filter_where(f)
        return self._q(f"SELECT COUNT(*) FROM sections s JOIN documents d ON d.id = s.doc_id WHERE {where}",
                       params).fetchone()[0]

    def section_ids_of(self, paths: Iterable[str]) -> list[int]:
        return [r[0] for r in self._q("SELECT s.id FROM sections s JOIN documents d ON d.id = s.doc_id"
                                      " WHERE d.path = ANY(%s)", (list(paths),))]

    def section_ids_about(self, record_paths: list[str], name: str, needles: list[str]) -> list[int]:
        """An entity's history: its records' sections and those that mention it (the stored
        mentions decide; `needles` only narrow the local store's literal index)."""
        return [r[0] for r in self._q("SELECT s.id FROM sections s JOIN documents d ON d.id = s.doc_id"
                                      " WHERE d.path = ANY(%s) OR s.entities ? %s", (list(record_paths), name))]

    # The literal index (pg_schema migration 8): trigram candidates from GIN, as the local store's
    # FTS5 trigram index gives; None (the engine scans its cached section texts) for a needle too
    # short for a trigram or holding NUL. A scoped role, whose row-level security keeps PostgreSQL
    # from using the index (the containment operator is not leakproof), asks for its candidates
    # through a function that uses it within the role's grants (migration 10).
    use_literal_index = True   # bench/bench_team.py turns it off to measure the scan it replaces

    def _literal_indexable(self, needles: list[str]) -> bool:
        return self.use_literal_index and bool(needles) and all(map(literal_indexable, needles))

    def _may_contain(self, needles: list[str], with_heading: bool) -> tuple[str, list]:
        """The SQL condition (on `s`) for sections whose content, or heading `with_heading`, may
        contain any of `needles`, with its parameters."""
        if self.role_scope is not None:
            calls = " UNION ALL ".join(f"SELECT * FROM public.{pg_schema.SCOPED_LITERAL}(%s, %s)" for _ in needles)
            # an array the key is looked up with (an init plan): as a join, the planner expected
            # 1,000 rows and scanned every section under the role's policies to match them
            return f"s.id = ANY(ARRAY({calls}))", [x for n in needles for x in (n, with_heading)]
        cols = ("s.content", "s.heading") if with_heading else ("s.content",)
        return ("(" + " OR ".join(f"{GRAMS}({c}) @> {GRAMS}(%s)" for _ in needles for c in cols) + ")",
                [n for n in needles for _ in cols])

    def sections_containing(self, needles: list[str], content_only: bool = False) -> list[tuple] | None:
        """(section id, heading, content, path) of the visible sections whose heading or content
        (only the content with `content_only`) may contain any of `needles` (lower-cased), in
        document order; callers test the text."""
        if not self._literal_indexable(needles):
            return None
        where, params = self._may_contain(needles, with_heading=not content_only)
        return [tuple(r) for r in self._q(
            "SELECT s.id, s.heading, s.content, d.path FROM sections s JOIN documents d ON d.id = s.doc_id"
            f" WHERE {where} ORDER BY d.id, s.ord", params)]

    def uses_word(self, word: str) -> bool | None:
        """Whether some visible section's content uses `word` (lower-case) whole. A plain section's
        whole words are its body postings (pg_schema migration 11), so for an ASCII word those
        answer by key; only the other sections that may contain it are read and tested, as the
        local store tests its candidates. None when the literal index cannot answer."""
        if not self._literal_indexable([word]):
            return None
        plain_only = ""
        if self.role_scope is None and terms.WORD_RUN_RE.fullmatch(word) and len(word) < kw.TERM_LIMIT:
            # (a scoped role sees no postings: it tests every candidate)
            if self._q("SELECT EXISTS (SELECT 1 FROM postings p JOIN sections s ON s.id = p.section_id"
                       " WHERE p.field = %s AND p.term = %s AND s.plain)", (kw.BODY, word)).fetchone()[0]:
                return True
            plain_only = "NOT s.plain AND "
        may, params = self._may_contain([word], with_heading=False)
        return terms.uses_whole(word, (r[0].lower() for r in
                                       self._q(f"SELECT s.content FROM sections s WHERE {plain_only}{may}", params)))

    def newest_sections(self, f: Filters, limit: int) -> list[int]:
        """As the local catalog's: newest first (date, the earlier section of a day, id) among the
        sections with text of their own, or among all when none has; ordered and limited in SQL."""
        where, params = _filter_where(f)
        sql = ("SELECT s.id FROM sections s JOIN documents d ON d.id = s.doc_id WHERE ({where}){extra}"
               " ORDER BY s.date DESC NULLS LAST, s.start_line, s.id LIMIT %s")
        with_text = " AND btrim(s.body, E' \\t\\n\\r\\f\\v') <> ''"
        out = [r[0] for r in self._q(sql.format(where=where, extra=with_text), (*params, limit))]
        return out or [r[0] for r in self._q(sql.format(where=where, extra=""), (*params, limit))]

    def literal_counts(self, needle: str, case_insensitive: bool) -> list[tuple[int, str | None, int]]:
        """(section id, date, occurrences) of the visible sections whose content holds `needle`
        (lower-cased by the caller when case-insensitive); the literal index picks the candidates
        (lower(content) holds lower(needle) whenever content holds needle: an exact superset)."""
        if "\x00" in needle:
            return []   # PostgreSQL text never holds NUL (nor does any section: the parser replaces it)
        # ASCII case folding, as the local store's SQLite lower() (PostgreSQL's lower() folds É too)
        col = f"translate(s.content, '{ASCII_UPPER}', '{ASCII_UPPER.lower()}')" if case_insensitive else "s.content"
        where, params = f"strpos({col}, %s) > 0", [needle]
        if self._literal_indexable([needle]):
            may, may_params = self._may_contain([needle], with_heading=False)
            where, params = f"{may} AND {where}", [*may_params, *params]
        return [tuple(r) for r in self._q(
            f"SELECT s.id, s.date, (length({col}) - length(replace({col}, %s, ''))) / length(%s)"
            f" FROM sections s WHERE {where}", (needle, needle, *params))]

    def all_chunks(self):
        return self._q(CHUNK_SELECT + " ORDER BY c.id").fetchall()

    def chunks_of(self, path: str):
        return self._q(CHUNK_SELECT + " WHERE d.path = %s ORDER BY c.id", (path,)).fetchall()

    def passage_vectors(self, passage_ids: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        if passage_ids is None:
            rows = self._q("SELECT id, embedding::text FROM passages WHERE embedding IS NOT NULL ORDER BY id").fetchall()
        else:
            rows = self._q("SELECT id, embedding::text FROM passages WHERE embedding IS NOT NULL AND id = ANY(%s)"
                           " ORDER BY id", ([int(i) for i in passage_ids],)).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        return np.array([r[0] for r in rows], dtype=np.int64), np.stack([_vec_parse(r[1]) for r in rows])

    def passages_by_id(self, passage_ids) -> dict[int, tuple[int, bool]]:
        ids = [int(i) for i in passage_ids]
        if not ids:
            return {}
        return {pid: (sid, o == 0) for pid, sid, o in
                self._q("SELECT id, section_id, ord FROM passages WHERE id = ANY(%s)", (ids,))}

    def passage_texts(self, passage_ids) -> dict[int, tuple[int, int, str, str]]:
        ids = [int(i) for i in passage_ids]
        if not ids:
            return {}
        return {pid: (sid, doc_id, path, text) for pid, sid, doc_id, path, text in self._q(
            "SELECT p.id, s.id, d.id, d.path, p.text FROM passages p JOIN sections s ON s.id = p.section_id"
            " JOIN documents d ON d.id = s.doc_id WHERE p.id = ANY(%s)", (ids,))}

    def passage_ids_in(self, section_ids) -> "SectionPassages":
        """The passages of these sections, as the dense leg's filter (not their ids: see SectionPassages)."""
        return SectionPassages(section_ids)

    def link_rows(self, source_doc_id: int | None = None, resolved_to: str | None = None) -> list[dict]:
        where, params = "", ()
        if source_doc_id is not None:
            where, params = " WHERE l.doc_id = %s", (source_doc_id,)
        elif resolved_to is not None:
            where, params = " WHERE l.resolved = %s AND d.path != %s", (resolved_to, resolved_to)
        keys = ("id", "source", "target", "anchor", "kind", "line", "text", "resolved")
        # a scoped role may not read the writer's resolutions (they name outside files): the
        # engine resolves its links among the scope's documents (Engine.links_in_scope)
        resolved = "NULL::text" if self.role_scope is not None else "l.resolved"
        return [dict(zip(keys, r)) for r in self._q(
            f"SELECT l.id, d.path, l.target, l.anchor, l.kind, l.line, l.text, {resolved} FROM links l"
            " JOIN documents d ON d.id = l.doc_id" + where + " ORDER BY d.path, l.line, l.id", params)]

    def entities(self, unscoped: bool = False) -> list[tuple[str, str, list[str]]]:
        schema = "public." if unscoped else ""
        return [(r[0], r[1], list(r[2])) for r in self._q(
            f"SELECT e.name, d.path, e.aliases FROM {schema}entities e JOIN {schema}documents d ON d.id = e.doc_id"
            " ORDER BY e.name")]

    def consistency_problems(self) -> list[str]:
        """What a crash could have left inconsistent, were a transaction not whole: postings of no
        chunk, field totals that disagree with the chunks, passages without vectors, vectors no
        passage uses."""
        checks = {
            "postings of no chunk": (
                "SELECT count(*) FROM postings p WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = p.chunk_id)"),
            "field totals disagree with the chunks": (
                "SELECT count(*) FROM field_stats f WHERE f.docs <> (SELECT count(*) FROM chunks)"
                " OR f.tokens <> (SELECT coalesce(sum(lens[f.field + 1]), 0) FROM chunks)"),
            "chunks without postings": (
                "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM postings p WHERE p.chunk_id = c.id)"
                " AND c.lens <> '{0,0,0,0}'"),
            "passages without the vector stored for their text": (   # a text with none waits (writer.py)
                "SELECT count(*) FROM passages p WHERE p.embedding IS NULL"
                " AND EXISTS (SELECT 1 FROM embeddings e WHERE e.text_sha = p.text_sha)"),
            "vectors no passage uses": (
                "SELECT count(*) FROM embeddings e WHERE NOT EXISTS (SELECT 1 FROM passages p WHERE p.text_sha = e.text_sha)"),
        }
        out = []
        for what, sql_text in checks.items():
            n = self._q(sql_text).fetchone()[0]
            if n:
                out.append(f"{what}: {n}")
        return out

    # -- what scopes need (indexer/store/scope.py) -----------------------------------------------------------
    def record_symlinks(self, targets: dict[str, str]) -> None:
        if self.symlink_targets() == targets:
            return
        with self.conn.transaction():
            self._q("DELETE FROM public.scope_symlinks")
            if targets:
                self.conn.cursor().executemany("INSERT INTO public.scope_symlinks(path, target) VALUES (%s, %s)",
                                               sorted(targets.items()))

    def symlink_targets(self) -> dict[str, str]:
        return dict(self._q("SELECT path, target FROM public.scope_symlinks").fetchall())

    def vectors_in_use(self) -> int:
        return self._q("SELECT count(DISTINCT text_sha) FROM passages"
                       " WHERE text_sha IN (SELECT text_sha FROM public.embeddings)").fetchone()[0]

    def chunk_ids_digest(self) -> str:
        import hashlib
        from array import array

        ids = array("q", (r[0] for r in self._q("SELECT id FROM chunks ORDER BY id")))
        return hashlib.sha1(ids.tobytes()).hexdigest()

    def passage_ids(self) -> set[int]:
        return {r[0] for r in self._q("SELECT id FROM passages")}

    # -- the keyword and vector legs ---------------------------------------------------------------
    def bm25(self, text: str, limit: int, allowed: set[int] | None) -> dict[int, float]:
        """Best chunk score per section, tantivy's BM25 over every live posting of the query's
        terms: each term's packed copy, less the chunks deleted since, plus the postings written
        since from the postings' key, all sent as packed byteas and summed in numpy
        (indexer/store/postgres/keywords.py)."""
        q = kw.query_terms(text)
        if not q or (allowed is not None and not allowed):
            return {}
        fields, terms_ = [f for f, _ in q], [t for _, t in q]
        stats = {f: (docs, tokens) for f, docs, tokens in self._q("SELECT field, docs, tokens FROM field_stats")}
        mark = int(self.get_meta(pg_schema.PACKED_THROUGH) or 0)
        cur = self.conn.cursor(binary=True)
        terms_sql = "FROM unnest(%s::smallint[], %s::text[]) WITH ORDINALITY AS q(field, term, i)"
        packed = cur.execute(f"SELECT (q.i - 1)::int, p.postings, p.sections {terms_sql}"
                             " JOIN postings_packed p ON p.field = q.field AND p.term = q.term",
                             (fields, terms_)).fetchall() if mark else []
        delta = cur.execute(f"SELECT (q.i - 1)::int, {kw.PACKED_POSTINGS_SQL}, {kw.PACKED_SECTIONS_SQL} {terms_sql}"
                            " JOIN postings p ON p.field = q.field AND p.term = q.term AND p.chunk_id > %s"
                            " GROUP BY q.i", (fields, terms_, mark)).fetchall()
        dead = np.zeros(0, dtype=np.int64)
        if mark:
            dead = kw.packed(cur.execute("SELECT string_agg(int8send(chunk_id), ''::bytea) FROM postings_dead"
                                         ).fetchone()[0], kw.POSTING)
        per_term = kw.merge_postings(packed, delta, dead)
        return kw.top_sections(per_term, list(q.values()), fields, stats, limit, allowed)

    def ts_rank(self, text: str, limit: int, allowed: set[int] | None) -> dict[int, float]:
        """PostgreSQL's own full-text ranking (measured against bm25 in bench/bench_team.py)."""
        words = [w for w in kw.query_terms(text) if w[0] == kw.BODY]
        if not words or (allowed is not None and not allowed):
            return {}
        tsq = " | ".join("'" + t.replace("'", "''") + "'" for _, t in words)
        filt, fparams = ("AND c.section_id = ANY(%s)", [sorted(allowed)]) if allowed is not None else ("", [])
        rows = self._q(
            "WITH q AS (SELECT to_tsquery('english', %s) AS q), top AS ("
            " SELECT c.section_id, ts_rank(to_tsvector('english', c.text), q.q) AS score FROM chunks c, q"
            f" WHERE to_tsvector('english', c.text) @@ q.q {filt} ORDER BY score DESC LIMIT %s)"
            " SELECT section_id, max(score) FROM top GROUP BY section_id", (tsq, *fparams, limit)).fetchall()
        return {int(sid): float(score) for sid, score in rows}

    def writer_lock_holder(self) -> "pg_schema.LockHolder | None":
        """The session holding the writer's lock key: a writer if it owns the store (any login may
        take the key: a session of another role is not a writer, and keeps the real one out)."""
        return pg_schema.lock_holder(self._q, WRITER_LOCK)

    def writer_running(self) -> bool:
        holder = self.writer_lock_holder()
        return holder is not None and holder.owns_store

    def writer_lock_squatter(self) -> str | None:
        """Who holds the writer's lock key without owning the store, or None."""
        holder = self.writer_lock_holder()
        return holder.who() if holder is not None and not holder.owns_store else None

    def live_vectors(self) -> int:
        return self._q("SELECT count(*) FROM passages WHERE embedding IS NOT NULL").fetchone()[0]

    def nearest(self, query: np.ndarray, k: int, dim: int,
                allowed: "set[int] | SectionPassages | None") -> list[tuple[int, float]]:
        """(passage id, cosine similarity) best first. Filtered: exactly when the set is small,
        else HNSW asked wide (pgvector 0.6 has no iterative scans), then exactly if it came up short."""
        qv = _vec_text(query)
        expr = f"embedding::vector({dim})"
        if isinstance(allowed, SectionPassages):
            return self._nearest_in_sections(qv, k, dim, allowed.sections)
        if allowed is not None:
            if not allowed:
                return []
            ids = sorted(int(a) for a in allowed)
            exact = (f"SELECT id, 1 - ({expr} <=> %s::vector({dim})) FROM passages"
                     " WHERE id = ANY(%s) AND embedding IS NOT NULL ORDER BY 2 DESC LIMIT %s")
            if len(ids) < EXACT_BELOW:
                return [(int(i), float(s)) for i, s in self._q(exact, (qv, ids, k))]
            self._set_ef(MAX_EF_SEARCH)
            rows = self._q(f"SELECT id, 1 - ({expr} <=> %s::vector({dim})) FROM passages WHERE id = ANY(%s)"
                           f" ORDER BY {expr} <=> %s::vector({dim}) LIMIT %s", (qv, ids, qv, k)).fetchall()
            if len(rows) < k:
                rows = self._q(exact, (qv, ids, k)).fetchall()
            return [(int(i), float(s)) for i, s in rows]
        self._set_ef(min(max(EF_SEARCH, k), MAX_EF_SEARCH))
        return [(int(i), float(s)) for i, s in self._q(
            f"SELECT id, 1 - ({expr} <=> %s::vector({dim})) FROM passages WHERE embedding IS NOT NULL"
            f" ORDER BY {expr} <=> %s::vector({dim}) LIMIT %s", (qv, qv, k))]

    def nearest_soon(self, query: np.ndarray, k: int, dim: int,
                     allowed: "set[int] | SectionPassages | None") -> "Callable[[], list[tuple[int, float]]]":
        """`nearest`, started: a reader in a request asks its side connections, in the request's
        own snapshot and scope, so the server reads the dense leg's passages while the caller runs
        the keyword leg; a large pool read exactly is read in two halves at once (a filtered
        search's exact read is half its time). Elsewhere (the writer, a call outside a request)
        it answers now."""
        if not (self._in_request and self.readonly):
            rows = self.nearest(query, k, dim, allowed)
            return lambda: rows
        if isinstance(allowed, SectionPassages) and allowed:   # routed here, once: the side reads
            qv, sections = _vec_text(query), allowed.sections
            pool, ef = self._pool_and_ef(k, len(sections))
            if ef is not None:
                return self._on_side(0, "_graph_in_sections", qv, k, dim, sections, ef)
            if pool < SPLIT_POOL:
                return self._on_side(0, "_exact_in_sections", qv, k, dim, sections)
            half = len(sections) // 2
            parts = [self._on_side(i, "_exact_in_sections", qv, k, dim, part)
                     for i, part in enumerate((sections[:half], sections[half:]))]
            return lambda: sorted((r for part in parts for r in part()), key=lambda r: (-r[1], r[0]))[:k]
        return self._on_side(0, "nearest", query, k, dim, allowed)

    def _on_side(self, i: int, method: str, *args) -> "Callable":
        """Start `method` on side connection `i` (made, or made again, as needed), which joins
        the request's snapshot, exported once, the first time it is asked in the request."""
        while len(self._sides) <= i:
            self._sides.append(None)
        side = self._sides[i]
        if side is None or side.broken:
            if side is not None:
                side.close()
            side = self._sides[i] = Side(self.store)
        if not side.joined and self._snapshot is None:
            self._snapshot = self._q("SELECT pg_export_snapshot()").fetchone()[0]
        return side.call(self._snapshot, self._prefixes, method, *args)

    def _pool_and_ef(self, k: int, sections: int) -> tuple[float, int | None]:
        """The planner's estimate of the passages of `sections` sections, and the graph's
        hnsw.ef_search to find k of them — None where reading them exactly is cheaper or the
        graph could not find enough (pgvector 0.6 has no iterative scans and answers at most
        MAX_EF_SEARCH a search): the ef expected to hold twice the FILTERED_ENOUGH share of k."""
        total, per_section = self._q(
            "SELECT p.reltuples, greatest(p.reltuples / greatest(s.reltuples, 1), 1) FROM pg_class p, pg_class s"
            " WHERE p.oid = 'public.passages'::regclass AND s.oid = 'public.sections'::regclass").fetchone()
        pool = sections * per_section
        ef = math.ceil(k * max(total, 1) / pool)
        return pool, (ef if ef <= MAX_EF_SEARCH and ef * GRAPH_COST_PER_EF < pool else None)

    def _nearest_in_sections(self, qv: str, k: int, dim: int, sections: list[int]) -> list[tuple[int, float]]:
        """The dense leg filtered to the passages of `sections`, the filter applied to each
        candidate's own row, by the cheaper of two ways (`_pool_and_ef`): through the graph or
        exactly."""
        if not sections:
            return []
        _, ef = self._pool_and_ef(k, len(sections))
        return (self._exact_in_sections(qv, k, dim, sections) if ef is None
                else self._graph_in_sections(qv, k, dim, sections, ef))

    def _graph_in_sections(self, qv: str, k: int, dim: int, sections: list[int], ef: int) -> list[tuple[int, float]]:
        """The graph's `ef` nearest, those in the pool kept — if at least FILTERED_ENOUGH of `k`,
        else (a filter the graph's neighbourhood starves) the pool read exactly after all."""
        expr, vec = f"embedding::vector({dim})", f"%s::vector({dim})"
        self._set_ef(ef)
        rows = [(int(i), float(sim)) for i, sim in self._q(
            f"SELECT id, 1 - d FROM (SELECT id, section_id, {expr} <=> {vec} AS d FROM passages"
            f" WHERE embedding IS NOT NULL ORDER BY {expr} <=> {vec} LIMIT {ef}) x"
            " WHERE section_id = ANY(%b) ORDER BY d LIMIT %s", (qv, qv, sections, k))]
        return rows if len(rows) >= min(k, FILTERED_ENOUGH * k) else self._exact_in_sections(qv, k, dim, sections)

    def _exact_in_sections(self, qv: str, k: int, dim: int, sections: list[int]) -> list[tuple[int, float]]:
        """The k passages of `sections` nearest the query, every one of them read: by runs of
        consecutive section ids (a document's sections are consecutive), one index descent a
        run, not one a section (27,500 sections: 167 → 91 ms). Each run is its own index scan
        (a LATERAL step, `OFFSET 0` so the planner keeps it one): left to itself, the planner
        joined the runs to the passages by other plans — a small store's passages copied whole
        and rescanned for every run (40 runs of 4,200 passages: 116 ms), a large one's sorted by
        distance and checked against the runs (100k sections, 100 runs: 822 ms). The similarities
        are then ranked in a MATERIALIZED step (so 4 ms and 79 ms at 100 and 2,500 runs)."""
        rows = self._q(
            "WITH pool AS MATERIALIZED (SELECT p.id, p.sim FROM unnest(%s::bigint[], %s::bigint[]) r(lo, hi)"
            f" CROSS JOIN LATERAL (SELECT id, 1 - (embedding::vector({dim}) <=> %s::vector({dim})) AS sim FROM passages"
            " WHERE section_id BETWEEN r.lo AND r.hi AND embedding IS NOT NULL OFFSET 0) p)"
            " SELECT id, sim FROM pool ORDER BY sim DESC, id LIMIT %s",
            (*_runs(sections), qv, k)).fetchall()
        return [(int(i), float(sim)) for i, sim in rows]

    def _set_ef(self, ef: int) -> None:
        if self._ef != ef or self._in_request:
            self._q(f"SET {'LOCAL ' if self._in_request else ''}hnsw.ef_search = {int(ef)}")
            self._ef = None if self._in_request else ef

    # -- one request, one snapshot; scopes ---------------------------------------------------------
    @contextmanager
    def scoped(self, prefixes: tuple[str, ...]):
        """One request in one REPEATABLE READ transaction (a search sees one generation), with TEMP
        views shadowing the tables when scoped; rolled back at the end, which drops the views."""
        if self._in_request or not self.readonly:
            if prefixes:
                raise UserError("scopes are served by readers of the team store", param="scope")
            yield
            return
        psycopg = _psycopg()
        self._reconnect_if_lost()
        self._in_request = True
        self._meta = {}
        self._prefixes = prefixes
        try:
            with self.conn.transaction():
                self._q("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                for sql_text in _scope_views(prefixes):
                    self._q(sql_text)
                yield
                raise psycopg.Rollback()
        except psycopg.Rollback:   # its rollback failed: the server went away after the answer was read, which
            pass                   # stands (one snapshot); the next request connects again
        except psycopg.OperationalError as e:   # the server went away mid-request: say so; reconnect next time
            raise lost(self.store.url, e) from None
        finally:
            self._in_request = False
            for side in self._sides:
                if side is not None:
                    side.end_request()   # before the snapshot it imported is gone
            self._snapshot = None


def _ended_while_idle(conn) -> bool:
    """Whether the server has ended an idle connection (`pg_ctl restart`, pg_terminate_backend): its
    socket then holds the server's FATAL message, then end of file. Read without waiting until
    nothing more is there: libpq marks the connection bad once it reads the end of file. A notice
    or a notification leaves it OK."""
    import select

    from psycopg import pq

    if conn.closed:
        return True
    try:
        for _ in range(8):
            ready, _, _ = select.select([conn.fileno()], [], [], 0)
            if not ready:
                break
            conn.pgconn.consume_input()
            if conn.pgconn.status != pq.ConnStatus.OK:
                return True
    except (OSError, ValueError, _psycopg().OperationalError):
        return True
    return conn.pgconn.status != pq.ConnStatus.OK


class Side:
    """A reader's side connection, for the dense leg beside the keyword leg: each request it
    joins imports that request's snapshot (pg_export_snapshot) and builds its scope's views, so
    both connections see one generation and one scope. Its own thread waits on the server."""

    def __init__(self, store: "PgStore"):
        from concurrent.futures import ThreadPoolExecutor

        self.ledger = PgLedger(store, readonly=True)
        self.ledger._in_request = True   # always inside a joined transaction: settings are LOCAL
        self.joined = False
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="remembrancer-pg-side")

    @property
    def broken(self) -> bool:
        return self.ledger.conn.closed or self.ledger.conn.broken

    def call(self, snapshot: str | None, prefixes: tuple[str, ...], method: str, *args) -> "Callable":
        """Start the ledger's `method` on this side's thread, having joined the request first if it
        has not; the callable gives its result (or raises its error)."""
        join, self.joined = not self.joined, True
        return self._thread.submit(self._run, join and snapshot, prefixes, method, args).result

    def _run(self, snapshot, prefixes, method, args):
        if snapshot:
            try:
                self._join(snapshot, prefixes)
            except _psycopg().OperationalError:   # its connection died since its last request: once more
                self.ledger._reconnect_if_lost()
                self._join(snapshot, prefixes)
        return getattr(self.ledger, method)(*args)

    def _join(self, snapshot: str, prefixes: tuple[str, ...]) -> None:
        from psycopg import sql

        self.ledger._q("BEGIN ISOLATION LEVEL REPEATABLE READ")   # not READ ONLY: the scope's TEMP views
        self.ledger._q(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
        for sql_text in _scope_views(prefixes):
            self.ledger._q(sql_text)

    def end_request(self) -> None:
        """Roll the joined transaction back, once what was asked of it has finished (its error,
        if any, was the request's); a side that fails to is dropped and made again."""
        if not self.joined:
            return
        self.joined = False
        try:
            self._thread.submit(self.ledger._q, "ROLLBACK").result()
        except Exception:
            self.ledger.conn.close()   # `broken` now: the next request makes another side

    def close(self) -> None:
        self._thread.shutdown(wait=True)
        self.ledger.close()


def _runs(ids: list[int]) -> tuple[list[int], list[int]]:
    """Sorted distinct integers as runs of consecutive values: (first values, last values)."""
    a = np.asarray(ids, dtype=np.int64)
    cut = np.flatnonzero(np.diff(a) != 1)
    return np.r_[a[:1], a[cut + 1]].tolist(), np.r_[a[cut], a[-1:]].tolist()


def _scope_views(prefixes: tuple[str, ...]) -> list[str]:
    """The scope's views (indexer/store/scope_views.py) in PostgreSQL: paths compared bytewise."""
    if not prefixes:
        return []
    return scope_views.statements(prefixes, PG_VIEWS)


class SectionPassages:
    """The passages of some sections, as the dense leg's filter: pgvector reads each candidate's
    row, section included, so the filter is applied there (PgLedger._nearest_in_sections) rather
    than the reader fetching tens of thousands of passage ids to send them back."""

    __slots__ = ("sections",)

    def __init__(self, sections):
        self.sections = sorted(map(int, sections))   # distinct: a set's

    def __bool__(self) -> bool:
        return bool(self.sections)


class PgKeywordIndex:
    """The keyword leg, answered by the calling thread's ledger; written with the catalog."""

    def __init__(self, ledgers, ranking: str = "bm25"):
        self._ledgers = ledgers
        self.ranking = ranking

    @property
    def generation(self) -> int:
        return self._ledgers().generation

    def search(self, text: str, limit: int, allowed_sections: set[int] | None = None) -> dict[int, float]:
        ledger = self._ledgers()
        return (ledger.ts_rank if self.ranking == "ts_rank" else ledger.bm25)(text, limit, allowed_sections)

    def replace_document(self, path: str, chunks) -> None:
        pass   # the postings were written in the document's transaction

    def replace_sections(self, path: str, removed_sections: list[int], chunks) -> None:
        pass   # likewise

    def delete_document(self, path: str) -> None:
        pass

    def commit(self, generation: int) -> None:
        pass

    def rebuild(self, chunks, generation: int) -> int:
        return 0

    def dead_share(self) -> float:
        return 0.0   # postings are rows: a deleted chunk's are gone with it


class PgVectorIndex:
    """Passage vectors in pgvector (HNSW, cosine), answered by the calling thread's ledger."""

    def __init__(self, ledgers, dim: int):
        self._ledgers = ledgers
        self.dim = dim
        self._live: tuple[int, int] = (-1, 0)

    @property
    def generation(self) -> int:
        return self._ledgers().generation

    @generation.setter
    def generation(self, value: int) -> None:
        pass   # the store's generation is the ledger's, committed with each document

    @property
    def saved_generation(self) -> int:
        return self.generation   # nothing waits to be saved: PostgreSQL holds every vector

    def search(self, query: np.ndarray, k: int, allowed: set[int] | None = None) -> list[tuple[int, float]]:
        return self._ledgers().nearest(query, k, self.dim, allowed)

    def search_soon(self, query: np.ndarray, k: int, allowed: set[int] | None = None):
        return self._ledgers().nearest_soon(query, k, self.dim, allowed)

    def update(self, removed: list[int], labels: list[int], vectors: np.ndarray) -> None:
        pass

    def rebuild(self, labels, vectors, generation: int) -> None:
        pass

    def save(self, generation: int) -> None:
        pass

    def dead_share(self) -> float:
        return 0.0   # a deleted passage's row is gone; the HNSW index is PostgreSQL's to vacuum

    def __len__(self) -> int:
        ledger = self._ledgers()
        gen = ledger.generation
        if self._live[0] != gen:
            self._live = (gen, ledger.live_vectors())
        return self._live[1]


class PgStore:
    """A corpus's index in PostgreSQL at `url`. The writer migrates the schema; a reader refuses
    a store that was never written or whose schema is newer than this version knows."""

    kind = "postgresql"
    indexes_in_ledger = True   # postings and vectors go in the document's transaction

    def __init__(self, url: str, *, readonly: bool, ranking: str = "bm25"):
        check_url(url)
        self.url = url
        self.ranking = ranking
        self.priority = RequestsFirst()   # the writer gives way between documents (indexer/store/priority.py)
        self._lock = threading.Lock()
        psycopg = _psycopg()
        try:
            with pg_connect.connect(url, reader=readonly, autocommit=True) as conn:
                if not readonly:
                    if problem := pg_schema.vector_problem(conn):
                        raise UserError(f"{problem}: {safe_url(url)} cannot hold the store", param="store",
                                        code="store_unsupported", hint=NO_PGVECTOR_HINT)
                    try:
                        pg_schema.migrate(conn)
                    except pg_schema.MigrationLockHeld:
                        holder = pg_schema.lock_holder(conn.execute, pg_schema.MIGRATE_LOCK)
                        raise UserError(f"the store {safe_url(url)} could not be migrated: "
                                        f"{holder.who() if holder else 'another session'} held its migration lock for "
                                        f"{pg_schema.MIGRATE_WAIT_S:g} s", param="store", code="migration_lock_held",
                                        hint="if it is not another remembrancer writer migrating, end that session "
                                             "(SELECT pg_terminate_backend(PID) as a superuser) and start again") from None
                    if problem := pg_schema.ensure_reader_access(conn):
                        log.warning("store: readers cannot read %s: %s (the writer's role needs CREATEROLE to"
                                    " make them)", safe_url(url), problem)
                self.schema_version = pg_schema.applied_version(conn)
                readable = self.schema_version == 0 or conn.execute(
                    "SELECT has_table_privilege('public.documents', 'SELECT')").fetchone()[0]
        except psycopg.OperationalError as e:
            raise unreachable(url, e) from None
        except psycopg.errors.InsufficientPrivilege as e:
            if readonly:
                raise UserError(f"the role of {safe_url(url)} may not read the store ({str(e).strip()})",
                                param="store", code="no_access", hint=NO_ACCESS_HINT) from None
            raise UserError(f"the store {safe_url(url)} refused the writer: {str(e).strip()}", param="store",
                            hint="the writer's role must own the schema (readers need only SELECT)") from None
        if self.schema_version == 0:
            raise UserError(f"the store {safe_url(url)} holds no index yet", param="store", code="no_index",
                            hint="start the writer: `remembrancer serve --store URL --root CHECKOUT`")
        if not readable:
            raise UserError(f"the role of {safe_url(url)} may not read the store", param="store", code="no_access",
                            hint=NO_ACCESS_HINT)
        if self.schema_version > pg_schema.LATEST:
            raise UserError(f"the store's schema (version {self.schema_version}) is newer than this remembrancer "
                            f"knows ({pg_schema.LATEST})", param="store", code="schema_newer", hint="upgrade remembrancer")
        if readonly and self.schema_version < pg_schema.LATEST:   # a writer has just migrated it; a reader cannot
            raise UserError(f"the store's schema (version {self.schema_version}) is older than this remembrancer "
                            f"reads ({pg_schema.LATEST}): its writer runs an older remembrancer", param="store",
                            code="schema_older", hint="upgrade the writer first (it migrates the store when it "
                                                      "starts), or run the writer's version here")

    def open_ledger(self, readonly: bool) -> PgLedger:
        return PgLedger(self, readonly)

    def keyword_index(self, ledgers) -> PgKeywordIndex:
        return PgKeywordIndex(ledgers, self.ranking)

    def vector_index(self, ledgers, dim: int) -> PgVectorIndex:
        return PgVectorIndex(ledgers, dim)

    def drop_vector_index(self) -> None:
        pass   # drop_embeddings dropped the HNSW index with the vectors

    def describe(self) -> dict:
        return {"kind": self.kind, "url": safe_url(self.url), "schema_version": self.schema_version,
                "keyword_ranking": self.ranking}
