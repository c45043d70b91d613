"""What a request limited to some path prefixes may see, defined once for both stores.

A scope is served by TEMP views named like the tables they shadow, each keeping only the rows of
visible documents (indexer/store/scope.py says why). The definition — which rows, how a path is
"under" a prefix, how a symlinked file is judged by its target, and that a scope's links carry no
resolution (the writer's resolutions may name outside files: a scope resolves its links itself,
ReadView.links_in_scope) — is written here once; each store gives its dialect: the schema its
tables live in, how it compares paths bytewise, its symlink table, how it spells a NULL text."""

from __future__ import annotations

from dataclasses import dataclass

SCOPED_TABLES = ("documents", "sections", "chunks", "passages", "entities", "links")
SYMLINKS = "scope_symlinks"   # corpus path of a symlinked file → corpus path of its target
LINK_COLUMNS = "l.id, l.doc_id, l.target, l.anchor, l.kind, l.line, l.text"


@dataclass(frozen=True)
class ViewDialect:
    schema: str                 # where the tables live: SQLite's "main", PostgreSQL's "public"
    collate: str = ""           # byte order for path comparisons (SQLite's default is binary already)
    null_text: str = "NULL"     # a NULL of the text type
    symlinks: bool = True       # whether the symlink table exists on this connection


def quote(s: str) -> str:
    """A string constant: standard SQL, quotes doubled (scope.normalize refuses control characters
    and turns backslashes into slashes, so nothing else needs escaping in either store)."""
    return "'" + s.replace("'", "''") + "'"


def under(prefixes: tuple[str, ...], col: str, d: ViewDialect) -> str:
    """`col` under a (normalised) prefix, on whole segments and case-sensitively: equal, or in the
    byte range ['p/', 'p0') — exactly the strings starting with 'p/' ('0' follows '/'), served by
    the path index (LIKE is case-insensitive and reads '_' and '%' as wildcards)."""
    c = col + d.collate
    parts = [f"({c} = {quote(p)} OR ({c} >= {quote(p + '/')} AND {c} < {quote(p + '0')}))" for p in prefixes]
    return "(" + " OR ".join(parts) + ")"


def statements(prefixes: tuple[str, ...], d: ViewDialect) -> list[str]:
    """The CREATE TEMP VIEW statements of a scope. Each view keeps a row whose document is visible,
    checked per row through the primary key (a correlated EXISTS): a lookup by id stays a lookup,
    where an `IN (subquery)` listed the whole scope again for every statement (a scoped search cost
    ~10× the unscoped one)."""
    s = d.schema
    visible = under(prefixes, "d.path", d)
    if d.symlinks:   # a symlinked file is visible only if its target is too
        visible += (f" AND NOT EXISTS (SELECT 1 FROM {s}.{SYMLINKS} t WHERE t.path = d.path"
                    f" AND NOT {under(prefixes, 't.target', d)})")

    def doc_visible(doc_id: str) -> str:
        return f"EXISTS (SELECT 1 FROM {s}.documents d WHERE d.id = {doc_id} AND {visible})"

    def section_visible(section_id: str) -> str:
        return (f"EXISTS (SELECT 1 FROM {s}.sections s2 JOIN {s}.documents d ON d.id = s2.doc_id"
                f" WHERE s2.id = {section_id} AND {visible})")
    return [
        f"CREATE TEMP VIEW documents AS SELECT d.* FROM {s}.documents d WHERE {visible}",
        f"CREATE TEMP VIEW sections AS SELECT s.* FROM {s}.sections s WHERE {doc_visible('s.doc_id')}",
        f"CREATE TEMP VIEW chunks AS SELECT c.* FROM {s}.chunks c WHERE {section_visible('c.section_id')}",
        f"CREATE TEMP VIEW passages AS SELECT p.* FROM {s}.passages p WHERE {section_visible('p.section_id')}",
        f"CREATE TEMP VIEW entities AS SELECT e.* FROM {s}.entities e WHERE {doc_visible('e.doc_id')}",
        f"CREATE TEMP VIEW links AS SELECT {LINK_COLUMNS}, {d.null_text} AS resolved FROM {s}.links l"
        f" WHERE {doc_visible('l.doc_id')}",
    ]
