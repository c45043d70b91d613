"""A query log that cannot be written (`[log] path` where no folder can be made) never fails a
question, and is never silent either: the real CLI warns on stderr, `status` and `doctor` say it,
and an MCP session warns once. Real processes, real files, the tiny model."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from remembrancer.indexer.config import file_unwritable
from tests.support.cli import run_cli
from tests.support.env import remembrancer_env
from tests.support.paths import PROJECT

SAID = "cannot be written"


@pytest.fixture
def world(tmp_path, tiny_model_dir):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Restart\n\nRestart the ledger service with systemctl.\n")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")   # no folder can be made below a file, whoever runs the test
    log = blocker / "logs" / "queries.jsonl"
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[model]\npath = "{tiny_model_dir}"\n[log]\npath = "{log}"\n')
    sockdir = Path(tempfile.mkdtemp(prefix="rmb-qlog-", dir="/tmp"))   # AF_UNIX paths must stay short
    env = remembrancer_env(data=tmp_path / "data", config=cfg, socket=sockdir / "d.sock")
    assert run_cli("index", "--root", str(notes), env=env).returncode == 0
    yield {"env": env, "notes": notes, "log": log, "cfg": cfg, "tmp": tmp_path, "model": tiny_model_dir}
    run_cli("stop", env=env, timeout=60)
    shutil.rmtree(sockdir, ignore_errors=True)


def test_a_search_answers_and_warns_once_that_the_log_cannot_be_written(world):
    r = run_cli("search", "restart the ledger", "--root", str(world["notes"]), env=world["env"])
    assert r.returncode == 0 and "Restart" in r.stdout, r.stderr
    warned = [line for line in r.stderr.splitlines() if SAID in line]
    assert len(warned) == 1 and warned[0].startswith(f"remembrancer: warning: [log] path {world['log']}"), r.stderr
    assert "questions are not logged" in warned[0]


def test_status_and_doctor_say_it(world):
    st = run_cli("status", "--root", str(world["notes"]), "--json", env=world["env"])
    assert st.returncode == 0, st.stderr
    assert SAID in json.loads(st.stdout)["query_log_problem"]
    text = run_cli("status", "--root", str(world["notes"]), env=world["env"])
    assert text.returncode == 0 and SAID in text.stderr
    doc = run_cli("doctor", "--root", str(world["notes"]), "--json", env=world["env"])
    check = {c["check"]: c for c in json.loads(doc.stdout)}["query log"]
    assert check["status"] == "WARN" and SAID in check["detail"] and "[log] queries = false" in check["fix"]


def test_a_writable_log_is_written_and_nothing_is_said(world):
    good = world["tmp"] / "logs" / "queries.jsonl"
    world["cfg"].write_text(f'[model]\npath = "{world["model"]}"\n[log]\npath = "{good}"\n')
    doc = run_cli("doctor", "--root", str(world["notes"]), "--json", env=world["env"])
    assert {c["check"]: c for c in json.loads(doc.stdout)}["query log"]["status"] == "OK"
    assert not (world["tmp"] / "logs").exists()   # looking made nothing
    r = run_cli("search", "restart the ledger", "--root", str(world["notes"]), env=world["env"])
    assert r.returncode == 0 and SAID not in r.stderr
    assert good.is_file() and "restart the ledger" in good.read_text()


def test_an_mcp_session_warns_once(world):
    proc = subprocess.Popen([sys.executable, "-m", "remembrancer", "mcp", "--idle-exit", "5", "--root",
                             str(world["notes"])], env=world["env"], cwd=str(PROJECT),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            *({"jsonrpc": "2.0", "id": i, "method": "tools/call",
               "params": {"name": "search", "arguments": {"query": "restart the ledger"}}} for i in (2, 3))]
    try:
        for m in msgs:
            proc.stdin.write((json.dumps(m) + "\n").encode())
            proc.stdin.flush()
            if "id" in m:
                answer = json.loads(proc.stdout.readline())
                assert "error" not in answer and not answer["result"].get("isError"), answer
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert err.decode().count(SAID) == 1, err.decode()[-2000:]


def test_the_probe_tries_for_real_and_leaves_nothing_behind(tmp_path):
    assert "No such file or directory" in file_unwritable(Path("/proc/no-such-folder/queries.jsonl"))
    assert file_unwritable(tmp_path / "a" / "b" / "queries.jsonl") is None
    assert list(tmp_path.iterdir()) == []   # the folders it made to try are gone again
    (tmp_path / "dir.jsonl").mkdir()
    assert file_unwritable(tmp_path / "dir.jsonl") == "it is a folder"
