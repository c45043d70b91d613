"""What both dialects compute the same way, so the team store answers as the local one does:
the filters' WHERE clause, the stored string lists, a section row as search reads it, which strings
the literal index can look up, the keyword leg's field boosts and the vector leg's search widths."""

from __future__ import annotations

import json
from functools import lru_cache

from remembrancer.indexer.store.base import SectionRow
from remembrancer.indexer.store.filters import Filters

# The keyword leg (tantivy locally, SQL over stored postings in the team store).
HEADING_BOOST = 1.0   # heading ×1 beat ×2 on the dev sets (docs/ranking.md); the heading also sits in the body
STEM_BOOST = 0.6      # stemmed words find paraphrases; exact words rank first
IDENT_BOOST = 0.5     # a whole-identifier match is strong evidence

# The vector leg (hnswlib locally, pgvector in the team store).
EF_SEARCH = 128
EXACT_BELOW = 20_000   # a filtered set smaller than this is searched exactly

LITERAL_MIN = 3   # trigrams: a shorter string cannot be looked up (callers scan instead)


def literal_indexable(needle: str) -> bool:
    """Whether the literal index can look `needle` up: long enough for a trigram, and no NUL (an
    FTS5 query string ends at one: "unterminated string"); otherwise the caller scans."""
    return len(needle) >= LITERAL_MIN and "\x00" not in needle


@lru_cache(maxsize=4096)
def _parsed_strings(raw: str) -> tuple[str, ...]:
    return tuple(json.loads(raw))


def string_list(raw: str) -> list[str]:
    """A stored JSON list of strings (tags, entity mentions), each row its own list: the same few
    values repeat across sections, and a search reads ~500 rows, two lists each (a fifth of it)."""
    return list(_parsed_strings(raw))


def filter_where(f: Filters, mark: str = "?", any_of=None, has_tag=None, true: str = "1") -> tuple[str, list]:
    """Validated filters (indexer/store/filters.py) as a WHERE clause over sections `s` joined to
    documents `d`. One builder for both stores: SQLite's by default; PostgreSQL passes its
    placeholder, list test, tag test and literal true (indexer/store/postgres/store.py)."""
    any_of = any_of or (lambda col, values: (f"{col} IN ({','.join(mark * len(values))})", list(values)))
    has_tag = has_tag or (lambda: f"EXISTS (SELECT 1 FROM json_each(d.tags) WHERE value = {mark})")
    where, params = [], []
    if f.types:
        clause, values = any_of("d.doc_type", f.types)
        where.append(clause)
        params += values
    if f.path:
        where.append(f"(d.path = {mark} OR d.path LIKE {mark} ESCAPE '\\')")
        esc = f.path.rstrip("/").replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        params += [f.path.rstrip("/"), esc + ("/%" if f.path.endswith("/") else "%")]
    for tag in f.tags:
        where.append(has_tag())
        params.append(tag)
    if f.since:
        where.append(f"s.date >= {mark}")
        params.append(f.since)
    if f.until:
        where.append(f"s.date <= {mark}")
        params.append(f.until)
    return " AND ".join(where) or true, params


def section_row(r) -> SectionRow:
    """A row of either store's section query (id, doc_id, path, heading, title, level, start and end
    line, date, stale, doc type, document stale, tags, entities, content, body) as a SectionRow."""
    return SectionRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], bool(r[9]), r[10], bool(r[11]),
                      string_list(r[12]), string_list(r[13]), r[14], r[15])   # each list parsed once a value
