"""One transcript file → the rows the catalog stores for it: a document per session file, a
section per exchange.

The session's facts (its id, working folder, branch, client version, a subagent's id) and each
exchange's (the prompt's uuid, its timestamp and branch, whether it is a compaction summary) are
kept in the document's `front_matter` mapping, the one per-document JSON column both stores have:
search reads them back to say which session and which prompt a result is (indexer/search/
conversations.py). Everything stored is redacted first, as for notes.

A transcript grows by appending. The front matter also keeps where the last exchange starts (its
line, its byte offset, a hash of every byte before it, and the redaction policy and parser it was
read with): when the file still begins with those bytes, only the lines from the last exchange on
are read again, and the store replaces the document's sections from that exchange on
(store/ledger.py `append_sections`). A file rewritten, truncated or read under another policy is
read whole. So is a file whose new tail gives away a secret value that the earlier exchanges hold
(a session is redacted as one text): the store then replaces its sections from the first exchange
holding it, and the old text is purged from the index files (Prepared.purge, engine/writer.py).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from remembrancer.indexer.ingest import chunks as chunking
from remembrancer.indexer.ingest import transcripts
from remembrancer.indexer.ingest.corpus import CorpusFile, blob_id
from remembrancer.indexer.ingest.document import Prepared, decode_lines, redacted_warning
from remembrancer.indexer.redact import (DEFAULT_REDACTOR, MARKER_RE, Redactor, SecretHashes, redact_values,
                                         removed_secrets, salted_sha256)
from remembrancer.indexer.store.records import DocumentRecord, SectionRecord

CONVERSATION, SUBAGENT = transcripts.SESSION_TYPE, transcripts.SUBAGENT_TYPE


def is_subagent(rel: str) -> bool:
    """`agent-<id>.jsonl` beside the sessions (older clients) or under `<session>/subagents/`."""
    return rel.rsplit("/", 1)[-1].startswith("agent-")


TAIL_VERSION = 1   # what a stored tail means; bumped when parsing or rendering changes


def _prefix_hasher():
    """What a tail's `prefix` is: blake2b-128 of the file's bytes before its last exchange."""
    return hashlib.blake2b(digest_size=16)


# Between the pieces of a transcript redacted as one text; a piece holding it is redacted alone.
_PIECE = "\n\x00\u241e\x00\n"
REPEATED = "repeated_secret"   # the label of a secret found earlier in the session, met again


def _redact_together(redactor: Redactor, pieces: list[str], seen: SecretHashes | None) -> tuple[list[str], set[str]]:
    """The pieces redacted as one text, so a value found by its context in one (a token pasted as
    `POSTMARK_TOKEN=v` in a prompt) is redacted in every other (`printf … 'v' >> .env` in a later
    command); then every value `seen` earlier in the session. Also returns the values found here."""
    joined = _PIECE.join(pieces)
    out, _ = redactor.redact(joined)
    found = removed_secrets(joined, out)
    done = out.split(_PIECE)
    if any(_PIECE in p for p in pieces) or len(done) != len(pieces):   # a pattern ran across pieces
        done = [redactor.redact(p)[0] for p in pieces]
        done = [redact_values(p, found, REPEATED)[0] for p in done]
    if seen is not None:
        echo = Redactor(families=(), hashes=seen)
        done = [echo.redact(p)[0] for p in done]
    return done, found


def _labels(before: str, after: str) -> dict[str, int]:
    """The markers redaction added to one piece, by label."""
    out: dict[str, int] = {}
    for m in MARKER_RE.finditer(after):
        out[m.group(0)[10:-1]] = out.get(m.group(0)[10:-1], 0) + 1
    for m in MARKER_RE.finditer(before):
        out[m.group(0)[10:-1]] -= 1
    return {k: v for k, v in out.items() if v > 0}


def parse_redacted(text: str, path: str, rel: str, redactor: Redactor, first_line: int = 1,
                   seen: SecretHashes | None = None) -> tuple[transcripts.Transcript, set[str]]:
    """The transcript with every text it holds redacted (what is indexed and what `read` shows),
    each exchange counting what was taken out of it; and the secret values found in it."""
    tr = transcripts.parse(text, path, subagent=is_subagent(rel), first_line=first_line)
    pieces = [tr.title or "", tr.cwd or "", tr.branch or ""]
    # an output is read without the marks the rendering put before its lines: each exchange's parts' marks
    marks: list[list[list[str] | None]] = []
    for ex in tr.exchanges:
        outputs = [transcripts.strip_marks(p) for p in ex.parts]
        marks.append([m for m, _ in outputs])
        pieces += [ex.prompt, ex.branch or "", *(body for _, body in outputs)]
    # what the text leaves out (a Write's file, a Read's result) is read with it, never kept: a secret
    # given away by its context there is redacted where the text repeats it, and remembered
    hidden = [h for ex in tr.exchanges for h in ex.hidden]
    for ex in tr.exchanges:
        ex.hidden = []
    done, found = _redact_together(redactor, pieces + hidden, seen)
    del done[len(pieces):]
    tr.redacted = _add(*(_labels(b, a) for b, a in zip(pieces[:3], done[:3])))
    tr.title, tr.cwd, tr.branch = (None if old is None else new for old, new in zip((tr.title, tr.cwd, tr.branch), done))
    i = 3
    for ex, ex_marks in zip(tr.exchanges, marks):
        n = 2 + len(ex.parts)
        before, after = pieces[i:i + n], done[i:i + n]
        ex.prompt, ex.branch = after[0], after[1] or None
        ex.parts = [transcripts.restore_marks(m, a) for m, a in zip(ex_marks, after[2:])]
        ex.redacted = {}
        for b, a in zip(before, after):
            for k, v in _labels(b, a).items():
                ex.redacted[k] = ex.redacted.get(k, 0) + v
        i += n
    return tr, found


@dataclass
class ExchangeSection:
    """An exchange as `read` serves it (the attributes search/reader.py reads of a section)."""

    heading: str
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
    tr, _ = parse_redacted(text, path, rel, redactor)
    sections = [ExchangeSection(ex.heading, 1, ex.start_line, ex.end_line, ex.text(), ex.uuids)
                for ex in tr.exchanges]
    whole = "\n".join(s.text for s in sections)
    return ReadBack(tr.title or (sections[0].heading if sections else rel), sections, whole.splitlines()), False


def _usable_tail(stored: dict | None, data: bytes, policy: str, prefix=None) -> dict | None:
    """The stored tail when the file still begins with the bytes it was taken after, else None.
    `prefix` (a _prefix_hasher) is fed those bytes, so the next tail's hash continues from it."""
    tail = (stored or {}).get("tail")
    if not isinstance(tail, dict) or tail.get("version") != TAIL_VERSION or tail.get("policy") != policy:
        return None
    offset = tail.get("offset")
    if not isinstance(offset, int) or not 0 < offset <= len(data) or data[offset - 1:offset] != b"\n":
        return None
    kinds = {"line": int, "keep": int, "redacted": dict, "bad_lines": list, "bad_count": int, "salt": str,
             "seen": list}
    if not all(isinstance(tail.get(k), t) for k, t in kinds.items()):
        return None
    prefix = prefix or _prefix_hasher()
    prefix.update(memoryview(data)[:offset])
    return tail if prefix.copy().hexdigest() == tail.get("prefix") else None


def _section(doc_type: str, ex: transcripts.Exchange, texts: dict[str, str]) -> SectionRecord:
    content = ex.text()
    header = chunking.context_header(doc_type, "", ex.heading)
    # Embedded without the tools' ordinary output (errors kept); BM25 and the literal leg read it all.
    # transcripts-dev: the same answers first and in the top 5, indexing 22 % faster (docs/conversations.md).
    passages = chunking.passage_rows(chunking.embedded_texts(header, ex.text(outputs=False)), texts)
    chunks = [chunking.Chunk(c.part, c.nparts, ex.start_line, ex.end_line, c.text)
              for c in chunking.split_section(content, ex.start_line)]
    return SectionRecord(heading=ex.heading, title=ex.heading, level=1, start_line=ex.start_line,
                         end_line=ex.end_line, date=(ex.timestamp or "")[:10] or None, stale=False, content=content,
                         body=content, entities=[], chunks=chunks, passages=passages)


def _line_offset(data: bytes, start: int, from_line: int, line: int) -> int:
    """The byte offset of `line`, counting from byte `start`, which begins line `from_line`."""
    pos = start
    for _ in range(line - from_line):
        pos = data.index(b"\n", pos) + 1
    return pos


def _add(*counts: dict[str, int]) -> dict[str, int]:
    """Counts by label, summed."""
    out: dict[str, int] = {}
    for more in counts:
        for k, v in more.items():
            out[k] = out.get(k, 0) + v
    return out


class ReadWhole(Exception):
    """The new tail gave away a value the earlier exchanges hold, and the file is larger than the
    caller reads in its own process: read it whole with `prepare(…, keep=self.keep)` where large
    documents are read (the sandbox)."""

    def __init__(self, keep: int):
        super().__init__(keep)
        self.keep = keep


def _encodings(value: str) -> set[bytes]:
    """How a value may stand in a JSONL file's bytes: as it is, and JSON-escaped (with `\\uXXXX` for
    what is not ASCII, or not; with `/` escaped, or not)."""
    out = {value.encode("utf-8")}
    for ascii_only in (True, False):
        inner = json.dumps(value, ensure_ascii=ascii_only)[1:-1]
        out |= {inner.encode("utf-8"), inner.replace("/", "\\/").encode("utf-8")}
    return out


def _first_holding(f: CorpusFile, head: bytes, values: set[str]) -> int | None:
    """The index of the first exchange in `head` (the file's bytes before its stored tail) whose
    stored text holds one of `values` whole, as redaction would replace it; the number of its
    exchanges when only the session's title, folder or branch does; None when nothing stored does.
    The bytes are looked at first: a value they do not hold costs no parse."""
    if not any(e in head for v in values for e in _encodings(v)):
        return None
    text, _ = decode_lines(f.path, head, 1)
    tr = transcripts.parse(text, f.path, subagent=is_subagent(f.rel))

    def holds(*texts: str | None) -> bool:
        return any(redact_values(t, values, REPEATED)[1] for t in texts if t)
    for i, ex in enumerate(tr.exchanges):
        if holds(ex.prompt, ex.branch, *ex.parts):
            return i
    return len(tr.exchanges) if holds(tr.title, tr.cwd, tr.branch) else None


def prepare(f: CorpusFile, data: bytes, redactor: Redactor | None = None, stored: dict | None = None,
            keep: int | None = None, whole_limit: int | None = None) -> Prepared:
    """The rows of one transcript: redacted, one section per exchange, the session in front matter.

    `stored`: the front matter the index holds for this file. When it still describes the file's
    beginning, only the lines from its last exchange on are read, and the Prepared says how many
    stored sections stay (`keep_sections`). When that tail gives away a secret value that is new
    to the session (`export PARTNER_API_KEY=v`) and an earlier exchange holds it (a tool printed
    `v`), the file is read whole instead — a session is redacted as one text — and only the
    sections from the first exchange holding it are replaced (`keep`: read whole, the stored
    sections before this many stay); the Prepared asks for the old text to be purged
    (`purge`). A file of `whole_limit` bytes or more raises ReadWhole for that instead."""
    redactor = redactor or DEFAULT_REDACTOR
    policy = redactor.policy_fingerprint()
    prefix = _prefix_hasher()
    tail = None if keep is not None else _usable_tail(stored, data, policy, prefix)
    start, first_line, kept = (tail["offset"], tail["line"], tail["keep"]) if tail else (0, 1, 0)
    if tail is None:
        prefix = _prefix_hasher()   # it may have been fed a beginning that no longer matches
    text, warnings = decode_lines(f.path, data[start:], first_line)
    salt = (tail or {}).get("salt") or os.urandom(16).hex()
    digests = dict.fromkeys((tail or {}).get("seen") or [], REPEATED)
    seen = SecretHashes(Path(f.path), bytes.fromhex(salt), digests, "") if digests else None
    tr, found = parse_redacted(text, f.path, f.rel, redactor, first_line, seen)
    if tail is not None:
        new = {v for v in found if salted_sha256(bytes.fromhex(salt), v) not in digests}
        back = _first_holding(f, data[:start], new) if new else None
        if back is not None:   # an earlier exchange holds a value only this tail shows to be a secret
            back = min(back, kept)
            if whole_limit is not None and len(data) >= whole_limit:
                raise ReadWhole(back)
            return prepare(f, data, redactor, keep=back)
    doc_type = SUBAGENT if is_subagent(f.rel) else CONVERSATION
    texts: dict[str, str] = {}
    sections = [_section(doc_type, ex, texts) for ex in tr.exchanges[keep or 0:]]
    before = stored if tail else {}
    exchanges = {k: v for k, v in (before.get("exchanges") or {}).items() if int(k) < first_line}
    for ex in tr.exchanges:
        exchanges[str(ex.start_line)] = {"uuid": ex.uuid, "timestamp": ex.timestamp, "branch": ex.branch,
                                         "kind": ex.kind}
    # what the lines before the new tail hold: their secrets taken out, their lines that are not JSON
    prior = tail or {"redacted": {}, "bad_lines": [], "bad_count": 0}
    last = tr.exchanges[-1] if tr.exchanges else None
    new_tail = None
    if last is not None and not warnings:   # bad UTF-8 is reported by reading the file whole each time
        settled = tr.exchanges[:-1]
        bad_settled = [n for n in tr.bad_lines if n < last.start_line]
        new_tail = {
            "version": TAIL_VERSION, "policy": policy, "line": last.start_line, "keep": kept + len(settled),
            "offset": _line_offset(data, start, first_line, last.start_line),
            "redacted": _add(prior["redacted"], tr.redacted, *(ex.redacted for ex in settled)),
            "bad_lines": (prior["bad_lines"] + bad_settled)[:3], "bad_count": prior["bad_count"] + len(bad_settled),
            # the secrets found so far, salted and hashed (never the values): met again in a later
            # exchange, they are redacted there too (_redact_together)
            "salt": salt, "seen": sorted(set(digests) | {salted_sha256(bytes.fromhex(salt), v) for v in found})}
        prefix.update(memoryview(data)[start:new_tail["offset"]])   # the bytes before `start` are in it already
        new_tail["prefix"] = prefix.hexdigest()
    counts = _add(prior["redacted"], tr.redacted, *(ex.redacted for ex in tr.exchanges))
    bad = prior["bad_lines"] + tr.bad_lines
    warnings += transcripts.bad_line_warnings(f.path, bad, prior["bad_count"] + len(tr.bad_lines))
    if counts:
        warnings.append(redacted_warning(f.path, counts))

    def fact(name: str):   # what a whole read would say: the first value seen, the last time
        new, old = getattr(tr, name), before.get(name)
        if name == "ended":
            return new or old
        return old if old is not None else new
    session = {name: fact(name) for name in ("session_id", "agent_id", "cwd", "branch", "version", "started", "ended")}
    session["title"] = tr.title or before.get("title")
    session["exchanges"] = exchanges
    session["tail"] = new_tail
    # the first exchange's heading as read now when it is read again (a value it shows may be a secret now)
    first = (before.get("first_heading") if kept else None) or (tr.exchanges[0].heading if tr.exchanges else None)
    session["first_heading"] = first
    title = session["title"] or first or f.rel.rsplit("/", 1)[-1]
    doc = DocumentRecord(
        path=f.path, root=f.root.name, rel=f.rel, content_hash=blob_id(data), size=f.size, mtime_ns=f.stamp,
        doc_type=doc_type, date=(session["started"] or "")[:10] or None, title=title, front_matter=session,
        tags=[], warnings=warnings, stale=False, line_count=tr.line_count)
    if keep is not None:   # read whole to take a secret out of stored exchanges: from the first holding it on
        return Prepared(doc, sections, None, texts=texts, warnings=warnings, keep_sections=keep, purge=True)
    return Prepared(doc, sections, None, texts=texts, warnings=warnings, keep_sections=kept if tail else None)
