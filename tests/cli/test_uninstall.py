"""`remembrancer uninstall` as a leaving user runs it (issue 27, leaving): a real daemon on a real
socket, real git hooks in a repository made with the git CLI, real Claude Code and Claude Desktop
settings files in a throwaway HOME. `claude` is kept off PATH (CI has no Claude Code): the step
then names the exact command to run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.support.cli import run_cli
from tests.support.corpus import git, git_init
from tests.support.daemon import DaemonProc
from tests.support.env import remembrancer_env


@pytest.mark.slow
def test_uninstall_removes_what_was_installed_and_never_the_notes(tmp_path, notes, tiny_model_dir):
    git_init(notes)
    git(notes, "add", "-A")
    git(notes, "commit", "-qm", "notes")
    before = {p: p.read_bytes() for p in sorted(notes.rglob("*")) if p.is_file() and ".git" not in p.parts}
    bin_dir = tmp_path / "bin"   # git and sh, not claude
    bin_dir.mkdir()
    for tool in ("git", "sh"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    d = DaemonProc(tmp_path, [notes], tiny_model_dir)
    env = {**d.env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "PATH": str(bin_dir)}
    env.pop("CLAUDE_CONFIG_DIR", None)   # this user's Claude Code settings are the ones under HOME
    d.env = env

    def cli(*args: str) -> subprocess.CompletedProcess:
        p = run_cli(*args, env=env)
        assert p.returncode == 0, (args, p.stdout, p.stderr)
        return p

    settings = home / ".claude" / "settings.json"
    settings.write_text(json.dumps({"model": "opus"}))
    # what `claude mcp add --scope user remembrancer …` leaves (`claude` itself is not on PATH here)
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"remembrancer": {"command": "remembrancer"}}}))
    cli("hooks", "install", str(notes))
    cli("claude-hooks", "install")
    cli("mcp", "config", "--root", str(notes), "--install")
    desktop = home / ".config" / "Claude" / "claude_desktop_config.json"
    config = json.loads(desktop.read_text())
    config["mcpServers"]["other"] = {"command": "/bin/other"}
    desktop.write_text(json.dumps(config))
    d.start()
    index_dirs = list((tmp_path / "data" / "indexes").iterdir())
    assert index_dirs and "remembrancer" in settings.read_text()

    dry = cli("uninstall", "--dry-run", "--purge").stdout
    assert "would remove the Claude Code hooks" in dry and "would remove every index" in dry
    for there in ("the Claude Code MCP server", "the Claude Desktop MCP server", f"the running daemon (pid {d.proc.pid})",
                  f"the git hooks of {notes}"):
        assert f"would remove {there}" in dry, dry
    assert "would remove the service" not in dry and "not present (nothing to do): service" in dry
    assert "remembrancer" in settings.read_text() and d.proc.poll() is None and all(p.exists() for p in index_dirs)

    out = cli("uninstall", "--purge").stdout
    assert "Claude Code hooks: removed" in out
    assert "`claude` is not on PATH — run: claude mcp remove remembrancer --scope user" in out
    assert "Claude Desktop MCP server: removed" in out
    assert "git hooks: " in out and "removed" in out.split("git hooks: ")[1].splitlines()[0]
    assert f"daemon: stopped (pid {d.proc.pid})" in out
    assert "indexes: deleted 1" in out and "pipx uninstall remembrancer" in out.splitlines()[-1]
    assert json.loads(settings.read_text()) == {"model": "opus"}
    assert json.loads(desktop.read_text())["mcpServers"] == {"other": {"command": "/bin/other"}}
    hooks = notes / ".git" / "hooks"
    assert not any("remembrancer" in p.read_text(errors="replace") for p in hooks.iterdir() if p.is_file())
    d.proc.wait(30)
    assert not any(p.exists() for p in index_dirs)
    assert {p: p.read_bytes() for p in sorted(notes.rglob("*")) if p.is_file() and ".git" not in p.parts} == before

    again = cli("uninstall").stdout   # nothing left: every step says so, none fails
    assert "Claude Code hooks: not installed" in again and "daemon: none running" in again
    assert "Claude Desktop MCP server: not installed" in again and "indexes kept" in again


def test_purge_deletes_the_query_log_and_plain_uninstall_keeps_it(tmp_path):
    """The query log holds the questions a user asked (their words, not the notes'): `--purge`
    takes it with the indexes, rotated copy and side files included; a plain uninstall keeps it."""
    home = tmp_path / "home"
    home.mkdir()
    env = remembrancer_env(data=tmp_path / "data", config=tmp_path / "config.toml", socket=tmp_path / "d.sock",
                           home=home, XDG_CONFIG_HOME=str(home / ".config"))
    logs = tmp_path / "data" / "logs"
    logs.mkdir(parents=True)
    files = [logs / name for name in ("queries.jsonl", "queries.jsonl.1", "queries.jsonl.lock", "queries.jsonl.policy")]
    for f in files:
        f.write_text('{"query": "how do I rotate the prod db password"}\n')

    kept = run_cli("uninstall", env=env)
    assert kept.returncode == 0, kept.stderr
    assert "query log" not in kept.stdout and all(f.exists() for f in files)

    dry = run_cli("uninstall", "--dry-run", "--purge", env=env)
    assert "would remove the query log" in dry.stdout and all(f.exists() for f in files)

    purged = run_cli("uninstall", "--purge", env=env)
    assert purged.returncode == 0, purged.stderr
    assert f"query log: deleted ({files[0]})" in purged.stdout
    assert not any(f.exists() for f in files)
    assert "query log: none" in run_cli("uninstall", "--purge", env=env).stdout


def test_a_dry_run_lists_only_what_is_there(tmp_path, notes):
    """`uninstall --dry-run` on a machine with only the Claude Code hooks and a repository's git
    hooks: it names those two, and no Claude Desktop entry, service, MCP registration or daemon,
    none of which exists (it used to list every step whatever was there); the real run then says
    of each absent one that there was nothing, never that it removed it."""
    git_init(notes)
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    bin_dir = tmp_path / "bin"   # git and sh, not claude
    bin_dir.mkdir()
    for tool in ("git", "sh"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = remembrancer_env(data=tmp_path / "data", config=tmp_path / "config.toml", socket=tmp_path / "run" / "d.sock",
                           home=home, XDG_CONFIG_HOME=str(home / ".config"), PATH=str(bin_dir))
    env.pop("CLAUDE_CONFIG_DIR", None)
    for args in (("hooks", "install", str(notes)), ("claude-hooks", "install")):
        p = run_cli(*args, env=env)
        assert p.returncode == 0, p.stderr

    dry = run_cli("uninstall", "--dry-run", "--root", str(notes), env=env)
    assert dry.returncode == 0, dry.stderr
    would = [line for line in dry.stdout.splitlines() if line.startswith("would remove")]
    assert len(would) == 2, dry.stdout
    assert would[0].startswith(f"would remove the Claude Code hooks in {home / '.claude' / 'settings.json'}")
    assert would[1] == f"would remove the git hooks of {notes} (post-commit, post-merge, post-checkout, post-rewrite)"
    for absent in ("Claude Desktop", "service", "daemon", "MCP server"):
        assert not any(absent in line for line in would), dry.stdout
    assert ("not present (nothing to do): Claude Code MCP server, Claude Desktop MCP server, service, running daemon"
            in dry.stdout)

    out = run_cli("uninstall", "--root", str(notes), env=env)
    assert out.returncode == 0, out.stderr
    for said in ("Claude Code hooks: removed", "Claude Code MCP server: not registered",
                 "Claude Desktop MCP server: no config file", "service: no service installed", "daemon: none running"):
        assert said in out.stdout, out.stdout
    assert "removed" in out.stdout.split("git hooks: ")[1].splitlines()[0]
    again = run_cli("uninstall", "--dry-run", "--root", str(notes), env=env)
    assert "would remove" not in again.stdout and "nothing to remove" in again.stdout
