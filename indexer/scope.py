"""Scopes: path prefixes outside which nothing exists — a hard boundary, enforced in SQLite.

For a scoped request, the reader's connection gets TEMP views named like the catalog's tables
(`documents`, `sections`, `chunks`, `passages`, `entities`, `links`) that hold only the rows under
the prefixes. SQLite resolves an unqualified table name to the temp schema first, so every query
of the engine — search, read, outline, list, status, filters' valid options, history, latest —
sees the scoped corpus without knowing about scopes. The few in-memory caches are global (built
from `main.` tables) and filtered through `Engine.visible_*` helpers.
"""

from __future__ import annotations

from contextlib import contextmanager

from .errors import UserError

TABLES = ("documents", "sections", "chunks", "passages", "entities", "links")


def normalize(prefixes) -> tuple[str, ...]:
    """Clean prefixes ('journal/', 'runbooks'); refuse `..`, absolute paths and empty ones."""
    if isinstance(prefixes, str):
        prefixes = [prefixes]
    if prefixes is not None and not isinstance(prefixes, (list, tuple)):
        raise UserError("scope must be a list of path prefixes", param="scope")
    out = []
    for raw in prefixes or ():
        if not isinstance(raw, str) or "\x00" in raw:
            raise UserError("scope must be a list of path prefixes", param="scope")
        p = raw.strip().replace("\\", "/")
        while p.startswith("./"):
            p = p[2:]
        if not p or p.startswith("/") or ".." in p.split("/"):
            raise UserError(f"scope must be a path prefix inside the corpus, got {raw!r}", param="scope")
        out.append(p)
    return tuple(dict.fromkeys(out))


def contains(prefixes: tuple[str, ...], path: str) -> bool:
    return not prefixes or any(_match(p, path) for p in prefixes)


def _match(prefix: str, path: str) -> bool:
    if prefix.endswith("/"):
        return path.startswith(prefix)
    return path == prefix or path.startswith(prefix + "/") or path.startswith(prefix)


def _doc_predicate(prefixes: tuple[str, ...], col: str) -> tuple[str, list]:
    parts, params = [], []
    for p in prefixes:
        esc = p.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        parts.append(f"{col} LIKE ? ESCAPE '\\'")
        params.append(esc + "%")
    return "(" + " OR ".join(parts) + ")", params


def _views(prefixes: tuple[str, ...]) -> list[tuple[str, list]]:
    pred, params = _doc_predicate(prefixes, "d.path")
    docs = f"SELECT d.id FROM main.documents d WHERE {pred}"
    return [
        (f"CREATE TEMP VIEW documents AS SELECT d.* FROM main.documents d WHERE {pred}", params),
        (f"CREATE TEMP VIEW sections AS SELECT s.* FROM main.sections s WHERE s.doc_id IN ({docs})", params),
        ("CREATE TEMP VIEW chunks AS SELECT c.* FROM main.chunks c WHERE c.section_id IN (SELECT id FROM sections)", []),
        ("CREATE TEMP VIEW passages AS SELECT p.* FROM main.passages p WHERE p.section_id IN (SELECT id FROM sections)",
         []),
        (f"CREATE TEMP VIEW entities AS SELECT e.* FROM main.entities e WHERE e.doc_id IN ({docs})", params),
        (f"CREATE TEMP VIEW links AS SELECT l.* FROM main.links l WHERE l.doc_id IN ({docs})", params),
    ]


@contextmanager
def applied(db, prefixes: tuple[str, ...]):
    """Shadow the catalog's tables on connection `db` for the duration of one request."""
    if not prefixes:
        yield
        return
    _drop(db)
    for sql, params in _views(prefixes):
        db.execute(_inline(sql, params))
    try:
        yield
    finally:
        _drop(db)


def _drop(db) -> None:
    for t in TABLES:
        db.execute(f"DROP VIEW IF EXISTS temp.{t}")


def _inline(sql: str, params: list) -> str:
    """Views cannot take bound parameters: inline them as SQL string literals (quotes doubled)."""
    for p in params:
        sql = sql.replace("?", "'" + p.replace("'", "''") + "'", 1)
    return sql
