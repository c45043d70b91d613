"""Helpers that make real corpora (plain folders or git repos via the git CLI) in temp dirs."""

from __future__ import annotations

import hashlib
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

from remembrancer.indexer.config import Config, make_roots
from remembrancer.indexer.engine import Engine
from tests.support.env import GIT_IDENTITY


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Every file of `files` (relative path → text) under `root`; returns `root`."""
    for rel, text in files.items():
        write(root, rel, text)
    return root


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_IDENTITY}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def git_init(repo: Path) -> None:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")


def git_snapshot(repo: Path) -> dict:
    """Everything of the checkout's repository a write would change: each file under .git (its
    bytes and mtime), each folder's mtime (a lock file made and removed changes it), the worktree
    list and the status — read without a lock."""
    files = {".git": ("dir", (repo / ".git").stat().st_mtime_ns)}
    for p in sorted((repo / ".git").rglob("*")):
        st = p.lstat()
        rel = p.relative_to(repo).as_posix()
        files[rel] = (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir", st.st_mtime_ns)
    return {"files": files,
            "worktrees": git(repo, "worktree", "list", "--porcelain"),
            "status": git(repo, "--no-optional-locks", "status", "--porcelain")}


def assert_untouched(repo: Path, before: dict) -> None:
    """Nothing in the repository changed since `before` (git_snapshot): no worktree entry, no file
    or folder written."""
    after = git_snapshot(repo)
    assert not (repo / ".git" / "worktrees").exists()
    assert len(after["worktrees"].split("\n\n")) == 1, after["worktrees"]
    changed = {k for k in set(before["files"]) | set(after["files"]) if before["files"].get(k) != after["files"].get(k)}
    assert not changed, sorted(changed)
    assert after == before


def engine_for(roots: list[Path], embedder, **kw) -> Engine:
    cfg = Config(roots=make_roots(roots), **kw)
    return Engine(cfg, embedder=embedder)


def section_ids(engine, path: str) -> list[int]:
    return [s.id for s in engine.catalog.sections(path)]


@contextmanager
def real_model_engine(tmp: Path, files: dict[str, str]):
    """An engine over `files` (written under `tmp/notes`), indexed with the shipped default model,
    its data dir under `tmp`: for a module-scoped fixture, so the model embeds the notes once."""
    from remembrancer.indexer.models.embed import load_default_embedder

    mp = pytest.MonkeyPatch()
    mp.setenv("REMEMBRANCER_DATA_DIR", str(tmp / "data"))
    e = Engine(Config(roots=make_roots([write_tree(tmp / "notes", files)])), embedder=load_default_embedder())
    try:
        e.refresh()
        yield e
    finally:
        e.close()
        mp.undo()
