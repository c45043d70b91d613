"""One source file → the rows the catalog stores for it: a section per function, class and method.

A code corpus (config.CODE, opt-in: `[code] roots` / `--code DIR`) is read with tree-sitter's
grammars (the `code` extra: tree-sitter-language-pack, every grammar in its wheel — nothing is
downloaded) for the languages of LANGUAGES: each definition is a section whose heading is its
breadcrumb (`Writer > refresh_paths`), a class or an impl keeps its header lines as its own section
and its methods as theirs, and the code between definitions (imports, constants, a script's body)
is a section too. A file in another language, one the grammar cannot read, or any file when the
extra is not installed, is cut into plain windows of WINDOW_LINES lines.

The keyword index splits identifiers into their words (`refreshPaths`, `refresh_paths` → refresh
paths): each chunk's text carries them on a line of its own after the code, so "where do we refresh
the paths" finds the function by its name's words. Everything is redacted before it is parsed, as
notes are: a key committed in a config file never reaches the index.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from remembrancer.indexer.config import CODE_TYPE
from remembrancer.indexer.ingest import chunks as chunking
from remembrancer.indexer.ingest.corpus import CorpusFile, blob_id
from remembrancer.indexer.ingest.document import Prepared, decode, redacted_warning
from remembrancer.indexer.ingest.markdown import ParsedDocument, Section
from remembrancer.indexer.redact import DEFAULT_REDACTOR, Redactor
from remembrancer.indexer.store.records import DocumentRecord, SectionRecord

log = logging.getLogger(__name__)

# File ending → the tree-sitter grammar that reads it.
LANGUAGES = {".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
             ".jsx": "javascript", ".ts": "typescript", ".tsx": "tsx", ".go": "go", ".rs": "rust", ".java": "java",
             ".kt": "kotlin", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".cs": "csharp",
             ".rb": "ruby", ".php": "php", ".swift": "swift", ".scala": "scala", ".lua": "lua", ".sh": "bash",
             ".bash": "bash"}
# Node types that define a named thing (in any of those grammars) …
DEFINITIONS = {
    "function_definition", "class_definition", "function_declaration", "class_declaration", "method_definition",
    "method_declaration", "interface_declaration", "constructor_declaration", "enum_declaration", "type_spec",
    "function_item", "impl_item", "struct_item", "enum_item", "trait_item", "mod_item", "class_specifier",
    "struct_specifier", "namespace_definition", "method", "singleton_method", "class", "module",
    "object_declaration", "trait_definition", "object_definition", "function_signature", "abstract_class_declaration",
    "generator_function_declaration", "record_declaration", "protocol_declaration",
}
# … those whose body holds more of them (methods) …
CONTAINERS = {"class_definition", "class_declaration", "interface_declaration", "impl_item", "trait_item",
              "mod_item", "class_specifier", "struct_specifier", "namespace_definition", "class", "module",
              "object_declaration", "trait_definition", "object_definition", "abstract_class_declaration",
              "enum_declaration", "record_declaration", "protocol_declaration", "type_declaration"}
# … and nodes that hold one without being one (decorators, `export`, Go's `type (…)`, a JS
# `const f = () => …`): looked through.
WRAPPERS = {"decorated_definition", "export_statement", "template_declaration", "type_declaration",
            "lexical_declaration", "variable_declaration", "variable_declarator", "declaration_list", "body",
            "class_body", "block", "field_declaration_list", "interface_body", "enum_body", "program", "module",
            "source_file", "translation_unit"}
FUNCTION_VALUES = {"arrow_function", "function_expression", "function", "generator_function"}
WINDOW_LINES = 60            # a plain window: this many lines
MAX_SECTION_LINES = 400      # a definition longer than this is cut in windows (its heading kept, "part N")
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


@dataclass
class Part:
    """A run of lines of the file and the breadcrumb naming it ([] for the code between definitions)."""

    start: int   # 0-based, inclusive
    end: int     # 0-based, inclusive
    chain: list[str]


def language_of(rel: str) -> str | None:
    dot = rel.rfind(".")
    return LANGUAGES.get(rel[dot:].lower()) if dot >= 0 else None


def _parser(language: str):
    """The grammar's parser, or None when the `code` extra is not installed (plain windows then)."""
    try:
        from tree_sitter_language_pack import get_parser
    except ImportError:
        return None
    try:
        return get_parser(language)
    except Exception as e:   # a grammar the installed pack lacks
        log.info("no tree-sitter grammar for %s: %s", language, e)
        return None


def syntax_aware() -> bool:
    """Whether definitions can be read (the `code` extra is installed)."""
    return _parser("python") is not None


def split_identifier(word: str) -> list[str]:
    """`refreshPaths` / `refresh_paths` / `HTTPServer2` → their words, lower-cased."""
    return [p.lower() for piece in word.split("_") for p in _CAMEL_RE.findall(piece)]


def identifier_words(text: str) -> str:
    """The words of the text's compound identifiers, once each: what the keyword index adds."""
    seen: dict[str, None] = {}
    for ident in _IDENT_RE.findall(text):
        parts = split_identifier(ident)
        if len(parts) > 1:
            seen.update(dict.fromkeys(p for p in parts if len(p) > 1))
    return " ".join(seen)


def _name(node) -> str | None:
    for field in ("name", "type", "declarator"):
        n = node.child_by_field_name(field)
        while n is not None and n.type not in ("identifier", "type_identifier", "field_identifier", "constant",
                                                "property_identifier", "scoped_identifier", "name",
                                                "simple_identifier", "namespace_identifier"):
            inner = n.child_by_field_name("declarator") or n.child_by_field_name("name")
            n = inner if inner is not None and inner != n else None
        if n is not None and n.text:
            return n.text.decode("utf-8", "replace")
    return None


def _definition(node):
    """(the definition node, its name) when `node` defines a named thing, else None."""
    if node.type in DEFINITIONS:
        name = _name(node)
        return (node, name) if name else None
    if node.type == "variable_declarator":   # const handler = () => …
        value = node.child_by_field_name("value")
        if value is not None and value.type in FUNCTION_VALUES:
            name = _name(node)
            return (node, name) if name else None
    return None


def _definitions(node, chain: list[str], out: list[Part], depth: int = 0) -> None:
    """Every definition under `node` (through wrappers), each with its breadcrumb; a container's
    own header lines and its members apart."""
    for child in node.children:
        found = _definition(child)
        if found is None:
            if child.type in WRAPPERS and depth < 6:
                before = len(out)
                _definitions(child, chain, out, depth + 1)
                if len(out) > before and child.type in ("decorated_definition", "export_statement"):
                    out[before].start = min(out[before].start, child.start_point[0])   # decorators, `export`
            continue
        d, name = found
        here = chain + [name]
        start = child.start_point[0]
        if d.type in CONTAINERS or d.type == "type_spec":
            members: list[Part] = []
            body = d.child_by_field_name("body") or d
            _definitions(body, here, members, depth + 1)
            if members:
                out.append(Part(start, members[0].start - 1, here))   # the header: signature, docstring, fields
                out.extend(members)
                out[-1].end = max(out[-1].end, d.end_point[0])
                continue
        out.append(Part(start, d.end_point[0], here))


def parts_of(text: str, rel: str) -> list[Part] | None:
    """The file's parts by its syntax; None when it cannot be read so (no grammar for it, the
    grammar failed, or no definition in it) — the caller cuts plain windows instead."""
    language = language_of(rel)
    parser = _parser(language) if language else None
    if parser is None:
        return None
    try:
        tree = parser.parse(text.encode("utf-8", "surrogatepass"))
    except Exception as e:   # a grammar that fails on this input
        log.info("%s: not parsed (%s)", rel, e)
        return None
    defs: list[Part] = []
    _definitions(tree.root_node, [], defs)
    if not defs:
        return None
    defs.sort(key=lambda p: p.start)
    nlines = text.count("\n") + (0 if text.endswith("\n") else 1)
    parts: list[Part] = []
    at = 0
    for p in defs:
        if p.start < at:   # overlapping (a definition inside one already taken): part of that one
            continue
        if p.start > at:
            parts.append(Part(at, p.start - 1, []))
        parts.append(Part(p.start, max(p.end, p.start), p.chain))
        at = max(p.end, p.start) + 1
    if at < nlines:
        parts.append(Part(at, nlines - 1, []))
    return parts


def _windows(start: int, end: int, chain: list[str], size: int) -> list[Part]:
    return [Part(a, min(a + size - 1, end), chain) for a in range(start, end + 1, size)]


@dataclass
class Piece:
    """One section of a source file: its heading and its lines (0-based, inclusive)."""

    heading: str
    part: Part


def pieces(text: str, rel: str) -> tuple[list[str], list[Piece]]:
    """The file's lines and its sections (definitions, the code between them, or plain windows):
    what the index stores and what `read` and `outline` read back, cut the same way."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    parts = parts_of(text, rel)
    if parts is None:
        parts = _windows(0, len(lines) - 1, [], WINDOW_LINES) if lines else []
    out = []
    for part in parts:
        long = part.end - part.start + 1 > MAX_SECTION_LINES
        cut = _windows(part.start, part.end, part.chain, MAX_SECTION_LINES) if long else [part]
        for n, piece in enumerate(cut, 1):
            if not "\n".join(lines[piece.start:piece.end + 1]).strip():
                continue
            heading = " > ".join(piece.chain) if piece.chain else ("" if piece.start == 0 else
                                                                  f"lines {piece.start + 1}-{piece.end + 1}")
            out.append(Piece(heading + (f" (part {n})" if long else ""), piece))
    return lines, out


def prepare(f: CorpusFile, data: bytes, redactor: Redactor | None = None, fallback_date: str | None = None) -> Prepared:
    """One source file's rows: redacted, then a section per definition (or per window)."""
    text, warnings = decode(f.path, data)
    text, redacted = (redactor or DEFAULT_REDACTOR).redact(text)
    if redacted:
        warnings.append(redacted_warning(f.path, redacted))
    lines, cut = pieces(text, f.rel)
    doc = DocumentRecord(path=f.path, root=f.root.name, rel=f.rel, content_hash=blob_id(data), size=f.size,
                         mtime_ns=f.stamp, doc_type=CODE_TYPE, date=fallback_date, title=f.rel,
                         front_matter={"language": language_of(f.rel)}, tags=[], warnings=warnings, stale=False,
                         line_count=len(lines))
    prepared = Prepared(doc, [], None, warnings=warnings)
    for p in cut:
        body = "\n".join(lines[p.part.start:p.part.end + 1])
        prepared.sections.append(_section(f.rel, p.heading, p.part, body, fallback_date, prepared.texts))
    return prepared


def read_back(redactor: Redactor, text: str, path: str, rel: str):
    """(the parsed document, False) of a source file read from disk, redacted and cut as it was
    indexed: `read(path, heading)` and `outline` name the same sections search does."""
    text, _ = redactor.redact(text)
    lines, cut = pieces(text, rel)
    sections = []
    for p in cut:
        own = "\n".join(lines[p.part.start:p.part.end + 1])
        title = p.part.chain[-1] if p.part.chain else rel.rsplit("/", 1)[-1]
        sections.append(Section(heading=p.heading, title=title, level=max(len(p.part.chain), 1),
                                start_line=p.part.start + 1, end_line=p.part.end + 1, text=own + "\n", body=own))
    return ParsedDocument(front_matter={}, title=rel, sections=sections, warnings=[], body_start_line=1,
                          lines=lines), False


def _section(rel: str, heading: str, part: Part, body: str, date: str | None, texts: dict[str, str]) -> SectionRecord:
    header = chunking.context_header(CODE_TYPE, rel, f"{rel} > {heading}" if heading else rel)
    named = " ".join(w for crumb in part.chain for w in split_identifier(crumb))
    if named and named != " > ".join(part.chain).lower():   # `too_wide` is embedded as "too wide" too
        header += f" ({named})"
    passages = chunking.passage_rows(chunking.embedded_texts(header, body), texts)
    first = part.start + 1
    chunks = []
    for c in chunking.split_section(body, first):
        words = identifier_words(c.text)   # the keyword index reads `refreshPaths` as refresh paths too
        chunks.append(chunking.Chunk(c.part, c.nparts, c.start_line, c.end_line,
                                     f"{c.text}\n{words}" if words else c.text))
    title = part.chain[-1] if part.chain else rel.rsplit("/", 1)[-1]
    return SectionRecord(heading=heading, title=title, level=max(len(part.chain), 1), start_line=first,
                         end_line=part.end + 1, date=date, stale=False, content=body, body=body, entities=[],
                         chunks=chunks, passages=passages)
