"""`remembrancer index` without a terminal (a log, CI, `nohup … > log 2>&1`): a long first index
printed nothing until its summary line — the progress bar draws only on a terminal. It now prints a
plain progress line on stderr every PLAIN_PROGRESS_EVERY_S (10 s; 0 here, so this small corpus gets
one per file), and stdout keeps only the answer (the JSON with --json)."""

from __future__ import annotations

import json
import re

import pytest

from remembrancer.cli import main as cli_main
from remembrancer.cli.main import main


@pytest.fixture
def in_process(tmp_path, notes, monkeypatch, tiny_model_dir):
    config = tmp_path / "config.toml"
    config.write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    for var, value in (("REMEMBRANCER_DATA_DIR", tmp_path / "data"), ("REMEMBRANCER_CONFIG", config),
                       ("REMEMBRANCER_SOCKET", tmp_path / "no-daemon.sock")):
        monkeypatch.setenv(var, str(value))
    return notes


def test_an_index_without_a_terminal_prints_plain_progress_lines_on_stderr(in_process, monkeypatch, capsys):
    monkeypatch.setattr(cli_main, "PLAIN_PROGRESS_EVERY_S", 0.0, raising=False)
    files = sum(1 for p in in_process.rglob("*.md"))
    assert main(["index", "--json", "--root", str(in_process)]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)   # stdout is the JSON alone
    assert report["scanned"] == files
    lines = err.splitlines()
    assert len(lines) == files, err   # one a file here; plain text, no escape sequence of a bar
    assert "\x1b" not in err and "\r" not in err
    pattern = re.compile(r"indexing: (\d+) of (\d+) files \(\d+%\), ([\d,]+) passages embedded, [\d.]+ files/s, "
                         r"about \d+ (s|min) left")
    seen = [pattern.fullmatch(line) for line in lines]
    assert all(seen), lines
    assert [int(m.group(1)) for m in seen] == list(range(1, files + 1))
    assert {int(m.group(2)) for m in seen} == {files}
    assert int(seen[-1].group(3).replace(",", "")) <= report["embedded"]


def test_a_quick_index_without_a_terminal_prints_no_progress(in_process, capsys):
    """Under PLAIN_PROGRESS_EVERY_S (10 s) there is nothing to report: the summary line alone."""
    assert main(["index", "--root", str(in_process)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.count("\n") == 1 and " files: " in out
