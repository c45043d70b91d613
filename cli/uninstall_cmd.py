"""`remembrancer uninstall` — take out everything an install put in the user's tools, in the order
that leaves nothing failing behind: the Claude Code hooks, the MCP registrations, the service, the
git hooks of every known repository, the daemon; with `--purge` the indexes and the query log too
(the questions asked: derived from the user, not from the notes). Never the notes,
and never the package itself (the package manager that installed it removes it: the last line says how).

Each step says what it did or why it did nothing; `--dry-run` says what it would do."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from remembrancer.indexer.errors import UserError

MCP_NAME = "remembrancer"


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


def steps(purge: bool, settings: Path | None, roots: list[str]) -> list[tuple[str, object]]:
    """(what, do) pairs; `do()` returns the line that says what happened."""
    from remembrancer.daemon.service import plist_path, uninstall_service, unit_path
    from remembrancer.hooks import claude_settings
    from remembrancer.hooks.install import uninstall_hooks
    from remembrancer.mcp_server.client_config import desktop_config_path, uninstall_desktop

    def claude_hooks():
        r = claude_settings.uninstall(settings)
        return f"Claude Code hooks: {r['result']} ({r['settings']})"

    def claude_code_mcp():
        cmd = ["claude", "mcp", "remove", MCP_NAME, "--scope", "user"]
        if shutil.which("claude") is None:
            return f"Claude Code MCP server: `claude` is not on PATH — run: {' '.join(cmd)}"
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        said = (p.stdout + p.stderr).strip().splitlines()
        return f"Claude Code MCP server: {'removed' if p.returncode == 0 else 'not registered'}" + (
            f" ({said[0]})" if said else "")

    def desktop():
        r = uninstall_desktop()
        return f"Claude Desktop MCP server: {r['result']} ({r['config']})"

    def service():
        return "service: " + "; ".join(uninstall_service())

    def git_hooks():
        trees = _git_work_trees(roots)
        if not trees:
            return "git hooks: no known repository"
        lines = []
        for tree in trees:
            r = uninstall_hooks(tree)
            done = sorted({v for v in r["hooks"].values()} - {"not installed"})
            lines.append(f"{tree}: {', '.join(done) if done else 'not installed'}")
        return "git hooks: " + "; ".join(lines)

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

    def indexes_purged():
        from remembrancer.indexer import indexes

        gone = []
        for index in indexes.known():
            indexes.remove(index)
            gone.append(index.name)
        return f"indexes: deleted {len(gone)} ({', '.join(gone)})" if gone else "indexes: none"

    out = [("the Claude Code hooks in " + (str(settings) if settings else ", ".join(map(str, claude_settings.settings_paths()))),
            claude_hooks),
           (f"the Claude Code MCP server `{MCP_NAME}` (claude mcp remove)", claude_code_mcp),
           (f"the Claude Desktop MCP server in {desktop_config_path()}", desktop),
           (f"the service ({unit_path()} / {plist_path()})", service),
           ("the git hooks of every known repository", git_hooks),
           ("the running daemon", daemon)]
    def query_log_purged():
        from remembrancer.indexer.config import load_config
        from remembrancer.indexer.errors import UserError
        from remembrancer.indexer.search import querylog

        try:
            log = querylog.path_for(load_config(None))
        except UserError:   # a config that no longer loads: the log is where it is by default
            log = querylog.default_path()
        gone = [p for p in (log, *(log.with_name(log.name + s) for s in (".1", ".lock", ".policy"))) if p.is_file()]
        for p in gone:
            p.unlink()
        return f"query log: deleted ({log})" if gone else "query log: none"

    if purge:
        out.append(("every index in the data dir (never the notes)", indexes_purged))
        out.append(("the query log (the questions asked)", query_log_purged))
    return out


def run(purge: bool = False, dry_run: bool = False, settings: Path | None = None, roots: list[str] = ()) -> list[str]:
    lines = []
    for what, do in steps(purge, settings, list(roots)):
        if dry_run:
            lines.append(f"would remove {what}")
            continue
        try:
            lines.append(do())
        except UserError as e:   # one step's problem (a settings file we must not rewrite) stops no other
            lines.append(f"{what}: not removed — {e}")
    if not purge:
        lines.append("indexes kept (`remembrancer uninstall --purge` or `remembrancer corpora forget` deletes them)")
    lines.append("last, remove the package: pipx uninstall remembrancer (or: uv tool uninstall remembrancer)")
    return lines
