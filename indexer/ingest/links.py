"""Links between documents: `[[wikilinks]]` and relative Markdown links, parsed at index time.

Parsing is pure (text → links with their line numbers); resolution maps a link's target text to
an indexed document path by, in order: exact path (with or without `.md`, relative to the
linking file's root), file stem, document title, then the name or alias of a host/service
record — all case-insensitive. The catalog keeps every link with its resolved path (or NULL);
backlinks are a query on that column, and links are re-resolved whenever the set of documents
or their titles changes, so a renamed or deleted target updates its backlinks on the next
refresh without re-reading the linking files.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

MARKDOWN_SUFFIXES = (".md", ".markdown")

# [[target]], [[target|alias]], [[target#heading]], [[target#heading|alias]], ![[embed]]
_WIKI_RE = re.compile(r"(!?)\[\[([^\[\]\n|]+?)(?:\|([^\[\]\n]*))?\]\]")
# [text](dest "title") — dest without spaces, or <dest with spaces>; images (![..](..)) skipped.
_MD_RE = re.compile(r"(?<!!)\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\(\s*(<[^<>\n]+>|[^\s()<>]+(?:\([^\s()]*\)[^\s()<>]*)*)"
                    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)")
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BACKTICKS_RE = re.compile(r"`+")
# A list item that opens with a link: a pointer to the document it names, the rest of the item its
# hook (Claude Code's MEMORY.md: `- [Title](file.md) — what it holds`; an index page's list).
_POINTER_RE = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+(?=\[)")
_ITEM_RE = re.compile(r" {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+\S")
# Claude Code's CLAUDE.md imports a file with `@path` (`@README`, `@docs/git-instructions.md`): after
# a space, a bracket or at a line's start, outside code, and ending where a word would (a path cut by
# a redaction, `@docs/[REDACTED:github].md`, is none) — read in the files Claude Code reads it in.
# An import is a link; a list item holding one (`- git workflow @docs/git-instructions.md`) is a
# pointer, its other words the hook.
_IMPORT_RE = re.compile(r"(?<![^\s(\[])@(~?[\w./-]*[\w-])(?=$|[\s)\],;:!?]|\.(?:\s|$))")
IMPORTING_RE = re.compile(r"(?:^|/)CLAUDE(?:\.local)?\.md$", re.IGNORECASE)
INDEX_MIN_POINTERS = 2   # an index lists at least this many documents …
INDEX_POINTER_SHARE = 0.5   # … and at least half of its items are such pointers


@dataclass(frozen=True)
class Link:
    target: str          # wikilink: the text as written; markdown: the normalised corpus path
    anchor: str | None   # the heading after '#', if any
    kind: str            # "wikilink" | "markdown" | "import" (a CLAUDE.md `@path`)
    line: int            # 1-based line in the file
    text: str = ""       # alias / link text


def _blank_code_spans(line: str) -> str:
    """Inline code spans (a run of n backticks up to the next run of exactly n) become spaces.
    A scan of the runs, not a backreference regex: `(`+)(?:(?!\1).)+?\1` is cubic on a run of
    backticks (2,000 of them did not finish in a minute)."""
    if "`" not in line:
        return line
    runs = [(m.start(), m.end()) for m in _BACKTICKS_RE.finditer(line)]
    by_length: dict[int, list[int]] = {}
    for i, (s, e) in enumerate(runs):
        by_length.setdefault(e - s, []).append(i)
    spans, i = [], 0
    while i < len(runs):
        s, e = runs[i]
        same = by_length[e - s]
        k = bisect.bisect_right(same, i)
        if k < len(same):
            j = same[k]
            spans.append((s, runs[j][1]))
            i = j + 1
        else:
            i += 1  # no closing run of this length: literal backticks
    if not spans:
        return line
    out, pos = [], 0
    for s, e in spans:
        out += [line[pos:s], " " * (e - s)]
        pos = e
    out.append(line[pos:])
    return "".join(out)


def parse_links(text: str, source_path: str) -> list[Link]:
    """Every link of a document, in order. Code (fenced blocks, inline code spans) is skipped;
    external URLs, pure in-page anchors and links to non-Markdown files are not document links."""
    out: list[Link] = []
    fence: str | None = None
    base = posixpath.dirname(source_path)
    importing = IMPORTING_RE.search(source_path) is not None
    for n, line in enumerate(text.split("\n"), 1):
        m = _FENCE_RE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip(" `~"):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        if "[" not in line and not (importing and "@" in line):
            continue
        plain = _blank_code_spans(line)
        if importing:
            out += _imports(plain, base, n)
        for w in _WIKI_RE.finditer(plain):
            raw, alias = w.group(2).strip(), (w.group(3) or "").strip()
            target, _, anchor = raw.partition("#")
            target = target.strip()
            if not target:
                continue  # [[#heading]]: a link inside the same page
            out.append(Link(target, anchor.strip() or None, "wikilink", n, alias))
        for md in _MD_RE.finditer(_WIKI_RE.sub(lambda x: " " * len(x.group(0)), plain)):
            dest = md.group(2).strip()
            if dest.startswith("<") and dest.endswith(">"):
                dest = dest[1:-1].strip()
            target = markdown_target(dest, base)
            if target is None:
                continue
            path, anchor = target
            out.append(Link(path, anchor, "markdown", n, md.group(1).strip()))
    return out


def _imports(plain: str, base: str, n: int) -> list[Link]:
    """The `@path` imports of one line (code spans blanked): a path in the corpus, a Markdown file
    or one named without its suffix (`@README`); a home path (`@~/…`) is outside every root."""
    out = []
    for m in _IMPORT_RE.finditer(plain):
        dest = m.group(1)
        if dest.startswith("~"):
            continue
        suffix = posixpath.splitext(dest)[1]
        target = markdown_target(dest if suffix else dest + ".md", base)
        if target is not None:
            out.append(Link(target[0] if suffix else _strip_suffix(target[0]), None, "import", n, ""))
    return out


def pointer(block: str, source_path: str) -> Link | None:
    """The link a list item opens with, when the item is a pointer: its words say what the linked
    document holds, so a question matching them is asking for that document. In a CLAUDE.md, an
    item holding one import points at it wherever the import stands."""
    if IMPORTING_RE.search(source_path) and _ITEM_RE.match(block):
        line = block.split("\n", 1)[0]
        found = [lk for lk in parse_links(line, source_path) if lk.kind == "import"]
        if len(found) == 1:
            return found[0]
    m = _POINTER_RE.match(block)
    if m is None:
        return None
    line = block.split("\n", 1)[0]
    kind = "wikilink" if line.startswith("[[", m.end()) else "markdown"
    return next((lk for lk in parse_links(line, source_path) if lk.kind == kind), None)


def is_index(text: str) -> bool:
    """Whether a document is an index — most of its list items point at a document, one group per
    heading or all in one list — rather than notes that open an item with a link in passing
    ("- [[pg1]] record: new § Backups")."""
    items = [line for line in text.split("\n") if _ITEM_RE.match(line)]
    pointers = sum(1 for line in items if pointer(line, "") is not None)
    return pointers >= INDEX_MIN_POINTERS and pointers >= INDEX_POINTER_SHARE * len(items)


def anchor_matches(title: str, anchor: str) -> bool:
    """Whether a link's `#anchor` names a section of this title: as written, or as its slug
    (`#before-you-start` for "Before you start")."""
    flat_title = " ".join(title.split()).casefold()
    flat_anchor = " ".join(anchor.split()).casefold()
    if flat_title == flat_anchor:
        return True
    return re.sub(r"[^\w ]", "", flat_title) == re.sub(r"[^\w ]", "", flat_anchor.replace("-", " "))


def markdown_target(dest: str, base_dir: str) -> tuple[str, str | None] | None:
    """A relative Markdown link destination → (corpus path, anchor), or None if it is not a
    link to a Markdown document (a URL, a mail address, an image, `#anchor` alone)."""
    if not dest or dest.startswith("#") or _SCHEME_RE.match(dest) or dest.startswith("//"):
        return None
    path, _, anchor = dest.partition("#")
    path = unquote(path.split("?", 1)[0])
    if not path.lower().endswith(MARKDOWN_SUFFIXES):
        return None
    if path.startswith("/"):
        joined = path.lstrip("/")
    else:
        joined = posixpath.join(base_dir, path) if base_dir else path
    norm = posixpath.normpath(joined)  # a path escaping the root keeps its "../" and never resolves
    return norm, (unquote(anchor).strip() or None)


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s.strip()).casefold()


def _strip_suffix(p: str) -> str:
    low = p.lower()
    for suf in MARKDOWN_SUFFIXES:
        if low.endswith(suf):
            return p[: -len(suf)]
    return p


class Resolver:
    """Maps link targets to indexed document paths.

    `documents` are (path, rel, root name, title) rows; `entities` are (name, record path,
    aliases). Several roots: a path is looked up under the linking file's root first."""

    def __init__(self, documents: list[tuple[str, str, str, str]],
                 entities: list[tuple[str, str, list[str]]] = (), multi_root: bool = False):
        self.multi = multi_root
        self.paths: dict[str, str] = {}                   # casefolded corpus path (and without suffix) → path
        self.stems: dict[str, list[str]] = {}
        self.titles: dict[str, list[str]] = {}
        self.names: dict[str, str] = {}
        self.root_of: dict[str, str] = {}
        for path, rel, root, title in documents:
            self.add_document(path, rel, root, title)
        for name, path, aliases in entities:
            self.add_entity(name, path, aliases)

    def add_document(self, path: str, rel: str, root: str, title: str) -> None:
        """One more document a link may name (an index run adds each batch as it writes it)."""
        self.root_of[path] = root
        for key in {path, _strip_suffix(path)}:
            self.paths.setdefault(key.casefold(), path)
        stem = _strip_suffix(rel.rsplit("/", 1)[-1])
        self.stems.setdefault(_norm(stem), []).append(path)
        if title:
            self.titles.setdefault(_norm(title), []).append(path)

    def add_entity(self, name: str, path: str, aliases) -> None:
        for n in [name, *aliases]:
            self.names.setdefault(_norm(str(n)), path)

    def resolve(self, link_target: str, kind: str, source_path: str) -> str | None:
        target = link_target.strip().replace("\\", "/")
        if not target:
            return None
        root = self.root_of.get(source_path)
        prefixes = [f"{root}/"] if (self.multi and root) else []
        prefixes.append("")
        for pre in prefixes:
            for cand in (pre + target, pre + target.lstrip("/")):
                hit = self.paths.get(cand.casefold()) or self.paths.get(_strip_suffix(cand).casefold())
                if hit:
                    return hit
        if kind in ("markdown", "import"):
            return None  # a relative path either exists or the link is broken
        key = _norm(_strip_suffix(target.rsplit("/", 1)[-1]) if "/" in target else _strip_suffix(target))
        for table in (self.stems, self.titles):
            found = table.get(key) or (table.get(_norm(target)) if table is self.titles else None)
            if found:
                return self._prefer(found, source_path, target)
        return self.names.get(_norm(target))

    def _prefer(self, paths: list[str], source_path: str, target: str) -> str:
        """Several documents share the stem or title: same root, then a path ending with what
        was written, then the shortest path."""
        if len(paths) == 1:
            return paths[0]
        root = self.root_of.get(source_path)
        tail = _strip_suffix(target).casefold()

        def key(p: str):
            return (self.root_of.get(p) != root, not _strip_suffix(p).casefold().endswith(tail),
                    p.count("/"), len(p), p)
        return min(paths, key=key)
