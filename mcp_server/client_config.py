"""`remembrancer mcp config`: the lines that register this MCP server with Claude Code and
Claude Desktop, with this machine's absolute paths (desktop apps do not inherit the shell's
PATH or virtualenv), and `--install` to merge the server into Claude Desktop's config file.

Claude Code: one user-scope line serves every project (the server picks each project's corpus,
mcp_server/choose.py). Claude Desktop has no project: it serves the roots given here, else the
config file's.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from remembrancer.daemon.service import exec_argv, passed_env
from remembrancer.hooks.claude_settings import read_json, write_json

SERVER = "remembrancer"


def desktop_config_path() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "Claude" / "claude_desktop_config.json"


def server_entry(roots: list[str]) -> dict:
    argv = exec_argv()
    args = argv[1:] + ["mcp"] + [x for r in roots for x in ("--root", str(Path(r).expanduser().resolve()))]
    entry: dict = {"command": argv[0], "args": args}
    if passed_env():
        entry["env"] = passed_env()
    return entry


def claude_code_line(roots: list[str]) -> str:
    entry = server_entry(roots)
    env = " ".join(f"--env {shlex.quote(f'{k}={v}')}" for k, v in entry.get("env", {}).items())
    return (f"claude mcp add --scope user {env + ' ' if env else ''}{SERVER} -- "
            + " ".join(shlex.quote(a) for a in [entry["command"], *entry["args"]]))


def desktop_json(roots: list[str]) -> dict:
    return {"mcpServers": {SERVER: server_entry(roots)}}


def install_desktop(roots: list[str], path: Path | None = None) -> dict:
    """Merge our server into Claude Desktop's config: other servers and settings are kept."""
    path = path or desktop_config_path()
    data = read_json(path, "mcpServers", "config")
    servers = data.setdefault("mcpServers", {})
    entry = server_entry(roots)
    if servers.get(SERVER) == entry:
        return {"config": str(path), "result": "already installed"}
    result = "updated" if SERVER in servers else "installed"
    servers[SERVER] = entry
    write_json(path, data)
    return {"config": str(path), "result": result}
