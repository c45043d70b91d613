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
    head, count = p.stdout.strip().splitlines()   # the verdict, then the count and why it is 0
    assert head.startswith("Index fresh"), p.stdout
    assert count == ("0 documents: no indexed document is under the path 'jornal/'; the closest "
                     "top-level folders: journal/"), p.stdout   # it said "0 documents"
    out = json.loads(run("list", "--path", "jornal/", "--root", str(run.notes), "--json").stdout)
    assert out["total"] == 0 and out["closest"] == ["journal/"] and "jornal/" in out["message"], out


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


def test_a_file_name_with_a_newline_stays_on_its_line(tmp_path, tiny_model_dir):
    run = sandboxed_cli(tmp_path, tiny_model_dir)
    write(run.notes, "odd\nname.md", "# Quokka census\n\nThe quokka census counted forty quokkas.\n")
    write(run.notes, "tab\there.md", "# Tabbed\n\nA name with a tab.\n")
    os.mkfifo(run.notes / "pipe\nfifo.md")   # a warning that names it
    assert run("index", "--root", str(run.notes)).returncode == 0
    listed = run("list", "--root", str(run.notes)).stdout.splitlines()
    assert any(line.startswith("odd\\x0aname.md  doc  ") for line in listed), listed
    assert any(line.startswith("tab\\x09here.md  ") for line in listed), listed
    assert not any(line.startswith("name.md") for line in listed), listed   # the name's second half, on a line
    found = run("search", "quokka census", "--root", str(run.notes)).stdout
    assert "odd\\x0aname.md:1-3" in found and "\nname.md" not in found, found
    status = run("status", "--root", str(run.notes)).stdout
    assert "warning: pipe\\x0afifo.md: skipped, not a regular file (a FIFO)" in status, status
    as_json = json.loads(run("list", "--root", str(run.notes), "--json").stdout)   # JSON keeps the name as it is
    assert "odd\nname.md" in {d["path"] for d in as_json["documents"]}


def test_symlinks_fifos_and_sockets_left_out_are_said_once_a_pass(tmp_path, tiny_model_dir):
    run = sandboxed_cli(tmp_path, tiny_model_dir)
    notes = run.notes
    os.symlink(notes / "hosts/db1.md", notes / "db1-alias.md")   # in-root: the file is indexed under its own path
    os.symlink(notes / "runbooks", notes / "linked-runbooks")    # a symlinked folder: never followed
    os.mkfifo(notes / "fifo.md")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(notes / "sock.md"))
    said = {"db1-alias.md: skipped, a symlink to a file indexed under another path (a file is taken once, under its first path)",
            "linked-runbooks: skipped, a symlinked folder (the index never follows symlinked folders)",
            "fifo.md: skipped, not a regular file (a FIFO)",
            "sock.md: skipped, not a regular file (a socket)"}
    try:
        p = run("index", "--root", str(notes))
        assert p.returncode == 0, p.stderr
        assert {f"warning: {w}" for w in said} <= set(p.stderr.splitlines()), p.stderr   # it said nothing
        again = run("index", "--root", str(notes), "--json")   # the next pass says them again, once each
        assert sorted(json.loads(again.stdout)["warnings"]) == sorted(said)
        st = json.loads(run("status", "--root", str(notes), "--json").stdout)
        assert sorted(st["warnings"]) == sorted(said), st["warnings"]   # kept once, not once per pass
        assert st["freshness"]["verdict"] == "fresh", st["freshness"]
        text = run("status", "--root", str(notes)).stdout
        assert all(f"warning: {w}" in text for w in said), text
        read = run("read", "fifo.md", "--root", str(notes))   # why it is not there
        assert read.returncode == 2 and "fifo.md is not indexed: skipped, not a regular file (a FIFO)" in read.stderr
    finally:
        sock.close()
