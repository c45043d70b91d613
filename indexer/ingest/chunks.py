"""Sections → chunks (what BM25 sees) → passages (what gets embedded).

A chunk is a section, or a part of an oversized one split at paragraph boundaries (never inside
a code fence); every part keeps its section's breadcrumb. Passages are the section's blocks —
paragraphs, list items, code blocks, table rows — each on its own (long ones cut into windows
the model sees whole: it truncates at 256 tokens), because a question usually matches one
block of a section. Every embedded text starts with a context header `[type] H1 > H2 > H3` so a
passage of a section called "Verify" still says whose it is. The first passage of every section
is that header alone: a heading names the topic in words a paraphrase shares ("Graceful Shutdown"
for "stop the server without dropping requests"); search weighs it below the text's passages.
HTML layout tags (a man page's `<dl>` of options) are dropped from passages: the model should
read "--dry-run: Don't actually write the manifest", not attribute soup. BM25 and the literal leg
keep the raw text (the tags' attributes carry identifiers such as option anchors).

Measured on the dev sets (dense leg alone, Top-1): one block per passage beat blocks merged to
~700 chars (mm-v1 61 vs 46 %, memory-dev 38 vs 29 %, mm-v2 53 vs 47 %), and a header without
the file path beat one with it (the path's tokens are noise to the model). docs/ranking.md.
"""

from __future__ import annotations

import hashlib
import html
import re
from dataclasses import dataclass

MAX_CHUNK_CHARS = 4000   # ≈1,000 tokens: one readable unit for an agent
MAX_PASSAGE_CHARS = 1000  # ≈250 tokens: a longer block is cut into windows

_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM_RE = re.compile(r"^ {0,3}([-*+]|\d{1,9}[.)])\s")
_TABLE_ROW_RE = re.compile(r"^\s*\|")
# HTML elements that Markdown files embed for layout (a man page's <dl> of options, <h3> anchors,
# <a>/<code>/<em> inline). Their tags are markup, not words: passages drop them before embedding.
# Only these names: a `<duration>` or `Option<T>` placeholder is text and stays.
_LAYOUT_TAGS = frozenset(
    "a abbr b blockquote br code dd del details div dl dt em h1 h2 h3 h4 h5 h6 hr i img ins kbd li ol p pre "
    "s section small span strong sub summary sup table tbody td th thead tr u ul var".split())
# Any tag-shaped run; its name is then looked up in _LAYOUT_TAGS (an alternation of 45 names under
# IGNORECASE cost ~2 µs per character of a long line of `<`).
_HTML_TAG_RE = re.compile(r"</?([A-Za-z][A-Za-z0-9]*+)(?:\s[^<>]*)?/?>")


@dataclass(frozen=True)
class Chunk:
    part: int          # 1-based
    nparts: int
    start_line: int
    end_line: int
    text: str


def context_header(doc_type: str, title: str, heading: str) -> str:
    """`[type] H1 > H2` — the breadcrumb names whose section it is; `title` stands in for a preamble."""
    return f"[{doc_type}] {heading or title}"


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (≈4 chars a token) for budgets and outlines."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def whole_lines(cut: str) -> str:
    """A cut of a text ending at its last whole line (unless that would drop most of it): what an
    answer carries of a section too long for it."""
    end = cut.rfind("\n") + 1
    return cut[:end] if end > len(cut) // 2 else cut


def _blocks(lines: list[str]) -> list[tuple[int, int]]:
    """Split lines into blocks [start, end) at blank lines outside fences; fences stay whole."""
    blocks: list[tuple[int, int]] = []
    start = None
    fence: str | None = None
    for i, line in enumerate(lines):
        m = _FENCE_RE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
                fence = None
            continue
        if m:
            fence = m.group(1)
            if start is None:
                start = i
            continue
        if not line.strip():
            if start is not None:
                blocks.append((start, i))
                start = None
        elif start is None:
            start = i
    if start is not None:
        blocks.append((start, len(lines)))
    return blocks


def split_section(text: str, start_line: int, max_chars: int = MAX_CHUNK_CHARS) -> list[Chunk]:
    """Split a section's text into parts of at most `max_chars`, at block boundaries when possible.

    Joining the parts' texts with "\\n" gives back the section text verbatim (a single huge line
    is cut inside the line; its parts then share the line number).
    """
    body = text.rstrip("\n")   # trailing LFs are not more lines: they end the last part
    if len(body) < len(text):    # (a loop, not recursion: a section may end in thousands of them)
        parts = split_section(body, start_line, max_chars)
        last = parts[-1]
        tail = text[len(body):]
        return parts[:-1] + [Chunk(last.part, last.nparts, last.start_line, last.end_line, last.text + tail)]
    lines = text.split("\n")
    if len(text) <= max_chars:
        return [Chunk(1, 1, start_line, start_line + len(lines) - 1, text)]
    pieces: list[tuple[int, str]] = []  # (line offset, text) of atomic units in order
    cursor = 0
    for b_start, b_end in _blocks(lines) + [(len(lines), len(lines))]:
        for i in range(cursor, b_start):   # blank lines between blocks
            pieces.append((i, lines[i]))
        if b_start < b_end:
            block = "\n".join(lines[b_start:b_end])
            if len(block) <= max_chars:
                pieces.append((b_start, block))
            else:
                for i in range(b_start, b_end):
                    pieces.extend((i, seg) for seg in _cut_line(lines[i], max_chars))
        cursor = b_end
    return _pack(pieces, start_line, max_chars)


def _cut_line(line: str, max_chars: int) -> list[str]:
    if len(line) <= max_chars:
        return [line]
    out = []
    start = 0  # offsets, not `line = line[cut:]`: re-copying the rest per cut is quadratic on a long line
    while len(line) - start > max_chars:
        cut = line.rfind(" ", start + max_chars // 2, start + max_chars)
        cut = cut + 1 if cut > start else start + max_chars
        out.append(line[start:cut])
        start = cut
    out.append(line[start:])
    return out


def _pack(pieces: list[tuple[int, str]], start_line: int, max_chars: int) -> list[Chunk]:
    groups: list[list[tuple[int, str]]] = [[]]
    size = 0
    for off, piece in pieces:
        if groups[-1] and size + len(piece) + 1 > max_chars:
            groups.append([])
            size = 0
        groups[-1].append((off, piece))
        size += len(piece) + 1
    chunks = []
    for n, g in enumerate(groups, 1):
        # A piece cut out of one line joins its neighbours without a newline.
        text = ""
        prev_off = None
        for off, piece in g:
            if prev_off is None:
                text = piece
            else:
                text += ("" if off == prev_off else "\n") + piece
            prev_off = off
        first, last = g[0][0], g[-1][0] + g[-1][1].count("\n")
        chunks.append(Chunk(n, len(groups), start_line + first, start_line + last, text))
    return chunks


def passage_rows(embedded: list[str], texts: dict[str, str]) -> list[tuple[str, str]]:
    """(sha, text) of each embedded text, in order — a section's passages; each text is kept in
    `texts` (the document's, by sha: one vector per distinct text)."""
    rows = []
    for text in embedded:
        sha = text_sha(text)
        texts[sha] = text
        rows.append((sha, text))
    return rows


def embedded_texts(header: str, body: str) -> list[str]:
    """What a section embeds: its context header alone, then each block under the header."""
    return [header] + [f"{header}\n{p}" for p in passages(body)]


def plain_embedded_texts(header: str, body: str) -> list[str]:
    """What a plain-text part embeds (markdown.parse_plain): its header, then fixed windows of the
    body — bounded by the text's size, whatever its shape (no per-paragraph or per-item passages)."""
    return [header] + [f"{header}\n{w}" for w in _windows(body) if w.strip()]


def passages(body: str) -> list[str]:
    """The blocks of a section body: paragraphs, code blocks, and each list item and table row
    on its own, so one item can carry the match."""
    lines = body.split("\n")
    units: list[str] = []
    for b_start, b_end in _blocks(lines):
        block_lines = lines[b_start:b_end]
        if _FENCE_RE.match(block_lines[0]):
            units.extend(_windows("\n".join(block_lines)))
            continue
        units.extend(readable(u) for u in _split_items(block_lines))
    return [u for u in units if u.strip()]


def readable(text: str) -> str:
    """Text without HTML layout tags and with entities decoded (`&lt;` → `<`), as a reader sees it."""
    if "<" not in text and "&" not in text:
        return text
    return html.unescape(_HTML_TAG_RE.sub(lambda m: "" if m.group(1).lower() in _LAYOUT_TAGS else m.group(0), text))


_TABLE_SEP_RE = re.compile(r"^\s*+\|?\s*+:?-{2,}")  # possessive: two adjacent \s* backtrack quadratically


def _split_items(block_lines: list[str]) -> list[str]:
    if len(block_lines) >= 3 and _TABLE_ROW_RE.match(block_lines[0]) and _TABLE_SEP_RE.match(block_lines[1]):
        # A table row means little without its column names: each row carries the header row.
        header = block_lines[0]
        return [w for row in block_lines[2:] if row.strip() for w in _windows(f"{header}\n{row}")]
    items: list[list[str]] = []
    for line in block_lines:
        starts_item = bool(_LIST_ITEM_RE.match(line)) or bool(_TABLE_ROW_RE.match(line))
        if starts_item or not items:
            items.append([line])
        else:
            items[-1].append(line)
    out: list[str] = []
    for item in items:
        out.extend(_windows("\n".join(item)))
    return out


def _windows(text: str) -> list[str]:
    if len(text) <= MAX_PASSAGE_CHARS:
        return [text]
    out, cur = [], ""
    for line in text.split("\n"):
        for seg in _cut_line(line, MAX_PASSAGE_CHARS):
            if cur and len(cur) + len(seg) + 1 > MAX_PASSAGE_CHARS:
                out.append(cur)
                cur = seg
            else:
                cur = f"{cur}\n{seg}" if cur else seg
    if cur:
        out.append(cur)
    return out
