"""Words and identifiers, the same way at index time and at query time.

Stemmed full-text fields split `snake_case`, `dotted.names` and `--flags` into plain words and
never split `camelCase`; an identifier question (`--no-track`, `HTTPRequest`, `max_connections`)
is won by matching the identifier whole. So identifiers get a second field holding each one
whole (lower-cased) plus its camelCase/snake_case/dot/dash parts.
"""

from __future__ import annotations

import re

_TOKEN_RE = re.compile(r"-{0,2}[A-Za-z0-9_][A-Za-z0-9_.\-/:@]*[A-Za-z0-9_]|[A-Za-z0-9_]")
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
WORD_RE = re.compile(r"\w+", re.UNICODE)

# Words too common to say anything about which section answers (used by coverage measures,
# never to drop words from the BM25 query, where IDF already handles them).
STOPWORDS = frozenset("""
a an and are as at be been being but by can could did do does doing done for from had has have
how i if in into is it its me my no not of on or our should so that the their them then there these
they this those to up us was we were what when where which who why will with would you your
about after again all also am any because before between both each few get got just more most
much only other out over own same some such than too under until very via vs let s t don want
know tell find show see use used using make made way need
""".split())


def is_identifier(token: str) -> bool:
    """Identifier-shaped: inner punctuation (`a_b`, `a.b`, `--x`, `a/b`), camelCase, or letters+digits."""
    core = token.strip("-")
    if any(c in core for c in "_./:@") or token.startswith("-") or "-" in core:
        return True
    if re.search(r"[a-z][A-Z]", core) or (re.search(r"[A-Z]{2,}", core) and len(core) > 3):
        return True
    return bool(re.search(r"[A-Za-z]", core) and re.search(r"\d", core))


def identifier_terms(text: str) -> list[str]:
    """Each identifier-shaped token whole, lower-cased, plus its parts (for the `ident` field)."""
    out: list[str] = []
    for m in _TOKEN_RE.finditer(text):
        tok = m.group(0)
        if not is_identifier(tok):
            continue
        out.append(tok.lower())
        parts = [p.lower() for p in _CAMEL_RE.findall(tok)]
        if len(parts) > 1:
            out.extend(parts)
    return out


def words(text: str) -> list[str]:
    """Lower-cased plain words, safe to hand to a query parser (no operators, no syntax)."""
    return [w.lower() for w in WORD_RE.findall(text)]


def content_words(text: str) -> list[str]:
    """The words that carry a question's meaning: not stop words, not single characters."""
    return [w for w in words(text) if w not in STOPWORDS and len(w) > 1]
