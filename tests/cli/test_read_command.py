"""`remembrancer read` as a user runs it against a real daemon on a real socket: the corpus comes
from the daemon (`serve --root`), not from --root, and the errors say what to do. The corpus is
a git repo (examples/notes plus a repeated heading and a binary `.md`); the tiny model keeps it fast.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.corpus import git, git_init, write
from tests.support.daemon import DaemonProc, wait_for
from tests.support.paths import EXAMPLES

DUP = "# Dup\n\n## Notes\n\nfirst\n\n## Other\n\n### Notes\n\nsecond\n\n## Notes\n\nthird\n"


@pytest.fixture(scope="module")
def served(tmp_path_factory, tiny_model_dir):
    """`serve --root notes`, with a config file naming no roots: the daemon's default corpus."""
    tmp = tmp_path_factory.mktemp("read")
    notes = tmp / "notes"
    shutil.copytree(EXAMPLES, notes)
    write(notes, "misc/dup.md", DUP)
    (notes / "misc" / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR binary")
    git_init(notes)
    git(notes, "add", "-A")
    git(notes, "commit", "-q", "-m", "notes")
    d = DaemonProc(tmp, [notes], tiny_model_dir).start()
    d.notes = notes.resolve()
    yield d
    d.stop()


def read(d: DaemonProc, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return run_cli("read", *args, env=d.env, cwd=cwd)


@pytest.mark.slow
def test_read_takes_absolute_and_cwd_relative_paths_from_the_daemons_corpus(served):
    """No --root: the paths resolve against the roots of the corpus that answers (the daemon's)."""
    hosts = served.notes / "hosts"
    for args, cwd in (((str(hosts / "db1.md"),), None), (("./db1.md",), hosts), (("db1.md",), hosts),
                      (("../hosts/db1.md",), served.notes / "runbooks")):
        r = read(served, *args, "--heading", "Services", cwd=cwd)
        assert r.returncode == 0, (args, r.stderr)
        assert r.stdout.startswith("## Services") and "pgbouncer" in r.stdout
    outside = read(served, "/etc/hostname")
    assert outside.returncode == 2 and f"not inside a corpus root ({served.notes})" in outside.stderr


def test_read_with_no_root_known_says_what_to_pass(tmp_path, tiny_model_dir):
    """A daemon with no default corpus and no roots anywhere: no `()`, and what to pass instead."""
    d = DaemonProc(tmp_path, [], tiny_model_dir).start(wait=False)
    try:
        wait_for(lambda: d.sock.exists() and d.ping())
        r = read(d, str(tmp_path / "notes" / "db1.md"))
        assert r.returncode == 2 and "()" not in r.stderr and "Traceback" not in r.stderr
        assert "no corpus root is known" in r.stderr and "pass --root DIR" in r.stderr
    finally:
        d.stop()


def test_an_ambiguous_heading_lists_every_section_as_read_takes_it(served):
    r = read(served, "misc/dup.md", "--heading", "Notes", "--json")
    err = json.loads(r.stdout)["error"]
    assert r.returncode == 2 and err["code"] == "ambiguous"
    assert err["valid_options"] == ["Dup > Notes", "Dup > Other > Notes", "Dup > Notes [2]"]
    for option, body in zip(err["valid_options"], ("first", "second", "third")):   # each one reads its section
        got = read(served, "misc/dup.md", "--heading", option)
        assert got.returncode == 0 and got.stdout.strip().endswith(body), (option, got.stderr)


def test_reading_a_file_the_index_skipped_says_why(served):
    r = read(served, "misc/image.md")
    assert r.returncode == 2
    assert "misc/image.md is not indexed: skipped, looks binary" in r.stderr and "no indexed document" not in r.stderr
    gone = read(served, "misc/never-written.md")   # a path that is not there at all: as before
    assert gone.returncode == 2 and "no indexed document 'misc/never-written.md'" in gone.stderr


def test_a_skipped_file_outside_the_scope_stays_unseen(notes, data_env, tiny_embedder):
    """A scope sees only its own files' warnings: reading outside it says nothing about the file."""
    from remembrancer.indexer.search import reader
    from remembrancer.indexer.errors import UserError
    from tests.support.corpus import engine_for

    (notes / "misc").mkdir()
    (notes / "misc" / "image.md").write_bytes(b"\x00\x01binary")
    e = engine_for([notes], tiny_embedder)
    try:
        e.refresh()
        with pytest.raises(UserError, match="not indexed: skipped, looks binary"):
            reader.read(e.view(), "misc/image.md")
        with e.view(("journal",)) as view, pytest.raises(UserError) as seen:
            reader.read(view, "misc/image.md")
        assert "no indexed document" in str(seen.value) and "binary" not in str(seen.value)
    finally:
        e.close()
