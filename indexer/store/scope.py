"""Scopes: folders (or files) of the corpus outside which nothing exists — a wall, enforced by the store.

A scoped request must be answered exactly as a corpus holding only the scoped files would answer
it. For such a request, the local store's connection gets TEMP views (`Catalog.scoped`) named
like the catalog's tables (`documents`, `sections`, `chunks`, `passages`, `entities`, `links`)
that hold only the rows of visible documents. SQLite resolves an unqualified table name to the temp schema first, so every
query of the engine sees the scoped corpus without knowing about scopes. What is not a table row
— the keyword index's statistics, link resolution, commits, the last run's report — is scoped by
the code that owns it, through `Wall` (what a scope sees) and `keyword_index` (BM25 over it).

Matching is on whole path segments and case-sensitive: `journal` and `journal/` both mean the
folder `journal/` (and a file named exactly `journal`), never `journal-archive/` nor `JOURNAL/`.
A symlinked file is judged by its target too: `journal/db1.md -> ../hosts/db1.md` is outside
`journal/` (a corpus of only `journal/` would hold a dangling link there).
"""

from __future__ import annotations

import difflib
import os
import posixpath
import threading
from pathlib import Path

from remembrancer.indexer.errors import UserError

KEYWORD_INDEXES_KEPT = 4      # distinct scopes whose derived keyword index is kept in memory


def normalize(prefixes) -> tuple[str, ...]:
    """Clean scope values ('journal/', 'runbooks', './docs//x') into segment paths without a
    trailing slash; refuse `..`, absolute paths, empty values and non-strings."""
    if isinstance(prefixes, str):
        prefixes = [prefixes]
    if prefixes is not None and not isinstance(prefixes, (list, tuple)):
        raise UserError("scope must be a list of folder paths inside the corpus", param="scope")
    out = []
    for raw in prefixes or ():
        if not isinstance(raw, str) or any(ord(c) < 32 for c in raw):
            raise UserError(f"scope must be a list of folder paths inside the corpus, got {raw!r}", param="scope")
        p = raw.strip().replace("\\", "/")
        parts = [s for s in p.split("/") if s not in ("", ".")]
        if not p or p.startswith("/") or ".." in parts or not parts:
            raise UserError(f"scope must be a folder path inside the corpus (like 'journal/'), got {raw!r}",
                            param="scope", hint="paths are relative to the corpus root; '..' and absolute paths "
                                                "are refused")
        out.append("/".join(parts))
    return tuple(dict.fromkeys(out))


def contains(prefixes: tuple[str, ...], path: str) -> bool:
    """Whether corpus path `path` lies under one of the (normalised) prefixes: whole segments, exact case."""
    return not prefixes or any(path == p or path.startswith(p + "/") for p in prefixes)


def effective_scope(granted: tuple[str, ...], requested) -> tuple[str, ...]:
    """What a request limited to `granted` prefixes (a scoped database role's, or an HTTP token's)
    may see: what it asked for, if that lies inside them; everything granted when it asked for nothing."""
    if not granted:
        raise UserError("this reader's role has no scope granted: it may read nothing of the store", param="store",
                        code="no_scope", hint="ask the store's admin: `remembrancer team grant-reader ROLE --scope …`")
    asked = normalize(requested or ())
    if not asked:
        return granted
    outside = [p for p in asked if not contains(granted, p)]
    if outside:
        raise UserError(f"scope {', '.join(outside)} is outside what this reader's role may read", param="scope",
                        options=list(granted), hint="ask for a scope inside the granted prefixes (or none)")
    return asked


def check_exists(roots, prefixes: tuple[str, ...]) -> None:
    """Refuse a scope that names nothing on disk (exact case, segment by segment), with the
    names it may have meant: a typo must not serve an empty corpus silently."""
    multi = len(roots) > 1
    for p in prefixes:
        parts = p.split("/")
        if multi:
            root = next((r for r in roots if r.name == parts[0]), None)
            if root is None:
                _unknown(p, [r.name for r in roots])
            base, rest = Path(root.path), parts[1:]
        else:
            base, rest = Path(roots[0].path), parts
        for i, seg in enumerate(rest):
            try:
                names = os.listdir(base)
            except OSError:   # an unreadable root keeps its documents (engine refresh): no verdict
                break
            if seg not in names:
                done = "/".join(parts[: len(parts) - len(rest) + i])
                _unknown(p, [f"{done}/{n}" if done else n for n in names], seg)
            base = base / seg


def _unknown(value: str, siblings: list[str], segment: str | None = None) -> None:
    leaf = (segment or value).casefold()
    close = [s for s in siblings if s.rsplit("/", 1)[-1].casefold() == leaf]
    close += difflib.get_close_matches(value, siblings, n=5, cutoff=0.5)
    raise UserError(f"scope {value!r} names no folder or file in the corpus (names are case-sensitive)",
                    param="scope", options=list(dict.fromkeys(close)) or None, code="not_found",
                    hint="give a folder relative to the corpus root, e.g. --scope journal/")


# -- what a scope sees beyond the tables -----------------------------------------------------------

class Wall:
    """One scope as a predicate on corpus paths (symlinks judged by their targets too)."""

    def __init__(self, prefixes: tuple[str, ...], symlinks: dict[str, str]):
        self.prefixes = prefixes
        self.symlinks = symlinks

    def sees(self, path: str) -> bool:
        if not self.prefixes:
            return True
        if not contains(self.prefixes, path):
            return False
        target = self.symlinks.get(path)
        return target is None or contains(self.prefixes, target)

    def sees_folder(self, folder: str) -> bool:
        """A folder's problem concerns the scope if the folder is in it or holds it."""
        folder = folder.rstrip("/")
        return (not self.prefixes or folder in ("", ".") or contains(self.prefixes, folder)
                or any(p.startswith(folder + "/") for p in self.prefixes))


def visible_warnings(wall: Wall, warnings: list[str], paths: list | None) -> list[str]:
    """The warnings a scope may see: run-wide ones, and those about a path it sees (`paths` says
    which path each warning is about; older indexes did not record it and get `warning_path`)."""
    if not wall.prefixes:
        return list(warnings)
    if not isinstance(paths, list) or len(paths) != len(warnings):
        paths = [warning_path(w) for w in warnings]
    out = []
    for w, p in zip(warnings, paths):
        if p is None or (wall.sees(p) if p.lower().endswith((".md", ".markdown")) else wall.sees_folder(p)):
            out.append(w)
    return out


def repo_paths(root, repo_workdir, prefixes: tuple[str, ...], multi: bool) -> list[str] | None:
    """The scope as paths inside the git repository holding `root`: None when the whole
    repository is visible, [] when none of it is."""
    try:
        base = Path(root.path).resolve().relative_to(Path(repo_workdir).resolve()).as_posix()
    except ValueError:
        return []
    base = "" if base == "." else base
    out = []
    for p in prefixes:
        if multi:
            name, _, rest = p.partition("/")
            if name != root.name:
                continue
        else:
            rest = p
        inner = "/".join(x for x in (base, rest) if x)
        if not inner:
            return None
        out.append(inner)
    return out


def warning_path(warning: str) -> str | None:
    """The corpus path a warning is about (`journal/x.md: skipped, …`), or None for a run-wide one."""
    head, sep, _ = warning.partition(": ")
    if not sep or not head:
        return None
    if any(c.isspace() for c in head) and not head.lower().endswith((".md", ".markdown")):
        return None
    return posixpath.normpath(head)


class KeywordIndexes:
    """BM25 over a scope's chunks only. A keyword index's statistics (document count, average
    length, document frequencies) are corpus-wide, so filtering the main index changes scores and
    even the top section: each scope gets a derived in-memory index of its own chunks, rebuilt from
    the catalog when the main index moved to a new generation (so it is never staler than the main
    one; during an ingest that is at most every few seconds) and the scope's chunks are not the
    ones it holds (chunk ids are never reused: the same ids are the same texts, so a change
    outside the scope costs one id listing, not a rebuild). A rebuild, not an update: an
    updated index keeps deleted documents in its statistics until segments merge, while a fresh
    one equals a fresh index of a corpus holding only the scoped files. Chunks' identifier terms
    are kept between rebuilds (splitting them is most of a build's cost); the few most recent
    scopes are kept."""

    def __init__(self):
        self._lock = threading.Lock()
        self._by_scope: dict[tuple[str, ...], tuple[int, object, dict, str]] = {}
        self.builds = 0

    def get(self, prefixes: tuple[str, ...], generation: int, signature, chunks):
        """The index for `prefixes` at `generation`; `signature()` digests the scope's chunk ids,
        `chunks()` yields its chunk rows (both read through the scoped catalog)."""
        from remembrancer.indexer.store.local.fulltext import FullText, idents

        with self._lock:
            got = self._by_scope.pop(prefixes, None)
            if got is not None and got[0] == generation:
                self._by_scope[prefixes] = got   # most recently used last
                return got[1]
            sig = signature()
            if got is not None and got[3] == sig:
                self._by_scope[prefixes] = (generation, got[1], got[2], sig)
                return got[1]
            old = got[2] if got is not None else {}
            cache: dict[int, str] = {}

            def ident_of(chunk_id, heading, text):
                got_ident = old.get(chunk_id)
                if got_ident is None:
                    got_ident = idents(heading, text)
                cache[chunk_id] = got_ident
                return got_ident
            index = FullText.in_memory(chunks(), ident_of)
            self.builds += 1
            self._by_scope[prefixes] = (generation, index, cache, sig)
            while len(self._by_scope) > KEYWORD_INDEXES_KEPT:
                self._by_scope.pop(next(iter(self._by_scope)))
            return index
