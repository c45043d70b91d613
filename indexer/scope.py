"""Scopes: path prefixes outside which nothing exists — a hard boundary, enforced by the store.

For a scoped request, the local store's connection gets TEMP views (`Catalog.scoped`) named like the catalog's tables
(`documents`, `sections`, `chunks`, `passages`, `entities`, `links`) that hold only the rows under
the prefixes. SQLite resolves an unqualified table name to the temp schema first, so every query
of the engine — search, read, outline, list, status, filters' valid options, history, latest —
sees the scoped corpus without knowing about scopes. The few in-memory caches are global (built
from `main.` tables) and filtered through `Engine.visible_*` helpers.
"""

from __future__ import annotations

from .errors import UserError


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
