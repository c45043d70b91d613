"""One transcript file → the rows the catalog stores for it: a document per session file, a
section per exchange.

The session's facts (its id, working folder, branch, client version, a subagent's id) and each
exchange's (the prompt's uuid, its timestamp and branch, whether it is a compaction summary) are
kept in the document's `front_matter` mapping, the one per-document JSON column both stores have:
search reads them back to say which session and which prompt a result is (indexer/search/
conversations.py). Everything stored is redacted first, as for notes.
"""

from __future__ import annotations

from remembrancer.indexer.ingest import chunks as chunking
from remembrancer.indexer.ingest import transcripts
from remembrancer.indexer.ingest.corpus import CorpusFile, blob_id
from remembrancer.indexer.ingest.document import Prepared, decode
from remembrancer.indexer.redact import DEFAULT_REDACTOR, Redactor
from remembrancer.indexer.store.records import DocumentRecord, SectionRecord

CONVERSATION = "conversation"   # the doc type of a session file
SUBAGENT = "subagent"           # … of a subagent's (sidechain) file
TYPES = (CONVERSATION, SUBAGENT)


def is_subagent(rel: str) -> bool:
    """`agent-<id>.jsonl` beside the sessions (older clients) or under `<session>/subagents/`."""
    return rel.rsplit("/", 1)[-1].startswith("agent-")


def prepare(f: CorpusFile, data: bytes, redactor: Redactor | None = None) -> Prepared:
    """The rows of one transcript: redacted, one section per exchange, the session in front matter."""
    redactor = redactor or DEFAULT_REDACTOR
    text, warnings = decode(f.path, data)
    sub = is_subagent(f.rel)
    tr = transcripts.parse(text, f.path, subagent=sub)
    warnings += tr.warnings
    redacted: dict[str, int] = {}

    def clean(value: str | None) -> str | None:
        if value is None:
            return None
        out, counts = redactor.redact(value)
        for k, v in counts.items():
            redacted[k] = redacted.get(k, 0) + v
        return out

    doc_type = SUBAGENT if sub else CONVERSATION
    sections: list[SectionRecord] = []
    texts: dict[str, str] = {}
    exchanges: dict[str, dict] = {}
    for ex in tr.exchanges:
        ex.prompt = clean(ex.prompt) or ""
        ex.parts = [clean(p) or "" for p in ex.parts]
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
        exchanges[str(ex.start_line)] = {"uuid": ex.uuid, "timestamp": ex.timestamp, "branch": clean(ex.branch),
                                         "kind": ex.kind}
    session = {"session_id": tr.session_id, "agent_id": tr.agent_id, "cwd": clean(tr.cwd),
               "branch": clean(tr.branch), "version": tr.version, "started": tr.started, "ended": tr.ended,
               "exchanges": exchanges}
    if redacted:
        warnings.append(f"{f.path}: {sum(redacted.values())} secret(s) redacted ({', '.join(sorted(redacted))})")
    title = clean(tr.title) or (tr.exchanges[0].heading if tr.exchanges else f.rel.rsplit("/", 1)[-1])
    doc = DocumentRecord(
        path=f.path, root=f.root.name, rel=f.rel, content_hash=blob_id(data), size=f.size, mtime_ns=f.stamp,
        doc_type=doc_type, date=(tr.started or "")[:10] or None, title=title, front_matter=session,
        tags=[], warnings=warnings, stale=False, line_count=tr.line_count)
    return Prepared(doc, sections, None, texts=texts, warnings=warnings)
