"""The folder a command runs in never lends it code: every Python child remembrancer starts (the
ingest sandbox, the on-demand daemon, the hooks, the service's fallback command) imports the
installed `remembrancer`, never a `remembrancer/` package that happens to sit in that folder — a
checkout of remembrancer itself, or a hostile repository an agent works in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from remembrancer.indexer.ingest import sandbox
from tests.support.daemon import wait_for
from tests.support.env import remembrancer_env

# Imported instead of the real package, it leaves a mark (and then the child fails, as a checkout's
# shim without the subpackages does).
SHADOW = 'import os, sys; open(os.environ["SHADOW_MARK"], "a").write(f"{os.getpid()} {sys.argv}\\n")\n'


def shadowing_folder(tmp_path: Path) -> Path:
    top = tmp_path / "checkout"
    (top / "remembrancer").mkdir(parents=True)
    (top / "remembrancer" / "__init__.py").write_text(SHADOW)
    (top / "remembrancer" / "__main__.py").write_text(SHADOW)
    return top


def big_log(root: Path) -> Path:
    """A note over the sandbox's size threshold (it is prepared in a child process)."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "ops.md"
    path.write_text("# Ops log\n\n" + "".join(
        f"## Entry {i}\n\nRestarted the frobnicator on host web{i} after the medmarker{i} alert.\n\n"
        for i in range(4000)))
    assert path.stat().st_size >= sandbox.LARGE_BYTES
    return path


def test_a_large_note_indexed_from_a_folder_holding_a_remembrancer_package_keeps_its_text(tmp_path, tiny_model_dir):
    """The command is the installed entry point (`python -P`: what the console script's interpreter
    sees); its sandbox child used to run `python -m …` and import the folder's package: the note
    lost its text for good and the index was called fresh."""
    folder = shadowing_folder(tmp_path)
    big_log(tmp_path / "notes")
    mark = tmp_path / "shadow-ran"
    config = tmp_path / "config.toml"
    config.write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    env = remembrancer_env(data=tmp_path / "data", config=config, socket=tmp_path / "no-daemon.sock",
                           SHADOW_MARK=str(mark))

    def cli(*args):
        return subprocess.run([sys.executable, "-P", "-m", "remembrancer", *args, "--root", str(tmp_path / "notes")],
                              env=env, cwd=folder, capture_output=True, text=True, timeout=300)

    p = cli("index")
    assert p.returncode == 0, p.stderr
    assert "without its text" not in p.stdout + p.stderr
    p = cli("search", "--exact", "medmarker1717", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Entry 1717" in json.dumps(json.loads(p.stdout))
    assert not mark.exists(), mark.read_text()


@pytest.mark.slow
def test_the_on_demand_daemon_started_from_such_a_folder_runs_the_installed_package(tmp_path, tiny_model_dir,
                                                                                   monkeypatch):
    """An MCP client's folder is the project the agent works in; the daemon it starts on demand used
    to import that folder's `remembrancer` (and, from a checkout, never started)."""
    from remembrancer.daemon.connect import start_daemon
    from remembrancer.indexer.config import load_config
    from remembrancer.wire import Client

    folder = shadowing_folder(tmp_path)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Restore\n\nRestore the database from last night's dump.\n")
    mark = tmp_path / "shadow-ran"
    config = tmp_path / "config.toml"
    config.write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    sock = tmp_path / "run" / "d.sock"
    for k, v in remembrancer_env(data=tmp_path / "data", config=config, socket=sock,
                                 SHADOW_MARK=str(mark)).items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(folder)
    backend = start_daemon(load_config([str(notes)]), sock, idle_exit_s=30)
    try:
        pid = backend.call("status")["daemon"]["pid"]
        assert Path(f"/proc/{pid}/cwd").resolve() == folder.resolve()   # it did start in that folder
        assert not mark.exists(), mark.read_text()
    finally:
        with Client(sock, timeout=10) as c:
            c.call("stop")
        wait_for(lambda: not sock.exists(), timeout=20)
