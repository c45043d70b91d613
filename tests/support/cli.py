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
