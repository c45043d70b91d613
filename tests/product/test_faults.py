"""Faults a user can meet — a broken repository, a full disk, a read-only data folder — end in a
warning or a one-line error with the fix, never an internal error (exit 70) or a lost change
(issue 31 item 7). Real parts throughout: git repositories made with the git CLI, CLI
subprocesses, small real filesystems (tmpfs) for a full or read-only data folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.corpus import git, git_init, write
from tests.support.env import remembrancer_env
from tests.support.paths import EXAMPLES


@pytest.fixture
def run(tmp_path, tiny_model_dir):
    """The CLI as a user runs it, on this test's data folder (REMEMBRANCER_DATA_DIR)."""
    (tmp_path / "config.toml").write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    env = remembrancer_env(data=tmp_path / "data", config=tmp_path / "config.toml", socket=tmp_path / "no.sock")

    def cli(*args: str, data: Path | None = None) -> subprocess.CompletedProcess:
        e = env if data is None else {**env, "REMEMBRANCER_DATA_DIR": str(data)}
        return run_cli(*args, env=e)

    cli.env = env
    return cli


def _one_line_user_error(p: subprocess.CompletedProcess) -> None:
    assert p.returncode not in (0, 70), (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr
    assert len([l for l in p.stderr.splitlines() if l.strip()]) == 1, p.stderr


# -- a repository whose HEAD tree object is missing ------------------------------------------------
@pytest.mark.slow
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


# -- a full disk ------------------------------------------------------------------------------------
@pytest.fixture
def small_fs(tmp_path):
    """A real 3 MB filesystem (tmpfs) at tmp_path/"data", to fill up."""
    mnt = tmp_path / "data"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"a small filesystem cannot be mounted here ({r.stderr.strip()}): mounting needs root")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(mnt: Path) -> Path:
    """Fill the filesystem to the last block; the filler file is returned (delete it to free the disk)."""
    filler = mnt / f"filler-{uuid.uuid4().hex}"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for block in (65536, 4096, 512, 1):
            try:
                while os.write(fd, b"\0" * block):
                    pass
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def _big_edit(root: Path) -> None:
    """An edit whose new rows need new catalog pages (it cannot fit in the pages already there)."""
    lines = "\n".join(f"zebra migration step {i}: move shard {i * 7} of the zebra cluster to rack {i % 13}"
                      for i in range(400))
    write(root, "hosts/db2.md", (root / "hosts/db2.md").read_text() + f"\n## Zebra migration\n\n{lines}\n")


@pytest.mark.slow
def test_the_daemon_retries_an_ingest_that_met_a_full_disk_and_never_calls_it_fresh(tmp_path, small_fs, tiny_model_dir):
    from tests.support.daemon import DaemonProc, wait_for

    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLES, notes)
    d = DaemonProc(tmp_path, [notes], tiny_model_dir).start()
    try:
        filler = fill(small_fs)
        _big_edit(notes)

        def failed():
            st = d.ping()
            return st if st and "last ingest failed" in (st["freshness"].get("reason") or "") else None

        failed()   # the edit met the full disk: the verdict says so …
        st = wait_for(failed, timeout=60)
        assert st["freshness"]["verdict"] == "stale" and "is full" in st["freshness"]["reason"]
        out = d.search("zebra migration shard rack")
        assert out["index"]["verdict"] != "fresh"   # … and so does every answer while it is not indexed
        # each retry is one line in daemon.log saying what is wrong, never a traceback (it is no bug)
        retries = lambda: [line for line in d.log.read_text().splitlines() if "ingest failed: " in line]
        wait_for(lambda: len(retries()) >= 2, timeout=30)
        assert all("is full" in line and "retrying in" in line for line in retries()), retries()
        assert "Traceback" not in d.log.read_text()
        filler.unlink()   # the disk has room again: a retry (not the 10-minute rescan) indexes the edit

        def indexed():
            o = d.search("zebra migration shard rack")
            return o if o["index"]["verdict"] == "fresh" and o["results"] and \
                o["results"][0]["path"] == "hosts/db2.md" else None

        wait_for(indexed, timeout=90, step=0.5)
    finally:
        d.stop()


@pytest.mark.slow
def test_a_full_disk_is_a_one_line_error_and_searches_answer_from_what_is_there(tmp_path, small_fs, run):
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLES, notes)
    assert run("index", "--root", str(notes)).returncode == 0
    filler = fill(small_fs)
    _big_edit(notes)
    p = run("index", "--root", str(notes))
    _one_line_user_error(p)
    assert "full" in p.stderr and "REMEMBRANCER_DATA_DIR" in p.stderr
    for args in (["search", "pgbackrest restore"], ["status"], ["read", "hosts/db1.md"]):
        p = run(*args, "--root", str(notes), "--json")
        assert p.returncode == 0, (args, p.stderr)
        assert "internal error" not in p.stderr
    out = json.loads(run("search", "pgbackrest restore", "--root", str(notes), "--json").stdout)
    assert out["results"] and out["index"]["verdict"] == "stale" and "full" in out["index"]["reason"]
    filler.unlink()
    assert run("index", "--root", str(notes)).returncode == 0   # room again: the edit is indexed
    out = json.loads(run("search", "zebra migration shard rack", "--root", str(notes), "--json").stdout)
    assert out["index"]["verdict"] == "fresh" and out["results"][0]["path"] == "hosts/db2.md"


@pytest.mark.slow
def test_a_full_disk_never_fails_a_notes_search_over_the_conversations_index(tmp_path, small_fs, run):
    """From a project with Claude Code transcripts, a notes search also looks in the conversations
    index for Claude Code's memory files; with the disk full that index was never built, and the
    notes search failed over it: "no index yet for …/.claude/projects/…", exit 3. It answers from
    the notes' index, stale, saying why, and says the memory files were not searched."""
    from tests.support.transcripts import Session

    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLES, notes)
    project = tmp_path / "work"
    project.mkdir()
    assert run("index", "--root", str(notes)).returncode == 0   # no transcripts yet
    claude = tmp_path / "claude"
    s = Session(claude / "projects", cwd=str(project))
    s.prompt("How does the redis failover work?")
    s.says("Sentinel promotes the replica.")
    filler = fill(small_fs)
    _big_edit(notes)
    env = {**run.env, "CLAUDE_CONFIG_DIR": str(claude)}
    p = run_cli("index", "--root", str(notes), env=env, cwd=project)
    _one_line_user_error(p)
    assert "full" in p.stderr
    p = run_cli("search", "redis failover", "--corpus", "notes", "--root", str(notes), "--json", env=env, cwd=project)
    assert p.returncode == 0, (p.returncode, p.stderr)
    out = json.loads(p.stdout)
    assert out["results"] and out["index"]["verdict"] == "stale" and "full" in out["index"]["reason"], out["index"]
    assert any(n.startswith("Claude Code's memory files were not searched") for n in out["notes"]), out
    filler.unlink()
    p = run_cli("search", "redis failover", "--corpus", "notes", "--root", str(notes), "--json", env=env, cwd=project)
    assert p.returncode == 0 and json.loads(p.stdout)["index"]["verdict"] == "fresh", p.stderr


@pytest.mark.slow
def test_a_read_only_data_folder_is_a_one_line_error_and_searches_still_answer(tmp_path, small_fs, run):
    """A read-only mount (chmod does not stop root): every command used to exit 70."""
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLES, notes)
    assert run("index", "--root", str(notes)).returncode == 0
    r = subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"the data folder cannot be remounted read-only here ({r.stderr.strip()})")
    p = run("index", "--root", str(notes))
    _one_line_user_error(p)
    assert "read-only" in p.stderr
    for args in (["search", "pgbackrest restore"], ["status"], ["read", "hosts/db1.md"], ["list"]):
        p = run(*args, "--root", str(notes), "--json")
        assert p.returncode == 0, (args, p.returncode, p.stderr)
        assert "internal error" not in p.stderr and "Traceback" not in p.stderr
    out = json.loads(run("search", "pgbackrest restore", "--root", str(notes), "--json").stdout)
    assert out["results"] and out["index"]["verdict"] == "stale" and "read-only" in out["index"]["reason"]
