"""Faults a user can meet — a broken repository, a full disk, a read-only data folder — end in a
warning or a one-line error with the fix, never an internal error (exit 70) or a lost change
(issue 31 item 7). Real parts throughout: git repositories made with the git CLI, CLI
subprocesses, small real filesystems (tmpfs) for a full or read-only data folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.corpus_helpers import EXAMPLES, git, git_init, write


@pytest.fixture
def run(tmp_path, tiny_model_dir):
    """The CLI as a user runs it, on this test's data folder (REMEMBRANCER_DATA_DIR)."""
    (tmp_path / "config.toml").write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    env = {**os.environ, "REMEMBRANCER_DATA_DIR": str(tmp_path / "data"),
           "REMEMBRANCER_CONFIG": str(tmp_path / "config.toml"), "REMEMBRANCER_SOCKET": str(tmp_path / "no.sock")}

    def cli(*args: str, data: Path | None = None) -> subprocess.CompletedProcess:
        e = env if data is None else {**env, "REMEMBRANCER_DATA_DIR": str(data)}
        return subprocess.run([sys.executable, "-m", "remembrancer", *args], env=e, capture_output=True,
                              text=True, timeout=120)

    return cli


def _one_line_user_error(p: subprocess.CompletedProcess) -> None:
    assert p.returncode not in (0, 70), (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr
    assert len([l for l in p.stderr.splitlines() if l.strip()]) == 1, p.stderr


# -- a repository whose HEAD tree object is missing ------------------------------------------------
def test_a_repository_missing_its_head_tree_is_a_warning_not_a_crash(tmp_path, run):
    repo = tmp_path / "notes"
    shutil.copytree(EXAMPLES, repo)
    git_init(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first")
    write(repo, "hosts/db1.md", (repo / "hosts/db1.md").read_text() + "\nSee commit 1a2b3c4d for the fix.\n")
    git(repo, "commit", "-qam", "second")
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    (repo / ".git" / "objects" / tree[:2] / tree[2:]).unlink()   # loose objects: the tree is gone
    for args in (["index"], ["search", "pgbackrest restore"], ["verify", "hosts/db1.md"], ["history", "db1"]):
        p = run(*args, "--root", str(repo))
        assert p.returncode in (0, 1), (args, p.returncode, p.stderr)
        assert "internal error" not in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
    p = run("search", "pgbackrest restore", "--root", str(repo), "--json")
    assert json.loads(p.stdout)["results"]
