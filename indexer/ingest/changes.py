"""Changed paths → the corpus files to look at again: the targeted update's half of corpus.walk.

The daemon's watcher names the paths that changed, and a git notification names two HEADs whose
trees differ; neither needs every root walked. Each path is taken through the same rules as the
walk (suffixes, .gitignore and excludes, size caps, symlinks): a file is stat'ed, a directory
(created, moved in) is walked, a path that is gone names the documents to drop. Anything this
cannot decide alone — a root itself, a symlink, a root that vanished — asks for the full walk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from remembrancer.indexer.ingest import corpus
from remembrancer.indexer.config import Root


@dataclass
class Touched:
    files: list[corpus.CorpusFile] = field(default_factory=list)  # present now: compare with the catalog
    exact: set[str] = field(default_factory=set)        # corpus paths whose catalog documents are re-checked
    prefixes: set[str] = field(default_factory=set)     # … and every document under these folders ("dir/")
    warnings: list[str] = field(default_factory=list)
    full: str | None = None                              # why only a full walk can tell

    def need_full(self, why: str) -> None:
        self.full = self.full or why


def _root_of(roots: list[Root], path: str) -> tuple[Root, str] | None:
    """The root holding `path` and the path relative to it ("" for the root itself)."""
    for candidate in (path, os.path.realpath(path)):
        for r in roots:
            base = str(r.path)
            if candidate == base:
                return r, ""
            if candidate.startswith(base.rstrip("/") + "/"):
                return r, candidate[len(base.rstrip("/")) + 1:]
    return None


def resolve(roots: list[Root], paths, excludes: tuple[str, ...], max_file_bytes: int) -> Touched:
    """What the given absolute paths mean for the index (see the module docstring)."""
    out = Touched()
    multi = len(roots) > 1
    ignorers: dict[str, corpus._Ignorer] = {}
    unreadable: dict[str, bool] = {}   # each root looked at once a batch (moved, or a link to elsewhere now)
    for raw in sorted(set(paths)):
        found = _root_of(roots, str(raw))
        if found is None:
            continue   # outside every root (a stray event)
        root, rel = found
        if not rel:
            out.need_full(f"root {root.name} itself changed")
            continue
        if root.name not in unreadable:
            unreadable[root.name] = not root.path.is_dir() or bool(corpus.root_unavailable(root.path))
        if unreadable[root.name]:
            out.need_full(f"root {root.name} cannot be read")
            continue
        ignorer = ignorers.get(root.name)
        if ignorer is None:
            ignorer = ignorers[root.name] = corpus._Ignorer(root, excludes)
        parts = rel.split("/")
        if any(ignorer.ignored("/".join(parts[:i]), True) for i in range(1, len(parts))):
            continue   # under an ignored folder: never indexed, nothing to drop
        cp = corpus.corpus_path(root, rel, multi)
        abs_path = root.path / rel
        if os.path.islink(abs_path):
            out.need_full(f"{cp} is a symlink")   # a symlinked file is indexed once, under its first path
            continue
        if abs_path.is_dir():
            out.exact.add(cp)   # it may have been a file a moment ago (a note replaced by a folder)
            out.prefixes.add(cp + "/")
            if ignorer.ignored(rel, True):
                continue
            walked = corpus.WalkResult()
            corpus._walk_root(root, ignorer, max_file_bytes, multi, walked, start=rel)
            out.files += walked.files
            out.warnings += walked.warnings
            continue
        out.exact.add(cp)
        out.prefixes.add(cp + "/")   # it may have been a folder a moment ago
        if not abs_path.exists() or not root.takes(rel) or ignorer.ignored(rel, False):
            continue   # gone (or never indexable): its documents, if any, are dropped
        result = corpus.WalkResult()
        f = corpus._stat_file(root, rel, abs_path, False, max_file_bytes, multi, set(), result)
        out.warnings += result.warnings
        if f is not None:
            out.files.append(f)
    out.files = list({f.path: f for f in out.files}.values())   # a folder and its files may both be named
    return out


def head_changes(root: Root, old: str | None, new: str | None) -> list[str] | None:
    """Absolute paths under `root` whose content differs between commits `old` and `new` (a
    commit, merge, checkout or rewrite the hooks announced), or None when they cannot be
    compared (no old HEAD recorded, a commit gone from the repository): then walk everything."""
    import pygit2

    if old == new:
        return []
    repo = corpus.open_repo(root.path)
    if repo is None or not old or not new:
        return None
    try:
        diff = repo.diff(repo.revparse_single(old).peel(pygit2.Commit).tree,
                         repo.revparse_single(new).peel(pygit2.Commit).tree)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    workdir = Path(repo.workdir).resolve()
    out = []
    for delta in diff.deltas:
        for p in {delta.old_file.path, delta.new_file.path}:
            absolute = str(workdir / p)
            if absolute == str(root.path) or absolute.startswith(str(root.path).rstrip("/") + "/"):
                out.append(absolute)
    return out
