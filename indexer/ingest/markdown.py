"""Markdown → front matter + sections with breadcrumbs, robust to broken documents.

markdown-it-py decides what a heading is (not inside fences, blockquotes or list items;
ATX and setext) and PyYAML reads front matter. What is written here is only what the
libraries do not do:

* front matter detection that tells YAML apart from a leading ``---`` rule followed by prose;
* fence repair, so that one unclosed code fence does not swallow the rest of a document;
* breadcrumbs ("H1 > H2 > H3") with unique " [n]" suffixes;
* plain titles from heading inline tokens, and a searchable body per section.

Line numbers are always those of the normalised input (1-based), whatever repair did.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

PREAMBLE_HEADING = ""  # breadcrumb of text before the first heading
UNTITLED_HEADING = "(untitled)"  # title of a heading with no text, so breadcrumbs stay readable
BREADCRUMB_SEPARATOR = " > "


@dataclass(frozen=True)
class Section:
    heading: str  # breadcrumb "H1 > H2 > H3"; "" for the preamble; collisions get " [2]", " [3]"
    title: str  # the section's own title (inline markup stripped)
    level: int  # 0 for the preamble, 1..6
    start_line: int  # 1-based, first line of the section (its heading line)
    end_line: int  # 1-based inclusive; last line before the next heading (of any level)
    text: str  # the section's own lines verbatim, each ending in LF; children excluded
    body: str  # text minus the heading line(s), HTML comments removed, stripped


@dataclass
class ParsedDocument:
    front_matter: dict  # {} when absent or invalid
    title: str  # first H1 title, else front matter `title`, else ""
    sections: list[Section]
    warnings: list[str]  # human-readable, each starting with the file path
    body_start_line: int  # first line after front matter (1 if none)
    lines: list[str]  # the normalised document lines (LF, BOM removed)


def parse_markdown(text: str, path: str = "<text>") -> ParsedDocument:
    """Parse one Markdown document into front matter and sections; never raises on a str.

    Line model: CRLF and lone CR become LF, a leading BOM is dropped, and ``lines`` is the
    text split on LF (a final LF does not start an extra empty line).

    Tiling guarantee, for ANY input: the sections are in document order and their
    [start_line, end_line] ranges are contiguous and non-overlapping, covering exactly
    [body_start_line, len(lines)] — with two exceptions, both about whitespace (str.isspace):

    * a preamble (text before the first heading) that is only whitespace is dropped, so the
      first section starts at the first heading and the tiling covers [that line, len(lines)];
    * a body that is only whitespace (or empty) has no sections at all.
    """
    lines = _split_lines(text)
    warnings: list[str] = []
    front_matter, body_start = _read_front_matter(lines, path, warnings)
    body = lines[body_start - 1 :]
    parsed = _parse_body(body, path, body_start, warnings)
    headings = list(_headings(parsed, body_start))
    code_lines = _code_line_mask(parsed, body_start, len(lines))
    sections = _build_sections(lines, body_start, headings, code_lines)
    return ParsedDocument(
        front_matter=front_matter,
        title=_document_title(headings, front_matter),
        sections=sections,
        warnings=warnings,
        body_start_line=body_start,
        lines=lines,
    )


PLAIN_PART_CHARS = 4000  # a plain-text part is cut at the first blank line past this size
PLAIN_PART_MARK = "indexed as plain text"  # in the document's warning: read it back the same way


def parse_plain(text: str, path: str = "<text>", part_chars: int = PLAIN_PART_CHARS) -> ParsedDocument:
    """The document as plain text in parts, without Markdown structure: the fallback for a large
    document whose Markdown parse went over its budget (indexer/ingest/sandbox.py).

    Linear in the text whatever its shape (a million headings or list items are just lines), so a
    file under the size cap is still searchable. Front matter is read as parse_markdown reads it;
    each part is cut at the first blank line past `part_chars` (or at twice that on a line
    boundary), is titled by its line range, and the parts tile the body exactly like sections do.
    """
    lines = _split_lines(text)
    warnings: list[str] = []
    front_matter, body_start = _read_front_matter(lines, path, warnings)
    cuts: list[tuple[int, int]] = []  # 1-based inclusive line ranges
    start, size, has_text = body_start, 0, False
    for number in range(body_start, len(lines) + 1):
        line = lines[number - 1]
        size += len(line) + 1
        blank = not line or line.isspace()
        has_text = has_text or not blank
        if has_text and ((size >= part_chars and blank) or size >= 2 * part_chars):
            cuts.append((start, number))
            start, size, has_text = number + 1, 0, False
    if start <= len(lines):
        if has_text or not cuts:
            cuts.append((start, len(lines)))
        else:  # trailing whitespace joins the last part: the tiling stays whole
            cuts[-1] = (cuts[-1][0], len(lines))
    sections = []
    for first, last in cuts:
        part = "".join(line + "\n" for line in lines[first - 1:last])
        if not sections and part.isspace():
            continue  # a body of whitespace only has no sections, as in parse_markdown
        title = f"Part {len(sections) + 1} (lines {first}-{last})"
        sections.append(Section(heading=title, title=title, level=1, start_line=first, end_line=last,
                                text=part, body=part.strip()))
    return ParsedDocument(front_matter=front_matter, title=_document_title([], front_matter),
                          sections=sections, warnings=warnings, body_start_line=body_start, lines=lines)


# --- lines ---------------------------------------------------------------------------------


def _split_lines(text: str) -> list[str]:
    """Normalise line endings and the BOM so that line numbers mean the same everywhere."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # "a\n" is one line, "" is none
    return lines


def _is_blank(lines: Iterable[str]) -> bool:
    return all(not line or line.isspace() for line in lines)


# --- front matter ----------------------------------------------------------------------------

_FRONT_MATTER_OPEN = re.compile(r"---[ \t]*\Z")
_FRONT_MATTER_CLOSE = re.compile(r"(?:---|\.\.\.)[ \t]*\Z")
# A top-level YAML mapping key: quoted, or plain text up to a colon followed by a space/EOL.
# (\A: used with match(); anchored, a search could not rescan the line from every position either.
# The plain key ends on a non-blank, greedily: a lazy key before `[ \t]*:` rescanned a run of blanks
# from each of its positions, quadratic on a long one.)
_YAML_KEY_LINE = re.compile(r"""\A(?:"[^"]*"|'[^']*'|[^\s#'"?:\-](?:[^:]*[^: \t])?)[ \t]*:(?:[ \t]|\Z)""")
# Other lines a front-matter block may hold: indented, comment, list item.
_YAML_OTHER_LINE = re.compile(r"[ \t]|#|-(?:[ \t]|\Z)")
# One "Note: ..." line between two rules is an admonition rendered as a setext heading.
_ADMONITIONS = frozenset(
    {"note", "notes", "warning", "tip", "important", "caution", "info", "danger", "hint",
     "attention", "todo", "fixme", "nb", "tldr", "update", "edit", "disclaimer", "remember"}
)


# Front matter is a few lines of metadata; past this it is ignored (with a warning), so that no
# document can make the YAML parser, the catalog row or the JSON of every answer huge.
FRONT_MATTER_MAX_BYTES = 64 * 1024


ALIASES_REFUSED = "aliases (*name) are not allowed"


class _NoAliasLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases (``*name``, ``<<: *name``): alias expansion is what turns a
    300-byte "billion laughs" into gigabytes, and metadata never needs it. Anchors alone are
    harmless (nothing is copied)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, ALIASES_REFUSED, event.start_mark)
        return super().compose_node(parent, index)


def load_front_matter_yaml(text: str) -> Any:
    """YAML with bounded output: no aliases, so the result is never larger than the text."""
    return yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 (a SafeLoader subclass)


def _read_front_matter(lines: list[str], path: str, warnings: list[str]) -> tuple[dict, int]:
    """Return (front matter, body start line). Only a YAML mapping with string keys counts.

    A block that is not YAML-looking (prose, headings, a lone admonition) or that parses to
    something else is ordinary Markdown; a YAML-looking block that fails to parse, uses aliases
    or is over FRONT_MATTER_MAX_BYTES is skipped with a warning (the body is still indexed), so
    that it never turns into a setext heading.
    """
    if not lines:
        return {}, 1
    if not _FRONT_MATTER_OPEN.match(lines[0]):
        return _read_page_properties(lines, path, warnings)
    close, size = None, 0
    for i in range(1, len(lines)):
        if _FRONT_MATTER_CLOSE.match(lines[i]):
            close = i
            break
        size += len(lines[i]) + 1
    if close is None:
        return {}, 1  # unterminated: a thematic break
    block = lines[1:close]
    if not _looks_like_yaml(block) or _is_admonition(block):
        if _is_yaml_list_of_keys(block):
            warnings.append(f"{path}: front matter is a YAML list (- key: value), not a mapping (key: value); "
                            "indexed as body text — drop the leading dashes to make it metadata")
        return {}, 1
    if size > FRONT_MATTER_MAX_BYTES:
        warnings.append(f"{path}: front matter is over {FRONT_MATTER_MAX_BYTES // 1024} KB "
                        f"({size:,} characters); ignored")
        return {}, close + 2
    try:
        data = load_front_matter_yaml("\n".join(block))
    except Exception as exc:  # YAMLError, but also RecursionError on pathological nesting
        # an alias is refused, not misread: such a block is not read leniently either (its lines are text)
        data = {} if getattr(exc, "problem", None) == ALIASES_REFUSED else _lenient_front_matter(block, exc)
        if data:
            warnings.append(f"{path}: invalid YAML front matter{_yaml_error_detail(exc)}; read leniently, each "
                            "`key: value` line's value taken as the rest of the line (quote a value that holds "
                            "\": \" to make it YAML)")
        else:
            warnings.append(f"{path}: invalid YAML front matter{_yaml_error_detail(exc)}; not read as metadata "
                            "(its lines are indexed as text)")
        return data, close + 2
    if not isinstance(data, dict) or not all(isinstance(key, str) for key in data):
        return {}, 1  # e.g. "2024: review" between two rules is prose, not metadata
    return data, close + 2


# A front matter that is not YAML is read leniently (_lenient_front_matter): Claude Code writes
# `description: Rollback rule: use helm rollback` unquoted, which YAML refuses ("mapping values are
# not allowed here"), and would otherwise lose the note's name, description and type together.
REPAIR_MAX_BYTES = 8 * 1024   # a block this small is re-parsed after each repaired line
REPAIR_MAX_LINES = 10         # lines quoted before giving the block to the line-by-line reading
_KEY_END = re.compile(r":(?:[ \t]|\Z)")   # where a plain key ends: its first colon before a blank or the end
_BROKEN_STRUCTURE = tuple("[{&*!%@`")   # a value meant as YAML structure (or an alias): not text to take
_BLOCK_SCALAR = re.compile(r"[|>][-+]?\d?\Z")
LENIENT_SKIPPED_KEYS = frozenset({"secret"})   # redact.is_secret_document reads it from the lines, failing closed


def _lenient_front_matter(block: list[str], exc: Exception) -> dict:
    """A front matter YAML refused, read as well as it can be: first PyYAML again, with each line it
    points at (a top-level `key: value` whose plain value holds ": ") given its value quoted; else
    line by line, flat (`_flat_front_matter`). {} when neither finds a key. `secret` is never taken
    from a lenient reading: is_secret_document reads that key from the lines themselves."""
    data = _repaired_front_matter(block, exc)
    if data is None:
        data = _flat_front_matter(block)
    return {k: v for k, v in data.items() if k.lower() not in LENIENT_SKIPPED_KEYS}


def _repaired_front_matter(block: list[str], exc: Exception) -> dict | None:
    if len("\n".join(block)) > REPAIR_MAX_BYTES:
        return None
    block = list(block)
    for _ in range(REPAIR_MAX_LINES):
        mark = getattr(exc, "problem_mark", None)
        line = block[mark.line] if mark is not None and 0 <= mark.line < len(block) else ""
        written, value = _key_line(line) or ("", "")
        if not value or value.startswith(("'", '"', *_BROKEN_STRUCTURE)):
            return None   # not a plain value YAML misread: the line-by-line reading decides
        block[mark.line] = f"{written}: {json.dumps(value.replace(chr(0), chr(0xFFFD)), ensure_ascii=False)}"
        try:
            data = load_front_matter_yaml("\n".join(block))
        except Exception as again:  # noqa: BLE001 — the next line it points at, if any
            exc = again
            continue
        if isinstance(data, dict) and all(isinstance(key, str) for key in data):
            return data
        return None
    return None


def _flat_front_matter(block: list[str]) -> dict:
    """Flat top-level `key: value` lines, each value the rest of its line (a matching pair of quotes
    around it dropped); `- item` lines under a key without a value are its list, indented lines
    continue the value above them (a `|` or `>` block's lines too). A value written as broken YAML
    structure (`[a, b` unclosed, an alias) is left out: its line stays in the preamble's text."""
    data: dict[str, Any] = {}
    key: str | None = None
    for line in block:
        if not line.strip() or line.startswith("#"):
            continue
        found = _key_line(line)
        if found:
            key, value = _unquoted(found[0]), found[1].replace("\0", "\ufffd")
            if value.startswith(_BROKEN_STRUCTURE) and not _closed_flow_list(value):
                key = None
            elif _BLOCK_SCALAR.match(value) or not value:
                data[key] = None
            else:
                data[key] = _closed_flow_list(value) or _unquoted(value)
            continue
        item = line.strip()
        if key is None:
            continue
        if item.startswith("- ") and (data[key] is None or isinstance(data[key], list)):
            data[key] = [*(data[key] or []), _unquoted(item[2:].strip().replace("\0", "\ufffd"))]
        elif line[0] in " \t" and not isinstance(data[key], list):
            data[key] = f"{data[key]} {item}".strip() if data[key] else item.replace("\0", "\ufffd")
    return {k: v for k, v in data.items() if v not in (None, "", [])}


def _key_line(line: str) -> tuple[str, str] | None:
    """(key as written, value stripped) of a top-level `key: value` line (a plain or quoted key),
    else None. By str scans and one linear search: no pattern here can backtrack on a long line."""
    if not line or line[0] in " \t#?:-[]{}":
        return None
    if line[0] in "'\"":
        end = line.find(line[0], 1)
        rest = line[end + 1:].lstrip(" \t") if end > 0 else ""
        if not rest.startswith(":") or rest[1:2] not in ("", " ", "\t"):
            return None
        return line[:end + 1], rest[1:].strip()
    m = _KEY_END.search(line)
    if m is None:
        return None
    return line[:m.start()].rstrip(" \t"), line[m.end():].strip()


def _unquoted(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _closed_flow_list(value: str) -> list[str] | None:
    """`[a, "b c"]` → ["a", "b c"]: a one-line list of plain items (nested structure is not read)."""
    if not (value.startswith("[") and value.endswith("]")) or any(c in value[1:-1] for c in "[]{}"):
        return None
    return [_unquoted(item.strip()) for item in value[1:-1].split(",") if item.strip()]


# Logseq keeps a page's properties as its first lines, `key:: value` (and Obsidian's Dataview reads
# the same lines as a note's fields): the metadata YAML front matter holds, in another syntax.
# (\A, as _YAML_KEY_LINE: anchored, no scan can retry the key from every position of a long word;
# the value is stripped in Python: a lazy `(.*?)[ \t]*\Z` rescans a run of blanks from each of its
# positions, quadratic on a long one)
_PAGE_PROPERTY_LINE = re.compile(r"\A([A-Za-z][A-Za-z0-9_-]*)::(?:[ \t](.*))?\Z")
PAGE_PROPERTY_LISTS = frozenset({"alias", "aliases", "tags", "tag"})   # comma lists in Logseq
_WIKI_LINK = re.compile(r"\[\[([^\[\]]*)\]\]")


def _read_page_properties(lines: list[str], path: str, warnings: list[str]) -> tuple[dict, int]:
    """Return (front matter, body start line) for a page whose first lines are `key:: value`
    properties (to the first other line). Keys are read lowercased, as Logseq reads them; `alias::`
    and `tags::` are comma lists; a `[[link]]` is its page's name. A block over
    FRONT_MATTER_MAX_BYTES is ignored with a warning and indexed as text, as YAML's is."""
    data: dict[str, Any] = {}
    size = count = 0
    for line in lines:
        m = _PAGE_PROPERTY_LINE.match(line)
        if m is None:
            break
        size += len(line) + 1
        if size > FRONT_MATTER_MAX_BYTES:
            warnings.append(f"{path}: page properties (key:: value) are over {FRONT_MATTER_MAX_BYTES // 1024} KB; "
                            "indexed as text")
            return {}, 1
        count += 1
        key, raw = m.group(1).lower(), (m.group(2) or "").strip()
        if key in PAGE_PROPERTY_LISTS:
            data[key] = [*data.get(key, []), *_property_list(raw)]
        else:
            data[key] = _WIKI_LINK.sub(r"\1", raw).strip()
    return (data, count + 1) if count else ({}, 1)


def _property_list(raw: str) -> list[str]:
    """`a, [[b, c]], #d` → ["a", "b, c", "d"]: split at the commas outside links (a link's own
    commas set aside first, so the split is one pass over the line)."""
    kept = _WIKI_LINK.sub(lambda m: m.group(1).replace(",", "\0"), raw)
    items = (item.replace("\0", ",").strip().lstrip("#").strip() for item in kept.split(","))
    return [item for item in items if item]


def _looks_like_yaml(block: list[str]) -> bool:
    """A mapping starts with a key line; every other top-level line is a key, item or comment."""
    significant = [line for line in block if line.strip() and not line.startswith("#")]
    if not significant or not _YAML_KEY_LINE.match(significant[0]):
        return False
    return all(_YAML_KEY_LINE.match(line) or _YAML_OTHER_LINE.match(line) for line in significant)


def _is_yaml_list_of_keys(block: list[str]) -> bool:
    """Front matter written as a list of `- key: value` items: metadata meant, none read, so it is
    said. A plain bullet list between two rules (no item a mapping) is prose, and stays silent."""
    if not block or not block[0].startswith("- ") or len("\n".join(block)) > FRONT_MATTER_MAX_BYTES:
        return False
    try:
        data = load_front_matter_yaml("\n".join(block))
    except Exception:  # YAMLError, RecursionError: prose after all
        return False
    return isinstance(data, list) and any(isinstance(item, dict) for item in data)


def _is_admonition(block: list[str]) -> bool:
    significant = [line for line in block if line.strip() and not line.startswith("#")]
    if len(significant) != 1:
        return False
    key = significant[0].split(":", 1)[0].strip()
    return key[:1].isupper() and key.lower() in _ADMONITIONS


def _yaml_error_detail(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or type(exc).__name__
    if mark is None:
        return f" ({problem})"
    return f" at line {mark.line + 2} ({problem})"  # +1: 1-based, +1: the opening ---


# --- markdown-it and fence repair ------------------------------------------------------------

# markdown-it drops the rest of the text below this nesting depth; its default (20 levels,
# i.e. 10 nested list items) is too shallow, while ~1 stack frame a level bounds it above.
# Only block structure is needed from the full parse; heading titles get their inline parse
# alone (_title). The inline rules over every paragraph cost time and are quadratic on some text
# (markdown-it-py rescans from each unclosed `[`: 48 KB of "[a [a …" took 5 s).
_MD = MarkdownIt("commonmark", {"maxNesting": 256}).enable("table").disable(["inline", "text_join"])
_MD_SHALLOW = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])  # when the stack runs out
_MD_INLINE = MarkdownIt("commonmark")

_SAMPLE_LANGUAGES = frozenset({"", "md", "markdown", "gfm", "text", "txt", "plain", "plaintext"})
_HASH_COMMENT_LANGUAGES = frozenset(
    {"bash", "sh", "shell", "zsh", "fish", "ksh", "console", "shell-session", "shellsession",
     "terminal", "python", "py", "python3", "ipython", "pycon", "cython", "ruby", "rb", "perl",
     "pl", "r", "yaml", "yml", "toml", "ini", "conf", "cfg", "properties", "dotenv", "env",
     "make", "makefile", "cmake", "dockerfile", "docker", "containerfile", "nix", "elixir",
     "ex", "exs", "julia", "jl", "tcl", "powershell", "ps1", "pwsh", "awk", "coffee",
     "crystal", "cr", "nim", "gitignore", "hcl", "terraform", "tf", "graphql", "gql",
     "nginx", "apache", "raku", "starlark", "bzl", "gdscript", "sage", "sshconfig"}
)
_HEADING_LIKE = re.compile(r" {0,3}(#{1,6})(?:[ \t]|\Z)")
_FENCE_OPENER = re.compile(r" {0,3}(`{3,}|~{3,})(.*)\Z")

# Repairs re-parse the tail of the document; bound the total work to a few full parses.
_REPAIR_BUDGET_FACTOR = 8
_REPAIR_BUDGET_FLOOR = 100_000


@dataclass
class _Parsed:
    """Token stream of a (repaired) body, with the way back to original line numbers."""

    tokens: list[Token]
    virtual: list[int]  # sorted indexes of inserted closing-fence lines in the parsed text
    max_nesting: int = 0  # the parser's limit, to tell when it truncated

    def line(self, index: int, body_start: int) -> int:
        """1-based document line of a parsed-text line index (or of the line after it)."""
        return body_start + index - bisect.bisect_left(self.virtual, index)


@dataclass(frozen=True)
class _Fence:
    start: int  # index of the opening line
    end: int  # exclusive: after the closing line, or the end of the text when unclosed
    marker: str
    language: str
    closed: bool


def _parse_body(body: list[str], path: str, body_start: int, warnings: list[str]) -> _Parsed:
    """Parse the body, inserting a virtual closing fence wherever a fence is plausibly unclosed.

    CommonMark lets an unclosed fence run to the end of the file, so a forgotten ``` hides
    every later heading. Each repair closes the first suspicious fence just before a
    heading-looking line (see _cut_point) and re-parses only the text after it.
    """
    work = list(body)
    virtual: list[int] = []
    start = 0
    budget = _REPAIR_BUDGET_FACTOR * len(body) + _REPAIR_BUDGET_FLOOR
    tokens, max_nesting = _tokenize("\n".join(work))
    while True:
        fence, cut = _first_repair(tokens, work, start)
        if fence is None or cut is None:
            break
        budget -= len(work) - cut
        if budget < 0:
            warnings.append(f"{path}: too many unclosed code fences; stopped repairing them")
            break
        work.insert(cut, fence.marker)
        virtual.append(cut)
        parsed = _Parsed([], virtual)
        warnings.append(
            f"{path}: code fence opened at line {parsed.line(fence.start, body_start)} "
            f"looks unclosed; closed it before line {parsed.line(cut + 1, body_start)}"
        )
        start = cut + 1
        tokens, max_nesting = _tokenize("\n".join(work[start:]))
    if virtual:
        tokens, max_nesting = _tokenize("\n".join(work))
    parsed = _Parsed(tokens, virtual, max_nesting)
    _warn_about_leftovers(parsed, work, path, body_start, warnings)
    return parsed


def _tokenize(text: str) -> tuple[list[Token], int]:
    """Block and inline tokens, and the nesting limit of the parser that produced them."""
    for md in (_MD, _MD_SHALLOW):
        try:
            return md.parse(text), md.options["maxNesting"]
        except RecursionError:  # deep nesting with an already deep caller stack
            continue
    return [], 0  # only when the caller left no stack at all


def _top_level_fences(tokens: list[Token], lines: list[str], offset: int) -> Iterator[_Fence]:
    """Only top-level fences can swallow the document: containers end a fence themselves."""
    for token in tokens:
        if token.type == "fence" and token.level == 0 and token.map:
            start, end = token.map[0] + offset, token.map[1] + offset
            closed = end - 1 > start and _closes(lines[end - 1], token.markup)
            yield _Fence(start, end, token.markup, _language(token.info), closed)


def _first_repair(
    tokens: list[Token], lines: list[str], offset: int
) -> tuple[_Fence | None, int | None]:
    for fence in _top_level_fences(tokens, lines, offset):
        cut = _cut_point(fence, lines)
        if cut is not None:
            return fence, cut
    return None, None


def _cut_point(fence: _Fence, lines: list[str]) -> int | None:
    """Where to close a suspicious fence, or None to trust it.

    A fence is suspicious when it runs to the end of the file, or when a code fence (not a
    Markdown/text sample, which may legitimately show fences) contains a line opening another
    fence with a language: its "closing" line was then meant for the inner fence. It is cut
    at its first plausible heading before that point, else right before the inner opener.
    """
    nested = None if fence.language in _SAMPLE_LANGUAGES else _nested_opener(fence, lines)
    if fence.closed and nested is None:
        return None
    stop = fence.end if nested is None else nested
    for index in range(fence.start + 1, stop):
        if _plausible_heading(lines[index], fence.language):
            return index
    return nested


def _nested_opener(fence: _Fence, lines: list[str]) -> int | None:
    content_end = fence.end - 1 if fence.closed else fence.end
    for index in range(fence.start + 1, content_end):
        match = _FENCE_OPENER.match(lines[index])
        if match and match.group(1)[0] == fence.marker[0] and _opens_with_language(match):
            return index
    return None


def _opens_with_language(match: re.Match[str]) -> bool:
    info = match.group(2).strip()
    return bool(info) and not (match.group(1)[0] == "`" and "`" in info)


def _plausible_heading(line: str, language: str) -> bool:
    """`# x` is a comment in shell, Python, YAML…, so only `##`+ ends such a fence."""
    match = _HEADING_LIKE.match(line)
    if not match:
        return False
    return len(match.group(1)) >= 2 or language not in _HASH_COMMENT_LANGUAGES


def _closes(line: str, marker: str) -> bool:
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3:
        return False
    run = len(stripped) - len(stripped.lstrip(marker[0]))
    return run >= len(marker) and not stripped[run:].strip(" \t")


def _language(info: str) -> str:
    words = info.split()
    return words[0].strip("{}.").lower() if words else ""


def _warn_about_leftovers(parsed: _Parsed, lines: list[str], path: str, body_start: int,
                          warnings: list[str]) -> None:
    """Say so when a fence still runs to the end, or when deep nesting truncated the parse."""
    fences = list(_top_level_fences(parsed.tokens, lines, 0))
    if fences and not fences[-1].closed:  # only the last fence can be left open
        line = parsed.line(fences[-1].start, body_start)
        warnings.append(f"{path}: code fence opened at line {line} is never closed")
    limit = parsed.max_nesting
    if any(token.nesting == 1 and token.level >= limit - 1 for token in parsed.tokens):
        warnings.append(f"{path}: blocks nested over {limit} levels deep; "
                        "text after them may not be split into sections")


# --- headings --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Heading:
    start: int  # 1-based first line
    last: int  # 1-based last heading line (the underline of a setext heading)
    level: int
    title: str  # "" when the heading has no text


def _headings(parsed: _Parsed, body_start: int) -> Iterator[_Heading]:
    """The document's headings: those at the top level, and a heading that opens a list item — an
    outliner's heading block (Logseq writes a page's "Steps" as `- ## Steps`, its lines the bullets
    under it): the section runs to the next heading, as any other does."""
    tokens = parsed.tokens
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.map and (
                token.level == 0 or (OUTLINE_HEADINGS and index and tokens[index - 1].type == "list_item_open")):
            inline = tokens[index + 1] if index + 1 < len(tokens) else None
            children = _title_tokens(inline.content) if inline is not None and inline.content else []
            yield _Heading(
                start=parsed.line(token.map[0], body_start),
                last=parsed.line(token.map[1], body_start) - 1,
                level=int(token.tag[1:]),
                title=" ".join(_plain_text(children).split()),
            )


def _title_tokens(content: str) -> list[Token]:
    parsed = _MD_INLINE.parseInline(content)
    return parsed[0].children or [] if parsed else []


_FORMATTING_TAGS = frozenset(
    {"a", "abbr", "b", "bdi", "bdo", "big", "cite", "code", "del", "dfn", "em", "font", "i",
     "img", "ins", "kbd", "mark", "q", "s", "samp", "small", "span", "strike", "strong",
     "sub", "sup", "tt", "u", "var", "wbr"}
)
_TAG_NAME = re.compile(r"</?([A-Za-z][A-Za-z0-9-]*)")


def _plain_text(children: list[Token]) -> str:
    """Heading text as a reader sees it: code and link text kept, emphasis and markup gone."""
    parts = []
    for token in children:
        if token.type in ("text", "text_special", "code_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif token.type == "image":
            parts.append(_plain_text(token.children or []))
        elif token.type == "html_inline":
            parts.append(_inline_html_text(token.content))
    return "".join(parts)


def _inline_html_text(html: str) -> str:
    """Drop comments and lower-case formatting tags; keep `Option<T>`, `Option<U>`, `<details>`."""
    if html.startswith("<!") or html.startswith("<?"):
        return ""
    match = _TAG_NAME.match(html)
    name = match.group(1) if match else ""  # case-sensitive: `<U>` is a type, `<u>` a tag
    if name == "br":
        return " "
    return "" if name in _FORMATTING_TAGS else html


class _Breadcrumbs:
    """Heading stack → breadcrumb; a breadcrumb already used gets the first free " [n]"."""

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []
        self._used: set[str] = set()
        self._next_suffix: dict[str, int] = {}

    def push(self, level: int, title: str) -> str:
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        parents = [crumb for _, crumb in self._stack]
        crumb = title
        path = BREADCRUMB_SEPARATOR.join([*parents, crumb])
        if path in self._used:
            n = self._next_suffix.get(path, 2)
            while BREADCRUMB_SEPARATOR.join([*parents, f"{title} [{n}]"]) in self._used:
                n += 1
            self._next_suffix[path] = n + 1
            crumb = f"{title} [{n}]"
            path = BREADCRUMB_SEPARATOR.join([*parents, crumb])
        self._used.add(path)
        self._stack.append((level, crumb))
        return path


def _document_title(headings: list[_Heading], front_matter: dict[str, Any]) -> str:
    for heading in headings:
        if heading.level == 1 and heading.title:
            return heading.title
    value = front_matter.get("title")
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return " ".join(str(value).split())
    return ""


# --- sections --------------------------------------------------------------------------------


def _code_line_mask(parsed: _Parsed, body_start: int, line_count: int) -> list[bool]:
    """Which document lines are code, where `<!--` is text rather than a comment."""
    mask = [False] * (line_count + 1)  # index = 1-based line number
    for token in parsed.tokens:
        if token.type in ("fence", "code_block") and token.map:
            first = parsed.line(token.map[0], body_start)
            after = parsed.line(token.map[1], body_start)
            for line in range(first, min(after, line_count + 1)):
                mask[line] = True
    return mask


def _build_sections(lines: list[str], body_start: int, headings: list[_Heading],
                    code_lines: list[bool]) -> list[Section]:
    sections = []
    first_heading = headings[0].start if headings else len(lines) + 1
    if not _is_blank(lines[body_start - 1 : first_heading - 1]):
        sections.append(_section(lines, PREAMBLE_HEADING, "", 0, body_start, body_start,
                                 first_heading - 1, code_lines))
    breadcrumbs = _Breadcrumbs()
    for index, heading in enumerate(headings):
        end = headings[index + 1].start - 1 if index + 1 < len(headings) else len(lines)
        title = heading.title or UNTITLED_HEADING
        path = breadcrumbs.push(heading.level, title)
        sections.append(_section(lines, path, title, heading.level, heading.start,
                                 heading.last + 1, end, code_lines))
    return sections


OUTLINE_HEADINGS = True   # a heading that opens a list item is a heading (off only to measure it)
FRONT_MATTER_PREAMBLE = True   # for measurement only: bench/eval_all.py --ingest FRONT_MATTER_PREAMBLE=False --fresh


def with_front_matter_preamble(doc: ParsedDocument) -> ParsedDocument:
    """The sections the index keeps and `read` resolves: what the front matter says (owners,
    aliases, a Claude Code memory file's `description`) belongs to the document's preamble, so the
    preamble (heading "") starts at line 1 and holds the front matter's lines — the keyword leg finds
    them, `read` shows them, and ingest/document.py embeds them with the header. The parse itself
    (parse_markdown) keeps CommonMark's sections, which tile the body after the front matter.
    A front matter block that could not be read at all (no key found in it, or over
    FRONT_MATTER_MAX_BYTES: `{}` with the body after it) joins the preamble too: its text is never lost."""
    unread = not doc.front_matter and doc.body_start_line > 1
    if not FRONT_MATTER_PREAMBLE or not (front_matter_text(doc.front_matter) or unread):
        return doc
    own = doc.sections[0] if doc.sections and doc.sections[0].level == 0 else None
    rest = doc.sections[1:] if own else doc.sections
    end = own.end_line if own else (rest[0].start_line - 1 if rest else len(doc.lines))
    preamble = Section(heading=PREAMBLE_HEADING, title="", level=0, start_line=1, end_line=end,
                       text="".join(line + "\n" for line in doc.lines[:end]), body=own.body if own else "")
    return replace(doc, sections=[preamble, *rest])


FRONT_MATTER_SKIPPED_KEYS = frozenset({"secret"})  # says how to index, not what the note is about


def front_matter_text(front_matter: dict) -> str:
    """Front matter as `key: value` lines (lists joined, nested keys dotted): every value a note
    keeps there is text the search legs can find."""
    out: list[str] = []

    def scalar(value) -> str:
        return "" if value is None else str(value).strip()

    def walk(prefix: str, value) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), inner)
        elif isinstance(value, (list, tuple)):
            items = [scalar(v) for v in value if not isinstance(v, (dict, list, tuple))]
            if any(items):
                out.append(f"{prefix}: {', '.join(i for i in items if i)}")
            for v in value:
                if isinstance(v, (dict, list, tuple)):
                    walk(prefix, v)
        elif scalar(value):
            out.append(f"{prefix}: {scalar(value)}")

    for key, value in front_matter.items():
        if str(key).lower() not in FRONT_MATTER_SKIPPED_KEYS:
            walk(str(key), value)
    return "\n".join(out)


def _section(lines: list[str], heading: str, title: str, level: int, start: int,
             body_first: int, end: int, code_lines: list[bool]) -> Section:
    return Section(
        heading=heading,
        title=title,
        level=level,
        start_line=start,
        end_line=end,
        text="".join(line + "\n" for line in lines[start - 1 : end]),
        body=_searchable_body(lines, body_first, end, code_lines),
    )


_UNCLOSED_HTML_COMMENT = re.compile(r"^ {0,3}<!--.*", re.DOTALL | re.MULTILINE)


def _strip_closed_comments(text: str) -> str:
    """`<!-- … -->` removed by a str scan: the lazy regex `<!--.*?-->` rescans the rest of the
    text from every `<!--` that is never closed (quadratic on a line of them)."""
    out: list[str] = []
    pos = 0
    while (start := text.find("<!--", pos)) >= 0:
        end = text.find("-->", start + 4)
        if end < 0:
            break  # unclosed: so is every later one
        out.append(text[pos:start])
        pos = end + 3
    out.append(text[pos:])
    return "".join(out)


def _searchable_body(lines: list[str], first: int, end: int, code_lines: list[bool]) -> str:
    """The body without HTML comments (hidden when rendered); code is kept verbatim."""
    parts: list[str] = []
    run: list[str] = []
    run_is_code = False
    for number in range(first, end + 1):
        if code_lines[number] != run_is_code and run:
            parts.append(_join_run(run, run_is_code))
            run = []
        run_is_code = code_lines[number]
        run.append(lines[number - 1])
    if run:
        parts.append(_join_run(run, run_is_code))
    return "\n".join(parts).strip()


def _join_run(run: list[str], is_code: bool) -> str:
    text = "\n".join(run)
    if is_code:
        return text
    # An unclosed comment opening a line hides the rest, as it does when rendered.
    return _UNCLOSED_HTML_COMMENT.sub("", _strip_closed_comments(text))
