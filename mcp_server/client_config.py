"""`remembrancer mcp config`: the lines that register this MCP server with Claude Code and
Claude Desktop, with this machine's absolute paths (desktop apps do not inherit the shell's
PATH or virtualenv), and `--install` to merge the server into Claude Desktop's config file.

Every flag given to `mcp config` (--root, --scope, --instructions, --store, --idle-exit) is in
every line it prints and in the entry `--install` writes: a registration that dropped --scope
would give an agent meant to see one folder all of the notes. Which corpus a registration
without --root serves: mcp_server/choose.py.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from remembrancer.daemon.connect import DEFAULT_IDLE_EXIT_S
from remembrancer.daemon.service import exec_argv
from remembrancer.indexer.config import passed_env
from remembrancer.hooks.claude_settings import read_json, write_json

SERVER = "remembrancer"


def desktop_config_path() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "Claude" / "claude_desktop_config.json"


def mcp_args(roots: list[str] = (), scopes: list[str] = (), instructions: str = "", store: str | None = None,
             idle_exit_s: float = DEFAULT_IDLE_EXIT_S, conversations: list[str] = (), code: list[str] = ()) -> list[str]:
    """`remembrancer mcp`'s arguments carrying these settings (roots made absolute: a client starts
    the server in a folder of its own choosing)."""
    args = ["mcp"]
    args += [x for r in roots for x in ("--root", str(Path(r).expanduser().resolve()))]
    args += [x for c in conversations for x in ("--conversations", str(Path(c).expanduser().resolve()))]
    args += [x for c in code for x in ("--code", str(Path(c).expanduser().resolve()))]
    args += [x for s in scopes for x in ("--scope", s)]
    if instructions:
        args += ["--instructions", instructions]
    if store:
        args += ["--store", store]
    if idle_exit_s != DEFAULT_IDLE_EXIT_S:
        args += ["--idle-exit", f"{idle_exit_s:g}"]
    return args


def server_entry(args: list[str]) -> dict:
    argv = exec_argv()
    entry: dict = {"command": argv[0], "args": argv[1:] + list(args)}
    if passed_env():
        entry["env"] = passed_env()
    return entry


def claude_code_line(args: list[str]) -> str:
    """The name comes before `--env`: claude's `--env` takes every word up to `--`, the name too."""
    entry = server_entry(args)
    env = " ".join(f"--env {shlex.quote(f'{k}={v}')}" for k, v in entry.get("env", {}).items())
    return (f"claude mcp add --scope user {SERVER} {env + ' ' if env else ''}-- "
            + " ".join(shlex.quote(a) for a in [entry["command"], *entry["args"]]))


def desktop_json(args: list[str]) -> dict:
    return {"mcpServers": {SERVER: server_entry(args)}}


def install_desktop(args: list[str], path: Path | None = None) -> dict:
    """Merge our server into Claude Desktop's config: other servers and settings are kept."""
    path = path or desktop_config_path()
    data = read_json(path, "mcpServers", "config")
    servers = data.setdefault("mcpServers", {})
    entry = server_entry(args)
    if servers.get(SERVER) == entry:
        return {"config": str(path), "result": "already installed"}
    result = "updated" if SERVER in servers else "installed"
    servers[SERVER] = entry
    write_json(path, data)
    return {"config": str(path), "result": result}


def desktop_installed(path: Path | None = None) -> bool:
    """Whether Claude Desktop's config names our server (a file that cannot be read raises)."""
    path = path or desktop_config_path()
    return path.exists() and SERVER in (read_json(path, "mcpServers", "config").get("mcpServers") or {})


def uninstall_desktop(path: Path | None = None) -> dict:
    """Take our server out of Claude Desktop's config: other servers and settings are kept."""
    path = path or desktop_config_path()
    if not path.exists():
        return {"config": str(path), "result": "no config file"}
    data = read_json(path, "mcpServers", "config")
    servers = data.get("mcpServers") or {}
    if SERVER not in servers:
        return {"config": str(path), "result": "not installed"}
    del servers[SERVER]
    write_json(path, data)
    return {"config": str(path), "result": "removed"}
