"""One transcript file → the rows the catalog stores for it: a document per session file, a
section per exchange.

The session's facts (its id, working folder, branch, client version, a subagent's id) and each
exchange's (the prompt's uuid, its timestamp and branch, whether it is a compaction summary) are
kept in the document's `front_matter` mapping, the one per-document JSON column both stores have:
search reads them back to say which session and which prompt a result is (indexer/search/
conversations.py). Everything stored is redacted first, as for notes.
"""

from __future__ import annotations

from dataclasses import dataclass

from remembrancer.indexer.ingest import chunks as chunking
from remembrancer.indexer.ingest import transcripts
from remembrancer.indexer.ingest.corpus import CorpusFile, blob_id
from remembrancer.indexer.ingest.document import Prepared, decode
from remembrancer.indexer.redact import DEFAULT_REDACTOR, Redactor
from remembrancer.indexer.store.records import DocumentRecord, SectionRecord

CONVERSATION, SUBAGENT = transcripts.SESSION_TYPE, transcripts.SUBAGENT_TYPE


def is_subagent(rel: str) -> bool:
    """`agent-<id>.jsonl` beside the sessions (older clients) or under `<session>/subagents/`."""
    return rel.rsplit("/", 1)[-1].startswith("agent-")


class _Cleaner:
    """The redactor, counting what it removed (for the document's warning)."""

    def __init__(self, redactor: Redactor):
        self.redactor = redactor
        self.counts: dict[str, int] = {}

    def __call__(self, value: str | None) -> str | None:
        if value is None:
            return None
        out, counts = self.redactor.redact(value)
        for k, v in counts.items():
            self.counts[k] = self.counts.get(k, 0) + v
        return out


def parse_redacted(text: str, path: str, rel: str, clean: _Cleaner) -> transcripts.Transcript:
    """The transcript with every text it holds redacted: what is indexed and what `read` shows."""
    tr = transcripts.parse(text, path, subagent=is_subagent(rel))
    tr.title, tr.cwd, tr.branch = clean(tr.title), clean(tr.cwd), clean(tr.branch)
    for ex in tr.exchanges:
        ex.prompt = clean(ex.prompt) or ""
        ex.parts = [clean(p) or "" for p in ex.parts]
        ex.branch = clean(ex.branch)
    return tr


@dataclass
class ExchangeSection:
    """An exchange as `read` serves it (the attributes search/reader.py reads of a section)."""

    heading: str
    title: str
    level: int
    start_line: int
    end_line: int
    text: str
    uuids: list[str]


@dataclass
class ReadBack:
    """A transcript read back for `read` and `outline`: its exchanges, rendered and redacted."""

    title: str
    sections: list[ExchangeSection]
    lines: list[str]        # the rendered exchanges' lines (a whole-conversation page reads these)


def read_back(redactor: Redactor, text: str, path: str, rel: str) -> tuple[ReadBack, bool]:
    """(the transcript as `read` shows it, False): the reader's counterpart of document.redact_and_parse
    (a transcript has no `secret: true`)."""
    tr = parse_redacted(text, path, rel, _Cleaner(redactor))
    sections = [ExchangeSection(ex.heading, ex.heading, 1, ex.start_line, ex.end_line, ex.text(), ex.uuids)
                for ex in tr.exchanges]
    whole = "\n".join(s.text for s in sections)
    return ReadBack(tr.title or (sections[0].heading if sections else rel), sections, whole.splitlines()), False


def prepare(f: CorpusFile, data: bytes, redactor: Redactor | None = None) -> Prepared:
    """The rows of one transcript: redacted, one section per exchange, the session in front matter."""
    text, warnings = decode(f.path, data)
    sub = is_subagent(f.rel)
    clean = _Cleaner(redactor or DEFAULT_REDACTOR)
    tr = parse_redacted(text, f.path, f.rel, clean)
    warnings += tr.warnings
    doc_type = SUBAGENT if sub else CONVERSATION
    sections: list[SectionRecord] = []
    texts: dict[str, str] = {}
    exchanges: dict[str, dict] = {}
    for ex in tr.exchanges:
        content = ex.text()
        heading = ex.heading
        header = chunking.context_header(doc_type, "", heading)
        passages = []
        for embedded in chunking.embedded_texts(header, content):
            sha = chunking.text_sha(embedded)
            texts[sha] = embedded
            passages.append((sha, embedded))
        chunks = [chunking.Chunk(c.part, c.nparts, ex.start_line, ex.end_line, c.text)
                  for c in chunking.split_section(content, ex.start_line)]
        sections.append(SectionRecord(
            heading=heading, title=heading, level=1, start_line=ex.start_line, end_line=ex.end_line,
            date=(ex.timestamp or "")[:10] or None, stale=False, content=content, body=content,
            entities=[], chunks=chunks, passages=passages))
        exchanges[str(ex.start_line)] = {"uuid": ex.uuid, "timestamp": ex.timestamp, "branch": ex.branch,
                                         "kind": ex.kind}
    session = {"session_id": tr.session_id, "agent_id": tr.agent_id, "cwd": tr.cwd, "branch": tr.branch,
               "version": tr.version, "started": tr.started, "ended": tr.ended, "exchanges": exchanges}
    if clean.counts:
        warnings.append(f"{f.path}: {sum(clean.counts.values())} secret(s) redacted ({', '.join(sorted(clean.counts))})")
    title = tr.title or (tr.exchanges[0].heading if tr.exchanges else f.rel.rsplit("/", 1)[-1])
    doc = DocumentRecord(
        path=f.path, root=f.root.name, rel=f.rel, content_hash=blob_id(data), size=f.size, mtime_ns=f.stamp,
        doc_type=doc_type, date=(tr.started or "")[:10] or None, title=title, front_matter=session,
        tags=[], warnings=warnings, stale=False, line_count=tr.line_count)
    return Prepared(doc, sections, None, texts=texts, warnings=warnings)
