"""The team writer's trees (indexer/committed.py): each root indexed as the commit its checkout
is at, from a tree in the data dir — and nothing ever written into the checkout or its repository."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from remembrancer.indexer import committed
from remembrancer.indexer.config import make_roots
from remembrancer.indexer.ingest import corpus
from tests.support.corpus import assert_untouched, git, git_init, git_snapshot, write


def commit(repo: Path, msg: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", msg)
    return git(repo, "rev-parse", "HEAD")


def test_the_tree_follows_the_commits_and_the_checkout_is_never_written(tmp_path, data_env):
    repo = tmp_path / "notes"
    git_init(repo)
    write(repo, "a.md", "# A\n\none\n")
    write(repo, "keep.md", "# Keep\n\nunchanged\n")
    write(repo, "old.md", "# Old\n\nto be deleted\n")
    first = commit(repo, "one")
    write(repo, "draft.md", "# Draft\n\nnot committed\n")   # only this machine has it
    (repo / "a.md").write_text("# A\n\nedited, not committed\n")
    trees = committed.CommittedTrees(make_roots([repo]), "store")
    t = trees.trees[0]
    before = git_snapshot(repo)

    synced = trees.sync()   # the first pass: the tree made, at HEAD
    assert_untouched(repo, before)
    assert synced.uncommitted == {"notes": 2} and not synced.warnings and not synced.broken
    tree = t.tree
    assert str(tree).startswith(os.environ["REMEMBRANCER_DATA_DIR"]) and trees.roots[0].path == tree
    assert sorted(p.name for p in tree.iterdir()) == [".git", "a.md", "keep.md", "old.md"]
    assert (tree / "a.md").read_text() == "# A\n\none\n"
    assert corpus.head_id(corpus.open_repo(tree)) == first   # the commit the engine records
    kept = (tree / "keep.md").stat()

    (repo / "a.md").write_text("# A\n\ntwo\n")
    (repo / "old.md").unlink()
    (repo / "draft.md").unlink()
    second = commit(repo, "two")
    before = git_snapshot(repo)
    assert trees.sync().uncommitted == {}
    assert_untouched(repo, before)
    assert corpus.head_id(corpus.open_repo(tree)) == second
    assert (tree / "a.md").read_text() == "# A\n\ntwo\n" and not (tree / "old.md").exists()
    now = (tree / "keep.md").stat()   # only what changed was written
    assert (now.st_ino, now.st_mtime_ns) == (kept.st_ino, kept.st_mtime_ns)

    # a pass at the same commit over a clean tree writes nothing, not even the tree's index
    index = (tree / ".git" / "index").stat()
    calls = []
    real_git = committed.git
    committed.git = lambda cwd, *args: (calls.append(args), real_git(cwd, *args))[1]
    try:
        assert not trees.sync().warnings
        asked = {a for args in calls for a in args}   # where the checkout keeps its objects: asked once, before
        assert not asked & {"checkout", "clean", "--git-path"}
        after = (tree / ".git" / "index").stat()
        assert (after.st_ino, after.st_mtime_ns) == (index.st_ino, index.st_mtime_ns)
        # … and a tree someone changed is put back: an edit, a deletion, a new file, an ignored one
        (tree / "a.md").write_text("# A\n\nedited in the tree\n")
        (tree / "keep.md").unlink()
        write(tree, "stray/new.md", "# New\n\nnot in any commit\n")
        write(repo, ".git/info/exclude", "*.tmp\n")   # the tree borrows the checkout's excludes
        write(tree, "x.tmp", "ignored\n")
        calls.clear()
        assert not trees.sync().warnings
        assert {"checkout", "clean"} <= {args[0] for args in calls}
    finally:
        committed.git = real_git
    assert corpus.head_id(corpus.open_repo(tree)) == second
    assert sorted(p.name for p in tree.iterdir()) == [".git", "a.md", "keep.md"]
    assert (tree / "a.md").read_text() == "# A\n\ntwo\n"

    # a rebase and a force-push: the commit the tree was at is gone from the checkout's objects
    git(repo, "reset", "-q", "--hard", first)
    write(repo, "b.md", "# B\n\nrewritten history\n")
    third = commit(repo, "three")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    assert subprocess.run(["git", "cat-file", "-e", second], cwd=repo).returncode != 0
    before = git_snapshot(repo)
    assert not trees.sync().warnings
    assert_untouched(repo, before)
    assert corpus.head_id(corpus.open_repo(tree)) == third
    assert sorted(p.name for p in tree.iterdir()) == [".git", "a.md", "b.md", "keep.md", "old.md"]
    assert (tree / "a.md").read_text() == "# A\n\none\n"


def test_a_subfolder_root_a_submodule_and_a_plain_folder(tmp_path, data_env):
    lib = tmp_path / "lib"
    git_init(lib)
    write(lib, "inside.md", "# Inside\n\nthe submodule's note\n")
    commit(lib, "lib")
    repo = tmp_path / "repo"
    git_init(repo)
    write(repo, "docs/guide.md", "# Guide\n\ncommitted\n")
    write(repo, "src/code.md", "# Code\n\noutside the root\n")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "docs/lib")
    head = commit(repo, "with a submodule")
    plain = tmp_path / "plain"
    write(plain, "p.md", "# Plain\n\nno git here\n")
    trees = committed.CommittedTrees(make_roots([repo / "docs", plain]), "store")
    docs, folder = trees.trees
    before = git_snapshot(repo)
    plain_before = sorted((p.relative_to(plain).as_posix(), p.read_bytes()) for p in plain.rglob("*"))

    synced = trees.sync()
    assert_untouched(repo, before)
    assert not synced.warnings and not synced.broken and synced.uncommitted == {}
    assert docs.indexed.path == docs.tree / "docs" and (docs.indexed.path / "guide.md").is_file()
    assert corpus.head_id(corpus.open_repo(docs.indexed.path)) == head
    sub = docs.indexed.path / "lib"
    assert sub.is_dir() and not any(sub.iterdir())   # the submodule: an empty folder, nothing indexed
    assert not (lib / ".git" / "worktrees").exists()
    # the plain folder is indexed where it is, as it is, and nothing is made for it
    assert folder.indexed.path == plain and folder.tree is None
    assert sorted((p.relative_to(plain).as_posix(), p.read_bytes()) for p in plain.rglob("*")) == plain_before
    assert not (Path(os.environ["REMEMBRANCER_DATA_DIR"]) / committed.FOLDER / "plain").exists()
