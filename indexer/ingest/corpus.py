"""Walk the corpus roots: which Markdown files exist, and the git facts about them.

Inside a git repository, git itself decides what is ignored (pygit2 reads every .gitignore,
.git/info/exclude and core.excludesFile); in a plain folder the .gitignore files are read with
pathspec. Configured excludes apply everywhere. Symlinked directories are not followed (loops,
escapes); a symlinked file is indexed once, under its first path, and only if it stays inside
its root — under its target's own path when that is walked too (so a scope holding the target
sees it), and with its target recorded (a scope judges a symlink by where it points). Whatever
the walk leaves out that the user may expect indexed — a symlinked folder, a second path to a
file, a FIFO, socket or device with a note's name — is said in one warning per pass.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat
import struct
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pathspec

from remembrancer.indexer.config import Root, has_checkout

log = logging.getLogger(__name__)

MARKDOWN_SUFFIXES = (".md", ".markdown")


@dataclass(frozen=True)
class CorpusFile:
    root: Root
    rel: str            # path relative to its root, with "/"
    path: str           # corpus path: rel, or "<root-name>/<rel>" when there are several roots
    abs_path: Path | str   # a str from a walk (a Path per file was a fifth of a rescan); only opened
    size: int
    mtime_ns: int
    target: str | None = None   # a symlinked file: the corpus path of the file it points to
    identity: tuple[int, int] | None = None   # (st_dev, st_ino) the walk judged: the read must open this file
    stamp: int = 0   # what the catalog compares to skip the read (`change_stamp`); 0: always read and compare


# A file changed this recently may change again within the same timestamp tick (coarse kernel
# clocks, 1-2 s on FAT/ext3) and keep its stamp: its stamp is not trusted (git's "racy clean").
RACY_NS = 2_000_000_000


def change_stamp(st: os.stat_result, now_ns: int | None = None) -> int:
    """The file's stat folded into one integer (stored in the catalog's `mtime_ns` column): equal
    stamps mean "unchanged, skip the read". Size and mtime alone miss an edit that keeps them
    (`cp -p`, `rsync -a`, `tar x`, a clock stepped back); the inode-change time cannot be set by
    a user and moves on every write, and a replaced file has a new inode. A file changed within
    RACY_NS of now gets 0, so the next run reads it and compares its blob id."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    if max(st.st_mtime_ns, st.st_ctime_ns) > now_ns - RACY_NS:
        return 0
    digest = hashlib.blake2b(struct.pack("<qqqQQ", st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
                                         st.st_dev), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True) or 1


@dataclass
class WalkResult:
    files: list[CorpusFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    failed_roots: list[str] = field(default_factory=list)  # roots that could not be read at all
    # Symlinks left out as a second path to a file (corpus path → its target's): recorded beside the
    # indexed ones, so a scope judges their warnings by their targets too (store/scope.py Wall).
    skipped_links: dict[str, str] = field(default_factory=dict)


class Unreadable(Exception):
    """A corpus file that must not or cannot be read; the message is the warning to show."""


def read_regular_file(path: Path, shown: str, max_bytes: int | None = None, *, nofollow: bool = False,
                      identity: tuple[int, int] | None = None, inside: str | None = None) -> bytes:
    """The bytes of a regular file, for the indexer and for every later read alike.

    Opened once, non-blocking, and judged on the opened descriptor (fstat), never by the path
    again: a path swapped for a FIFO, a device or a socket after the walk is refused instead of
    hanging the caller until some writer opens it; the size cap is checked on the same descriptor
    and bounds the read, so a file that grew past it since the walk is refused too. `nofollow`:
    the path must not be a symlink (a plain file as walked, or a reader that already resolved it).
    `identity`: the (device, inode) the walk judged — a note swapped for a link to (or a folder
    swapped for one holding) an outside file between the walk and the read is refused, not indexed
    under the note's name. `inside`: a real folder the opened file must be in (the reader's root:
    a parent folder swapped for a symlink after the path was resolved), checked where the
    descriptor's path can be asked (/proc)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    if nofollow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise Unreadable(f"{shown}: vanished while being read") from None
    except OSError as e:
        if nofollow and e.errno == errno.ELOOP:   # a symlink now, where a file was judged
            raise Unreadable(f"{shown}: skipped, it was replaced by a symlink while being read") from None
        raise Unreadable(f"{shown}: cannot be read ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # checked on the descriptor: a folder, FIFO, device, socket
            raise Unreadable(f"{shown}: skipped, not a regular file")
        if identity is not None and (st.st_dev, st.st_ino) != tuple(identity):
            raise Unreadable(f"{shown}: skipped, it was replaced while being read (read again on the next change)")
        if inside is not None and not _opened_inside(fd, inside):
            raise Unreadable(f"{shown}: refused, the opened file is outside its root")
        if max_bytes is not None and st.st_size > max_bytes:
            raise Unreadable(f"{shown}: skipped, {st.st_size:,} bytes is over the {max_bytes:,}-byte cap")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        try:
            data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
        except OSError as e:
            raise Unreadable(f"{shown}: cannot be read ({e.strerror})") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise Unreadable(f"{shown}: skipped, it grew over the {max_bytes:,}-byte cap while being read")
    return data


def _opened_inside(fd: int, folder: str) -> bool:
    """Whether the file open on `fd` lies under the real folder `folder` (asked of /proc, so no
    path is resolved again); True where the system cannot say."""
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return True
    return where.startswith(folder.rstrip("/") + "/")


def corpus_path(root: Root, rel: str, multi: bool) -> str:
    return f"{root.name}/{rel}" if multi else rel


def blob_id(data: bytes) -> str:
    """The git blob id of the bytes: the same hash git uses, so a file's identity matches its commit."""
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def discover_repo(path: Path):
    """The repository holding `path` (searched upward, as git does), or None if there is none.

    Not `pygit2.discover_repository`: pygit2 1.21 returns None from it without taking a reference,
    so every miss (a plain folder) steals one reference from None. The daemon asks on every status
    and search, and after some thousands of requests on a plain folder None was deallocated
    (`Fatal Python error: none_dealloc`). `Repository(path)` searches the same way and raises on a
    miss. Other errors (permissions, a damaged repository) are raised for the caller to report."""
    import pygit2

    try:
        return pygit2.Repository(str(path))
    except pygit2.GitError as e:
        if "not found" in str(e).lower():
            return None
        raise


def open_repo(path: Path):
    """The git repository whose work tree contains `path`, or None for a plain folder."""
    import pygit2

    try:
        repo = discover_repo(path)
        return None if repo is None or repo.is_bare else repo
    except (pygit2.GitError, KeyError, OSError):
        return None


def head_id(repo) -> str | None:
    try:
        return str(repo.head.target) if repo is not None and not repo.head_is_unborn else None
    except Exception:  # detached/odd heads are reported as unknown, never fatal
        return None


class _Ignorer:
    """Answers 'is this path ignored?' for one root, by git when it is a repo, else by .gitignore files."""

    def __init__(self, root: Root, excludes: tuple[str, ...]):
        self.root = root
        self.excludes = pathspec.GitIgnoreSpec.from_lines(excludes)
        self.repo = open_repo(root.path)
        self.workdir = Path(self.repo.workdir).resolve() if self.repo is not None else None
        # The root's path inside the work tree, found once (a rescan asks for every file).
        try:
            self._in_repo = self.root.path.relative_to(self.workdir).as_posix() if self.workdir else None
        except ValueError:
            self._in_repo = None   # not under the work tree as written: git is never asked (as before)
        self._specs: dict[str, pathspec.GitIgnoreSpec | None] = {}

    def ignored(self, rel: str, is_dir: bool) -> bool:
        probe = rel + "/" if is_dir else rel
        if self.excludes.match_file(probe):
            return True
        if self.repo is not None:
            if self._in_repo is None:
                return False
            rel_repo = rel if self._in_repo == "." else f"{self._in_repo}/{rel}" if rel else self._in_repo
            try:
                return self.repo.path_is_ignored(rel_repo + ("/" if is_dir else ""))
            except Exception:
                return False
        return self._plain_ignored(rel, is_dir)

    def _plain_ignored(self, rel: str, is_dir: bool) -> bool:
        parts = rel.split("/")
        for i in range(len(parts)):
            base = "/".join(parts[:i])
            spec = self._spec_for(base)
            if spec is not None:
                sub = "/".join(parts[i:]) + ("/" if is_dir else "")
                if spec.match_file(sub):
                    return True
        return False

    def _spec_for(self, base: str):
        if base not in self._specs:
            f = self.root.path / base / ".gitignore"
            try:
                self._specs[base] = pathspec.GitIgnoreSpec.from_lines(f.read_text(errors="replace").splitlines())
            except OSError:
                self._specs[base] = None
        return self._specs[base]


def root_unavailable(path: Path) -> str | None:
    """Why a root folder cannot be walked now — gone (moved or deleted), not a folder any more, not
    readable, or now another folder through a link — or None. A team reader's name-only root has no
    folder here to miss.

    A root is its resolved path (config.make_roots): the folder it names is the index's identity.
    When that path resolves elsewhere now (the folder renamed and a symlink put in its place), the
    folder this index was made of is not there any more: `--root PATH` now means the link's target,
    a corpus with an index of its own, and this one keeps what it last read."""
    if not has_checkout(path):
        return None
    if not os.path.lexists(path):
        return "is missing (moved or deleted)"
    if not os.path.isdir(path):
        return "is not a folder any more"
    real = os.path.realpath(path)
    if real != os.path.abspath(path):
        return (f"now resolves to {real} (a link replaced the folder indexed here; `--root {path}` is now "
                f"that folder's corpus, with an index of its own)")
    if not os.access(path, os.R_OK | os.X_OK):
        return "cannot be read (permission denied)"
    return None


def walk(roots: list[Root], excludes: tuple[str, ...], max_file_bytes: int) -> WalkResult:
    """List the files of every root (its kind's: Markdown notes, or transcripts). Problems become warnings; only an unreadable root fails."""
    result = WalkResult()
    multi = len(roots) > 1
    for root in roots:
        if root_unavailable(root.path):
            result.failed_roots.append(root.name)
            result.warnings.append(f"root {root.name} ({root.path}) cannot be read; its documents are kept as they were")
            continue
        _walk_root(root, _Ignorer(root, excludes), max_file_bytes, multi, result)
    result.files.sort(key=lambda f: f.path)
    return result


def _walk_root(root: Root, ignorer: _Ignorer, max_bytes: int, multi: bool, result: WalkResult,
               start: str = "") -> None:
    """Walk one root, or only its folder `start` (a targeted update: indexer/ingest/changes.py)."""
    seen_real: set[str] = set()
    links: list[tuple[str, Path]] = []   # symlinked files, taken after every real file of the root
    # Symlinked folders are never entered, so below the start folder every real path is its real
    # path plus the names walked: one realpath per walk, not one per file (a rescan's main cost).
    start_dir = root.path / start if start else root.path
    start_real = os.path.realpath(start_dir)
    stack = [start]
    while stack:
        rel_dir = stack.pop()
        abs_dir = root.path / rel_dir if rel_dir else root.path
        if rel_dir == start:
            real_dir = start_real
        else:
            real_dir = start_real + (rel_dir[len(start):] if start else "/" + rel_dir)
        try:
            entries = sorted(os.scandir(abs_dir), key=lambda e: e.name)
        except OSError as e:
            result.warnings.append(f"{corpus_path(root, rel_dir or '.', multi)}: cannot list folder ({e.strerror})")
            continue
        subdirs = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_link = entry.is_symlink()
                if entry.is_dir(follow_symlinks=False):
                    if not ignorer.ignored(rel, True):
                        subdirs.append(rel)
                    continue
                if is_link and entry.is_dir():   # symlinked directories are not followed: said, unless ignored
                    if not ignorer.ignored(rel, True):
                        result.warnings.append(f"{corpus_path(root, rel, multi)}: skipped, a symlinked folder "
                                               "(the index never follows symlinked folders)")
                    continue
            except OSError as e:  # a symlink loop (ELOOP) or an entry that vanished
                if root.takes(rel):
                    result.warnings.append(f"{corpus_path(root, rel, multi)}: skipped, cannot be read ({e.strerror or e})")
                continue
            if not root.takes(rel) or ignorer.ignored(rel, False):
                continue
            if is_link:
                links.append((rel, Path(entry.path)))
                continue
            f = _stat_file(root, rel, entry.path, False, max_bytes, multi, seen_real, result,
                           known=(f"{real_dir}/{entry.name}", entry))
            if f is not None:
                result.files.append(f)
        stack.extend(reversed(subdirs))
    for rel, abs_path in links:
        f = _stat_file(root, rel, abs_path, True, max_bytes, multi, seen_real, result)
        if f is not None:
            result.files.append(f)


def _stat_file(root, rel, abs_path: Path | str, is_link, max_bytes, multi, seen_real, result, known=None):
    """The CorpusFile for one Markdown path, or None (with a warning when the user should know).

    `known`: (real path, os.DirEntry) from a walk that reached a plain file through real folders,
    so its real path needs no resolving and its stat is the entry's (same answers, less work)."""
    cp = corpus_path(root, rel, multi)
    try:
        if known is not None:
            real, st = known[0], known[1].stat(follow_symlinks=False)
        else:
            resolved = abs_path.resolve(strict=True)
            real, st = str(resolved), resolved.stat()
    except (OSError, RuntimeError) as e:  # RuntimeError: symlink loop on some Pythons
        result.warnings.append(f"{cp}: skipped, cannot be read ({getattr(e, 'strerror', None) or e})")
        return None
    target = None
    if is_link:
        try:
            target = corpus_path(root, resolved.relative_to(root.path).as_posix(), multi)
        except ValueError:
            result.warnings.append(f"{cp}: skipped, symlink points outside the root")
            return None
    if not stat.S_ISREG(st.st_mode):
        result.warnings.append(f"{cp}: skipped, not a regular file ({_file_kind(st.st_mode)})")
        return None
    if real in seen_real:   # the same file reached by a symlink: indexed once, under its first path
        # The other path is not named: it may lie outside a scope that sees this one (store/scope.py).
        result.warnings.append(f"{cp}: skipped, a symlink to a file indexed under another path (a file is "
                               "taken once, under its first path)")
        if target is not None:
            result.skipped_links[cp] = target
        return None
    seen_real.add(real)
    if st.st_size > max_bytes:
        result.warnings.append(f"{cp}: skipped, {st.st_size:,} bytes is over the {max_bytes:,}-byte cap")
        return None
    if not os.access(real, os.R_OK):
        result.warnings.append(f"{cp}: skipped, permission denied")
        return None
    return CorpusFile(root, rel, cp, abs_path, st.st_size, st.st_mtime_ns, target, (st.st_dev, st.st_ino),
                      change_stamp(st))


def _file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for its warning."""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "a special file"


def last_commit_dates(root: Root, rels: set[str], max_commits: int = 5000) -> dict[str, str]:
    """Date (YYYY-MM-DD) of the newest commit touching each file, by one walk back from HEAD.

    Used only for files with no better date (filename, front matter, heading). Bounded so a huge
    history cannot stall an index run; files not found keep no commit date.
    """
    import pygit2

    repo = open_repo(root.path)
    if repo is None or repo.head_is_unborn or not rels:
        return {}
    workdir = Path(repo.workdir).resolve()
    try:
        prefix = root.path.relative_to(workdir).as_posix()
    except ValueError:
        return {}
    prefix = "" if prefix == "." else prefix + "/"
    want = {prefix + r: r for r in rels}
    found: dict[str, str] = {}
    try:
        for i, commit in enumerate(repo.walk(repo.head.target, pygit2.enums.SortMode.TIME)):
            if i >= max_commits or len(found) == len(want):
                break
            when = datetime.fromtimestamp(commit.commit_time, timezone.utc).strftime("%Y-%m-%d")
            if commit.parents:
                diff = repo.diff(commit.parents[0], commit)
                paths = {d.delta.new_file.path for d in diff} | {d.delta.old_file.path for d in diff}
            else:
                paths = {p for p in want if _in_tree(commit.tree, p)}
            for p in paths:
                if p in want and want[p] not in found:
                    found[want[p]] = when
    except (pygit2.GitError, KeyError, TypeError, ValueError) as e:
        # A damaged repository (a missing tree object makes pygit2's diff raise TypeError): the
        # dates found so far are kept, the rest are left out; indexing goes on.
        why = e if isinstance(e, pygit2.GitError) else "a git object it needs is missing or damaged"
        log.warning("git history of %s could not be read (%s); commit dates are left out — "
                    "check the repository with `git fsck`", root.path, why)
    return found


def _in_tree(tree, path: str) -> bool:
    try:
        tree[path]
        return True
    except KeyError:
        return False
