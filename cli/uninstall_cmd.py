"""`remembrancer uninstall` — take out everything an install put in the user's tools, in the order
that leaves nothing failing behind: the Claude Code hooks, the MCP registrations, the service, the
git hooks of every known repository, the daemon; with `--purge` the indexes and the query log too
(the questions asked: derived from the user, not from the notes). Never the notes,
and never the package itself (the package manager that installed it removes it: the last line says how).

Each step says what it did or why it did nothing; `--dry-run` says what it would do, naming only
what is there (each step looks first: `present()`), and lists in one line what is not."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from remembrancer.indexer.errors import UserError

MCP_NAME = "remembrancer"


@dataclass
class Step:
    name: str                              # what it is about, for the "not present" line
    present: Callable[[], str | None]      # what of it is there, said as an object of "would remove"; None: nothing
    do: Callable[[], str]                  # removes it; the line that says what happened


def _claude_code_registered() -> bool:
    """Whether Claude Code has our MCP server: `claude mcp get` when `claude` is on PATH, else its
    user config file (`$CLAUDE_CONFIG_DIR/.claude.json`, else ~/.claude.json), where a user-scope
    registration is kept."""
    if shutil.which("claude") is not None:
        try:
            p = subprocess.run(["claude", "mcp", "get", MCP_NAME], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return True   # cannot tell: the step runs and says what `claude` answered
        return p.returncode == 0
    dirs = [d.strip() for d in os.environ.get("CLAUDE_CONFIG_DIR", "").split(",") if d.strip()]
    for f in [Path(d).expanduser() / ".claude.json" for d in dirs] or [Path.home() / ".claude.json"]:
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and MCP_NAME in (data.get("mcpServers") or {}):
            return True
    return False


def _git_work_trees(extra_roots: list[str]) -> list[Path]:
    """The repositories the git hooks may be in: every known corpus's roots and the config's."""
    from remembrancer.indexer import indexes
    from remembrancer.indexer.config import load_config

    folders: list[Path] = [Path(r) for r in extra_roots]
    try:
        folders += [r.path for r in load_config(None).roots]
    except UserError:
        pass
    for index in indexes.known():
        folders += list(index.roots or [])
    seen, out = set(), []
    for f in folders:
        f = Path(f).expanduser().resolve()
        try:
            top = subprocess.run(["git", "-C", str(f), "rev-parse", "--show-toplevel"], capture_output=True,
                                 text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if top.returncode == 0 and top.stdout.strip() and top.stdout.strip() not in seen:
            seen.add(top.stdout.strip())
            out.append(Path(top.stdout.strip()))
    return out


def steps(purge: bool, settings: Path | None, roots: list[str]) -> list[Step]:
    """The steps in order; each looks whether there is anything to remove before it removes it."""
    from remembrancer.daemon.service import installed_service_files, uninstall_service
    from remembrancer.hooks import claude_settings
    from remembrancer.hooks.install import installed_hooks, uninstall_hooks
    from remembrancer.mcp_server.client_config import desktop_config_path, desktop_installed, uninstall_desktop

    def hooks_present():
        try:
            found = claude_settings.installed(settings)
        except UserError as e:   # the step itself refuses it with this reason
            return f"the Claude Code hooks in {settings or ', '.join(map(str, claude_settings.settings_paths()))} ({e})"
        return "; ".join(f"the Claude Code hooks in {f} ({', '.join(events)})" for f, events in found) or None

    def claude_hooks():
        r = claude_settings.uninstall(settings)
        return f"Claude Code hooks: {r['result']} ({r['settings']})"

    def claude_code_mcp():
        cmd = ["claude", "mcp", "remove", MCP_NAME, "--scope", "user"]
        if shutil.which("claude") is None:
            if not _claude_code_registered():
                return "Claude Code MCP server: not registered"
            return f"Claude Code MCP server: `claude` is not on PATH — run: {' '.join(cmd)}"
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        said = (p.stdout + p.stderr).strip().splitlines()
        return f"Claude Code MCP server: {'removed' if p.returncode == 0 else 'not registered'}" + (
            f" ({said[0]})" if said else "")

    def desktop_present():
        try:
            there = desktop_installed()
        except UserError as e:
            return f"the Claude Desktop MCP server in {desktop_config_path()} ({e})"
        return f"the Claude Desktop MCP server in {desktop_config_path()}" if there else None

    def desktop():
        r = uninstall_desktop()
        return f"Claude Desktop MCP server: {r['result']} ({r['config']})"

    def service_present():
        files = installed_service_files()
        return f"the service ({', '.join(map(str, files))})" if files else None

    def service():
        return "service: " + "; ".join(uninstall_service())

    trees: list[Path] | None = None

    def work_trees() -> list[Path]:
        nonlocal trees
        if trees is None:
            trees = _git_work_trees(roots)
        return trees

    def git_hooks_present():
        found = []
        for tree in work_trees():
            try:
                names = installed_hooks(tree)
            except Exception:   # not a repository any more, an unreadable hooks folder: the step says so
                continue
            if names:
                found.append(f"{tree} ({', '.join(names)})")
        return f"the git hooks of {'; '.join(found)}" if found else None

    def git_hooks():
        if not work_trees():
            return "git hooks: no known repository"
        lines = []
        for tree in work_trees():
            r = uninstall_hooks(tree)
            done = sorted({v for v in r["hooks"].values()} - {"not installed"})
            lines.append(f"{tree}: {', '.join(done) if done else 'not installed'}")
        return "git hooks: " + "; ".join(lines)

    def daemon_present():
        from remembrancer.daemon.connect import running_daemon

        found = running_daemon()
        return None if found is None else f"the running daemon (pid {found[1]['daemon']['pid']})"

    def daemon():
        from remembrancer.wire import Client, DaemonUnavailable
        from remembrancer.daemon.connect import process_alive as _alive
        from remembrancer.daemon.connect import running_daemon

        found = running_daemon()
        if found is None:
            return "daemon: none running"
        pid = found[1]["daemon"]["pid"]
        try:
            with Client(found[0], timeout=5) as c:
                c.call("stop")
        except DaemonUnavailable:
            return "daemon: none running"
        deadline = time.monotonic() + 30   # it lets go of its indexes as it exits: --purge comes next
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.1)
        return f"daemon: stopped (pid {pid})" + ("" if not _alive(pid) else ", still exiting")

    def indexes_present():
        from remembrancer.indexer import indexes

        names = [index.name for index in indexes.known()]
        return f"every index in the data dir, never the notes ({len(names)}: {', '.join(names)})" if names else None

    def indexes_purged():
        from remembrancer.indexer import indexes

        gone = []
        for index in indexes.known():
            indexes.remove(index)
            gone.append(index.name)
        return f"indexes: deleted {len(gone)} ({', '.join(gone)})" if gone else "indexes: none"

    def query_log_files() -> tuple[Path, list[Path]]:
        from remembrancer.indexer.config import load_config
        from remembrancer.indexer.search import querylog

        try:
            log = querylog.path_for(load_config(None))
        except UserError:   # a config that no longer loads: the log is where it is by default
            log = querylog.default_path()
        return log, [p for p in (log, *(log.with_name(log.name + s) for s in (".1", ".lock", ".policy"))) if p.is_file()]

    def query_log_present():
        log, files = query_log_files()
        return f"the query log, the questions asked ({log})" if files else None

    def query_log_purged():
        log, gone = query_log_files()
        for p in gone:
            p.unlink()
        return f"query log: deleted ({log})" if gone else "query log: none"

    out = [Step("Claude Code hooks", hooks_present, claude_hooks),
           Step("Claude Code MCP server", lambda: f"the Claude Code MCP server `{MCP_NAME}` (claude mcp remove)"
                if _claude_code_registered() else None, claude_code_mcp),
           Step("Claude Desktop MCP server", desktop_present, desktop),
           Step("service", service_present, service),
           Step("git hooks", git_hooks_present, git_hooks),
           Step("running daemon", daemon_present, daemon)]
    if purge:
        out.append(Step("indexes", indexes_present, indexes_purged))
        out.append(Step("query log", query_log_present, query_log_purged))
    return out


def run(purge: bool = False, dry_run: bool = False, settings: Path | None = None, roots: list[str] = ()) -> list[str]:
    lines, absent = [], []
    for step in steps(purge, settings, list(roots)):
        if dry_run:
            there = step.present()
            if there:
                lines.append(f"would remove {there}")
            else:
                absent.append(step.name)
            continue
        try:
            lines.append(step.do())
        except UserError as e:   # one step's problem (a settings file we must not rewrite) stops no other
            lines.append(f"{step.name}: not removed — {e}")
    if dry_run:
        if not lines:
            lines.append("nothing to remove: remembrancer has nothing installed here")
        if absent:
            lines.append(f"not present (nothing to do): {', '.join(absent)}")
    if not purge:
        lines.append("indexes kept (`remembrancer uninstall --purge` or `remembrancer corpora forget` deletes them)")
    lines.append("last, remove the package: pipx uninstall remembrancer (or: uv tool uninstall remembrancer)")
    return lines
