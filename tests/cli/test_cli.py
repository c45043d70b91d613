"""The command line as a user runs it: real subprocesses, exit codes, one-line errors."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.support.cli import run_cli
from tests.support.env import remembrancer_env
from tests.support.paths import EXAMPLES



@pytest.fixture(scope="module")
def cli(tmp_path_factory, tiny_model_dir):
    tmp = tmp_path_factory.mktemp("cli")
    notes = tmp / "notes"
    shutil.copytree(EXAMPLES, notes)
    (tmp / "config.toml").write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    env = remembrancer_env(data=tmp / "data", config=tmp / "config.toml", socket=tmp / "no-daemon.sock")

    def run(*args: str) -> subprocess.CompletedProcess:
        return run_cli(*args, env=env)

    run.notes = notes
    run.env = env
    return run


def test_index_then_incremental(cli):
    first = cli("index", "--root", str(cli.notes))
    assert first.returncode == 0, first.stderr
    assert "9 added" in first.stdout
    again = cli("index", "--root", str(cli.notes), "--json")
    report = json.loads(again.stdout)
    assert (report["added"], report["updated"], report["embedded"], report["unchanged"]) == (0, 0, 0, 9)


@pytest.mark.slow
def test_search_json_contract_and_exit_codes(cli):
    p = cli("search", "pgBackRest restore point in time", "--root", str(cli.notes), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out) >= {"results", "no_strong_match", "index"}
    assert out["index"]["verdict"] == "fresh"
    first = out["results"][0]
    assert set(first) >= {"path", "heading", "lines", "score", "type", "date", "snippet", "provenance", "content"}
    exact = cli("search", "too many clients already", "--exact", "--root", str(cli.notes), "--json")
    assert {r["path"] for r in json.loads(exact.stdout)["results"]} == {"journal/2030/2030-01-20.md", "hosts/db1.md"}
    none = cli("search", "zzzqqq-never-written", "--exact", "--root", str(cli.notes))
    assert none.returncode == 1


@pytest.mark.slow
def test_search_also_passes_rephrasings_and_bad_ones_are_refused(cli):
    p = cli("search", "zzz qqq", "--also", "pgBackRest restore", "--also", "point in time recovery",
            "--root", str(cli.notes), "--json")
    assert p.returncode in (0, 1), p.stderr
    out = json.loads(p.stdout)
    assert out["found_by"] in ("pgBackRest restore", "point in time recovery")
    text = cli("search", "zzz qqq", "--also", "pgBackRest restore", "--also", "point in time recovery",
               "--root", str(cli.notes))
    assert f"found by the rephrasing {out['found_by']!r}" in text.stdout
    bad = cli("search", "restore", *sum((["--also", f"r{i}"] for i in range(4)), []), "--root", str(cli.notes))
    assert bad.returncode == 2 and "--also takes at most 3" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_read_outline_status(cli):
    r = cli("read", "runbooks/postgres/restore.md", "--heading", "Verify", "--root", str(cli.notes))
    assert r.returncode == 0 and r.stdout.startswith("## Verify")
    o = cli("outline", "runbooks/postgres/restore.md", "--root", str(cli.notes))
    assert "Before you start" in o.stdout and "tokens" in o.stdout
    s = cli("status", "--root", str(cli.notes), "--json")
    st = json.loads(s.stdout)
    assert st["documents"] == 9 and st["model"]["dim"] == 32 and st["daemon"] is None


@pytest.mark.parametrize("args,needle", [
    (["search", "x", "--root", "/nonexistent/folder"], "root not found"),
    (["search", "x", "--type", "nope"], "unknown type 'nope'"),
    (["search", "x", "--since", "last week"], "since must be a date"),
    (["read", "../../etc/passwd"], "no indexed document"),
    (["read", "runbooks/postgres/restore.md", "--heading", "Nope"], "no section 'Nope'"),
    (["read", "runbooks/postgres/restore.md", "--lines", "x:y"], "--lines must be START:END"),
])
def test_bad_input_is_one_line_with_exit_2(cli, args, needle):
    if "--root" not in args:
        args = [*args, "--root", str(cli.notes)]
    p = cli(*args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert needle in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_an_unknown_dash_argument_gets_the_hint_of_its_own_command():
    """`status --corpus conversations` was told to write `remembrancer search -- --corpus conversations`:
    the dash-term hint is for the commands that take words; another command names its own --help."""
    status = run_cli("status", "--corpus", "conversations", timeout=60)
    assert status.returncode == 2 and "unrecognized arguments: --corpus conversations" in status.stderr
    assert "search --" not in status.stderr and "`remembrancer status --help` lists the options" in status.stderr
    for command, hint in (("search", "remembrancer search -- --force-renewal (or quote it"),
                          ("latest", "remembrancer latest -- --force-renewal")):
        p = run_cli(command, "certbot", "--force-renewal", timeout=60)
        assert p.returncode == 2 and hint in p.stderr, p.stderr


def test_no_roots_no_daemon(cli, tmp_path):
    """A command that needs a corpus refuses without one; bare `status` lists the indexes there are
    (none yet, then the one built) and how to ask about one, instead of refusing."""
    env = remembrancer_env(data=tmp_path / "data", config=tmp_path / "absent.toml", socket=tmp_path / "no.sock")
    p = run_cli("search", "anything", env=env)
    assert p.returncode == 2 and "no corpus roots given" in p.stderr
    empty = run_cli("status", env=env)
    assert empty.returncode == 0 and "no indexed corpora in" in empty.stdout, empty.stdout + empty.stderr
    assert run_cli("index", "--root", str(cli.notes), env=cli.env).returncode == 0
    indexed = {**env, "REMEMBRANCER_DATA_DIR": cli.env["REMEMBRANCER_DATA_DIR"]}   # the data dir with an index
    listed = run_cli("status", env=indexed)
    assert listed.returncode == 0 and "status --root PATH" in listed.stdout, listed.stdout + listed.stderr
    assert str(cli.notes) in listed.stdout
    rows = json.loads(run_cli("status", "--json", env=indexed).stdout)
    assert [r["roots"] for r in rows["corpora"]] == [[str(cli.notes)]]


def test_a_question_longer_than_the_cap_is_refused_and_one_word_at_it_answered(cli):
    """A question is at most MAX_QUERY_CHARS long (a structured error naming the limit); one word at
    the cap is answered as any other question (a 5,000-letter one used to exhaust memory: its split forms
    grow with the square of its length)."""
    from remembrancer.indexer.requests import MAX_QUERY_CHARS

    over = cli("search", "q" * (MAX_QUERY_CHARS + 1), "--root", str(cli.notes), "--json")
    assert over.returncode == 2 and "Traceback" not in over.stderr, over.stderr
    err = json.loads(over.stdout)["error"]
    assert err["code"] == "bad_input" and err["param"] == "query", err
    assert f"query is {MAX_QUERY_CHARS + 1} characters, the most is {MAX_QUERY_CHARS}" == err["message"]
    at = cli("search", "q" * MAX_QUERY_CHARS, "--root", str(cli.notes), "--json")
    assert at.returncode in (0, 1), at.stderr
    out = json.loads(at.stdout)
    assert out["results"] or out["best_weak"]


def test_a_config_path_that_is_a_directory_is_a_setup_error(cli, tmp_path):
    env = {**cli.env, "REMEMBRANCER_CONFIG": str(tmp_path)}
    for args in (["search", "x", "--root", str(cli.notes)], ["status", "--root", str(cli.notes)]):
        p = run_cli(*args, env=env)
        assert p.returncode == 2, (p.returncode, p.stderr)
        assert f"the config file {tmp_path} (from REMEMBRANCER_CONFIG) is a directory" in p.stderr, p.stderr
        assert "internal error" not in p.stderr and "Traceback" not in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
    p = run_cli("search", "x", "--root", str(cli.notes), "--json", env=env)
    assert json.loads(p.stdout)["error"]["param"] == "REMEMBRANCER_CONFIG"


def test_mcp_config_help_is_the_help_of_config():
    """`mcp config --help` names config's own options (what --install writes, where), not the
    server's; `mcp --help` stays the server's."""
    p = run_cli("mcp", "config", "--help", timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: remembrancer mcp config")
    assert "--install" in p.stdout and "--desktop-config" in p.stdout and "claude mcp add" in p.stdout
    server = run_cli("mcp", "--help", timeout=60)
    assert server.returncode == 0 and server.stdout.startswith("usage: remembrancer mcp ")
    assert not server.stdout.startswith("usage: remembrancer mcp config")


@pytest.mark.parametrize("breakage", ["no tokenizer", "garbage graph", "wrong dim"])
def test_index_refuses_a_model_folder_that_cannot_be_loaded(tmp_path, tiny_model_dir, breakage):
    """The folder exists (the config accepts it) but holds no usable model: `index` said "vectors
    skipped" and exited 0, and `status` advised running `index` again, which could never help."""
    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    if breakage == "no tokenizer":
        (model / "tokenizer.json").unlink()
    elif breakage == "garbage graph":
        (model / "model.onnx").write_bytes(b"not an onnx graph")
    else:
        toml = model / "remembrancer-model.toml"
        toml.write_text(toml.read_text().replace("dim = 32", "dim = 48"))
    config = tmp_path / "config.toml"
    config.write_text(f'[model]\npath = "{model}"\n')
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Restore\n\nRestore the database from last night's dump.\n")
    env = remembrancer_env(data=tmp_path / "data", config=config, socket=tmp_path / "no-daemon.sock")
    p = run_cli("index", "--root", str(notes), env=env)
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"the model folder {model} ([model] path) cannot be used" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("index", "--root", str(notes), "--json", env=env)
    error = json.loads(p.stdout)["error"]
    assert p.returncode == 2 and error["code"] == "bad_model" and error["param"] == "model.path"
    assert str(config) in error["hint"]


def test_list_pages_with_offset_and_limit_and_says_how_to_see_the_rest(cli):
    """A cut listing says so, with the command that shows the next page; --offset shows it."""
    root = str(cli.notes)
    assert cli("index", "--root", root).returncode == 0
    every = json.loads(cli("list", "--root", root, "--json").stdout)
    total = every["total"]
    assert total > 4 and not every.get("truncated")
    r = cli("list", "--root", root, "--limit", "3")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[-2] == f"{total} documents"
    assert lines[-1] == (f"shown: documents 1-3 of {total}; the next ones: "
                         f"remembrancer list --root {root} --limit 3 --offset 3")
    page = json.loads(cli("list", "--root", root, "--limit", "3", "--offset", "3", "--json").stdout)
    assert page["offset"] == 3 and [d["path"] for d in page["documents"]] == [d["path"] for d in every["documents"][3:6]]
    last = cli("list", "--root", root, "--offset", str(total - 1))
    assert last.stdout.splitlines()[-1] == f"shown: documents {total}-{total} of {total}"
    bad = cli("list", "--root", root, "--offset", "-1")
    assert bad.returncode != 0 and "offset" in bad.stderr
