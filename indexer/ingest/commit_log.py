"""A repository's commits → one document each: what a commit says it changed, and why.

A commits corpus (config.COMMITS) holds every commit reachable from HEAD of its repositories (the
notes' own, and `[verify] repos`). A commit is a document of one section, at the corpus path of
its short hash: the subject is its heading, the message body its text, then a line of facts (the
full hash, the author, the date) and the paths it changed against its first parent.

Commits never change, so a stored commit is never read again: the walk lists hashes (a stamp
made from the hash, cheap to compare), and only new commits are rendered and embedded. A HEAD
that moved forward is read as the commits between the two (`between`); a rewritten history
(rebase, reset) asks for the whole walk, and commits no longer reachable leave the index.
Everything stored is redacted first, as for notes.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from remembrancer.indexer.config import COMMIT_TYPE, COMMITS, Config, Root
from remembrancer.indexer.ingest import chunks as chunking
from remembrancer.indexer.ingest.corpus import CorpusFile, WalkResult, blob_id, head_id, open_repo
from remembrancer.indexer.ingest.document import Prepared, Skip, decode, redacted_warning
from remembrancer.indexer.redact import DEFAULT_REDACTOR, Redactor
from remembrancer.indexer.store.records import DocumentRecord, SectionRecord

log = logging.getLogger(__name__)

SHORT = 12               # a commit's corpus path: its hash cut to this many hex digits
MAX_COMMITS = 100_000    # the newest this many commits of a repository are indexed (a warning says so)
MAX_PATHS = 40           # changed paths named in a commit's text; more are counted
MAX_MESSAGE_BYTES = 64 * 1024   # a longer message (a pasted log) is cut, with a warning
FACTS_MARK = "commit "   # the facts line begins so: "commit <hash> · <author> · <date>"


@dataclass(frozen=True)
class CommitRef(CorpusFile):
    """A commit as the writer's walk sees one: a corpus file whose bytes are rendered from git."""

    oid: str = ""


def commits_config(notes: Config, repos: list[Path] | None = None) -> Config | None:
    """The commits corpus of a notes corpus: one root per git repository its roots are in, and the
    `[verify] repos` (or exactly `repos`: a corpus named by its folders). None: no repository."""
    candidates = repos if repos is not None else [*(r.path for r in notes.roots), *notes.verify_repos]
    roots: list[Root] = []
    for p in candidates:
        repo = open_repo(Path(p))
        if repo is None:
            continue
        top = Path(repo.workdir).resolve()
        if any(r.path == top for r in roots):
            continue
        name, i = top.name or "repo", 2
        while any(r.name == name for r in roots):
            name, i = f"{top.name}-{i}", i + 1
        roots.append(Root(name, top, COMMITS))
    if not roots:
        return None
    return dataclasses.replace(notes, roots=roots, kind=COMMITS, conversations=[], layout=(("*", COMMIT_TYPE),),
                               ranking=type(notes.ranking)(), verify_repos=[])


def _stamp(oid: str) -> int:
    """The change stamp of a commit: its hash (60 bits of it) — a commit is never edited."""
    return int(oid[:15], 16) or 1


def _ref(root: Root, commit, multi: bool) -> CommitRef:
    oid = str(commit.id)
    rel = oid[:SHORT]
    return CommitRef(root=root, rel=rel, path=f"{root.name}/{rel}" if multi else rel, abs_path=str(root.path),
                     size=len(commit.raw_message), mtime_ns=commit.commit_time * 1_000_000_000,
                     stamp=_stamp(oid), oid=oid)


def _sorting():
    import pygit2

    return pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME


def walk(roots: list[Root]) -> WalkResult:
    """Every commit reachable from HEAD of each root's repository (the newest MAX_COMMITS). A root
    that is no git repository, or whose HEAD is unborn, has none; one that cannot be read keeps
    what the index holds (its name in failed_roots, as a notes walk does)."""
    result = WalkResult()
    multi = len(roots) > 1
    for root in roots:
        if not root.path.is_dir():
            result.failed_roots.append(root.name)
            result.warnings.append(f"root {root.name} ({root.path}) cannot be read; its commits are kept as they were")
            continue
        repo = open_repo(root.path)
        head = head_id(repo)
        if head is None:
            continue
        try:
            for n, commit in enumerate(repo.walk(head, _sorting())):
                if n >= MAX_COMMITS:
                    result.warnings.append(f"{root.name}: only the newest {MAX_COMMITS:,} commits are indexed")
                    break
                result.files.append(_ref(root, commit, multi))
        except Exception as e:   # a damaged object store: what was read stays; the rest is said
            result.failed_roots.append(root.name)
            result.warnings.append(f"{root.name}: its history cannot be read whole ({type(e).__name__}: {e}); "
                                   f"its commits are kept as they were")
    result.files.sort(key=lambda f: f.path)
    return result


def between(root: Root, old: str | None, new: str | None, multi: bool) -> list[CommitRef] | None:
    """The commits HEAD gained moving from `old` to `new`, or None when only a whole walk can tell
    (no old HEAD, a HEAD that is not a descendant of the old one: a rebase or a reset)."""
    import pygit2

    if not new:
        return None if old else []
    repo = open_repo(root.path)
    if repo is None or not old:
        return None
    try:
        old_oid, new_oid = pygit2.Oid(hex=old), pygit2.Oid(hex=new)
        if old_oid != new_oid and not repo.descendant_of(new_oid, old_oid):
            return None
        w = repo.walk(new_oid, _sorting())
        w.hide(old_oid)
        return [_ref(root, c, multi) for c in w]
    except (KeyError, ValueError, pygit2.GitError):
        return None


def render(f: CommitRef) -> bytes:
    """The commit's text: subject, blank line, body, blank line, the facts line, the changed paths."""
    import pygit2

    repo = open_repo(Path(f.abs_path))
    if repo is None:
        raise Skip(f"{f.path}: its repository is gone")
    try:
        commit = repo[pygit2.Oid(hex=f.oid)]
    except (KeyError, ValueError):
        raise Skip(f"{f.path}: commit {f.oid} is gone from its repository") from None
    raw = commit.raw_message
    cut = len(raw) > MAX_MESSAGE_BYTES
    message = _utf8(raw[:MAX_MESSAGE_BYTES], commit.message_encoding).replace(b"\r\n", b"\n").strip(b"\n")
    subject, _, body = message.partition(b"\n")
    when = datetime.fromtimestamp(commit.commit_time, timezone(timedelta(minutes=commit.commit_time_offset)))
    paths = _changed_paths(repo, commit)
    lines = [subject.strip() or b"(no subject)", b""]
    if body.strip():
        lines += [body.strip(b"\n"), b""]
    facts = []
    if cut:
        facts += [f"(message cut at {MAX_MESSAGE_BYTES:,} bytes)", ""]
    author = commit.author.name if commit.author is not None else "unknown"
    facts.append(f"{FACTS_MARK}{f.oid} · {author} · {when.isoformat()}")
    if paths:
        shown = ", ".join(paths[:MAX_PATHS])
        more = f" (+{len(paths) - MAX_PATHS} more)" if len(paths) > MAX_PATHS else ""
        facts.append(f"changed: {shown}{more}")
    if len(commit.parents) > 1:
        facts.append("merge of " + ", ".join(str(p)[:SHORT] for p in commit.parent_ids))
    return b"\n".join([*lines, *(x.encode() for x in facts)]) + b"\n"


def _utf8(raw: bytes, encoding: str | None) -> bytes:
    """The message as UTF-8 bytes: a commit that names its encoding (i18n.commitEncoding) is
    converted; one that names none is left as it is, for the reader to judge (document.decode
    replaces bad bytes and says so)."""
    if not encoding or encoding.lower().replace("-", "") == "utf8":
        return raw
    try:
        return raw.decode(encoding, errors="replace").encode()
    except LookupError:   # an encoding Python does not know: read as UTF-8 with the warning
        return raw


def _changed_paths(repo, commit) -> list[str]:
    """The paths the commit changed against its first parent (all of its tree for a root commit)."""
    try:
        diff = commit.tree.diff_to_tree(swap=True) if not commit.parents else \
            repo.diff(commit.parents[0].tree, commit.tree)
        return sorted({d.delta.new_file.path for d in diff} | {d.delta.old_file.path for d in diff})
    except Exception:   # an object missing from a partial clone: the message still says what it did
        return []


def prepare(f: CommitRef, data: bytes, redactor: Redactor | None = None) -> Prepared:
    """The rows of one commit: its rendered text redacted, then one section under its subject."""
    text, warnings = decode(f.path, data)
    text, redacted = (redactor or DEFAULT_REDACTOR).redact(text)
    lines = text.rstrip("\n").split("\n")
    subject = lines[0]
    facts = next((ln for ln in reversed(lines) if ln.startswith(FACTS_MARK)), "")
    parts = facts[len(FACTS_MARK):].split(" · ")
    author, when = (parts[1], parts[2]) if len(parts) >= 3 else (None, None)
    if redacted:
        warnings.append(redacted_warning(f.path, redacted))
    if f.size > MAX_MESSAGE_BYTES:
        warnings.append(f"{f.path}: its message is over {MAX_MESSAGE_BYTES:,} bytes; indexed up to there")
    body = "\n".join(lines[2:]) if len(lines) > 2 else ""
    date = (when or "")[:10] or None
    header = chunking.context_header(COMMIT_TYPE, "", subject)
    texts: dict[str, str] = {}
    passages = chunking.passage_rows(chunking.embedded_texts(header, body), texts)
    section = SectionRecord(heading=subject, title=subject, level=1, start_line=1, end_line=len(lines), date=date,
                            stale=False, content=text, body=body, entities=[],
                            chunks=chunking.split_section(text, 1), passages=passages)
    doc = DocumentRecord(path=f.path, root=f.root.name, rel=f.rel, content_hash=blob_id(data), size=f.size,
                         mtime_ns=f.stamp, doc_type=COMMIT_TYPE, date=date, title=subject,
                         front_matter={"commit": f.oid, "author": author, "time": when},
                         tags=[], warnings=warnings, stale=False, line_count=len(lines))
    return Prepared(doc, [section], None, texts=texts, warnings=warnings)
