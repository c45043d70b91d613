"""The corpus walk on real folders and real git repos (made with the git CLI)."""

from __future__ import annotations

import os

from remembrancer.indexer.config import DEFAULT_EXCLUDES, make_roots
from remembrancer.indexer.ingest.corpus import blob_id, last_commit_dates, walk
from tests.support.corpus import git, git_init, write


def rels(result) -> list[str]:
    return [f.path for f in result.files]


def test_markdown_only_and_default_skips(tmp_path):
    write(tmp_path, "a.md", "# a")
    write(tmp_path, "b.markdown", "# b")
    write(tmp_path, "c.txt", "no")
    write(tmp_path, "node_modules/pkg/readme.md", "# no")
    write(tmp_path, ".venv/lib/x.md", "# no")
    write(tmp_path, "sub/__pycache__/x.md", "# no")
    write(tmp_path, "sub/d.MD", "# d")
    r = walk(make_roots([tmp_path]), DEFAULT_EXCLUDES, 10_000_000)
    assert rels(r) == ["a.md", "b.markdown", "sub/d.MD"]


def test_gitignore_is_answered_by_git_inside_a_repo(tmp_path):
    git_init(tmp_path)
    write(tmp_path, ".gitignore", "drafts/\n*.tmp.md\n")
    write(tmp_path, ".git/info/exclude", "private.md\n")
    write(tmp_path, "keep.md", "# k")
    write(tmp_path, "drafts/x.md", "# x")
    write(tmp_path, "y.tmp.md", "# y")
    write(tmp_path, "private.md", "# p")
    r = walk(make_roots([tmp_path]), DEFAULT_EXCLUDES, 10_000_000)
    assert rels(r) == ["keep.md"]


def test_gitignore_in_a_plain_folder_and_configured_excludes(tmp_path):
    write(tmp_path, ".gitignore", "build/\n")
    write(tmp_path, "notes/.gitignore", "secret-*.md\n")
    write(tmp_path, "build/x.md", "# x")
    write(tmp_path, "notes/secret-a.md", "# s")
    write(tmp_path, "notes/ok.md", "# ok")
    write(tmp_path, "archive/old.md", "# old")
    r = walk(make_roots([tmp_path]), DEFAULT_EXCLUDES + ("archive/",), 10_000_000)
    assert rels(r) == ["notes/ok.md"]


def test_size_cap_skips_with_a_warning(tmp_path):
    write(tmp_path, "big.md", "x" * 2000)
    write(tmp_path, "small.md", "# s")
    r = walk(make_roots([tmp_path]), DEFAULT_EXCLUDES, 1000)
    assert rels(r) == ["small.md"]
    assert any("big.md" in w and "cap" in w for w in r.warnings)


def test_symlinks(tmp_path):
    root = tmp_path / "root"
    write(root, "real.md", "# r")
    os.symlink(root / "real.md", root / "alias.md")            # same file twice → once
    write(tmp_path, "outside/o.md", "# o")
    os.symlink(tmp_path / "outside/o.md", root / "escape.md")  # points out of the root → skipped
    os.symlink(tmp_path / "outside", root / "linkdir")          # symlinked dir → not followed
    os.symlink(root, root / "loop")                             # loop → not followed
    os.symlink(root / "missing.md", root / "dangling.md")       # unreadable → reported
    r = walk(make_roots([root]), DEFAULT_EXCLUDES, 10_000_000)
    assert rels(r) == ["alias.md"] or rels(r) == ["real.md"]
    assert any("escape.md" in w and "outside" in w for w in r.warnings)
    assert any("dangling.md" in w for w in r.warnings)


def test_missing_root_is_reported_not_fatal(tmp_path):
    roots = make_roots([tmp_path])
    tmp_path.rename(tmp_path.with_name(tmp_path.name + "-gone"))
    r = walk(roots, DEFAULT_EXCLUDES, 10_000_000)
    assert r.failed_roots == [roots[0].name] and r.files == []


def test_blob_id_matches_git(tmp_path):
    git_init(tmp_path)
    p = write(tmp_path, "a.md", "# hello\n")
    assert blob_id(p.read_bytes()) == git(tmp_path, "hash-object", "a.md")


def test_last_commit_dates_from_history(tmp_path):
    git_init(tmp_path)
    write(tmp_path, "a.md", "# a\n")
    write(tmp_path, "b.md", "# b\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "one", "--date", "2030-01-02T10:00:00Z")
    write(tmp_path, "a.md", "# a2\n")
    git(tmp_path, "commit", "-qam", "two")
    import subprocess
    subprocess.run(["git", "commit", "--amend", "-q", "--no-edit"], cwd=tmp_path, check=True,
                   env={**os.environ, "GIT_COMMITTER_DATE": "2030-03-04T10:00:00Z", "GIT_AUTHOR_NAME": "t",
                        "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"})
    dates = last_commit_dates(make_roots([tmp_path])[0], {"a.md", "b.md"})
    assert dates["a.md"] == "2030-03-04"
    assert dates["b.md"] != "2030-03-04"


def test_nested_folders_and_a_root_below_the_work_tree(tmp_path):
    """The walk builds real paths from the folder names it walked (no realpath per file) and asks
    git with the root's place in the work tree found once: the same answers as resolving each file."""
    repo = tmp_path / "repo"
    git_init(repo)
    write(repo, ".gitignore", "notes/drafts/\n*.tmp.md\n")
    write(repo, "notes/a/b/real.md", "# r")
    os.symlink("real.md", repo / "notes/a/b/c-alias.md")        # same file again, same folder → once
    (repo / "notes/a/b/c").mkdir()
    os.symlink("../real.md", repo / "notes/a/b/c/deep.md")      # and from a sub-folder → once
    write(repo, "notes/drafts/x.md", "# ignored by the repo's .gitignore")
    write(repo, "notes/a/y.tmp.md", "# ignored too")
    write(repo, "notes/a/z.md", "# z")
    r = walk(make_roots([repo / "notes"]), DEFAULT_EXCLUDES, 10_000_000)
    assert rels(r) == ["a/b/real.md", "a/z.md"]      # real files are taken before symlinks
    assert r.warnings == [   # the second paths to it are left out, and said so (nothing else warns)
        "a/b/c-alias.md: skipped, a symlink to a file indexed under another path (a file is taken once, under its first path)",
        "a/b/c/deep.md: skipped, a symlink to a file indexed under another path (a file is taken once, under its first path)"]
    assert all(open(f.abs_path, "rb").read().startswith(b"# ") for f in r.files)


def test_what_the_walk_leaves_out_is_said_one_warning_per_file(tmp_path):
    """In-root symlinks the walk skips, and FIFOs, sockets and devices with a note's name, were
    dropped silently; each is said once (not a name the root does not take, nor an ignored folder)."""
    import socket

    from remembrancer.indexer.ingest import changes

    root = tmp_path / "root"
    write(root, "sub/real.md", "# r")
    os.symlink(root / "sub/real.md", root / "alias.md")       # a second path to an indexed file
    os.symlink(root / "sub", root / "linkdir")                 # a symlinked folder
    os.symlink(root / "sub", root / "ignored-link")            # … one the .gitignore names: nothing to say
    write(root, ".gitignore", "ignored-link\n")
    os.mkfifo(root / "fifo.md")
    os.mkfifo(root / "fifo.txt")                               # not a note's name: nothing to say
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock.md"))
    try:
        r = walk(make_roots([root]), DEFAULT_EXCLUDES, 10_000_000)
        assert rels(r) == ["sub/real.md"]
        assert sorted(r.warnings) == [
            "alias.md: skipped, a symlink to a file indexed under another path (a file is taken once, under its first path)",
            "fifo.md: skipped, not a regular file (a FIFO)",
            "linkdir: skipped, a symlinked folder (the index never follows symlinked folders)",
            "sock.md: skipped, not a regular file (a socket)"]
        # a targeted update (the daemon's watcher names the FIFO) says it the same way
        touched = changes.resolve(make_roots([root]), [str(root / "fifo.md")], DEFAULT_EXCLUDES, 10_000_000)
        assert touched.warnings == ["fifo.md: skipped, not a regular file (a FIFO)"] and not touched.files
    finally:
        sock.close()
