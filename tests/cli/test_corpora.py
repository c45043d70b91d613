"""`remembrancer corpora`: the indexes under a real data dir, listed and forgotten with real CLI
processes, and a real daemon (`serve` on a real socket) told to drop the one it serves. The
notes are never touched; the tiny model keeps it fast."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.two_projects import serve, serving_both, two_projects  # noqa: F401  (fixtures)
from tests.support.cli import run_cli


def cli(world, *args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, env=world["env"], timeout=300)


def listed(world) -> dict[str, dict]:
    r = cli(world, "corpora", "--json")
    assert r.returncode == 0, r.stderr
    return {tuple(c["roots"] or ()): c for c in json.loads(r.stdout)["corpora"]}


def notes_of(repo: Path) -> dict[str, bytes]:
    return {str(p.relative_to(repo)): p.read_bytes() for p in sorted(repo.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_corpora_lists_each_index_with_roots_documents_size_and_use(two_projects):
    world = two_projects
    alpha, beta = world["repos"]["alpha"], world["repos"]["beta"]
    assert cli(world, "corpora").stdout.startswith("no indexed corpora in ")
    (beta / "more.md").write_text("# Topics\n\nbeta topic retention is seven days.\n")
    for repo in (alpha, beta):
        assert cli(world, "index", "--root", str(repo)).returncode == 0
    rows = listed(world)
    assert set(rows) == {(str(alpha),), (str(beta),)}
    a, b = rows[(str(alpha),)], rows[(str(beta),)]
    assert (a["documents"], b["documents"]) == (1, 2)
    assert a["bytes"] > 0 and a["last_used_at"] and a["last_indexed_at"] and a["daemon"] is None
    assert Path(a["index_dir"]).parent == Path(world["env"]["REMEMBRANCER_DATA_DIR"]) / "indexes"
    text = cli(world, "corpora").stdout
    assert f"{a['name']}  1 document  " in text and str(alpha) in text and "no daemon" in text


@pytest.mark.slow
def test_forget_deletes_the_index_never_the_notes(two_projects):
    world = two_projects
    alpha, beta = world["repos"]["alpha"], world["repos"]["beta"]
    for repo in (alpha, beta):
        assert cli(world, "index", "--root", str(repo)).returncode == 0
    before = notes_of(alpha)
    rows = listed(world)
    r = cli(world, "corpora", "forget", str(alpha))   # by a root folder
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"forgot {rows[(str(alpha),)]['name']} ({alpha}): its index") and "notes are untouched" in r.stdout
    assert not Path(rows[(str(alpha),)]["index_dir"]).exists() and notes_of(alpha) == before
    assert set(listed(world)) == {(str(beta),)}
    r = cli(world, "corpora", "forget", rows[(str(beta),)]["name"], "--json")   # by its name
    assert r.returncode == 0 and json.loads(r.stdout)["forgot"] == rows[(str(beta),)]["name"]
    assert listed(world) == {} and beta.is_dir()


@pytest.mark.slow
def test_forget_tells_the_daemon_serving_it_to_drop_it(two_projects, serve):
    world = two_projects
    d, alpha, beta = serving_both(world, serve)
    rows = listed(world)
    assert rows[(str(alpha),)]["daemon"] == rows[(str(beta),)]["daemon"] == "open"
    r = cli(world, "corpora", "forget", str(alpha))
    assert r.returncode == 0 and "the daemon stopped serving it" in r.stdout, r.stderr
    assert [c["roots"] for c in d.call("status")["corpora"]] == [[str(beta)]]   # it no longer serves alpha
    assert not Path(rows[(str(alpha),)]["index_dir"]).exists() and (alpha / "notes.md").is_file()
    assert d.status(beta)["documents"] == 1   # the other corpus is served as before
    assert set(listed(world)) == {(str(beta),)}


@pytest.mark.slow
def test_forget_an_unknown_or_an_index_without_recorded_roots(two_projects):
    world = two_projects
    r = cli(world, "corpora", "forget", "nope")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no indexed corpus is named 'nope'" in r.stderr
    assert "Traceback" not in r.stderr
    r = cli(world, "corpora", "list", "extra")
    assert r.returncode == 2 and "corpora forget extra" in r.stderr
    # an index made before roots were recorded: listed without roots, forgotten by its name
    assert cli(world, "index", "--root", str(world["repos"]["alpha"])).returncode == 0
    [row] = listed(world).values()
    (Path(row["index_dir"]) / "roots.json").unlink()
    [old] = listed(world).values()
    assert old["roots"] is None and old["documents"] == 1
    assert "(roots not recorded" in cli(world, "corpora").stdout
    assert cli(world, "corpora", "forget", old["name"]).returncode == 0 and listed(world) == {}


@pytest.mark.slow
def test_forget_refuses_while_another_process_writes_the_index(two_projects):
    """A `remembrancer index` run (here: a process holding the index's writer lock the way it does)
    keeps its index: forget names it and deletes nothing."""
    world = two_projects
    alpha = world["repos"]["alpha"]
    assert cli(world, "index", "--root", str(alpha)).returncode == 0
    index_dir = Path(listed(world)[(str(alpha),)]["index_dir"])
    hold = ("import sys, time; from remembrancer.indexer import writelock; "
            "writelock.identify(by='index'); held = writelock.acquire(sys.argv[1], 'the index'); "
            "print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(index_dir / "writer.lock")], env=world["env"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        r = cli(world, "corpora", "forget", str(alpha))
        assert r.returncode == 2 and "being written by `remembrancer index` (pid" in r.stderr, r.stderr
        assert (index_dir / "catalog.sqlite").exists() or any(index_dir.iterdir())
    finally:
        holder.kill()
        holder.wait()
    assert cli(world, "corpora", "forget", str(alpha)).returncode == 0 and not index_dir.exists()
