"""What the team store's writer indexes: the commit its checkout is at, never its working tree.

Readers read their own clones, and every answer names the indexed commit and compares it with the
reader's checkout (indexer/team.py): the store is only honest if the commit it names holds the
text it serves. An edit nobody committed on the writer's machine, or a file only that machine
has, is in no teammate's checkout — served, its search hits could not be opened and `read` would
show other text under a "fresh" verdict. So for each root inside a git work tree the writer keeps
a tree of its own in the data dir, moves it to the checkout's HEAD before each pass and indexes
that; the HEAD it records is the tree's, the commit whose files were read. The checkout's
uncommitted changes are counted and said (the writer's log, `doctor --store`), never indexed. A
root that is not in a git work tree is a plain folder: indexed as it is, and named by no commit.

Nothing is written into the checkout or its repository (the files are canonical; the index is
derived from them). The tree is a small repository of the writer's own (`git init` in the data
dir) that borrows the checkout's objects through `objects/info/alternates`, a file in the tree's
own `.git` naming the checkout's object store, which git and pygit2 only read. Its HEAD (detached),
index and config are its own; the checkout's `.git` gets no worktree entry, no ref, no index
write, no lock. `git checkout --force --detach <commit>` in it writes only the files that changed
and removes the ones the commit deleted; `git clean` removes anything else; a pass that finds the
tree at the commit already, and clean (one read-only `git status`), runs neither. When the commit
the tree was at is gone from the checkout's objects (a force-push, a rebase, then a gc) the tree is
made again from nothing. The
git run on the checkout only reads (rev-parse, status with GIT_OPTIONAL_LOCKS=0: no index
refresh written back; no fsmonitor daemon started). A submodule is an empty folder in the tree
(its objects are in its own repository, which the tree does not borrow): its files are not
indexed.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import logging
import os
import shutil
import subprocess
from pathlib import Path

from remembrancer.indexer.config import Root, ensure_data_dir
from remembrancer.indexer.ingest import corpus

log = logging.getLogger(__name__)

FOLDER = "team-writer"       # under the data dir: one tree per checkout and store
GIT_TIMEOUT_S = 600
EXAMPLES = 3                 # uncommitted files the writer's log names per root
# every git run: hooks never run (the checkout's post-checkout notify, a global hooksPath), no
# fsmonitor daemon is started for the checkout, submodules are never recursed into
SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "submodule.recurse=false")
# the tree's own repository: no reflog growing at every pass, no automatic gc
OWN_CONFIG = (("core.logAllRefUpdates", "false"), ("gc.auto", "0"), ("core.hooksPath", "/dev/null"))


# what would point git at another repository than the folder's own (a writer started from a hook)
REPOSITORY_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                  "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_PREFIX", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES")


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """git run for the writer, in `cwd`'s own repository, with its hooks and fsmonitor off."""
    env = {k: v for k, v in os.environ.items() if k not in REPOSITORY_ENV}
    env["GIT_OPTIONAL_LOCKS"] = "0"   # `git status` never writes the checkout's index back
    return subprocess.run(["git", *SAFE, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=GIT_TIMEOUT_S)


def _toplevel(path: Path) -> Path | None:
    """The work tree holding `path`, or None (a plain folder, a bare repository, no git)."""
    try:
        out = git(path, "rev-parse", "--show-toplevel")
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()).resolve() if out.returncode == 0 and out.stdout.strip() else None


def _head(path: Path) -> str | None:
    """The commit the repository at `path` is at (its HEAD), or None (no commit yet, no repository)."""
    got = git(path, "rev-parse", "--quiet", "--verify", "HEAD^{commit}")
    return got.stdout.strip() if got.returncode == 0 and got.stdout.strip() else None


@dataclasses.dataclass
class Tree:
    """One root as the writer indexes it."""
    root: Root                    # as configured: the writer's checkout (pulled, counted)
    indexed: Root                 # what the engine walks: the same name, in the writer's tree
    top: Path | None = None       # the checkout's work tree (None: a plain folder, indexed as it is)
    tree: Path | None = None      # the writer's tree of it, in the data dir (a repository of its own)
    sub: str = ""                 # the root's folder inside the work tree ("" for the work tree itself)
    git_paths: dict[str, Path] = dataclasses.field(default_factory=dict, repr=False)   # git_path's answers

    def git_path(self, name: str) -> Path | None:
        """The checkout's repository's `name` (objects, shallow, info/exclude), absolute: in its
        common dir for a linked worktree. Asked of git once per tree (where a repository keeps its
        files does not move while the writer runs); a failure is not kept, so it is asked again."""
        if name not in self.git_paths:
            got = git(self.top, "rev-parse", "--git-path", name)
            if got.returncode != 0 or not got.stdout.strip():
                return None
            self.git_paths[name] = (self.top / got.stdout.strip()).resolve()
        return self.git_paths[name]


@dataclasses.dataclass
class Synced:
    """One pass's look at the checkouts: what to warn about, and the uncommitted changes left out."""
    warnings: list[str] = dataclasses.field(default_factory=list)
    broken: list[str] = dataclasses.field(default_factory=list)   # roots with no tree to index: no pass now
    uncommitted: dict[str, int] = dataclasses.field(default_factory=dict)   # root name → files
    examples: dict[str, list[str]] = dataclasses.field(default_factory=dict)   # root name → EXAMPLES of them


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
            tree = ensure_data_dir() / FOLDER / f"{top.name}-{digest}"
            indexed = dataclasses.replace(root, path=tree / sub if sub else tree)
            self.trees.append(Tree(root, indexed, top, tree, sub))

    @property
    def roots(self) -> list[Root]:
        """The roots the writer's engine indexes (the configured names, the committed files)."""
        return [t.indexed for t in self.trees]

    def sync(self) -> Synced:
        """Every tree moved to its checkout's HEAD; the uncommitted changes counted. Called only by
        the writer that holds the store's lock (another one would move the tree under it)."""
        out = Synced()
        moved: set[Path] = set()
        broken: set[Path] = set()   # trees with no commit at all: indexing now would empty their roots
        for t in self.trees:
            if t.top is None:
                continue
            head, problem = _head(t.top), None
            if t.tree not in moved:   # two roots of one repository share its tree
                moved.add(t.tree)
                problem = self._move(t, head)
                if problem:
                    out.warnings.append(problem)
                    if head is not None and self._at(t) is None:
                        broken.add(t.tree)
            if t.tree in broken:
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
                out.examples[t.root.name] = changed[:EXAMPLES]
        return out

    def _move(self, t: Tree, head: str | None) -> str | None:
        """The tree at the checkout's HEAD (made when missing, not one of this checkout's, or at a
        commit its objects no longer hold); a problem to warn about, else None. A failed move
        leaves the tree at the commit it was: the recorded HEAD is the tree's, so the store never
        names a commit it did not read."""
        try:
            if head is None:   # no commit: an empty folder, indexed as nothing
                if (t.tree.exists() and not t.tree.is_dir()) or (t.tree.is_dir() and any(t.tree.iterdir())):
                    self._remove(t)
                t.tree.mkdir(parents=True, exist_ok=True, mode=0o700)
                return None
            objects = t.git_path("objects")
            if objects is None:
                return f"root {t.root.name}: cannot read the repository of {t.top}"
            at = self._at(t)
            if at is None:   # first pass, data dir cleaned, old commit gone: from nothing
                made = self._make(t, objects)
                if made:
                    return made
                log.info("root %s: indexing the commits of %s in a tree of its own, %s", t.root.name, t.top,
                         t.tree)
            self._borrow_files(t)
            if at == head and self._clean(t):   # nothing to write or remove: the usual pass
                return None
            # HEAD moves only when every file is written: until then the tree names the commit it was at
            for args in (("checkout", "--quiet", "--force", "--detach", head), ("clean", "--quiet", "-ffdx")):
                done = git(t.tree, *args)
                if done.returncode != 0:
                    return (f"root {t.root.name}: cannot move the indexed tree to {head[:7]}: "
                            f"{done.stderr.strip()[:300]}")
            return None
        except (OSError, subprocess.SubprocessError) as e:
            return f"root {t.root.name}: cannot move the indexed tree: {e}"

    def _make(self, t: Tree, objects: Path) -> str | None:
        """A new repository in the data dir at the tree's place, borrowing the checkout's objects:
        a problem, else None."""
        self._remove(t)
        t.tree.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fmt = git(t.top, "rev-parse", "--show-object-format").stdout.strip() or "sha1"
        made = git(t.tree.parent, "init", "--quiet", f"--object-format={fmt}", str(t.tree))
        if made.returncode != 0:
            self._remove(t)
            return f"root {t.root.name}: cannot make the indexed tree: {made.stderr.strip()[:300]}"
        for key, value in OWN_CONFIG:
            git(t.tree, "config", key, value)
        (t.tree / ".git" / "objects" / "info").mkdir(parents=True, exist_ok=True)
        (t.tree / ".git" / "objects" / "info" / "alternates").write_text(f"{objects}\n")
        return None

    def _borrow_files(self, t: Tree) -> None:
        """Copies of what the checkout's repository says about its objects and ignores: a shallow
        clone's boundary (without it the history walk stops at a missing parent) and info/exclude."""
        for name in ("shallow", "info/exclude"):
            mine = t.tree / ".git" / name
            theirs = t.git_path(name)
            text = theirs.read_bytes() if theirs is not None and theirs.is_file() else None
            if text is None:
                if name == "shallow":
                    mine.unlink(missing_ok=True)
            elif not mine.is_file() or mine.read_bytes() != text:
                mine.parent.mkdir(parents=True, exist_ok=True)
                mine.write_bytes(text)

    @staticmethod
    def _at(t: Tree) -> str | None:
        """The commit the tree is at, when it is one of this checkout's trees (a repository of its
        own at its top, borrowing the checkout's objects) and the checkout's objects still hold
        that commit; else None."""
        own = t.tree / ".git"
        if not own.is_dir() or t.tree.is_symlink():
            return None
        objects = t.git_path("objects")
        try:
            if objects is None or (own / "objects" / "info" / "alternates").read_text().strip() != str(objects):
                return None
        except OSError:
            return None
        if _toplevel(t.tree) != t.tree.resolve():
            return None
        head = _head(t.tree)
        if head is None or git(t.tree, "cat-file", "-e", f"{head}^{{tree}}").returncode != 0:
            return None
        return head

    @staticmethod
    def _clean(t: Tree) -> bool:
        """Whether the tree's files are its HEAD's and nothing else: no file changed, deleted, new
        or ignored (what `checkout --force` and `clean -ffdx` would undo). One read-only `git
        status` (it compares contents where a file's stat cannot tell); a failure says not clean."""
        got = git(t.tree, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored")
        return got.returncode == 0 and not got.stdout

    @staticmethod
    def _remove(t: Tree) -> None:
        if t.tree.is_dir() and not t.tree.is_symlink():
            shutil.rmtree(t.tree)
        elif t.tree.exists() or t.tree.is_symlink():
            t.tree.unlink()

    @staticmethod
    def _uncommitted(t: Tree) -> list[str]:
        """The root's files (those it takes) that differ from HEAD in the checkout: edited, added,
        deleted or new and untracked — paths relative to the root. Read only (GIT_OPTIONAL_LOCKS=0)."""
        got = git(t.top, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames",
                   "--ignore-submodules=all", "--", t.sub or ".")
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


class Standing(enum.Enum):
    """How a reader's checkout stands against the indexed commit."""
    NO_CHECKOUT = "no_checkout"   # not a git checkout: nothing to compare
    SAME = "same"
    NOT_FETCHED = "not_fetched"   # the indexed commit is not in the reader's clone
    AHEAD = "ahead"
    BEHIND = "behind"
    DIVERGED = "diverged"


# what each standing means for the answers (a standing not here says nothing more)
_MEANS = {Standing.AHEAD: "results may miss what those commits changed",
          Standing.BEHIND: "results may show changes you have not pulled",
          Standing.DIVERGED: "results may differ from your files"}


@dataclasses.dataclass(frozen=True)
class Comparison:
    """A reader's checkout against the indexed commit: the kind, for code to decide on, and the
    numbers its wording needs (freshness lines and `read`'s errors word it from these alone)."""
    kind: Standing
    mine: str = ""     # the checkout's commit
    ahead: int = 0
    behind: int = 0

    @property
    def same(self) -> bool:
        """Whether the checkout is at the indexed commit (a folder with no commit counts as the same)."""
        return self.kind in (Standing.NO_CHECKOUT, Standing.SAME)

    def state(self) -> str:
        """Where the checkout is, in words ("" when there is no checkout to compare)."""
        def commits(n: int) -> str:
            return f"{n} commit{'s' * (n != 1)}"
        return {Standing.NO_CHECKOUT: "",
                Standing.SAME: "your checkout is at the indexed commit",
                Standing.NOT_FETCHED: (f"your checkout is at {self.mine[:7]}; the indexed commit is not in it "
                                       "(git fetch, then compare)"),
                Standing.AHEAD: f"your checkout is {commits(self.ahead)} ahead",
                Standing.BEHIND: f"your checkout is {commits(self.behind)} behind the index",
                Standing.DIVERGED: (f"your checkout and the index have diverged ({self.ahead} ahead, "
                                    f"{self.behind} behind)")}[self.kind]

    def sentence(self) -> str:
        """Where the checkout is and what that means for the answers ("" for no checkout)."""
        means = _MEANS.get(self.kind)
        return f"{self.state()}: {means}" if means else self.state()


def compare_checkout(path: Path, indexed: str, head: str | None = None) -> Comparison:
    """How the checkout at `path` (at `head`, default its HEAD) stands against the indexed commit."""
    try:
        repo = corpus.open_repo(path)
    except Exception:  # noqa: BLE001 — not a git checkout: nothing to compare
        repo = None
    mine = (head or corpus.head_id(repo)) if repo is not None else None
    if mine is None:
        return Comparison(Standing.NO_CHECKOUT)
    if mine == indexed:
        return Comparison(Standing.SAME, mine)
    try:
        ahead, behind = repo.ahead_behind(mine, indexed)
    except Exception:  # noqa: BLE001 — the indexed commit is not in this clone
        return Comparison(Standing.NOT_FETCHED, mine)
    kind = Standing.AHEAD if behind == 0 else Standing.BEHIND if ahead == 0 else Standing.DIVERGED
    return Comparison(kind, mine, ahead, behind)
