"""Install the daemon as a systemd user unit (Linux) or a launchd agent (macOS).

Everything is written with absolute paths: desktop apps and service managers do not inherit
the shell's PATH or virtualenv, and no PYTHONPATH is needed: the unit runs the installed entry point.
Templates are package data of `remembrancer.systemd`, read through importlib.resources, so a wheel
in any venv renders the same unit as the checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path
from xml.sax.saxutils import escape

from remembrancer.indexer.config import Config, data_dir, passed_env

TEMPLATES = files("remembrancer.systemd")
UNIT_NAME = "remembrancer.service"
PLIST_NAME = "dev.remembrancer.daemon.plist"


def exec_argv() -> list[str]:
    """The absolute command that runs `remembrancer`: the venv's script, else python -m remembrancer."""
    script = Path(sys.executable).parent / "remembrancer"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "remembrancer"]


def unit_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user" / UNIT_NAME


def plist_path() -> Path:
    return Path.home() / "Library" / "LaunchAgents" / PLIST_NAME


def render_unit(config: Config) -> str:
    roots = " ".join(f'--root "{r.path}"' for r in config.roots)
    env = "\n".join(f'Environment="{k}={v}"' for k, v in passed_env().items())
    text = TEMPLATES.joinpath("remembrancer.service.in").read_text(encoding="utf-8")
    return (text.replace("@EXEC@", " ".join(f'"{a}"' if " " in a else a for a in exec_argv()))
            .replace("@ROOTS@", roots).replace("@ENV@", env))


def render_plist(config: Config) -> str:
    args = exec_argv() + ["serve"] + [x for r in config.roots for x in ("--root", str(r.path))]
    text = TEMPLATES.joinpath("dev.remembrancer.daemon.plist.in").read_text(encoding="utf-8")
    return (text.replace("@ARGS@", "\n".join(f"    <string>{escape(a)}</string>" for a in args))
            .replace("@ENV@", "\n".join(f"    <key>{escape(k)}</key><string>{escape(v)}</string>"
                                        for k, v in passed_env().items()))
            .replace("@LOG@", escape(str(data_dir() / "daemon.log"))))


def _run(cmd: list[str]) -> tuple[bool, str]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return p.returncode == 0, (p.stderr or p.stdout).strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)


FALLBACKS = ("the daemon can still run without a service: `remembrancer mcp` (and the CLI's `serve`) start one "
             "on demand; for a unit that runs without a login session, `loginctl enable-linger $USER`, then "
             "`systemctl --user enable --now remembrancer` from a login shell")


def install_service(config: Config, start: bool = True, dry_run: bool = False) -> tuple[bool, list[str]]:
    """Write (and enable/start) the unit; (ok, report lines). Not ok when it could not be enabled
    or started: the report names the fallbacks. One daemon serves every corpus: roots are optional
    (given, they are opened at start, warm)."""
    darwin = sys.platform == "darwin"
    path, text = (plist_path(), render_plist(config)) if darwin else (unit_path(), render_unit(config))
    if dry_run:
        return True, [f"# would write {path}", text.rstrip("\n")]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    out = [f"wrote {path}"]
    if not start:
        return True, out
    if darwin:
        ok, msg = _run(["launchctl", "load", "-w", str(path)])
        return ok, out + (["loaded with launchctl"] if ok else [f"launchctl load failed: {msg}", FALLBACKS])
    if shutil.which("systemctl") is None:
        return False, out + ["systemctl not found: the unit is written but nothing runs it", FALLBACKS]
    for cmd in (["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", UNIT_NAME]):
        ok, msg = _run(cmd)
        if not ok:
            return False, out + [f"`{' '.join(cmd)}` failed: {msg or 'no user session bus?'}", FALLBACKS]
    return True, out + ["enabled and started (systemctl --user status remembrancer)"]


def unit_exec_path(text: str) -> str | None:
    """The program ExecStart= runs in a unit's text (quotes removed), or None."""
    import shlex

    for line in text.splitlines():
        if line.startswith("ExecStart="):
            try:
                argv = shlex.split(line[len("ExecStart="):])
            except ValueError:
                return None
            return argv[0] if argv else None
    return None


def uninstall_service() -> list[str]:
    out = []
    if sys.platform == "darwin":
        p = plist_path()
        if p.exists():
            _run(["launchctl", "unload", "-w", str(p)])
            p.unlink()
            out.append(f"removed {p}")
    else:
        p = unit_path()
        if p.exists():
            if shutil.which("systemctl"):
                _run(["systemctl", "--user", "disable", "--now", UNIT_NAME])
            p.unlink()
            out.append(f"removed {p}")
    return out or ["no service installed"]
