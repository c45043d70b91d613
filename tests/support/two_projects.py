"""Two git projects of one user (alpha: databases, beta: message queues) with the hooks installed,
and `serve` with no --root as the daemon of both: the world of the multi-corpus, corpora and
Claude Code tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from remembrancer.wire import Client as SocketClient
from tests.support.daemon import stop_process, wait_for
from tests.support.env import GIT_IDENTITY, remembrancer_env


def run_git(repo: Path, env: dict, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, stdin=subprocess.DEVNULL)


@pytest.fixture
def two_projects(tmp_path, tiny_model_dir):
    """Two git repos (alpha: databases, beta: message queues) with the hooks installed, one
    environment (HOME, data dir, socket, config with the tiny model) for all processes."""
    home = tmp_path / "home"
    home.mkdir()
    sockdir = Path(tempfile.mkdtemp(prefix="rmb-multi-", dir="/tmp"))  # AF_UNIX paths must stay short
    config = tmp_path / "config.toml"
    config.write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    env = remembrancer_env(data=tmp_path / "data", socket=sockdir / "d.sock", config=config, home=home,
                           GIT_CONFIG_GLOBAL=str(home / ".gitconfig"), GIT_CONFIG_NOSYSTEM="1", **GIT_IDENTITY)
    repos = {}
    for name, text in (("alpha", "# Postgres restore\n\nRestore the alpha database with pg_restore from the nightly dump.\n"),
                       ("beta", "# Kafka rebalance\n\nThe beta consumers rebalance when a broker restarts; raise session.timeout.\n")):
        repo = tmp_path / name
        repo.mkdir()
        (repo / "notes.md").write_text(text)
        run_git(repo, env, "init", "-q", "-b", "main")
        run_git(repo, env, "add", "-A")
        run_git(repo, env, "commit", "-q", "-m", "first")
        subprocess.run([sys.executable, "-m", "remembrancer", "hooks", "install", str(repo)], env=env,
                       check=True, capture_output=True)
        repos[name] = repo.resolve()
    world = {"env": env, "sock": sockdir / "d.sock", "repos": repos, "tmp": tmp_path}
    yield world
    shutil.rmtree(sockdir, ignore_errors=True)


class Serve:
    """`remembrancer serve` with no --root: the daemon of every corpus."""

    def __init__(self, world, *extra: str):
        self.world = world
        self.log = open(world["tmp"] / "daemon.log", "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "remembrancer", "serve", *extra], env=world["env"],
                                     stdout=self.log, stderr=subprocess.STDOUT, cwd=str(world["tmp"]))
        wait_for(lambda: self.call("status"), 30)

    def call(self, method: str, **params):
        try:
            with SocketClient(self.world["sock"], timeout=30) as c:
                return c.call(method, **params)
        except Exception:
            return None

    def status(self, repo: Path) -> dict:
        return self.call("status", roots=[str(repo)])

    def wait_fresh(self, repo: Path, documents: int) -> dict:
        def fresh():
            st = self.status(repo)
            return st if (st and st["freshness"]["verdict"] == "fresh" and not st["daemon"]["ingesting"]
                          and st["documents"] == documents) else None
        return wait_for(fresh, 30)

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.close()


@pytest.fixture
def serve(two_projects):
    made = []

    def start(*extra):
        s = Serve(two_projects, *extra)
        made.append(s)
        return s

    yield start
    for s in made:
        s.stop()


def serving_both(world, serve) -> tuple[Serve, Path, Path]:
    """A daemon serving both projects, each indexed with its one note: (daemon, alpha, beta)."""
    d = serve()
    alpha, beta = world["repos"]["alpha"], world["repos"]["beta"]
    d.wait_fresh(alpha, 1)
    d.wait_fresh(beta, 1)
    return d, alpha, beta
