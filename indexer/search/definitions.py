"""A symbol asked of code: the section that defines it comes before the ones that use it.

A code corpus's sections are its definitions (indexer/ingest/code.py), each headed by its
breadcrumb (`Writer > refresh_paths`). A question naming a symbol — `refresh_paths`,
`ChangeQueue.wait_batch`, `what does one_per_section do` — finds its call sites too, and a call
site that repeats the name often can outscore the definition on keywords. The sections whose
breadcrumb ends with a named symbol are moved first, in their own order; the rest keep theirs.
"""

from __future__ import annotations

import re

from remembrancer.indexer import terms

_SYMBOL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.:]+[A-Za-z_][A-Za-z0-9_]*)*")


def named_symbols(query: str) -> list[tuple[str, ...]]:
    """The symbols a query names, each as the breadcrumb tail it would have (`A.b` → (A, b)): its
    identifier-shaped words (`refresh_paths`, `ChangeQueue.wait_batch`, `parseRetryAfter`), or its
    one word. A plain word of a question ("where is the text rendered") names no symbol: a
    function called `text` is not what it asks for."""
    found = list(_SYMBOL_RE.finditer(query))
    out = []
    for m in found:
        word = m.group(0)
        if len(found) > 1 and not (terms.is_identifier(word) or "_" in word):
            continue
        crumbs = tuple(p for p in re.split(r"[.:]+", word) if p)
        if crumbs and len(crumbs[-1]) >= 3:
            out.append(crumbs)
    return out


def defines(heading: str | None, symbol: tuple[str, ...]) -> bool:
    crumbs = (heading or "").split(" > ")
    return len(crumbs) >= len(symbol) and tuple(crumbs[-len(symbol):]) == symbol


def definitions_first(ranked: list, rows: dict, query: str) -> list:
    """`ranked` (candidates with a section_id; `rows` their section rows) with the sections that
    define a symbol the query names moved first."""
    symbols = named_symbols(query)
    if not symbols:
        return ranked
    first = [c for c in ranked if c.section_id in rows
             and any(defines(rows[c.section_id].heading, s) for s in symbols)]
    if not first:
        return ranked
    chosen = {id(c) for c in first}
    return first + [c for c in ranked if id(c) not in chosen]


def between_definitions(heading: str | None) -> bool:
    """A section of the code between definitions (a file's preamble, `lines a-b`)."""
    return not heading or heading.startswith("lines ")


def weigh_between(ranked: list, rows: dict, weight: float) -> list:
    """`ranked` with the scores of the code between definitions (imports, a module docstring)
    times `weight`, re-sorted: "where is X done" asks for the function that does it."""
    for c in ranked:
        if c.section_id in rows and between_definitions(rows[c.section_id].heading):
            c.score *= weight
    return sorted(ranked, key=lambda c: (-c.score, c.section_id))
