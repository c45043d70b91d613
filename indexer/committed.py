"""What the team store's writer indexes: the commit its checkout is at, never its working tree.

Readers read their own clones, and every answer names the indexed commit and compares it with the
reader's checkout (indexer/team.py): the store is only honest if the commit it names holds the
text it serves. An edit nobody committed on the writer's machine, or a file only that machine
has, is in no teammate's checkout — served, its search hits could not be opened and `read` would
show other text under a "fresh" verdict. So for each root inside a git work tree the writer keeps
a worktree of its own (`git worktree add --detach`, in the data dir), moves it to the checkout's
HEAD before each pass (`git reset --hard`: only changed files are written) and indexes that; the
HEAD it records is the worktree's, the commit whose files were read. The checkout's uncommitted
changes are counted and said (the writer's log, `doctor --store`), never indexed. A root that is
not in a git work tree is a plain folder: indexed as it is, and named by no commit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import shutil
import subprocess
from pathlib import Path

from remembrancer.indexer.config import Root, ensure_data_dir
from remembrancer.indexer.ingest import corpus

log = logging.getLogger(__name__)

FOLDER = "team-writer"       # under the data dir: one worktree per checkout and store
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")   # the checkout's hooks (a post-checkout notify) never run for it
GIT_TIMEOUT_S = 600


# what would point git at another repository than the folder's own (a writer started from a hook)
REPOSITORY_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                  "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_PREFIX", "GIT_NAMESPACE")


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in REPOSITORY_ENV}
    return subprocess.run(["git", *NO_HOOKS, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=GIT_TIMEOUT_S)


def _toplevel(path: Path) -> Path | None:
    """The work tree holding `path`, or None (a plain folder, a bare repository, no git)."""
    try:
        out = _git(path, "rev-parse", "--show-toplevel")
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()).resolve() if out.returncode == 0 and out.stdout.strip() else None


@dataclasses.dataclass
class Tree:
    """One root as the writer indexes it."""
    root: Root                    # as configured: the writer's checkout (pulled, counted)
    indexed: Root                 # what the engine walks: the same name, in the worktree
    top: Path | None = None       # the checkout's work tree (None: a plain folder, indexed as it is)
    worktree: Path | None = None
    sub: str = ""                 # the root's folder inside the work tree ("" for the work tree itself)


@dataclasses.dataclass
class Synced:
    """One pass's look at the checkouts: what to warn about, and the uncommitted changes left out."""
    warnings: list[str] = dataclasses.field(default_factory=list)
    broken: list[str] = dataclasses.field(default_factory=list)   # roots with no tree to index: no pass now
    uncommitted: dict[str, int] = dataclasses.field(default_factory=dict)   # root name → files
    examples: dict[str, list[str]] = dataclasses.field(default_factory=dict)   # root name → a few of them


class CommittedTrees:
    """The writer's roots, each as the commit its checkout is at."""

    def __init__(self, roots: list[Root], store_key: str):
        self.trees: list[Tree] = []
        for root in roots:
            top = _toplevel(root.path)
            if top is None:
                self.trees.append(Tree(root, root))
                continue
            sub = os.path.relpath(root.path.resolve(), top)
            sub = "" if sub == "." else Path(sub).as_posix()
            digest = hashlib.sha256(f"{top}\0{store_key}".encode()).hexdigest()[:16]
            worktree = ensure_data_dir() / FOLDER / f"{top.name}-{digest}"
            indexed = dataclasses.replace(root, path=worktree / sub if sub else worktree)
            self.trees.append(Tree(root, indexed, top, worktree, sub))

    @property
    def roots(self) -> list[Root]:
        """The roots the writer's engine indexes (the configured names, the committed files)."""
        return [t.indexed for t in self.trees]

    def sync(self) -> Synced:
        """Every worktree moved to its checkout's HEAD; the uncommitted changes counted. Called
        only by the writer that holds the store's lock (another one would move the tree under it)."""
        out = Synced()
        moved: set[Path] = set()
        broken: set[Path] = set()   # worktrees with no tree at all: indexing now would empty their roots
        for t in self.trees:
            if t.top is None:
                continue
            head, problem = self._head(t.top), None
            if t.worktree not in moved:   # two roots of one repository share its worktree
                moved.add(t.worktree)
                problem = self._move(t, head)
                if problem:
                    out.warnings.append(problem)
                    if head is not None and not self._ours(t):
                        broken.add(t.worktree)
            if t.worktree in broken:
                out.broken.append(t.root.name)
                continue
            folder = t.indexed.path
            if head is None:
                out.warnings.append(f"root {t.root.name}: its checkout has no commit yet: nothing of it is "
                                    "indexed until one is made")
            elif not problem and not folder.is_dir():
                out.warnings.append(f"root {t.root.name}: its folder is not in the commit {head[:7]} its checkout "
                                    "is at: nothing of it is indexed until it is committed")
            folder.mkdir(parents=True, exist_ok=True)   # an empty folder: nothing of it indexed (none kept)
            changed = self._uncommitted(t)
            if changed:
                out.uncommitted[t.root.name] = len(changed)
                out.examples[t.root.name] = changed[:5]
        return out

    @staticmethod
    def _head(top: Path) -> str | None:
        got = _git(top, "rev-parse", "--quiet", "--verify", "HEAD^{commit}")
        return got.stdout.strip() if got.returncode == 0 and got.stdout.strip() else None

    def _move(self, t: Tree, head: str | None) -> str | None:
        """The worktree at the checkout's HEAD (made when missing or not one of this checkout's);
        a problem to warn about, else None. A failed move leaves the worktree at the commit it
        was: the recorded HEAD is the worktree's, so the store never names a commit it did not read."""
        try:
            if head is None:   # no commit: an empty folder, indexed as nothing
                if (t.worktree.exists() and not t.worktree.is_dir()) or (t.worktree.is_dir()
                                                                          and any(t.worktree.iterdir())):
                    self._remove(t)
                t.worktree.mkdir(parents=True, exist_ok=True, mode=0o700)
                return None
            if self._ours(t):
                steps = [("reset", "--quiet", "--hard", head), ("clean", "--quiet", "-ffd")]
                for args in steps:
                    done = _git(t.worktree, *args)
                    if done.returncode != 0:
                        return (f"root {t.root.name}: cannot move the indexed tree to {head[:7]}: "
                                f"{done.stderr.strip()[:300]}")
                return None
            self._remove(t)
            t.worktree.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            _git(t.top, "worktree", "prune")
            made = _git(t.top, "worktree", "add", "--quiet", "--detach", "--force", str(t.worktree), head)
            if made.returncode != 0:
                return f"root {t.root.name}: cannot make the indexed tree at {head[:7]}: {made.stderr.strip()[:300]}"
            log.info("root %s: indexing the commits of %s in its own worktree %s", t.root.name, t.top, t.worktree)
            return None
        except (OSError, subprocess.SubprocessError) as e:
            return f"root {t.root.name}: cannot move the indexed tree: {e}"

    @staticmethod
    def _common_dir(path: Path) -> Path | None:
        got = _git(path, "rev-parse", "--git-common-dir")
        if got.returncode != 0 or not got.stdout.strip():
            return None
        return (path / got.stdout.strip()).resolve()

    def _ours(self, t: Tree) -> bool:
        """Whether the folder is a worktree of this checkout's repository, at its top."""
        if not (t.worktree / ".git").is_file():
            return False
        return (_toplevel(t.worktree) == t.worktree.resolve()
                and self._common_dir(t.worktree) == self._common_dir(t.top))

    @staticmethod
    def _remove(t: Tree) -> None:
        if t.worktree.is_dir() and not t.worktree.is_symlink():
            shutil.rmtree(t.worktree)
        elif t.worktree.exists() or t.worktree.is_symlink():
            t.worktree.unlink()

    @staticmethod
    def _uncommitted(t: Tree) -> list[str]:
        """The root's files (those it takes) that differ from HEAD in the checkout: edited, added,
        deleted or new and untracked — paths relative to the root."""
        got = _git(t.top, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--",
                   t.sub or ".")
        if got.returncode != 0:
            return []
        out = []
        for entry in got.stdout.split("\0"):
            if len(entry) < 4:
                continue
            path = entry[3:]
            rel = path[len(t.sub) + 1:] if t.sub and path.startswith(t.sub + "/") else path
            if t.root.takes(rel):
                out.append(rel)
        return sorted(out)


def compare_checkout(path: Path, indexed: str, head: str | None = None) -> tuple[str, bool]:
    """How the checkout at `path` (at `head`, default its HEAD) stands against the indexed commit:
    (sentence, same?)."""
    try:
        repo = corpus.open_repo(path)
    except Exception:  # noqa: BLE001 — not a git checkout: nothing to compare
        repo = None
    mine = (head or corpus.head_id(repo)) if repo is not None else None
    if mine is None:
        return "", True
    if mine == indexed:
        return "your checkout is at the indexed commit", True
    try:
        ahead, behind = repo.ahead_behind(mine, indexed)
    except Exception:  # noqa: BLE001 — the indexed commit is not in this clone
        return (f"your checkout is at {mine[:7]}; the indexed commit is not in it "
                "(git fetch, then compare)"), False
    if behind == 0:
        return (f"your checkout is {ahead} commit{'s' * (ahead != 1)} ahead: results may miss what "
                f"those commits changed"), False
    if ahead == 0:
        return (f"your checkout is {behind} commit{'s' * (behind != 1)} behind the index: results may "
                "show changes you have not pulled"), False
    return (f"your checkout and the index have diverged ({ahead} ahead, {behind} behind): results "
            "may differ from your files"), False
