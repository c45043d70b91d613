"""The package as users install it: the wheel built from this checkout, installed with pip into a
fresh venv outside the checkout (its dependencies from the package index / pip's cache, nothing
from the checkout's venv), then used from a folder outside the checkout — `--version`, `index`,
`search`, `mcp` (tools listed by the real MCP client over stdio), `hooks install` on a real git
repository, `service install --print`, `mcp config`, `claude-hooks install`, the `team` extra
against a real PostgreSQL (a granted reader, the HTTP endpoint) — and its site-packages holding
one top-level name.

Slow (a minute or two: pip installs onnxruntime & co. from its cache), marked `wheel`; it runs
in `make test`. `-m "not wheel"` leaves it out while working on something else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from tests.support.paths import PROJECT

EXAMPLES = PROJECT / "examples" / "notes"

pytestmark = pytest.mark.wheel


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    assert r.returncode == 0, f"{cmd}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv, an environment for it, a work folder outside the checkout)."""
    base = tmp_path_factory.mktemp("wheel")
    assert not base.resolve().is_relative_to(PROJECT)
    wheels = base / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(wheels), str(PROJECT)], cwd=base)
    (wheel,) = wheels.glob("remembrancer-*.whl")
    venv = base / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=base)   # no --system-site-packages: nothing leaks in
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)], cwd=base)
    work = base / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REMEMBRANCER_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(REMEMBRANCER_DATA_DIR=str(base / "data"), REMEMBRANCER_CONFIG=str(base / "config.toml"),
               REMEMBRANCER_SOCKET=str(base / "no-daemon.sock"), XDG_CONFIG_HOME=str(base / "xdg"),
               PATH=f"{venv / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    return venv, env, work


@pytest.mark.slow
def test_only_one_top_level_name_in_site_packages(installed):
    venv, env, work = installed
    code = ("import importlib.metadata as m; d = m.distribution('remembrancer'); "
            "print('\\n'.join(sorted({str(f).split('/')[0] for f in d.files})))")
    tops = run([str(venv / "bin" / "python"), "-c", code], cwd=work, env=env).stdout.split()
    assert sorted(t for t in tops if not t.endswith(".dist-info") and t != "..") == ["remembrancer"], tops
    # and the package comes from the venv, not the checkout
    where = run([str(venv / "bin" / "python"), "-c", "import remembrancer; print(remembrancer.__file__)"],
                cwd=work, env=env).stdout.strip()
    assert Path(where).is_relative_to(venv) and not Path(where).is_relative_to(PROJECT)


@pytest.mark.slow
def test_the_installed_cli_indexes_searches_and_installs(installed):
    venv, env, work = installed
    exe = str(venv / "bin" / "remembrancer")
    from remembrancer import __version__, build

    # the wheel's code is this checkout's: the same build fingerprint
    assert run([exe, "--version"], cwd=work, env=env).stdout.strip() == f"remembrancer {__version__} (build {build.on_disk()})"
    notes = work / "notes"
    shutil.copytree(EXAMPLES, notes)
    assert "added" in run([exe, "index", "--root", str(notes)], cwd=work, env=env).stdout
    found = subprocess.run([exe, "search", "how do I restore the database from a backup", "--root", str(notes)],
                           cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert found.returncode == 0 and "restore" in found.stdout.lower(), found.stderr

    repo = work / "repo"
    repo.mkdir()
    run(["git", "init", "-q", str(repo)], cwd=work, env=env)
    hooks = run([exe, "hooks", "install", str(repo), "--json"], cwd=work, env=env).stdout
    assert '"post-commit": "installed"' in hooks
    script = (repo / ".git" / "hooks" / "post-commit").read_text()
    assert str(venv / "bin" / "python") in script and "PYTHONPATH" not in script

    unit = run([exe, "service", "install", "--print", "--root", str(notes)], cwd=work, env=env).stdout
    exec_line = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    assert exec_line.startswith(f"ExecStart={exe} serve") and "PYTHONPATH" not in unit

    config = run([exe, "mcp", "config"], cwd=work, env=env).stdout
    add = next(line for line in config.splitlines() if line.startswith("claude mcp add --scope user "))
    assert add.startswith("claude mcp add --scope user remembrancer ") and add.endswith(f" -- {exe} mcp")   # (this environment's REMEMBRANCER_* as --env)
    settings = work / "claude-settings.json"
    run([exe, "claude-hooks", "install", "--settings", str(settings)], cwd=work, env=env)
    assert f"{venv / 'bin' / 'python'} -P -m remembrancer.hooks.claude_code" in settings.read_text()


@pytest.mark.slow
def test_the_installed_mcp_server_lists_its_tools(installed):
    venv, env, work = installed
    notes = work / "mcp-notes"
    shutil.copytree(EXAMPLES, notes)
    params = StdioServerParameters(command=str(venv / "bin" / "remembrancer"),
                                   args=["mcp", "--root", str(notes), "--idle-exit", "5"], env=env, cwd=str(work))

    async def main():
        async with Client(params, read_timeout_seconds=300) as c:
            return {t.name for t in (await c.list_tools()).tools}

    try:
        tools = anyio.run(main)
    finally:   # the daemon it started on demand
        subprocess.run([str(venv / "bin" / "remembrancer"), "stop"], cwd=work, env=env, capture_output=True,
                       timeout=60)
    assert {"search", "read", "list_documents", "index_status"} <= tools


@pytest.mark.slow
def test_the_installed_team_extra_serves_a_granted_reader_over_http(installed, pg_server, tmp_path):
    """`pip install 'remembrancer[team]'` into the fresh venv, then as a team runs it: the writer's
    pass into a store, `team grant-reader alice --all`, alice searching from her checkout, a token
    and `serve-http --store` as alice answering the SDK's streamable-HTTP client; and a CJK word
    inside a run found from the wheel."""
    import json
    import socket

    from tests.mcp.test_mcp_http import _up, over_http
    from tests.support.daemon import poll_until, stop_process
    from tests.support.pg import fresh_database

    venv, env, work = installed
    exe = str(venv / "bin" / "remembrancer")
    (wheel,) = (venv.parent / "dist").glob("remembrancer-*.whl")
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", f"{wheel}[team]"], cwd=work)
    url = fresh_database(pg_server.get_uri(), "wheel")
    alice_url = url.replace("postgres:@", "alice@")
    alice = {**env, "PGPASSWORD": "pw-alice"}
    notes = work / "team-notes"
    shutil.copytree(EXAMPLES, notes)
    assert "added" in run([exe, "index", "--store", url, "--root", str(notes)], cwd=work, env=env).stdout
    granted = subprocess.run([exe, "team", "grant-reader", "alice", "--all", "--password-stdin", "--store", url],
                             input="pw-alice\n", cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert granted.returncode == 0 and "alice: reads the whole store" in granted.stdout, granted.stderr
    found = json.loads(run([exe, "search", "how do I restore the database from a backup", "--store", alice_url,
                            "--root", str(notes), "--json"], cwd=work, env=alice).stdout)
    assert found["results"][0]["path"] == "runbooks/postgres/restore.md"
    token = json.loads(run([exe, "team", "token", "create", "laptop", "--json"], cwd=work, env=env).stdout)["token"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path / "serve-http.log"
    server = subprocess.Popen([exe, "serve-http", "--store", alice_url, "--root", str(notes), "--port", str(port)],
                              cwd=work, env=alice, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}/mcp"
    try:
        assert poll_until(lambda: _up(endpoint), 120, 0.3), log.read_text()
        got = over_http(endpoint, token, lambda c: c.call_tool("search", {"query": "how do I restore the database"}))
        assert not got.is_error and got.structured_content["results"][0]["path"] == "runbooks/postgres/restore.md"
    finally:
        stop_process(server)
    cjk = work / "cjk-notes"
    shutil.copytree(PROJECT / "tests" / "data" / "cjk" / "notes", cjk)
    run([exe, "index", "--root", str(cjk)], cwd=work, env=env)
    found = json.loads(run([exe, "search", "备份", "--root", str(cjk), "--json"], cwd=work, env=env).stdout)
    assert found["results"][0]["path"] == "zh/backup.md"


@pytest.mark.slow
def test_the_wheel_carries_the_license_and_builds_without_deprecation_warnings(tmp_path):
    """PEP 639 metadata (an SPDX expression and the LICENSE file in the wheel), and a build that
    prints no setuptools deprecation warning (a TOML-table license printed one three times)."""
    r = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(tmp_path), str(PROJECT)], cwd=tmp_path)
    assert "Deprecat" not in r.stdout + r.stderr, (r.stdout + r.stderr)[-3000:]
    (wheel,) = tmp_path.glob("remembrancer-*.whl")
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
        licence = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/licenses/LICENSE"))).decode()
    assert "License-Expression: MIT" in meta and "License-File: LICENSE" in meta
    assert "Author: the remembrancer authors" in meta and "Classifier: Programming Language :: Python :: 3.11" in meta
    assert licence.startswith("MIT License") and "Copyright (c) 2026 the remembrancer authors" in licence
