"""Search filters: validated against the live index, turned into one SQL condition.

An invalid value is a structured error naming the parameter and its valid options — never a
silent empty result. Filters combine with AND.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field

from .errors import UserError


@dataclass
class Filters:
    types: list[str] = field(default_factory=list)
    path: str | None = None          # a path prefix, relative to the corpus
    tags: list[str] = field(default_factory=list)   # all of them
    since: str | None = None         # YYYY-MM-DD, on the section's date, inclusive
    until: str | None = None

    def active(self) -> bool:
        return bool(self.types or self.path or self.tags or self.since or self.until)

    def describe(self) -> str:
        parts = []
        if self.types:
            parts.append("type=" + ",".join(self.types))
        if self.path:
            parts.append(f"path={self.path}")
        if self.tags:
            parts.append("tags=" + ",".join(self.tags))
        if self.since:
            parts.append(f"since={self.since}")
        if self.until:
            parts.append(f"until={self.until}")
        return " ".join(parts)


def _date(param: str, value: str | None) -> str | None:
    if value is None or value == "":
        return None
    try:
        return dt.date.fromisoformat(str(value).strip()).isoformat()
    except ValueError:
        raise UserError(f"{param} must be a date like 2031-04-16, got {value!r}", param=param) from None


def validate(f: Filters, catalog, doc_types: tuple[str, ...]) -> Filters:
    types = [t.strip().lower() for t in f.types if t and t.strip()]
    for t in types:
        if t not in doc_types:
            raise UserError(f"unknown type {t!r}", param="type", options=list(doc_types))
    path = (f.path or "").strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    path = path or None
    if path is not None and (".." in path.split("/") or path.startswith("/")):
        raise UserError(f"path filter must be a prefix inside the corpus, got {f.path!r}", param="path")
    tags = sorted({t.strip().lstrip("#").lower() for t in f.tags if t and t.strip()})
    if tags:
        known = _known_tags(catalog)
        unknown = [t for t in tags if t not in known]
        if unknown:
            raise UserError(f"tag {unknown[0]!r} occurs in no document", param="tags", options=sorted(known)[:50])
    since, until = _date("since", f.since), _date("until", f.until)
    if since and until and since > until:
        raise UserError(f"since ({since}) is after until ({until})", param="since")
    return Filters(types, path, tags, since, until)


def _known_tags(catalog) -> set[str]:
    out: set[str] = set()
    for (raw,) in catalog.db.execute("SELECT DISTINCT tags FROM documents"):
        out.update(json.loads(raw))
    return out


def sql(f: Filters) -> tuple[str, list]:
    """A WHERE clause over sections `s` joined to documents `d`."""
    where, params = [], []
    if f.types:
        where.append(f"d.doc_type IN ({','.join('?' * len(f.types))})")
        params += f.types
    if f.path:
        where.append("(d.path = ? OR d.path LIKE ? ESCAPE '\\')")
        esc = f.path.rstrip("/").replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        params += [f.path.rstrip("/"), esc + ("/%" if f.path.endswith("/") else "%")]
    for t in f.tags:
        where.append("EXISTS (SELECT 1 FROM json_each(d.tags) WHERE value = ?)")
        params.append(t)
    if f.since:
        where.append("s.date >= ?")
        params.append(f.since)
    if f.until:
        where.append("s.date <= ?")
        params.append(f.until)
    return " AND ".join(where) or "1", params
