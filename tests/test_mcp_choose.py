"""Which corpus `remembrancer mcp` serves without --root, and what it says when none will do: a
real MCP server process over stdio (no daemon is started: nothing names a corpus it may open)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

PROJECT = Path(__file__).resolve().parent.parent


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    sockdir = Path(tempfile.mkdtemp(prefix="rmb-choose-", dir="/tmp"))  # AF_UNIX paths must stay short
    yield {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "REMEMBRANCER_DATA_DIR": str(tmp_path / "data"), "REMEMBRANCER_SOCKET": str(sockdir / "d.sock"),
           "REMEMBRANCER_CONFIG": str(tmp_path / "config.toml")}   # absent: no configured roots
    shutil.rmtree(sockdir, ignore_errors=True)


def search_error(env: dict) -> dict:
    p = StdioServerParameters(command=sys.executable, args=["-m", "remembrancer", "mcp", "--idle-exit", "5"],
                              env=env, cwd=env["HOME"])

    async def main():
        async with Client(p, read_timeout_seconds=60) as c:
            return await c.call_tool("search", {"query": "restore the database"})
    res = anyio.run(main)
    assert res.is_error
    return res.structured_content["error"]


@pytest.mark.parametrize("project", ["home", "/"])
def test_a_home_or_root_project_dir_is_named_as_refused(env, project):
    """CLAUDE_PROJECT_DIR was given: the error says it was refused and why, not that none was given."""
    where = env["HOME"] if project == "home" else "/"
    err = search_error({**env, "CLAUDE_PROJECT_DIR": where})
    assert "no corpus roots given" not in err["message"] and "no CLAUDE_PROJECT_DIR" not in err["message"]
    said = "is the home folder" if project == "home" else "is /"
    assert f"CLAUDE_PROJECT_DIR={where} {said}, never taken as a corpus" in err["message"]
    assert err["param"] == "root" and "--root" in err["hint"] and "remembrancer mcp" in err["hint"]
    assert not Path(env["REMEMBRANCER_SOCKET"]).exists()   # nothing was opened for it


def test_with_nothing_named_the_error_still_says_so(env):
    err = search_error(env)
    assert err["message"].startswith("no corpus roots given: no --root, no MCP client roots, no CLAUDE_PROJECT_DIR")


def test_a_clients_nested_roots_serve_the_outer_folder(tmp_path, monkeypatch):
    """A workspace and one of its folders, both sent as roots: one corpus of the outer folder, not the
    nested-roots refusal a user typing them would get."""
    from remembrancer.mcp_server.choose import choose_corpus

    outer = tmp_path / "ws"
    (outer / "notes").mkdir(parents=True)
    monkeypatch.setenv("REMEMBRANCER_CONFIG", str(tmp_path / "absent.toml"))
    cfg, source = choose_corpus(None, [str(outer / "notes"), str(outer)], env={})
    assert source == "the MCP client's roots" and [r.path for r in cfg.roots] == [outer.resolve()]
