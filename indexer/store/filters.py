"""Search filters: validated against the live index; the store turns them into its own query.

An invalid value is a structured error naming the parameter and its valid options — never a
silent empty result. Filters combine with AND.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from remembrancer.indexer.errors import UserError, echo
from remembrancer.indexer.terms import indexed_prefix


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
        raise UserError(f"{param} must be a date like 2031-04-16, got {echo(repr(value))}", param=param) from None


def validate(f: Filters, catalog, doc_types: tuple[str, ...]) -> Filters:
    types = [t.strip().lower() for t in f.types if t and t.strip()]
    for t in types:
        if t not in doc_types:
            raise UserError(f"unknown type {echo(repr(t))}", param="type", options=list(doc_types))
    path = (f.path or "").strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    path = path or None
    if path is not None and (".." in path.split("/") or path.startswith("/")):
        raise UserError(f"path filter must be a prefix inside the corpus, got {echo(repr(f.path))}", param="path")
    if path is not None and not path.isascii():   # typed in another Unicode spelling than the files have
        path = indexed_prefix(path, catalog.document_paths()) or path
    tags = sorted({t.strip().lstrip("#").lower() for t in f.tags if t and t.strip()})
    if tags:
        known = catalog.known_tags()
        unknown = [t for t in tags if t not in known]
        if unknown:
            raise UserError(f"tag {echo(repr(unknown[0]))} occurs in no document", param="tags", options=sorted(known)[:50])
    since, until = _date("since", f.since), _date("until", f.until)
    if since and until and since > until:
        raise UserError(f"since ({since}) is after until ({until})", param="since")
    return Filters(types, path, tags, since, until)


def atoms(f: Filters) -> list[tuple[str, str, Filters]]:
    """Each active filter on its own: (param, "name=value", the filters without it). Types are one
    filter (any of them); every tag is its own (all of them)."""
    out = []
    if f.types:
        out.append(("type", "type=" + ",".join(f.types), Filters([], f.path, f.tags, f.since, f.until)))
    if f.path:
        out.append(("path", f"path={f.path}", Filters(f.types, None, f.tags, f.since, f.until)))
    for t in f.tags:
        out.append(("tags", f"tags={t}", Filters(f.types, f.path, [x for x in f.tags if x != t], f.since, f.until)))
    if f.since:
        out.append(("since", f"since={f.since}", Filters(f.types, f.path, f.tags, None, f.until)))
    if f.until:
        out.append(("until", f"until={f.until}", Filters(f.types, f.path, f.tags, f.since, None)))
    return out


def only(f: Filters, param: str, label: str) -> Filters:
    """The one filter `label` of `f`, alone."""
    if param == "type":
        return Filters(types=f.types)
    if param == "path":
        return Filters(path=f.path)
    if param == "tags":
        return Filters(tags=[label.split("=", 1)[1]])
    return Filters(since=f.since) if param == "since" else Filters(until=f.until)


def emptied_by(f: Filters, count) -> tuple[list[dict], str]:
    """Which filter emptied a filtered result: each one dropped in turn (`count(filters)` gives the
    number of sections matching). Returns (rows, a sentence for the message)."""
    rows = []
    for param, label, rest in atoms(f):
        rows.append({"param": param, "filter": label, "matches_without_it": count(rest) if rest.active() else None,
                     "matches_alone": count(only(f, param, label))})
    if len(rows) == 1:
        r = rows[0]
        return rows, f"{r['filter']} matches no section"
    culprits = [r for r in rows if r["matches_alone"] == 0]
    if culprits:
        return rows, "; ".join(f"{r['filter']} matches no section on its own" for r in culprits)
    freeing = sorted((r for r in rows if r["matches_without_it"]), key=lambda r: -r["matches_without_it"])
    if freeing:
        return rows, "; ".join(f"without {r['filter']}: {r['matches_without_it']} sections" for r in freeing)
    return rows, ("no single filter empties it — they exclude each other together; alone: "
                  + ", ".join(f"{r['filter']} {r['matches_alone']}" for r in rows))
