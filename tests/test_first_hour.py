"""A new user's first hour (issue 27, items 9 and 10): packaging and the small messages, each through
the real CLI (`python -m remembrancer …` processes with a private environment; the tiny model keeps
indexing fast)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.corpus_helpers import EXAMPLES

PROJECT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_demo_installs_without_the_test_extras_and_make_test_with_them(tmp_path):
    """`make -n` on a venv that does not exist yet: every install step is listed."""
    def plan(target: str) -> str:
        return subprocess.run(["make", "-n", target, f"VENV={tmp_path / 'venv'}"], cwd=PROJECT, capture_output=True,
                              text=True, timeout=60, check=True).stdout

    demo, test = plan("demo"), plan("test")
    assert "pip install --quiet -e ." in demo and "[test]" not in demo, demo
    assert "pip install --quiet -e '.[test]'" in test and "pytest" in test, test
