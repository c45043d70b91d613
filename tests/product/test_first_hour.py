"""A new user's first hour (issue 27, items 9 and 10): packaging and the small messages, each through
the real CLI (`python -m remembrancer …` processes with a private environment; the tiny model keeps
indexing fast)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from remembrancer.indexer.answers import Freshness, SearchAnswer
from remembrancer.mcp_server import render
from tests.support.cli import sandboxed_cli
from tests.support.paths import PROJECT



@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_demo_installs_without_the_test_extras_and_make_test_with_them(tmp_path):
    """`make -n` on a venv that does not exist yet: every install step is listed."""
    def plan(target: str) -> str:
        return subprocess.run(["make", "-n", target, f"VENV={tmp_path / 'venv'}"], cwd=PROJECT, capture_output=True,
                              text=True, timeout=60, check=True).stdout

    demo, test = plan("demo"), plan("test")
    assert "pip install --quiet -e ." in demo and "[test]" not in demo, demo
    assert "pip install --quiet -e '.[test]'" in test and "pytest" in test, test


@pytest.fixture
def cli(tmp_path, tiny_model_dir):
    """Run the CLI with its own data dir, config (the tiny model), socket and config home."""
    return sandboxed_cli(tmp_path, tiny_model_dir)


def _corpus(cli, files: dict[str, str]) -> str:
    root = cli.tmp / "corpus"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    return str(root)


def test_an_empty_result_reads_as_two_sentences(cli):
    r = cli("search", "--exact", "zqxjwvk-nowhere", "--root", str(cli.notes), "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 1 and not out["results"], r.stdout + r.stderr
    text = render.search_text(SearchAnswer.parse(out))
    assert "No section matches. An empty result is not proof of absence" in text, text


@pytest.mark.slow
def test_also_in_this_document_names_the_preamble(cli):
    root = _corpus(cli, {"wombats.md": "Wombat burrows are dug by wombats; wombat notes.\n\n"
                                       "# Wombat care\n\nFeed the wombat. Wombat wombat burrows.\n\n"
                                       "# Wombat health\n\nA wombat vet checks wombat burrows.\n"})
    r = cli("search", "wombat burrows", "-n", "1", "--root", root)
    also = next(line for line in r.stdout.splitlines() if "also in this document:" in line)
    assert "(preamble)" in also and not also.rstrip().endswith(":") and "; ;" not in also, r.stdout
    out = json.loads(cli("search", "wombat burrows", "-n", "1", "--root", root, "--json").stdout)
    assert "" in out["results"][0]["also"]   # the data keeps the heading read() takes
    assert "(preamble)" in next(p for p in render.search_text(SearchAnswer.parse(out)).split("\n\n") if p.startswith("Also in this"))


@pytest.mark.slow
def test_the_cli_and_the_mcp_tool_spell_the_freshness_header_alike(cli):
    r = cli("search", "restore the database", "--root", str(cli.notes))
    out = json.loads(cli("search", "restore the database", "--root", str(cli.notes), "--json").stdout)
    first = r.stdout.splitlines()[0]
    assert first.startswith("Index fresh (") and first == render.freshness_line(Freshness.parse(out["index"])), r.stdout


def test_verify_usage_error_is_in_cli_syntax(cli):
    r = cli("verify", "--root", str(cli.notes))
    assert r.returncode == 2 and "--text" in r.stderr and "remembrancer verify" in r.stderr, r.stderr
    assert "verify(" not in r.stderr and "text=" not in r.stderr, r.stderr


@pytest.mark.parametrize("command", ["search", "outline", "status", "list", "corpora", "doctor", "history",
                                     "latest", "neighbors", "verify", "report", "eval", "team readers"])
def test_every_json_flag_says_what_it_does(cli, command):
    r = cli(*command.split(), "-h")
    assert r.returncode == 0 and re.search(r"--json[ \t]+\S", r.stdout), r.stdout


def test_a_missing_config_named_by_the_variable_is_said(cli):
    missing = cli.tmp / "no-such" / "config.toml"
    r = cli("corpora", env_extra={"REMEMBRANCER_CONFIG": str(missing)})
    assert r.returncode == 0, r.stderr
    assert f"REMEMBRANCER_CONFIG names {missing}, which does not exist" in r.stderr
    assert "REMEMBRANCER_CONFIG" not in cli("corpora").stderr   # a config that is there: nothing said


def test_a_first_index_built_by_search_prints_its_warnings(cli):
    root = _corpus(cli, {"broken.md": "---\ntitle: [unclosed\n---\n# Broken\n\nThe wombat burrows here.\n"})
    r = cli("search", "wombat burrows", "--root", root)
    assert "building it now" in r.stderr and "warning: " in r.stderr, r.stderr
    assert "broken.md: invalid YAML front matter" in r.stderr, r.stderr
    again = cli("search", "wombat burrows", "--root", root)   # not a first index: said once, by the first
    assert "invalid YAML" not in again.stderr, again.stderr


def test_front_matter_written_as_a_yaml_list_is_warned_about(cli):
    root = _corpus(cli, {"listed.md": "---\n- type: runbook\n- tags: [db]\n---\n# Restore\n\nRun pg_restore.\n",
                         "ruled.md": "---\n- one point\n- another\n---\n# Prose\n\nA list between rules.\n"})
    r = cli("index", "--root", root)
    assert r.returncode == 0, r.stderr
    assert "listed.md: front matter is a YAML list" in r.stderr, r.stderr
    assert "ruled.md" not in r.stderr, r.stderr
