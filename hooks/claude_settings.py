"""`remembrancer claude-hooks install|uninstall`: our two hooks in Claude Code's settings.json.

The file is the user's: every other key, event and hook in it is kept as it was. Our entries are
recognised by the module they run (`remembrancer.hooks.claude_code`), so installing twice leaves
one copy (with the current interpreter's path and REMEMBRANCER_* settings) and uninstalling
removes exactly ours. A file that is not valid JSON is refused, never overwritten.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from remembrancer.indexer.config import passed_env
from remembrancer.indexer.errors import UserError

EVENTS = ("UserPromptSubmit", "SessionStart")
MODULE = "remembrancer.hooks.claude_code"
TIMEOUT_S = 5   # Claude Code's own kill limit; the script keeps its hard limit of ~0.25 s itself


def settings_paths() -> list[Path]:
    """User-scope settings: every project gets the hooks (the hook finds each project's corpus).
    `$CLAUDE_CONFIG_DIR/settings.json` — each folder of a comma-separated list, as the conversations
    are read from each (indexer/config.py claude_projects_dirs) — else `~/.claude/settings.json`."""
    dirs = [d.strip() for d in os.environ.get("CLAUDE_CONFIG_DIR", "").split(",") if d.strip()]
    if dirs:
        return list(dict.fromkeys(Path(d).expanduser() / "settings.json" for d in dirs))
    return [Path.home() / ".claude" / "settings.json"]


def hook_command(python: str | None = None) -> str:
    """The shell line Claude Code runs, with the REMEMBRANCER_* settings of this shell (the ones
    `mcp config` keeps): without them a hook asks the default socket and finds no daemon. Guarded so
    that a removed install (its interpreter or package gone) is silent with exit 0 on every prompt,
    not an exit 127 (the hook itself always exits 0)."""
    env = "".join(f"{k}={shlex.quote(v)} " for k, v in passed_env().items())
    exe = shlex.quote(os.path.abspath(python or sys.executable))
    return f"test -x {exe} && {env}{exe} -P -m {MODULE} || true"


def _is_ours(hook: object) -> bool:
    return isinstance(hook, dict) and MODULE in str(hook.get("command", ""))


def read_json(path: Path, table: str, param: str) -> dict:
    """A user's JSON settings file as an object ({} when absent) whose `table` is an object; a file
    we could not merge into safely is refused, never overwritten."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (ValueError, UnicodeDecodeError) as e:
        raise UserError(f"{path} is not valid JSON ({e}); not touching it", param=param,
                        hint="fix the file (or move it away), then run this again") from None
    if not isinstance(data, dict) or not isinstance(data.get(table, {}), dict):
        raise UserError(f"{path} does not hold a settings object with a \"{table}\" table", param=param,
                        hint="fix the file (or move it away), then run this again")
    return data


def _without_ours(groups: object) -> list:
    """The event's matcher groups with our hooks taken out (and groups left empty dropped)."""
    out = []
    for g in groups if isinstance(groups, list) else []:
        if isinstance(g, dict) and isinstance(g.get("hooks"), list):
            kept = [h for h in g["hooks"] if not _is_ours(h)]
            if kept:
                out.append({**g, "hooks": kept})
            elif not g["hooks"]:
                out.append(g)
        else:
            out.append(g)
    return out


def write_json(path: Path, data: dict) -> None:
    """Write via a temp file + rename: the app reading it never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.remembrancer-tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def install(path: Path | None = None) -> dict:
    """Our hooks in `path`, else in every settings file of settings_paths(); every file is read
    (and a broken one refused) before any is written."""
    cmd = hook_command()
    plans = []
    for each in [path] if path else settings_paths():
        data = read_json(each, "hooks", "settings")
        before = json.dumps(data, sort_keys=True)
        hooks = data.setdefault("hooks", {})
        for event in EVENTS:
            hooks[event] = _without_ours(hooks.get(event)) + [
                {"hooks": [{"type": "command", "command": cmd, "timeout": TIMEOUT_S}]}]
        plans.append((each, data, json.dumps(data, sort_keys=True) != before))
    for each, data, changed in plans:
        if changed:
            write_json(each, data)
    return {"settings": ", ".join(str(each) for each, _, _ in plans), "events": list(EVENTS), "command": cmd,
            "result": "installed" if any(changed for _, _, changed in plans) else "already installed"}


def installed(path: Path | None = None) -> list[tuple[Path, list[str]]]:
    """(settings file, events) for each file of `path` / settings_paths() that holds our hooks
    (a file that cannot be read raises, as uninstall would)."""
    out = []
    for each in [path] if path else settings_paths():
        hooks = read_json(each, "hooks", "settings").get("hooks") or {}
        events = [e for e in EVENTS if isinstance(hooks.get(e), list) and _without_ours(hooks[e]) != hooks[e]]
        if events:
            out.append((each, events))
    return out


def uninstall(path: Path | None = None) -> dict:
    """Our hooks out of `path`, else out of every settings file of settings_paths()."""
    plans, removed = [], []
    for each in [path] if path else settings_paths():
        data = read_json(each, "hooks", "settings")
        hooks = data.get("hooks") or {}
        gone = []
        for event in EVENTS:
            if event not in hooks:
                continue
            kept = _without_ours(hooks[event])
            if kept != hooks[event]:
                gone.append(event)
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
        if "hooks" in data and not hooks:
            del data["hooks"]
        plans.append((each, data, gone))
        removed += [e for e in gone if e not in removed]
    for each, data, gone in plans:
        if gone:
            write_json(each, data)
    return {"settings": ", ".join(str(each) for each, _, _ in plans), "events": removed,
            "result": "removed" if removed else "not installed"}
