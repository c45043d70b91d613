"""Git hooks: installer (hooks dir, chaining, idempotence, uninstall) and the notifier they run.

Everything uses real repositories and the real git CLI: libgit2 never runs hooks, only git does.
Git is isolated from the user's config (a global core.hooksPath would change the answers), and
REMEMBRANCER_SOCKET always points into a temp dir so no test ever talks to a real daemon.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from remembrancer import wire
from remembrancer.hooks import notify as notify_mod
from remembrancer.hooks.install import CHAINED_SUFFIX, HOOK_NAMES, MARKER, install_hooks, uninstall_hooks
from remembrancer.indexer.errors import UserError


@pytest.fixture(autouse=True)
def git_env(tmp_path, monkeypatch):
    for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(k, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "t")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "t@example.com")
    sockdir = Path(tempfile.mkdtemp(prefix="rmb-", dir="/tmp"))  # AF_UNIX paths must stay short
    monkeypatch.setenv("REMEMBRANCER_SOCKET", str(sockdir / "daemon.sock"))  # nothing listens by default
    yield sockdir
    shutil.rmtree(sockdir, ignore_errors=True)


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, check=check, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "a.md").write_text("# A\n")
    git(path, "add", "a.md")
    git(path, "commit", "-q", "-m", "first")
    return path.resolve()


def git_hooks_dir(repo: Path) -> Path:
    """Git's own answer, as an oracle for the installer."""
    return (repo / git(repo, "rev-parse", "--git-path", "hooks").stdout.strip()).resolve()


def write_hook(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


class FakeDaemon:
    """A real Unix socket server in a thread that records request lines and answers ok.

    It stands in for the daemon because the daemon itself is tested elsewhere; here we only need
    to see what the hooks send. `silent=True` accepts but never answers (a hung daemon).
    """

    def __init__(self, path: Path, silent: bool = False):
        self.requests: list[dict] = []
        self.silent = silent
        self._stop = threading.Event()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            with conn:
                conn.settimeout(2)
                buf = b""
                try:
                    while b"\n" not in buf and (chunk := conn.recv(4096)):
                        buf += chunk
                except OSError:
                    continue
                if b"\n" not in buf:
                    continue
                req = json.loads(buf.split(b"\n", 1)[0])
                self.requests.append(req)
                if self.silent:
                    self._stop.wait(2)
                else:
                    conn.sendall(json.dumps({"id": req.get("id"), "ok": True, "result": {"queued": 1}}).encode() + b"\n")

    def wait_for(self, event: str, root: Path, timeout: float = 5.0) -> dict:
        """The hook runs the notifier in the background, so poll for its request."""
        want = {"method": "notify", "params": {"root": str(root), "event": event}}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for r in list(self.requests):
                if {k: r.get(k) for k in want} == want:
                    return r
            time.sleep(0.05)
        raise AssertionError(f"no notify {event} for {root}; got {self.requests}")

    def close(self) -> None:
        self._stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def daemon(git_env):
    d = FakeDaemon(git_env / "daemon.sock")
    yield d
    d.close()


# ---------------------------------------------------------------- installer


def test_install_creates_executable_hooks(tmp_path):
    repo = make_repo(tmp_path / "r")
    (repo / "sub").mkdir()
    report = install_hooks(repo / "sub")  # any folder inside the work tree will do
    assert report["hooks_dir"] == str(git_hooks_dir(repo)) == str(repo / ".git" / "hooks")
    assert report["hooks"] == {n: "installed" for n in HOOK_NAMES}
    for name in HOOK_NAMES:
        hook = repo / ".git" / "hooks" / name
        assert hook.stat().st_mode & stat.S_IXUSR
        text = hook.read_text()
        assert text.startswith("#!/bin/sh\n") and MARKER in text and f"--event {name}" in text
    subprocess.run(["sh", "-n", str(repo / ".git" / "hooks" / "post-commit")], check=True)  # valid sh


def test_install_is_idempotent(tmp_path):
    repo = make_repo(tmp_path / "r")
    write_hook(repo / ".git" / "hooks" / "post-merge", "exit 0\n")
    install_hooks(repo)
    hdir = repo / ".git" / "hooks"
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in hdir.iterdir()}
    report = install_hooks(repo)
    assert report["hooks"] == {n: "already installed" for n in HOOK_NAMES}
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in hdir.iterdir()} == before


def test_install_refreshes_our_hooks_for_a_new_interpreter(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "r")
    install_hooks(repo)
    monkeypatch.setattr("sys.executable", "/opt/other venv/bin/python")
    assert install_hooks(repo)["hooks"] == {n: "updated" for n in HOOK_NAMES}
    assert "'/opt/other venv/bin/python' -P -m remembrancer.hooks.notify" in (repo / ".git/hooks/post-commit").read_text()
    assert not list((repo / ".git/hooks").glob("*" + CHAINED_SUFFIX))  # our old script is not "chained"


@pytest.mark.parametrize("kind", ["relative", "absolute"])
def test_core_hooks_path_is_respected(tmp_path, kind):
    repo = make_repo(tmp_path / "r")
    target = repo / "githooks" if kind == "relative" else tmp_path / "shared-hooks"
    git(repo, "config", "core.hooksPath", "githooks" if kind == "relative" else str(target))
    (repo / "sub").mkdir()
    report = install_hooks(repo / "sub")  # relative means relative to the work tree, not to cwd
    assert report["hooks_dir"] == str(target) == str(git_hooks_dir(repo))
    assert all((target / n).is_file() for n in HOOK_NAMES)
    assert not (repo / ".git" / "hooks" / "post-commit").exists()


def test_linked_worktree_installs_into_common_dir(tmp_path):
    repo = make_repo(tmp_path / "r")
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "feature")
    report = install_hooks(tmp_path / "wt")
    assert report["hooks_dir"] == str(repo / ".git" / "hooks") == str(git_hooks_dir(tmp_path / "wt"))
    assert install_hooks(repo)["hooks"] == {n: "already installed" for n in HOOK_NAMES}


def test_existing_hooks_are_chained_and_restored(tmp_path):
    repo = make_repo(tmp_path / "r")
    hdir = repo / ".git" / "hooks"
    log = tmp_path / "log"
    write_hook(hdir / "post-commit", f'echo "post-commit $#" >> "{log}"\n')
    # post-rewrite gets "$@" and the rewritten commits on stdin; post-checkout's status is git's.
    write_hook(hdir / "post-rewrite", f'echo "post-rewrite $1 $(wc -l)" >> "{log}"\n')
    write_hook(hdir / "post-checkout", f'echo "post-checkout $3" >> "{log}"\nexit 3\n')
    originals = {n: (hdir / n).read_text() for n in ("post-commit", "post-rewrite", "post-checkout")}

    report = install_hooks(repo)["hooks"]
    assert report == {"post-commit": "chained existing", "post-merge": "installed",
                      "post-checkout": "chained existing", "post-rewrite": "chained existing"}
    assert (hdir / ("post-commit" + CHAINED_SUFFIX)).read_text() == originals["post-commit"]

    (repo / "b.md").write_text("b\n")
    git(repo, "add", "b.md")
    git(repo, "commit", "-q", "-m", "second")
    git(repo, "commit", "-q", "--amend", "-m", "second, amended")
    # The original's failure survives our hook (git reports any failing post-checkout as 1).
    assert git(repo, "checkout", "-q", "-b", "other", check=False).returncode == 1
    assert log.read_text().splitlines() == [
        "post-commit 0", "post-commit 0", "post-rewrite amend 1", "post-checkout 1"]

    report = uninstall_hooks(repo)["hooks"]
    assert report == {"post-commit": "restored", "post-merge": "removed",
                      "post-checkout": "restored", "post-rewrite": "restored"}
    assert {n: (hdir / n).read_text() for n in originals} == originals
    assert all(os.access(hdir / n, os.X_OK) for n in originals)
    assert not (hdir / "post-merge").exists()
    assert not list(hdir.glob("*" + CHAINED_SUFFIX))
    assert uninstall_hooks(repo)["hooks"] == {n: "not installed" for n in HOOK_NAMES}


def test_install_refuses_to_lose_a_hook(tmp_path):
    repo = make_repo(tmp_path / "r")
    hdir = repo / ".git" / "hooks"
    write_hook(hdir / "post-commit", "echo mine\n")
    write_hook(hdir / ("post-commit" + CHAINED_SUFFIX), "echo saved\n")
    with pytest.raises(UserError, match="post-commit"):
        install_hooks(repo)
    assert not (hdir / "post-merge").exists()  # refused before touching anything


def test_not_a_git_repo(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(UserError, match="not a git repository") as e:
        install_hooks(tmp_path / "plain")
    assert "git init" in e.value.hint


# ---------------------------------------------------------------- hooks at work


@pytest.mark.parametrize("daemon_state", ["absent", "stale socket", "hung"])
def test_commit_is_never_slowed_or_failed(tmp_path, git_env, daemon_state):
    sock = git_env / "daemon.sock"
    hung = None
    if daemon_state == "stale socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(sock))
        s.close()  # the file stays, nobody listens
    elif daemon_state == "hung":
        hung = FakeDaemon(sock, silent=True)
    try:
        repo = make_repo(tmp_path / "r")
        install_hooks(repo)
        (repo / "b.md").write_text("b\n")
        git(repo, "add", "b.md")
        t0 = time.monotonic()
        r = git(repo, "commit", "-q", "-m", "second", check=False)
        elapsed = time.monotonic() - t0
        assert r.returncode == 0, r.stderr
        assert r.stdout == r.stderr == ""
        assert elapsed < 5.0  # only detects a hang; the hook backgrounds the notifier
    finally:
        if hung:
            hung.close()


def test_hooks_notify_the_daemon(tmp_path, daemon):
    repo = make_repo(tmp_path / "r")
    install_hooks(repo)

    (repo / "b.md").write_text("b\n")
    git(repo, "add", "b.md")
    git(repo, "commit", "-q", "-m", "second")
    daemon.wait_for("post-commit", repo)

    git(repo, "checkout", "-q", "-b", "feature")
    daemon.wait_for("post-checkout", repo)

    (repo / "c.md").write_text("c\n")
    git(repo, "add", "c.md")
    git(repo, "commit", "-q", "-m", "third")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-edit", "feature")
    daemon.wait_for("post-merge", repo)

    git(repo, "commit", "-q", "--amend", "-m", "third, amended")
    req = daemon.wait_for("post-rewrite", repo)
    assert req["id"] == 1

    # A linked worktree shares the hooks but reports its own work tree.
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "side")
    (wt / "d.md").write_text("d\n")
    git(wt, "add", "d.md")
    git(wt, "commit", "-q", "-m", "from the worktree")
    daemon.wait_for("post-commit", wt.resolve())


def test_corpus_hooks_folder_does_not_shadow_ours(tmp_path, daemon):
    """The hook runs with the work tree as cwd; a corpus folder named hooks/ must not be imported."""
    repo = make_repo(tmp_path / "r")
    pwned = tmp_path / "pwned"
    (repo / "hooks").mkdir()
    (repo / "hooks" / "__init__.py").write_text("")
    (repo / "hooks" / "notify.py").write_text(f"open({str(pwned)!r}, 'w').close()\n")
    install_hooks(repo)
    git(repo, "commit", "-q", "--allow-empty", "-m", "x")
    daemon.wait_for("post-commit", repo)
    assert not pwned.exists()


# ---------------------------------------------------------------- notifier


def test_notify_function(tmp_path, git_env):
    assert wire.socket_path() == str(git_env / "daemon.sock")
    t0 = time.monotonic()
    assert notify_mod.notify(str(tmp_path), "manual") is False  # no daemon
    assert time.monotonic() - t0 < 1.0
    assert notify_mod.main(["--root", str(tmp_path), "--event", "x"]) == 0
    assert notify_mod.main(["--timeout", "not-a-number"]) == 0  # never fails, whatever the input

    d = FakeDaemon(git_env / "daemon.sock")
    try:
        assert notify_mod.notify(str(tmp_path), "save") is True
        assert d.requests == [{"id": 1, "method": "notify", "params": {"root": str(tmp_path), "event": "save"}}]
    finally:
        d.close()

    os.unlink(git_env / "daemon.sock")
    d = FakeDaemon(git_env / "daemon.sock", silent=True)
    try:
        t0 = time.monotonic()
        assert notify_mod.notify(str(tmp_path), "save", timeout=0.3) is True  # sent, answer not awaited
        assert time.monotonic() - t0 < 1.0
    finally:
        d.close()


def test_socket_path_matches_indexer_config(monkeypatch, tmp_path):
    import warnings

    from remembrancer.indexer.config import socket_path

    monkeypatch.delenv("REMEMBRANCER_SOCKET")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert wire.socket_path() == str(socket_path())
    monkeypatch.delenv("XDG_RUNTIME_DIR")  # platformdirs' fallback (it warns; hooks stay quiet)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert wire.socket_path() == str(socket_path())
