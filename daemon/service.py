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
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from xml.sax.saxutils import escape

from remembrancer.indexer.config import Config, data_dir, passed_env

TEMPLATES = files("remembrancer.systemd")
UNIT_NAME = "remembrancer.service"
PLIST_NAME = "dev.remembrancer.daemon.plist"
WRITER_UNIT_NAME = "remembrancer-writer.service"   # a team store's writer (`service install --store URL`)
WRITER_PLIST_NAME = "dev.remembrancer.writer.plist"


def exec_argv() -> list[str]:
    """The absolute command that runs `remembrancer`: the venv's script, else python -m remembrancer."""
    script = Path(sys.executable).parent / "remembrancer"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "remembrancer"]


def unit_path(writer: bool = False) -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user" / (WRITER_UNIT_NAME if writer else UNIT_NAME)


def plist_path(writer: bool = False) -> Path:
    return Path.home() / "Library" / "LaunchAgents" / (WRITER_PLIST_NAME if writer else PLIST_NAME)


@dataclass(frozen=True)
class StoreWriter:
    """What a team store's writer unit runs: `serve --store URL --root CHECKOUT` (its URL carries no
    password: the unit is a file others may read; libpq reads ~/.pgpass)."""
    url: str
    pull_every: float | None = None

    def args(self) -> list[str]:
        return ["--store", self.url] + (["--pull-every", f"{self.pull_every:g}"] if self.pull_every else [])


def _serve_args(config: Config, writer: StoreWriter | None) -> list[str]:
    return ["serve", *(writer.args() if writer else []), *(x for r in config.roots for x in ("--root", str(r.path)))]


def render_unit(config: Config, writer: StoreWriter | None = None) -> str:
    # systemd reads `%` as a specifier (a URL's %2F host): doubled, it is a plain `%`
    args = " ".join((f'"{a}"' if " " in a or a.startswith("/") else a).replace("%", "%%")
                    for a in _serve_args(config, writer)[1:])
    env = "\n".join(f'Environment="{k}={v}"' for k, v in passed_env().items())
    text = TEMPLATES.joinpath("remembrancer.service.in").read_text(encoding="utf-8")
    text = (text.replace("@EXEC@", " ".join(f'"{a}"' if " " in a else a for a in exec_argv()))
            .replace("@ROOTS@", args).replace("@ENV@", env))
    if writer is not None:
        text = text.replace("remembrancer: hybrid search over a Markdown memory (daemon)",
                            "remembrancer: the team store's writer (pulls the checkout, indexes it into PostgreSQL)")
    return text


def render_plist(config: Config, writer: StoreWriter | None = None) -> str:
    args = exec_argv() + _serve_args(config, writer)
    text = TEMPLATES.joinpath("dev.remembrancer.daemon.plist.in").read_text(encoding="utf-8")
    if writer is not None:
        text = text.replace("<string>dev.remembrancer.daemon</string>", "<string>dev.remembrancer.writer</string>")
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


def install_service(config: Config, start: bool = True, dry_run: bool = False,
                    writer: StoreWriter | None = None) -> tuple[bool, list[str]]:
    """Write (and enable/start) the unit; (ok, report lines). Not ok when it could not be enabled
    or started: the report names the fallbacks. One daemon serves every corpus: roots are optional
    (given, they are opened at start, warm). With `writer`, the team store's writer unit instead
    (its own unit, beside the daemon's), restarted when it fails."""
    darwin = sys.platform == "darwin"
    w = writer is not None
    path, text = (plist_path(w), render_plist(config, writer)) if darwin else (unit_path(w), render_unit(config, writer))
    name = WRITER_UNIT_NAME if w else UNIT_NAME
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
    for cmd in (["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", name]):
        ok, msg = _run(cmd)
        if not ok:
            return False, out + [f"`{' '.join(cmd)}` failed: {msg or 'no user session bus?'}", FALLBACKS]
    return True, out + [f"enabled and started (systemctl --user status {name.removesuffix('.service')})"]


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
    """Stop and remove the daemon's unit and the store writer's, where installed."""
    out = []
    for writer in (False, True):
        if sys.platform == "darwin":
            p = plist_path(writer)
            if p.exists():
                _run(["launchctl", "unload", "-w", str(p)])
                p.unlink()
                out.append(f"removed {p}")
        else:
            p = unit_path(writer)
            if p.exists():
                if shutil.which("systemctl"):
                    _run(["systemctl", "--user", "disable", "--now", WRITER_UNIT_NAME if writer else UNIT_NAME])
                p.unlink()
                out.append(f"removed {p}")
    return out or ["no service installed"]
