"""One file → the rows the catalog stores for it: parse, metadata, chunks, passages.

Pure: no store is touched here, so the same function serves a first index, an incremental
update, a daemon notification and a test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from remembrancer.indexer import dates
from remembrancer.indexer.ingest import chunks as chunking
from remembrancer.indexer.ingest import links as linking
from remembrancer.indexer.ingest import meta
from remembrancer.indexer.config import ENTITY_TYPES
from remembrancer.indexer.ingest.corpus import CorpusFile, Unreadable, blob_id, read_regular_file
from remembrancer.indexer.ingest.markdown import (PLAIN_PART_CHARS, PLAIN_PART_MARK, front_matter_text, parse_markdown,
                                                 parse_plain, with_front_matter_preamble)
from remembrancer.indexer.redact import DEFAULT_REDACTOR, Redactor, is_secret_document
from remembrancer.indexer.store.records import DocumentRecord, EntityRecord, LinkRecord, SectionRecord

BINARY_PROBE = 8192
# A front matter's `description` sums up the whole note: each passage's context header carries it
# (docs/ranking.md). Switched off only to measure it (bench/eval_all.py --ingest).
DESCRIPTION_IN_CONTEXT = True
DESCRIPTION_CONTEXT_CHARS = 300   # a summary, not a second body: a longer one is cut at a word


@dataclass
class Prepared:
    """A document ready to be written: its row, its sections, and the texts it needs embedded."""

    doc: DocumentRecord
    sections: list[SectionRecord]
    entity: EntityRecord | None
    texts: dict[str, str] = field(default_factory=dict)   # text sha → embedded text
    warnings: list[str] = field(default_factory=list)
    links: list[LinkRecord] = field(default_factory=list)  # indexer/ingest/links.py, resolved when written
    # A grown transcript (ingest/conversation.py): the stored sections before this many stay, and
    # `sections` replace the rest. None: `sections` are the whole document.
    keep_sections: int | None = None
    # The stored text held a secret found since (a grown transcript's new tail gave it away): the
    # index files must lose its old words, not only its rows (engine/writer.py).
    purge: bool = False


class Skip(Exception):
    """The file is not indexable as it is now (binary, unreadable, front matter `secret: true`); the
    message is the warning to show. Any older copy in the index goes too (engine/writer.py, Writer._unindexable)."""


def read_file(f: CorpusFile, max_bytes: int | None = None) -> bytes:
    """The file's bytes, through the one reader every corpus read uses (corpus.read_regular_file:
    non-blocking, regular files only, size cap checked on the opened descriptor), which must be
    the file the walk judged: a plain file is opened without following a symlink, and either
    kind must have the walk's device and inode."""
    try:
        return read_regular_file(f.abs_path, f.path, max_bytes, nofollow=f.target is None, identity=f.identity)
    except Unreadable as e:
        raise Skip(str(e)) from None


def redacted_warning(path: str, counts: dict[str, int]) -> str:
    """The warning a document's redactions leave: how many, by which families (never the values)."""
    return f"{path}: {sum(counts.values())} secret(s) redacted ({', '.join(sorted(counts))})"


def decode(path: str, data: bytes) -> tuple[str, list[str]]:
    """UTF-8 text (BOM dropped); binary files refused; bad bytes replaced with a warning."""
    if b"\0" in data[:BINARY_PROBE]:
        raise Skip(f"{path}: skipped, looks binary (NUL bytes)")
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError as e:
        return data.decode("utf-8-sig", errors="replace"), [f"{path}: invalid UTF-8 at byte {e.start}; bad bytes replaced"]


def decode_lines(path: str, data: bytes, first_line: int = 1) -> tuple[str, list[str]]:
    """A file read line by line (a JSONL transcript from line `first_line` on): never refused as
    binary — a NUL byte or garbage (a crash's zero-filled tail) spoils its own line only, which the
    parser skips with a warning naming it; bad bytes are replaced, the first such line named."""
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError as e:
        line = first_line + data.count(b"\n", 0, e.start)
        return data.decode("utf-8-sig", errors="replace"), [f"{path}: line {line} holds invalid UTF-8; bad bytes replaced"]


def without_sections(f: CorpusFile, data: bytes, layout: meta.Layout, why: str) -> Prepared:
    """The document known to the index (listed, dated by its path) but with no text: what is
    indexed when reading it safely took too long (indexer/ingest/sandbox.py). Nothing of its text is
    stored, so nothing unredacted can be."""
    doc = DocumentRecord(
        path=f.path, root=f.root.name, rel=f.rel, content_hash=blob_id(data),
        size=f.size, mtime_ns=f.stamp, doc_type=layout.type_of(f.rel),
        date=meta.document_date(f.rel, {}), title=f.rel.rsplit("/", 1)[-1], front_matter={},
        tags=[], warnings=[why], stale=False, line_count=data.count(b"\n"),
    )
    return Prepared(doc, [], None, warnings=[why])


def prepare(f: CorpusFile, data: bytes, layout: meta.Layout, matcher: meta.EntityMatcher,
            fallback_date: str | None, redactor: Redactor | None = None, plain: bool = False) -> Prepared:
    """One document's rows. `plain`: as plain text in parts (markdown.parse_plain), the fallback
    for a large document whose Markdown parse went over its budget."""
    text, warnings = decode(f.path, data)
    # Redaction runs before parsing (indexer/redact.py): no row, chunk, warning or log line sees a
    # secret. Line structure is kept, so section line ranges stay true for the file on disk.
    text, redacted = (redactor or DEFAULT_REDACTOR).redact(text)
    parsed = parse_plain(text, f.path) if plain else with_front_matter_preamble(parse_markdown(text, f.path))
    embedded_texts = chunking.plain_embedded_texts if plain else chunking.embedded_texts
    if plain:
        warnings.append(f"{f.path}: {PLAIN_PART_MARK}, in parts of ~{PLAIN_PART_CHARS // 1000} KB without "
                        f"headings: parsing its Markdown went over the per-document budget; split the file "
                        f"to search it by section")
    if is_secret_document(parsed.front_matter, text):
        raise Skip(f"{f.path}: not indexed (front matter secret: true)")
    if redacted:
        warnings.append(redacted_warning(f.path, redacted))
    warnings += parsed.warnings
    fm = parsed.front_matter if isinstance(parsed.front_matter, dict) else {}
    chains = [s.heading.split(" > ") if s.heading else [] for s in parsed.sections]
    doc_type, named = layout.typed(f.rel)
    if not named:   # only the catch-all names it: its shape says what it is
        doc_type = meta.inferred_type(fm, chains, f.rel) or doc_type
    doc_date = meta.document_date(f.rel, fm)
    day_first = dates.slash_order(s.title for s in parsed.sections)   # how its headings write 03/04/2031
    # A daily note without a title of its own (no H1) is titled by its day, and its sections' headers
    # begin with it ("[journal] 2024-01-05 > Standup"), as a journal's dated H1 would: its text never
    # says which day it is.
    day = None if parsed.title else meta.day_of_file(f.rel)
    # a journal records what was seen: a day that notes "status: deprecated the v1 API" is not itself stale
    doc_stale = meta.document_is_stale(fm, parsed.sections if doc_type != "journal" else ())
    entity = meta.entity_from(doc_type, f.rel, fm, ENTITY_TYPES)
    doc = DocumentRecord(
        path=f.path, root=f.root.name, rel=f.rel, content_hash=blob_id(data),
        size=f.size, mtime_ns=f.stamp, doc_type=doc_type,
        date=doc_date or fallback_date, title=parsed.title or day or f.rel.rsplit("/", 1)[-1],
        front_matter=fm, tags=meta.tags_of(fm), warnings=warnings, stale=doc_stale,
        line_count=len(parsed.lines),
    )
    prepared = Prepared(doc, [], None if entity is None else EntityRecord(entity.name, entity.aliases),
                        warnings=warnings, links=[LinkRecord(lk.target, lk.kind, lk.line, lk.anchor, lk.text)
                                                  for lk in linking.parse_links(text, f.path)])
    said = front_matter_text(fm)
    described = _context_description(fm) if DESCRIPTION_IN_CONTEXT else ""
    for s, chain in zip(parsed.sections, chains):
        heading = f"{day} > {s.heading}" if day and s.heading else s.heading
        header = chunking.context_header(doc_type, doc.title, heading)
        # the blocks under `header — description`; the first passage stays the header alone or, for
        # the preamble, the header with what the front matter says: it names and sums up the note as
        # a heading does, and is counted like one (answer.HEADING_PASSAGE_WEIGHT)
        blocks = embedded_texts(f"{header} — {described}" if described else header, s.body)[1:]
        texts = [f"{header}\n{said}" if s.level == 0 and said else header, *blocks]
        passages = chunking.passage_rows(texts, prepared.texts)
        prepared.sections.append(SectionRecord(
            heading=s.heading, title=s.title, level=s.level,
            start_line=s.start_line, end_line=s.end_line,
            date=meta.heading_dates(chain, f.rel, doc_date, day_first) or doc.date,
            stale=doc_stale or meta.section_is_stale(s.title, s.body),
            content=s.text, body=s.body,
            entities=matcher.mentions(s.heading + "\n" + s.body),
            chunks=chunking.split_section(s.text, s.start_line),
            passages=passages,
        ))
    return prepared


def _context_description(fm: dict) -> str:
    """The front matter's `description` on one line, as each passage's context header carries it."""
    text = " ".join(fm["description"].split()) if isinstance(fm.get("description"), str) else ""
    if len(text) > DESCRIPTION_CONTEXT_CHARS:
        text = text[:DESCRIPTION_CONTEXT_CHARS].rsplit(" ", 1)[0] + " …"
    return text


def redact_and_parse(redactor, text: str, path: str, plain: bool = False):
    """(parsed document, is it `secret: true`?) of the text read from disk.

    Redact before anything is cut from it: sections, line ranges, pages and outlines all come
    from the redacted text (same line count), so no page holds a secret, even one that spans a
    page boundary."""
    text, _ = redactor.redact(text)
    parsed = parse_plain(text, path) if plain else with_front_matter_preamble(parse_markdown(text, path))
    return parsed, is_secret_document(parsed.front_matter, text)
