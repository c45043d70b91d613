"""What the command line says when there is little to say: an empty search is no strong match, an
empty listing says why, a file name holding a newline stays on its line, files the walk leaves
out (symlinks, FIFOs, sockets) are named in `index` and `status`, and a path over its bound is
refused by name. Real `remembrancer` processes, no daemon (the engine in the CLI's process)."""

from __future__ import annotations

import json
import os
import socket

import pytest

from tests.support.cli import sandboxed_cli
from tests.support.corpus import write


@pytest.fixture
def run(tmp_path, tiny_model_dir):
    run = sandboxed_cli(tmp_path, tiny_model_dir)
    assert run("index", "--root", str(run.notes)).returncode == 0
    return run


def test_a_path_over_its_bound_is_refused_by_name(run):
    for args, name in ((["list", "--path", "p" * 1001], "path"),
                       (["search", "restore", "--path", "p" * 1001], "path"),
                       (["history", "db1", "--topic", "t" * 1001], "topic")):
        p = run(*args, "--root", str(run.notes), "--json")
        assert p.returncode == 2, (args[0], p.stdout, p.stderr)
        err = json.loads(p.stdout)["error"]
        assert err["code"] == "bad_input" and err["param"] == name, err
        assert f"{name} is 1001 characters, the most is 1000" in err["message"], err
        assert "Traceback" not in p.stderr


def test_an_exact_search_with_no_hit_says_no_strong_match(run):
    p = run("search", "zzqqxx-never-written", "--exact", "--root", str(run.notes), "--json")
    assert p.returncode == 1, p.stderr
    out = json.loads(p.stdout)
    assert out["results"] == [] and out["no_strong_match"] is True, out   # it said false
    text = run("search", "zzqqxx-never-written", "--exact", "--root", str(run.notes))
    assert text.returncode == 1 and "No strong match: no section matches" in text.stdout, text.stdout


def test_list_under_a_path_that_matches_nothing_says_why(run):
    p = run("list", "--path", "jornal/", "--root", str(run.notes))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == ("0 documents: no indexed document is under the path 'jornal/'; the closest "
                                "top-level folders: journal/"), p.stdout   # it said "0 documents"
    out = json.loads(run("list", "--path", "jornal/", "--root", str(run.notes), "--json").stdout)
    assert out["total"] == 0 and out["closest"] == ["journal/"] and "jornal/" in out["message"], out
