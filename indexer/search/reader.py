"""Open what a search pointed at: one section verbatim, a line range, an outline, or a page.

Only documents the index knows can be read (so excludes and roots are a boundary, and `../`
or absolute paths never reach the file system), and the file is re-read from disk so the
answer is the current text.
"""

from __future__ import annotations

import difflib
import json
import re
import threading
from collections import OrderedDict
from pathlib import Path

from remembrancer.indexer.config import CODE_TYPE, has_checkout
from remembrancer.indexer.terms import nfc
from remembrancer.indexer.ingest import code, sandbox
from remembrancer.indexer.ingest.chunks import estimate_tokens
from remembrancer.indexer.ingest.corpus import Unreadable, blob_id, read_regular_file
from remembrancer.indexer.errors import UserError, echo
from remembrancer.indexer.ingest.conversation import read_back
from remembrancer.indexer.ingest.document import Skip, decode, decode_lines, redact_and_parse
from remembrancer.indexer.ingest.markdown import PLAIN_PART_MARK
from remembrancer.indexer.requests import DEFAULT_PAGE_CHARS
from remembrancer.indexer.answers import Outline, OutlineSection, Page
from remembrancer.indexer.engine.view import Copy, ReadView
from remembrancer.indexer.ingest.transcripts import DOC_TYPES as CONVERSATION_TYPES

_REPEAT_SUFFIX = re.compile(r" \[\d+\]$")   # a breadcrumb used twice gets " [2]", " [3]" (indexer/ingest/markdown.py)


def resolve(view: ReadView, path: str) -> tuple[dict, Path, Path]:
    """A corpus path → its catalog row, absolute file and root folder, refusing anything outside the roots."""
    clean = (path or "").strip().replace("\\", "/")
    while clean.startswith("./"):
        clean = clean[2:]
    doc = view.catalog.document(clean) if clean else None
    if doc is None and clean:   # a name in another Unicode spelling, a stem, a link, a trailing part
        named = named_document(clean, view.catalog.document_paths())
        doc = view.catalog.document(named) if named else None
    if doc is None:
        why = skip_reasons(view, clean) if clean else []
        if why:   # on disk, but the index run skipped it: say why rather than "no such document"
            raise UserError(f"{clean} is not indexed: {'; '.join(why)}", param="path", code="not_found",
                            hint="it is indexed again once the file changes into something indexable; "
                                 "the index status lists every file left out")
        close = close_paths(clean, view.catalog.document_paths())
        raise UserError(f"no indexed document {echo(repr(path))}", param="path", options=close or None,
                        hint="paths are relative to the corpus root, as search results print them",
                        code="not_found")
    root = next((r for r in view.config.roots if r.name == doc["root"]), None)
    if root is None:
        raise UserError(f"{path}: its root is not configured any more", param="path", code="not_found")
    if not has_checkout(root.path):   # a team reader without --root: the store has the index, not the files
        raise UserError(f"{path}: this reader has no checkout of the shared notes to read it from",
                        param="path", code="team_reader",
                        hint="start it with --root CHECKOUT (your clone of the notes repository); "
                             "search answers without one")
    target = (root.path / doc["rel"])
    try:
        real = target.resolve(strict=True)
        real.relative_to(root.path)
    except (OSError, ValueError, RuntimeError):
        if view.store.kind == "postgresql" and not target.exists() and not target.is_symlink():
            raise not_in_checkout(view, root, doc) from None
        raise UserError(f"{path}: refused, resolves outside its root or is gone", param="path",
                        code="outside_root") from None
    return doc, real, root.path


def not_in_checkout(view: ReadView, root, doc) -> UserError:
    """A team reader's `read` of an indexed file its own checkout does not have: why, from how the
    checkout stands against the indexed commit (the store holds commits, the reader reads its clone)."""
    from remembrancer.indexer.committed import Standing, compare_checkout

    indexed = json.loads(view.catalog.get_meta("heads") or "{}").get(root.name)
    where = f"{doc['path']} is in the index" + (f" (commit {indexed[:7]})" if indexed else "")
    if indexed:
        cmp_ = compare_checkout(root.path, indexed)
        if cmp_.kind is Standing.NO_CHECKOUT:   # no commit to compare with
            why = "your folder is no git checkout to compare with"
            hint = "check your --root: it must be your clone of the notes"
        elif cmp_.kind is Standing.SAME:
            why, hint = (f"{cmp_.state()}, so the file is deleted or moved in your working tree (uncommitted)",
                         "`git status` in your checkout shows it; `git restore` brings it back")
        else:
            why = cmp_.state()
            hint = ("your commits since the indexed one moved or deleted it; the index has them once they are pushed "
                    "and the writer pulls them" if cmp_.kind is Standing.AHEAD
                    else "`git pull` (or `git fetch`), then read it again")
    else:
        why, hint = "the store names no commit for it", "check your --root: it must be your clone of the notes"
    return UserError(f"{where} but not in your checkout {root.path}: {why}", param="path", code="not_in_checkout",
                     hint=hint)


NAME_CUTOFF = 0.65   # difflib ratio of two file names (without folder and suffix) that makes them close


def _path_parts(path: str) -> tuple[list[str], str]:
    """(folders, file name without its suffix) of a corpus path, case-folded, in NFC."""
    folders = nfc(path).casefold().split("/")
    stem = folders.pop()
    return folders, re.sub(r"\.(md|markdown|jsonl)$", "", stem)


def close_paths(asked: str, known: list[str], n: int = 5) -> list[str]:
    """The indexed paths a path that names no document may have meant: a near file name (in any
    folder: `db3` → `db1`, `restor` → `restore`), or a shared folder or name (`hosts.md` →
    `hosts/…`, a note moved to another folder) — a folder most documents share (a root's name,
    a corpus of journal days) says nothing. Else none: difflib over whole paths at 0.5 offered
    `hosts/db1.md` for `notes.md` (on `s`, `/` and `.md`), and any shared folder inflates it."""
    if not known:
        return []
    a_folders, a_stem = _path_parts(asked)
    parts = {p: _path_parts(p) for p in known}
    held: dict[str, int] = {}
    for folders, stem in parts.values():
        for c in {*folders, stem}:
            held[c] = held.get(c, 0) + 1
    telling = {c for c in {*a_folders, a_stem} if c and held.get(c, 0) * 2 <= len(known)}
    name, whole = difflib.SequenceMatcher(), difflib.SequenceMatcher()
    name.set_seq2(a_stem)
    whole.set_seq2(nfc(asked).casefold())
    scored = []
    for p, (folders, stem) in parts.items():
        name.set_seq1(stem)
        near = name.ratio() if name.real_quick_ratio() >= NAME_CUTOFF and name.quick_ratio() >= NAME_CUTOFF else 0.0
        if near >= NAME_CUTOFF or telling & {*folders, stem}:
            whole.set_seq1(nfc(p).casefold())
            scored.append((-near, -whole.ratio(), p))
    return [p for *_, p in sorted(scored)[:n]]


def named_document(name: str, paths: list[str]) -> str | None:
    """The one document a shorter name means — a `[[wikilink]]` (alias and heading dropped), a file
    stem (`restore`), or a unique trailing part of its path (`postgres/restore.md`) — else None;
    several → an error listing them (a guess would open the wrong note)."""
    name = name.strip()
    if name.startswith("[[") and name.endswith("]]"):
        name = name[2:-2].split("|", 1)[0].split("#", 1)[0].strip()
    if not name:
        return None
    want = nfc(name.removesuffix(".md").removesuffix(".markdown").strip("/"))

    def base(p: str) -> str:   # case kept: `Journal/x.md` is another folder than `journal/` (and maybe a scope wall);
        return nfc(p.removesuffix(".md").removesuffix(".markdown"))   # the Unicode spelling is not kept (terms.nfc)
    exact = [p for p in paths if base(p) == want]
    hits = exact or [p for p in paths if base(p).endswith("/" + want)]
    if len(hits) > 1:
        raise UserError(f"{echo(repr(name))} names {len(hits)} documents", param="path", options=sorted(hits)[:10],
                        code="ambiguous", hint="give more of the path, e.g. " + sorted(hits)[0])
    return hits[0] if hits else None


def skip_reasons(view: ReadView, path: str) -> list[str]:
    """Why the last index run left `path` out (binary, unreadable, too large, `secret: true`): its
    stored warnings, as the view's scope sees them (the same ones `status` lists)."""
    return [w.removeprefix(f"{path}: ") for w in view.warnings(path)]


def read_copy(view: ReadView, path: str, redactor=None) -> tuple[Copy, bytes]:
    """`path`'s file, read by the indexer's own checks (a regular file: a FIFO never blocks; under the
    size cap; still in its root) — with `redactor`, a document it denies is not found before its file
    is opened. Kept on the view (`copies`, by the path asked), so the request's freshness compares
    the bytes it served rather than reading and hashing the file again."""
    doc, real, root = resolve(view, path)
    if redactor is not None and redactor.denied(doc["path"], doc["rel"]):  # [redact] deny: as if not indexed
        raise UserError(f"no indexed document {echo(repr(path))}", param="path", code="not_found")
    data = read_regular_file(real, doc["path"], view.config.max_file_bytes, nofollow=True, inside=str(root))
    copy = view.copies[path] = Copy(doc, blob_id(data))
    return copy, data


def copy_of(view: ReadView, path: str) -> Copy:
    """The request's copy of `path`: the one `read` took, else read now (raises as read_copy does)."""
    return view.copies.get(path) or read_copy(view, path)[0]


def _load(view, path: str):
    redactor = view.redaction.current()  # fail closed (indexer/redact.py): RedactionError if the policy is broken
    try:
        copy, data = read_copy(view, path, redactor)
    except Unreadable as e:
        raise UserError(str(e), param="path", code="unreadable") from None
    doc = copy.doc
    key = (str(view.dir), doc["path"], copy.blob, redactor.policy_fingerprint())
    cached = _PARSED.get(key)
    if cached is None:
        try:   # a transcript is read line by line, as it was indexed: a bad line spoils itself only
            text, _ = (decode_lines if is_conversation(doc) else decode)(doc["path"], data)
        except Skip as e:
            raise UserError(str(e), param="path", code="unreadable") from None
        del data
        # Read back the way it was indexed: a document indexed as plain text in parts (its Markdown
        # parse went over the budget) is parsed the same way, so its part headings resolve.
        plain = PLAIN_PART_MARK in str(doc.get("warnings") or "")
        # a transcript is read back as the exchanges it was indexed as (ingest/conversation.py)
        call, args = (("read_conversation", (redactor, text, doc["path"], doc["rel"])) if is_conversation(doc)
                      else ("read_code", (redactor, text, doc["path"], doc["rel"])) if doc["doc_type"] == CODE_TYPE
                      else ("redact_and_parse", (redactor, text, doc["path"], plain)))
        if call == "read_code":   # cut as it was indexed (ingest/code.py); tree-sitter's parse is bounded by the cap
            cached = code.read_back(*args)
        elif len(text) < sandbox.LARGE_BYTES:
            cached = (read_back if call == "read_conversation" else redact_and_parse)(*args)
        else:  # in a child process with a budget: a slow document must not stall other requests
            try:
                cached = _READ_WORKER.call(call, args)
            except sandbox.OverBudget:
                raise UserError(f"{path}: reading it safely (redaction, parsing) went over the budget "
                                f"({sandbox.BUDGET_S:.0f} CPU-s, {sandbox.MEMORY_BYTES / 1e9:g} GB)", param="path",
                                code="unreadable") from None
        _PARSED.put(key, cached, len(text))
    parsed, secret = cached
    if secret:
        raise UserError(f"{path}: not readable (front matter secret: true)", param="path", code="not_found")
    return doc, parsed


class _ParsedCache:
    """The last few documents read, redacted and parsed, keyed by content hash and redaction
    policy: paging through a large file costs one redaction and one parse, not one per page."""

    def __init__(self, max_chars: int = 32 << 20, max_entries: int = 4):
        self.max_chars, self.max_entries = max_chars, max_entries
        self._items: OrderedDict[tuple, tuple[object, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple):
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: tuple, value, chars: int) -> None:
        if chars > self.max_chars:
            return
        with self._lock:
            self._items[key] = (value, chars)
            while len(self._items) > self.max_entries or sum(c for _, c in self._items.values()) > self.max_chars:
                self._items.popitem(last=False)


_PARSED = _ParsedCache()
_READ_WORKER = sandbox.Worker("remembrancer-read")  # its own child: reads never queue behind ingest


def find_section(sections, heading: str):
    """Exact breadcrumb, then case-insensitive, then a unique trailing fragment (`Restore`)."""
    for pred in (lambda s: s.heading == heading,
                 lambda s: s.heading.lower() == heading.lower()):
        hits = [s for s in sections if pred(s)]
        if hits:
            return hits[0]
    frag = heading.lower().strip()
    crumbs = {s.heading.lower() for s in sections}

    def ends_with_frag(crumb: str) -> bool:
        return crumb == frag or crumb.endswith(" > " + frag)

    def repeat_of_frag(crumb: str) -> bool:   # "X > Notes [2]": the second "X > Notes", a trailing "Notes" too
        m = _REPEAT_SUFFIX.search(crumb)
        return m is not None and crumb[:m.start()] in crumbs and ends_with_frag(crumb[:m.start()])

    hits = [s for s in sections if ends_with_frag(s.heading.lower()) or repeat_of_frag(s.heading.lower())]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise UserError(f"heading {echo(repr(heading))} is ambiguous", param="heading",
                        options=[s.heading for s in hits], code="ambiguous")
    return None


def is_conversation(doc) -> bool:
    return doc["doc_type"] in CONVERSATION_TYPES


def _exchanges(parsed, doc, uuid: str | None, lines: tuple[int, int] | None, around: int):
    """The exchanges a conversation read asks for: the one holding `uuid`, or those overlapping
    `lines` (the file's lines, as a result names them), with `around` more on each side."""
    secs = parsed.sections
    if uuid is not None:
        hit = [i for i, s in enumerate(secs) if uuid in s.uuids]
        if not hit:
            raise UserError(f"no exchange of {doc['path']} holds the line {echo(repr(uuid))}", param="uuid", code="not_found",
                            hint="give a uuid a conversations search returned for this path")
        first = last = hit[0]
    else:
        start, end = lines
        hit = [i for i, s in enumerate(secs) if s.start_line <= end and s.end_line >= start]
        if not hit:
            raise UserError(f"no exchange of {doc['path']} lies in lines {start}:{end}", param="lines",
                            code="out_of_range", hint="give the lines a conversations search returned")
        first, last = hit[0], hit[-1]
    return secs[max(first - around, 0):last + around + 1], secs[first]


def read(view: ReadView, path: str, heading: str | None = None, lines: tuple[int, int] | None = None,
         offset: int = 0, max_chars: int = DEFAULT_PAGE_CHARS, uuid: str | None = None, around: int = 0) -> Page:
    doc, parsed = _load(view, path)
    out = Page(path=doc["path"], type=doc["doc_type"], date=doc["date"])
    if (uuid is not None or around) and not is_conversation(doc):
        raise UserError(f"{doc['path']} is not a conversation: uuid and around read a .jsonl transcript",
                        param="uuid" if uuid is not None else "around")
    if is_conversation(doc) and (uuid is not None or lines is not None or (around and heading is not None)):
        if heading is not None:
            s = find_section(parsed.sections, heading)
            if s is None:
                raise UserError(f"no exchange {echo(repr(heading))} in {doc['path']}", param="heading", code="not_found",
                                options=[x.heading for x in parsed.sections][:20])
            uuid = s.uuids[0]
        shown, asked = _exchanges(parsed, doc, uuid, lines, around)
        out.heading, out.lines = asked.heading, [shown[0].start_line, shown[-1].end_line]
        text = "\n---\n\n".join(s.text for s in shown)
    elif heading is not None:
        s = find_section(parsed.sections, heading)
        if s is None:
            close = difflib.get_close_matches(heading, [x.heading for x in parsed.sections], n=5, cutoff=0.3)
            raise UserError(f"no section {echo(repr(heading))} in {doc['path']}", param="heading",
                            options=close or [x.heading for x in parsed.sections][:20], code="not_found")
        out.heading, out.lines = s.heading, [s.start_line, s.end_line]
        text = s.text
    elif lines is not None:
        start, end = lines
        n = len(parsed.lines)
        if start < 1 or end < start:
            raise UserError(f"lines must be START:END with 1 <= START <= END, got {start}:{end}", param="lines")
        if start > n:  # an empty answer would read as "these lines are blank"
            raise UserError(f"lines {start}:{end} start past the end: {doc['path']} has {n} lines", param="lines",
                            hint=f"give a range within 1:{n}", code="out_of_range")
        end = min(end, n)
        out.lines = [start, end]
        text = "\n".join(parsed.lines[start - 1:end])
    else:
        text = "\n".join(parsed.lines)
    if offset < 0:
        raise UserError("offset must be >= 0", param="offset")
    if offset and offset >= len(text):   # an empty page would read as "the rest is blank"
        raise UserError(f"offset {offset} is past the end: the text has {len(text)} characters", param="offset",
                        hint=f"give an offset below {len(text)} (a page's next_offset)" if text else "",
                        code="out_of_range")
    page = text[offset:offset + max_chars]
    out.content, out.total_chars, out.returned_chars, out.offset = page, len(text), len(page), offset
    out.truncated = offset + len(page) < len(text)
    if out.truncated:
        out.next_offset = offset + len(page)
    return out


def outline(view: ReadView, path: str) -> Outline:
    doc, parsed = _load(view, path)
    return Outline(path=doc["path"], type=doc["doc_type"], date=doc["date"], title=parsed.title,
                   sections=[OutlineSection(heading=s.heading, level=s.level, lines=[s.start_line, s.end_line],
                                            tokens=estimate_tokens(s.text)) for s in parsed.sections],
                   total_tokens=estimate_tokens("\n".join(parsed.lines)))
