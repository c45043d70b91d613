"""Install the daemon (and a team store's writer, and the HTTP endpoint) as systemd user units
(Linux) or launchd agents (macOS).

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
from remembrancer.indexer.errors import UserError

TEMPLATES = files("remembrancer.systemd")
UNIT_NAME = "remembrancer.service"
PLIST_NAME = "dev.remembrancer.daemon.plist"


def exec_argv() -> list[str]:
    """The absolute command that runs `remembrancer`: the venv's script, else `python -P -m remembrancer`
    (-P: the folder it is started in — a service's is the home folder — must not lend it a package)."""
    script = Path(sys.executable).parent / "remembrancer"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-P", "-m", "remembrancer"]


@dataclass(frozen=True)
class Unit:
    """One service remembrancer installs: the daemon, a team store's writer, or the HTTP endpoint
    — each a unit of its own (systemd) or agent (launchd), restarted when it fails."""
    name: str                  # the systemd unit's file name
    label: str                 # the launchd agent's label (its plist is LABEL.plist)
    description: str
    args: tuple[str, ...]      # after the entry point

    def unit_path(self) -> Path:
        base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        return Path(base) / "systemd" / "user" / self.name

    def plist_path(self) -> Path:
        return Path.home() / "Library" / "LaunchAgents" / f"{self.label}.plist"

    def path(self) -> Path:
        return self.plist_path() if sys.platform == "darwin" else self.unit_path()


def _roots(config: Config) -> list[str]:
    return [x for r in config.roots for x in ("--root", str(r.path))]


def daemon_unit(config: Config) -> Unit:
    return Unit(UNIT_NAME, "dev.remembrancer.daemon", "remembrancer: hybrid search over a Markdown memory (daemon)",
                ("serve", *_roots(config)))


def writer_unit(config: Config, url: str, pull_every: float | None = None) -> Unit:
    """`serve --store URL --root CHECKOUT` (its URL carries no password: the unit is a file others
    may read; libpq reads ~/.pgpass)."""
    every = ["--pull-every", f"{pull_every:g}"] if pull_every else []
    return Unit("remembrancer-writer.service", "dev.remembrancer.writer",
                "remembrancer: the team store's writer (pulls the checkout, indexes it into PostgreSQL)",
                ("serve", "--store", url, *every, *_roots(config)))


def http_unit(config: Config, store: str | None, listen: list[str]) -> Unit:
    """`serve-http [--store URL] [--root DIR] --host … --port …`: the MCP tools over HTTP, answering
    this machine's tokens (the unit carries the data dir's setting, where they are kept)."""
    return Unit("remembrancer-http.service", "dev.remembrancer.http",
                "remembrancer: the MCP tools over HTTP (serve-http)",
                ("serve-http", *(["--store", store] if store else []), *_roots(config), *listen))


def _installed_units() -> list[Unit]:
    empty = Config(roots=[])
    return [daemon_unit(empty), writer_unit(empty, ""), http_unit(empty, None, [])]


def unit_path() -> Path:
    """The daemon's systemd unit (doctor, uninstall)."""
    return daemon_unit(Config(roots=[])).unit_path()


def plist_path() -> Path:
    """The daemon's launchd agent (doctor, uninstall)."""
    return daemon_unit(Config(roots=[])).plist_path()


# Characters that end or change an unquoted word of a unit line (systemd.syntax(7)): it is quoted.
_UNIT_WORD_BREAKS = frozenset(" \t\"'\\;")


def systemd_word(value: str, *, command: bool = False, quote: bool = False) -> str:
    """`value` as one word of a unit line that systemd reads back unchanged (systemd.syntax(7),
    systemd.service(5)): `%` starts a specifier (a URL's %2F host, a data dir's `%d`) and is doubled
    everywhere; in a command line `$` expands a variable and is doubled too (Environment= expands
    none); `\\`, `"` and control characters are C-escaped inside double quotes, which a space,
    quote, backslash or `;` needs (and `quote` asks for)."""
    escaped = "".join("%%" if c == "%" else "$$" if c == "$" and command else
                      "\\" + c if c in '\\"' else f"\\x{ord(c):02x}" if ord(c) < 0x20 or c == "\x7f" else c
                      for c in value)
    quote = quote or not value or any(c in _UNIT_WORD_BREAKS or ord(c) < 0x20 for c in value)
    return f'"{escaped}"' if quote else escaped


def render_unit(unit: Unit) -> str:
    env = "\n".join(f"Environment={systemd_word(f'{k}={v}')}" for k, v in passed_env().items())
    text = TEMPLATES.joinpath("remembrancer.service.in").read_text(encoding="utf-8")
    return (text.replace("@EXEC@", " ".join(systemd_word(a, command=True) for a in exec_argv()))
            .replace("@ARGS@", " ".join(systemd_word(a, command=True, quote=a.startswith("/")) for a in unit.args))
            .replace("@ENV@", env).replace("@DESCRIPTION@", unit.description))


def plist_text(value: str) -> str:
    """`value` as a plist <string>'s content, read back unchanged: `&`, `<`, `>` escaped (launchd
    passes ProgramArguments as they are, no shell, no variables); XML cannot carry most control
    characters at all (and reads a carriage return as a newline), so such a value is refused."""
    bad = sorted({c for c in value if (ord(c) < 0x20 and c not in "\t\n") or c == "\x7f"})
    if bad:
        raise UserError(f"cannot write {value!r} into a launchd agent: it holds the control character(s) "
                        f"{', '.join(repr(c) for c in bad)}, which a plist cannot carry",
                        hint="rename the folder (or set the variable) without them")
    return escape(value)


def render_plist(unit: Unit) -> str:
    args = exec_argv() + list(unit.args)
    text = TEMPLATES.joinpath("dev.remembrancer.daemon.plist.in").read_text(encoding="utf-8")
    return (text.replace("@LABEL@", plist_text(unit.label))
            .replace("@ARGS@", "\n".join(f"    <string>{plist_text(a)}</string>" for a in args))
            .replace("@ENV@", "\n".join(f"    <key>{plist_text(k)}</key><string>{plist_text(v)}</string>"
                                        for k, v in passed_env().items()))
            .replace("@LOG@", plist_text(str(data_dir() / ("daemon.log" if unit.name == UNIT_NAME else
                                                           unit.name.replace(".service", ".log"))))))


def _run(cmd: list[str]) -> tuple[bool, str]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return p.returncode == 0, (p.stderr or p.stdout).strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)


FALLBACKS = ("the daemon can still run without a service: `remembrancer mcp` (and the CLI's `serve`) start one "
             "on demand; for a unit that runs without a login session, `loginctl enable-linger $USER`, then "
             "`systemctl --user enable --now remembrancer` from a login shell")


def fallbacks(unit: Unit) -> str:
    """What to do when the service manager did not take `unit`: the daemon's fallbacks are its own
    (an MCP session starts one on demand); the writer and the HTTP endpoint are started by nothing
    else, so the report gives their own command and their own unit's name."""
    if unit.name == UNIT_NAME:
        return FALLBACKS
    import shlex

    what = "the team store's writer" if unit.name == "remembrancer-writer.service" else "the HTTP endpoint"
    return (f"{what} can still run without a service: `remembrancer {shlex.join(unit.args)}` in the foreground; "
            f"for a unit that runs without a login session, `loginctl enable-linger $USER`, then "
            f"`systemctl --user enable --now {unit.name.removesuffix('.service')}` from a login shell")


def install_service(unit: Unit, start: bool = True, dry_run: bool = False) -> tuple[bool, list[str]]:
    """Write (and enable/start) the unit; (ok, report lines). Not ok when it could not be enabled
    or started: the report names the fallbacks. One daemon serves every corpus: roots are optional
    (given, they are opened at start, warm)."""
    darwin = sys.platform == "darwin"
    path, text = (unit.plist_path(), render_plist(unit)) if darwin else (unit.unit_path(), render_unit(unit))
    if dry_run:
        return True, [f"# would write {path}", text.rstrip("\n")]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    out = [f"wrote {path}"]
    if not start:
        return True, out
    if darwin:
        ok, msg = _run(["launchctl", "load", "-w", str(path)])
        return ok, out + (["loaded with launchctl"] if ok else [f"launchctl load failed: {msg}", fallbacks(unit)])
    if shutil.which("systemctl") is None:
        return False, out + ["systemctl not found: the unit is written but nothing runs it", fallbacks(unit)]
    for cmd in (["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", unit.name]):
        ok, msg = _run(cmd)
        if not ok:
            return False, out + [f"`{' '.join(cmd)}` failed: {msg or 'no user session bus?'}", fallbacks(unit)]
    return True, out + [f"enabled and started (systemctl --user status {unit.name.removesuffix('.service')})"]


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


def installed_service_files() -> list[Path]:
    """The unit files (or launchd agents) of remembrancer's services present on this machine."""
    return [u.path() for u in _installed_units() if u.path().exists()]


def uninstall_service() -> list[str]:
    """Stop and remove every unit remembrancer installed (daemon, writer, HTTP endpoint)."""
    out = []
    for unit in _installed_units():
        if sys.platform == "darwin":
            p = unit.plist_path()
            if p.exists():
                _run(["launchctl", "unload", "-w", str(p)])
                p.unlink()
                out.append(f"removed {p}")
        else:
            p = unit.unit_path()
            if p.exists():
                if shutil.which("systemctl"):
                    _run(["systemctl", "--user", "disable", "--now", unit.name])
                p.unlink()
                out.append(f"removed {p}")
    return out or ["no service installed"]
