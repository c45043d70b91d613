"""The newcomer's papercuts, each through the real CLI (`python -m remembrancer …` processes with a
private environment; the tiny model keeps indexing fast). The service tests use the machine's
real systemctl, which here has no user session bus: exactly the case being fixed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_cli, sandboxed_cli
from tests.support.paths import PROJECT


@pytest.fixture
def cli(tmp_path, tiny_model_dir):
    """Run the CLI with its own data dir, config (the tiny model), socket and config home."""
    return sandboxed_cli(tmp_path, tiny_model_dir)


# -- service ---------------------------------------------------------------------------------------

def test_service_install_print_changes_nothing(cli):
    r = cli("service", "install", "--print", "--root", str(cli.notes))
    assert r.returncode == 0, r.stderr
    unit = Path(cli.env["XDG_CONFIG_HOME"]) / "systemd" / "user" / "remembrancer.service"
    assert f"# would write {unit}" in r.stdout and not unit.exists()
    exec_line = next(line for line in r.stdout.splitlines() if line.startswith("ExecStart="))
    assert exec_line.split("=", 1)[1].startswith("/") and f'--root "{cli.notes}"' in exec_line
    assert "PYTHONPATH" not in r.stdout


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "darwin" or shutil.which("systemctl") is None, reason="systemd only")
def test_service_install_without_a_user_bus_fails_and_names_the_fallbacks(cli):
    if subprocess.run(["systemctl", "--user", "is-system-running"], capture_output=True).returncode == 0:
        pytest.skip("this machine has a working user bus: the failure cannot be produced for real")
    r = cli("service", "install", "--root", str(cli.notes))
    assert r.returncode == 2
    assert "loginctl enable-linger" in r.stdout and "remembrancer mcp" in r.stdout
    # doctor no longer calls that OK: the unit is there, but not enabled and not running
    d = cli("doctor", "--json", "--root", str(cli.notes))
    import json

    checks = {c["check"]: c for c in json.loads(d.stdout)}
    assert checks["service"]["status"] == "OK"
    assert checks["service ExecStart"]["status"] == "OK"
    assert checks["service is-enabled"]["status"] == "FAIL" and checks["service is-active"]["status"] == "FAIL"
    assert d.returncode == 2


@pytest.mark.slow
def test_doctor_sees_an_execstart_that_is_gone(cli):
    unit = Path(cli.env["XDG_CONFIG_HOME"]) / "systemd" / "user" / "remembrancer.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\nExecStart=/nonexistent/venv/bin/remembrancer serve\n")
    import json

    checks = {c["check"]: c for c in json.loads(cli("doctor", "--json", "--root", str(cli.notes)).stdout)}
    assert checks["service ExecStart"]["status"] == "FAIL"
    assert "/nonexistent/venv/bin/remembrancer" in checks["service ExecStart"]["detail"]
    assert "service install" in checks["service ExecStart"]["fix"]


# -- config ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, named, suggestion", [
    ('root = ["~/notes"]\n', "key 'root'", "roots"),
    ("[indx]\nexclude = []\n", "table 'indx'", "index"),
    ("[index]\nexclud = []\n", "[index] key 'exclud'", "exclude"),
    ("[model]\npth = \"/x\"\n", "[model] key 'pth'", "path"),
])
def test_unknown_config_keys_and_tables_are_refused(cli, text, named, suggestion):
    cli.config.write_text(text)
    r = cli("status", "--root", str(cli.notes))
    assert r.returncode == 2
    assert f"unknown {named}" in r.stderr and f"did you mean '{suggestion}'" in r.stderr and "valid:" in r.stderr


@pytest.mark.parametrize("text, named", [
    ('[ranking]\noutcome_tie_margin = "x"\n', "[ranking] outcome_tie_margin must be a number from 0 to 1"),
    ('[ranking]\nenabled = "false"\n', "[ranking] enabled must be true or false"),   # bool("false") is True
    ('[ranking]\ntype_weights = 3\n', "[ranking] type_weights must be a table"),
    ('[ranking]\ntype_weights = { plan = "high" }\n', "[ranking] type_weights.plan must be a number"),
    ('[ranking]\ntype_weights = { plam = 0.85 }\n', "unknown doc type 'plam' (did you mean 'plan'?)"),
    ('[ranking]\nrule_swing = 99\n', "[ranking] rule_swing must be a number from 0 to 1"),
    ('roots = 5\n', "roots must be a list of folder paths"),   # refused even when --root is given
])
def test_wrong_kinds_of_config_values_are_refused_by_name(cli, text, named):
    cli.config.write_text(text + cli.config.read_text())   # before the tiny model's [model] table
    r = cli("search", "restore the database", "--root", str(cli.notes))
    assert r.returncode == 2 and "invalid config" in r.stderr and named in r.stderr, r.stderr
    assert "internal error" not in r.stderr


def test_a_layout_type_may_be_weighted(cli):
    cli.config.write_text('[[layout]]\nglob = "adr/**"\ntype = "decision"\n\n[ranking]\ntype_weights = { decision = 1.2 }\n'
                          + cli.config.read_text())
    assert cli("index", "--root", str(cli.notes)).returncode == 0
    assert cli("status", "--root", str(cli.notes)).returncode == 0


# -- index building and exit codes -------------------------------------------------------------------

@pytest.mark.slow
def test_first_search_says_it_builds_the_index_and_reads_exit_3_without_one(cli):
    r = cli("read", "hosts/db1.md", "--root", str(cli.notes))
    assert r.returncode == 3 and "no index yet" in r.stderr and "remembrancer index" in r.stderr
    assert cli("outline", "hosts/db1.md", "--root", str(cli.notes)).returncode == 3
    r = cli("search", "restore the database", "--root", str(cli.notes))
    assert r.returncode in (0, 1) and "no index yet" in r.stderr and "building it now" in r.stderr
    again = cli("search", "restore the database", "--root", str(cli.notes))
    assert "building" not in again.stderr   # said once, when it really builds
    assert cli("read", "hosts/db1.md", "--root", str(cli.notes)).returncode == 0


# -- read ------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_read_lines_out_of_range_is_an_error(cli):
    assert cli("index", "--root", str(cli.notes)).returncode == 0
    n = len((cli.notes / "hosts" / "db1.md").read_text().splitlines())
    r = cli("read", "hosts/db1.md", "--lines", f"{n + 100}:{n + 200}", "--root", str(cli.notes))
    assert r.returncode == 2 and "past the end" in r.stderr and f"has {n} lines" in r.stderr
    assert cli("read", "hosts/db1.md", "--lines", f"1:{n + 200}", "--root", str(cli.notes)).returncode == 0
    assert cli("read", "hosts/db1.md", "--lines", "5:2", "--root", str(cli.notes)).returncode == 2
    chars = len((cli.notes / "hosts" / "db1.md").read_text())
    r = cli("read", "hosts/db1.md", "--offset", str(chars + 10), "--root", str(cli.notes))
    assert r.returncode == 2 and "past the end" in r.stderr and "characters" in r.stderr
    assert cli("read", "hosts/db1.md", "--offset", "10", "--root", str(cli.notes)).returncode == 0


@pytest.mark.slow
def test_read_accepts_absolute_and_cwd_relative_paths_inside_a_root(cli):
    assert cli("index", "--root", str(cli.notes)).returncode == 0
    want = cli("read", "hosts/db1.md", "--root", str(cli.notes)).stdout
    assert want.strip()
    assert cli("read", str(cli.notes / "hosts" / "db1.md"), "--root", str(cli.notes)).stdout == want
    assert cli("read", "db1.md", "--root", str(cli.notes), cwd=cli.notes / "hosts").stdout == want
    outside = cli.tmp / "elsewhere.md"
    outside.write_text("# x\n")
    r = cli("read", str(outside), "--root", str(cli.notes))
    assert r.returncode == 2 and "not inside a corpus root" in r.stderr


# -- argument and wording papercuts -----------------------------------------------------------------

@pytest.mark.slow
def test_root_after_double_dash_warns(cli):
    assert cli("index", "--root", str(cli.notes)).returncode == 0
    r = cli("latest", "--root", str(cli.notes), "--", "--enable-x", "--root", str(cli.notes))
    assert "--root after -- is taken as a search term" in r.stderr
    ok = cli("latest", "--root", str(cli.notes), "--", "db1")
    assert "--root after --" not in ok.stderr


@pytest.mark.slow
def test_an_unquoted_question_is_searched_whole(cli):
    assert cli("index", "--root", str(cli.notes)).returncode == 0
    quoted = cli("search", "how do I restore the database", "--root", str(cli.notes), "--json")
    unquoted = cli("search", "how", "do", "I", "restore", "the", "database", "--root", str(cli.notes), "--json")
    assert unquoted.returncode == quoted.returncode == 0, unquoted.stderr
    assert json.loads(unquoted.stdout)["query"] == "how do I restore the database"
    assert [r["heading"] for r in json.loads(unquoted.stdout)["results"]] == \
        [r["heading"] for r in json.loads(quoted.stdout)["results"]]


@pytest.mark.slow
def test_an_empty_filter_and_an_abstention_say_why_in_text(cli):
    assert cli("index", "--root", str(cli.notes)).returncode == 0
    r = cli("search", "postgres", "--path", "nosuch/", "--root", str(cli.notes))
    assert r.returncode == 1 and "path=nosuch/ matches no section" in r.stdout and "Weak candidates" not in r.stdout
    r = cli("search", "how do I set --frobnicate-widgets on db1", "--root", str(cli.notes))
    assert r.returncode == 1 and "No strong match (not in the corpus: --frobnicate-widgets" in r.stdout, r.stdout


def test_debug_is_taken_after_the_command_too():
    from remembrancer.cli.main import build_parser

    assert build_parser().parse_args(["search", "q", "--debug"]).debug is True
    assert build_parser().parse_args(["--debug", "search", "q"]).debug is True
    assert build_parser().parse_args(["search", "q"]).debug is False


@pytest.mark.slow
def test_cli_output_uses_cli_wording(cli):
    assert cli("index", "--root", str(cli.notes)).returncode == 0
    r = cli("latest", "db1", "--root", str(cli.notes))
    assert r.returncode == 0, r.stderr
    assert "read(path, heading)" not in r.stdout and "remembrancer read PATH --heading" in r.stdout


# -- bench / eval without ../shared ------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("goal", ["bench", "eval"])
def test_make_bench_and_eval_say_what_they_need_without_shared(tmp_path, goal):
    clone = tmp_path / "clone"   # a plain clone: no ../shared beside it
    clone.mkdir()
    shutil.copy(PROJECT / "Makefile", clone / "Makefile")
    r = subprocess.run(["make", "-s", goal], cwd=clone, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "Traceback" not in r.stdout + r.stderr
    assert f"make {goal} needs the evaluation corpora and query sets in ../shared/eval" in r.stdout
    assert not (clone / ".venv").exists()   # it said so before installing anything


def test_eval_without_shared_says_what_it_needs(cli):
    r = cli("eval", "../shared/eval/queries/mm-v2.dev.jsonl", "--root", str(cli.notes))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "not part of this repository" in r.stderr


# -- corpus roots, data dir, socket and model: setup errors say what to do (new-user audit) -----------

@pytest.mark.slow
def test_cli_refuses_the_filesystem_root_the_home_folder_and_nested_roots(cli):
    home = cli.tmp / "home"
    (home / "notes").mkdir(parents=True)
    cli.env["HOME"] = str(home)
    for roots, said in ((["/"], "is the filesystem root"), (["~"], "is your home folder"),
                        ([str(cli.notes), str(cli.notes / "hosts")], f"root {cli.notes / 'hosts'} is inside root {cli.notes}"),
                        ([str(cli.notes / "hosts"), str(cli.notes)], f"root {cli.notes / 'hosts'} is inside root {cli.notes}")):
        r = cli("index", *[x for root in roots for x in ("--root", root)])
        assert r.returncode == 2 and said in r.stderr and "internal error" not in r.stderr, r.stderr
    assert not (cli.tmp / "data" / "indexes").exists()   # nothing was indexed
    assert cli("index", "--root", str(home / "notes")).returncode == 0   # a folder inside home is fine


@pytest.mark.slow
def test_cli_data_dir_errors_name_the_variable_instead_of_an_internal_error(cli):
    (cli.tmp / "afile").write_text("")
    for data in ("/proc/nonexistent/data", str(cli.tmp / "afile")):
        r = run_cli("search", "x", "--root", str(cli.notes), env={**cli.env, "REMEMBRANCER_DATA_DIR": data})
        assert r.returncode == 2 and "REMEMBRANCER_DATA_DIR" in r.stderr and "internal error" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) <= 2   # the "building it now" line, then the error
        d = run_cli("doctor", "--json", "--root", str(cli.notes), env={**cli.env, "REMEMBRANCER_DATA_DIR": data})
        check = {c["check"]: c for c in json.loads(d.stdout)}["data dir"]
        assert d.returncode == 2 and check["status"] == "FAIL" and "REMEMBRANCER_DATA_DIR" in check["fix"]


@pytest.mark.slow
def test_cli_refuses_a_socket_path_too_long_to_bind_before_starting(cli):
    long_sock = str(cli.tmp / ("s" * 120))
    for args in (["serve", "--root", str(cli.notes)], ["search", "x", "--root", str(cli.notes)]):
        r = run_cli(*args, env={**cli.env, "REMEMBRANCER_SOCKET": long_sock}, timeout=60)
        assert r.returncode == 2 and "REMEMBRANCER_SOCKET" in r.stderr and "bytes long" in r.stderr, r.stderr
        assert "internal error" not in r.stderr
    assert not (cli.tmp / "data" / "indexes").exists()   # serve refused before opening the corpus
    d = run_cli("doctor", "--json", "--root", str(cli.notes), env={**cli.env, "REMEMBRANCER_SOCKET": long_sock})
    check = {c["check"]: c for c in json.loads(d.stdout)}["socket"]
    assert d.returncode == 2 and check["status"] == "FAIL" and "REMEMBRANCER_SOCKET" in check["fix"]


@pytest.mark.slow
def test_doctor_checks_the_configured_model_not_the_default(cli, tiny_model_dir):
    def model_check():
        d = cli("doctor", "--json", "--root", str(cli.notes))
        return d.returncode, {c["check"]: c for c in json.loads(d.stdout)}["model"]

    code, check = model_check()
    assert check["status"] == "OK" and "tiny-test-model" in check["detail"] and str(tiny_model_dir) in check["detail"]
    empty = cli.tmp / "empty-model"
    empty.mkdir()
    cli.config.write_text(f'[model]\npath = "{empty}"\n')
    code, check = model_check()
    assert code == 2 and check["status"] == "FAIL" and f"{empty} lacks model.onnx" in check["detail"]
    assert "it needs" not in check["detail"] and "[model] path" in check["fix"] and str(cli.config) in check["fix"]
    cli.config.write_text('[model]\npath = "/nonexistent/model"\n')
    code, check = model_check()
    assert code == 2 and check["status"] == "FAIL" and "does not exist" in check["detail"]
    r = cli("search", "restore", "--root", str(cli.notes))   # refused, not a quiet keyword-only search
    assert r.returncode == 2 and "'/nonexistent/model' does not exist" in r.stderr and str(cli.config) in r.stderr


@pytest.mark.slow
def test_a_missing_configured_root_names_the_config_file_in_search_and_doctor(cli):
    cli.config.write_text(f'roots = ["{cli.tmp / "gone"}"]\n' + cli.config.read_text())
    r = cli("search", "x")
    assert r.returncode == 2 and "root not found" in r.stderr and "with --root" not in r.stderr
    assert f"roots = [...] of {cli.config}" in r.stderr
    config = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}["config"]
    assert config["status"] == "FAIL" and f"roots = [...] of {cli.config}" in config["fix"]
    assert config["fix"] not in config["detail"]   # said once, on the fix: line
