"""The command line as a user runs it: `python -m remembrancer …` in a real process — one runner for
every test that checks what a command prints and how it exits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_cli(*args: str, env: dict | None = None, cwd: Path | str | None = None, input: str | None = None,
            timeout: float | None = 120) -> subprocess.CompletedProcess:
    """One `remembrancer` command in a child process with `env` (None: this process's environment),
    its output as text; a command still running after `timeout` seconds fails the test."""
    return subprocess.run([sys.executable, "-m", "remembrancer", *args], env=env, cwd=None if cwd is None else str(cwd),
                          input=input, capture_output=True, text=True, timeout=timeout)


def sandboxed_cli(tmp_path: Path, model_dir: Path):
    """A runner for a user with nothing set up: its own data dir, config (the given model), socket
    (no daemon there) and config home, and a private copy of the sample notes. The runner carries
    `env`, `notes`, `config` and `tmp`; `env_extra` adds variables to one command."""
    import shutil

    from tests.support.env import remembrancer_env
    from tests.support.paths import EXAMPLES

    config = tmp_path / "config.toml"
    config.write_text(f'[model]\npath = "{model_dir}"\n')
    env = remembrancer_env(data=tmp_path / "data", config=config, socket=tmp_path / "no-daemon.sock",
                           XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLES, notes)

    def run(*args: str, cwd: Path | None = None, input: str | None = None,
            env_extra: dict | None = None) -> subprocess.CompletedProcess:
        return run_cli(*args, env={**env, **(env_extra or {})}, cwd=cwd or tmp_path, input=input)

    run.env, run.notes, run.config, run.tmp = env, notes, config, tmp_path
    return run
