"""Install / uninstall the git hooks that notify the daemon when HEAD moves.

Why the details matter:
- Hooks live where git looks for them: `core.hooksPath` when set (a relative value is relative to
  the work tree, where git runs hooks), else the hooks dir of the COMMON git dir — linked
  worktrees share one set of hooks, so installing from any worktree covers them all.
- A repo may already have hooks (husky, pre-commit, hand-written). We never overwrite one: it is
  moved to `<name>.pre-remembrancer`, runs first from our script, and its exit status is kept.
  Uninstall moves it back.
- A marker line makes install idempotent and lets uninstall recognise our own scripts.
- The notifier runs in the background with output discarded: a commit is never slowed or failed
  by the index, whether or not the daemon runs.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from remembrancer.indexer.errors import UserError

MARKER = "# remembrancer-hook v1"
HOOK_NAMES = ("post-commit", "post-merge", "post-checkout", "post-rewrite")
CHAINED_SUFFIX = ".pre-remembrancer"

# Repo-selecting variables would make git ignore the path we were given (e.g. when run from a hook).
_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY")

# The hook runs the absolute interpreter of the remembrancer install (no PYTHONPATH: the package is
# installed there). `-P` keeps the hook's cwd (the user's work tree) off sys.path, so a corpus
# holding a folder named `remembrancer` cannot shadow the package.
TEMPLATE = """\
#!/bin/sh
{marker}
# {name}: tell the remembrancer daemon that this work tree changed (`remembrancer hooks install`).
# A hook that was here before runs first, as {name}{suffix}; its exit status is returned.
status=0
chained="$(dirname "$0")/{name}{suffix}"
if [ -x "$chained" ]; then
    "$chained" "$@"
    status=$?
fi
if root=$(git rev-parse --show-toplevel 2>/dev/null) && [ -n "$root" ]; then
    {python} -P -m remembrancer.hooks.notify \\
        --root "$root" --event {name} </dev/null >/dev/null 2>&1 &
fi
exit $status
"""


def hook_script(name: str, python: str | None = None) -> str:
    """Our script for hook `name`, calling the interpreter that ran the installer."""
    python = python or sys.executable
    if not python:
        raise UserError("cannot tell which Python runs remembrancer (sys.executable is empty)",
                        hint="run the installer with the Python interpreter of your remembrancer install")
    return TEMPLATE.format(marker=MARKER, name=name, suffix=CHAINED_SUFFIX,
                           python=shlex.quote(os.path.abspath(python)))


def _git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    r = subprocess.run(["git", "-C", str(cwd), *args], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise subprocess.CalledProcessError(r.returncode, args, r.stdout, r.stderr)
    return r.stdout.strip()


def hooks_dir(path: str | Path) -> Path:
    """The directory git reads hooks from for the repo at (or above) `path`."""
    p = Path(path).expanduser().resolve()
    if not p.is_dir():
        raise UserError(f"not a folder: {path}", param="path", hint="pass the work tree of a git repository")
    try:
        inside = _git(p, "rev-parse", "--is-inside-work-tree")
    except FileNotFoundError:
        raise UserError("git is not installed (or not on PATH)", hint="install git; hooks are run by the git CLI") from None
    except subprocess.CalledProcessError:
        raise UserError(f"not a git repository: {p}", param="path",
                        hint="run `git init` there, or point at a git work tree; plain folders are "
                             "kept fresh by the daemon's file watcher without hooks") from None
    if inside != "true":
        raise UserError(f"not inside a git work tree: {p}", param="path",
                        hint="hooks notify about work-tree changes; a bare repository or a .git dir has none")
    top = Path(_git(p, "rev-parse", "--show-toplevel"))
    configured = _configured_hooks_path(p)
    if configured:
        return (top / configured).resolve()  # an absolute value replaces `top`
    common = Path(_git(p, "rev-parse", "--git-common-dir"))
    return ((p / common) if not common.is_absolute() else common).resolve() / "hooks"


def _configured_hooks_path(cwd: Path) -> str | None:
    try:
        value = _git(cwd, "config", "--type=path", "--get", "core.hooksPath")
    except subprocess.CalledProcessError:  # exit 1: not set
        return None
    return value or None


def install_hooks(path: str | Path) -> dict:
    """Install (or refresh) our hooks; chain existing ones. Running it twice changes nothing.

    Returns {"hooks_dir": str, "hooks": {name: "installed" | "already installed" | "updated" |
    "chained existing"}}. Refuses, before touching anything, when a hook AND a saved original
    both exist and the hook is not ours (someone replaced our hook; moving it would lose one).
    """
    hdir = hooks_dir(path)
    conflicts = [n for n in HOOK_NAMES
                 if _exists(hdir / n) and not _is_ours(hdir / n) and _exists(hdir / (n + CHAINED_SUFFIX))]
    if conflicts:
        raise UserError(f"cannot chain {', '.join(conflicts)} in {hdir}: both the hook and a saved "
                        f"{CHAINED_SUFFIX} original exist", param="path",
                        hint="merge or remove one of each pair by hand, then install again")
    hdir.mkdir(parents=True, exist_ok=True)
    report: dict[str, str] = {}
    for name in HOOK_NAMES:
        target, script = hdir / name, hook_script(name)
        if _is_ours(target):
            if target.read_text(encoding="utf-8") == script:
                report[name] = "already installed"
                continue
            report[name] = "updated"  # e.g. a new interpreter path
        elif _exists(target):
            os.replace(target, hdir / (name + CHAINED_SUFFIX))  # keeps its mode (and symlinks as links)
            report[name] = "chained existing"
        else:
            report[name] = "installed"
        _write_executable(target, script)
    return {"hooks_dir": str(hdir), "hooks": report}


def uninstall_hooks(path: str | Path) -> dict:
    """Remove our hooks and put back what was there before.

    Returns {"hooks_dir": str, "hooks": {name: "restored" | "removed" | "not installed"}}.
    A hook that is not ours is never touched.
    """
    hdir = hooks_dir(path)
    report: dict[str, str] = {}
    for name in HOOK_NAMES:
        target, saved = hdir / name, hdir / (name + CHAINED_SUFFIX)
        if _is_ours(target):
            target.unlink()
            report[name] = "removed"
        elif _exists(target):
            report[name] = "not installed"
            continue
        if _exists(saved):
            os.replace(saved, target)
            report[name] = "restored"
        else:
            report.setdefault(name, "not installed")
    return {"hooks_dir": str(hdir), "hooks": report}


def installed_hooks(path: str | Path) -> list[str]:
    """The hooks of ours in the repository at `path` (what uninstall_hooks would remove)."""
    hdir = hooks_dir(path)
    return [name for name in HOOK_NAMES if _is_ours(hdir / name) or _exists(hdir / (name + CHAINED_SUFFIX))]


def _exists(p: Path) -> bool:
    return p.exists() or p.is_symlink()


def _is_ours(p: Path) -> bool:
    if not p.is_file():
        return False
    try:
        with p.open(encoding="utf-8", errors="replace") as f:
            return any(line.rstrip("\n") == MARKER for _, line in zip(range(5), f))
    except OSError:
        return False


def _write_executable(target: Path, text: str) -> None:
    """Write via a temp file + rename so git never runs a half-written hook."""
    tmp = target.with_name(f".{target.name}.remembrancer-tmp")
    tmp.write_text(text, encoding="utf-8")
    os.chmod(tmp, 0o755)
    os.replace(tmp, target)
