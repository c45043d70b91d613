"""The MCP tests' world: a git copy of examples/notes and an environment of its own, served by real
`remembrancer mcp` processes (a daemon started on demand) driven by the SDK's stdio client."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from remembrancer.wire import ping
from tests.support.daemon import poll_until
from tests.support.env import GIT_IDENTITY, remembrancer_env
from tests.support.paths import EXAMPLES, PROJECT

IDLE_EXIT = 5


def _git(repo: Path, *args: str, home: Path) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"), "GIT_CONFIG_NOSYSTEM": "1", **GIT_IDENTITY}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A git corpus and an environment of its own; any daemon still up at the end is stopped."""
    base = tmp_path_factory.mktemp("mcp")
    home = base / "home"
    home.mkdir()
    corpus = base / "notes"
    shutil.copytree(EXAMPLES, corpus)
    _git(corpus, "init", "-q", "-b", "main", home=home)
    _git(corpus, "add", "-A", home=home)
    _git(corpus, "commit", "-q", "-m", "notes", home=home)
    sockdir = Path(tempfile.mkdtemp(prefix="rmb-mcp-", dir="/tmp"))  # AF_UNIX paths must stay short
    env = remembrancer_env(data=base / "data", socket=sockdir / "daemon.sock", home=home,
                           config=base / "config.toml")   # absent: no configured roots
    w = {"corpus": corpus.resolve(), "env": env, "sock": sockdir / "daemon.sock", "base": base}
    yield w
    st = ping(w["sock"])
    if st is not None and st.get("daemon"):
        os.kill(st["daemon"]["pid"], signal.SIGTERM)   # the daemon these tests started
        poll_until(lambda: not w["sock"].exists(), 10, 0.2)
    shutil.rmtree(sockdir, ignore_errors=True)


def params(world, *, env: dict | None = None, roots: bool = True) -> StdioServerParameters:
    args = ["-m", "remembrancer", "mcp", "--idle-exit", str(IDLE_EXIT)]
    if roots:
        args += ["--root", str(world["corpus"])]
    return StdioServerParameters(command=sys.executable, args=args, env={**world["env"], **(env or {})},
                                 cwd=str(PROJECT))


def session(p: StdioServerParameters, fn):
    """Run `await fn(client)` in one MCP session over stdio; returns its result."""
    async def main():
        async with Client(p, read_timeout_seconds=120) as c:
            return await fn(c)
    return anyio.run(main)


def text(result) -> str:
    return result.content[0].text


@pytest.fixture(scope="module")
def indexed(world):
    """The corpus indexed once (by a daemon started on demand)."""
    session(params(world), lambda c: c.call_tool("index_status", {}))
    return world
