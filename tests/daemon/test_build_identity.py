"""A daemon of another build (an upgrade installed while it ran) is never used as if it were this
build's: one started on demand is replaced, one that serves until stopped is left running and not
used, and status, doctor, the hook and `--version` say which build is which.

Real parts throughout: `remembrancer serve` processes on real Unix sockets, the CLI in child
processes. "Another build" is faked with REMEMBRANCER_TEST_BUILD_FINGERPRINT (remembrancer/build.py),
a test-only variable that makes the one process it is set for report that fingerprint instead of
its code's: building and installing two wheels per test would cost minutes.
"""

from __future__ import annotations

import json
import shutil
import time

import pytest

from remembrancer import build
from remembrancer.hooks import claude_code
from remembrancer.wire import Client, DaemonError, ping
from tests.support.cli import run_cli
from tests.support.daemon import DaemonProc, stop_daemon_at
from tests.support.paths import EXAMPLES

OLD = "0ldb0ild0000"   # the fingerprint the "old build" daemon reports


def old_daemon(tmp, tiny_model_dir, *extra) -> DaemonProc:
    """A daemon on the sample notes that reports build OLD; the clients' environment (`.env`) does not
    carry the fake, so they are this build."""
    notes = tmp / "notes"
    shutil.copytree(EXAMPLES, notes)
    d = DaemonProc(tmp, [notes], tiny_model_dir, extra=extra)
    d.notes = notes
    client_env = dict(d.env)
    d.env = {**client_env, build.TEST_FINGERPRINT_ENV: OLD}   # the daemon's own environment
    d.start()
    d.env = client_env
    return d


def test_the_daemon_reports_its_build_refuses_another_builds_requests_and_says_its_build_in_every_answer(
        tmp_path, tiny_model_dir):
    with old_daemon(tmp_path, tiny_model_dir) as d:
        st = d.call("status")   # status is answered whatever the client's build
        assert st["daemon"]["build"] == {"version": build.version(), "fingerprint": OLD}
        with Client(d.sock, timeout=30) as c:
            with pytest.raises(DaemonError) as e:
                c.call("search", query="restore the database", build=build.fingerprint())
            assert c.build == OLD   # the refusal too says which build it came from
        err = e.value.error
        assert err["code"] == "build_mismatch" and OLD in err["message"] and build.fingerprint() in err["message"]
        assert "remembrancer stop" in err["hint"]
        with Client(d.sock, timeout=30) as c:
            assert c.call("search", query="restore the database", build=OLD)["results"]
        # The Claude Code hook puts nothing from another build in front of the model
        assert claude_code.ask("status", {}, time.monotonic() + 5, path=str(d.sock)) is None


def test_a_daemon_started_on_demand_of_another_build_is_replaced_and_the_cli_says_so(tmp_path, tiny_model_dir):
    with old_daemon(tmp_path, tiny_model_dir, "--idle-exit", "600") as d:
        old_pid = d.proc.pid
        try:
            r = run_cli("search", "restore the database", "--root", str(d.notes), env=d.env)
            assert r.returncode == 0, r.stderr
            assert (f"the daemon (pid {old_pid}) on {d.sock} ran remembrancer {build.version()} (build {OLD}), not "
                    f"this remembrancer {build.version()} (build {build.fingerprint()}): stopping it and starting "
                    "one of this build in its place") in r.stderr
            assert d.proc.wait(30) == 0   # asked to stop, it stopped cleanly
            st = ping(d.sock)
            assert st["daemon"]["pid"] != old_pid and st["daemon"]["build"]["fingerprint"] == build.fingerprint()
            assert st["daemon"]["idle_exit_s"] == 600 and st["daemon"]["default_roots"] == [str(d.notes.resolve())]
            assert "restore" in r.stdout.lower()
            # Once replaced, nothing more is said
            again = run_cli("search", "restore the database", "--root", str(d.notes), env=d.env)
            assert again.returncode == 0 and "stopping it" not in again.stderr
            status = run_cli("status", "--root", str(d.notes), env=d.env)
            assert f"daemon build: remembrancer {build.version()} (build {build.fingerprint()})\n" in status.stdout
        finally:
            stop_daemon_at(d.sock)


@pytest.mark.slow
def test_a_served_daemon_of_another_build_is_left_running_and_every_client_says_so(tmp_path, tiny_model_dir):
    with old_daemon(tmp_path, tiny_model_dir) as d:   # `serve` without --idle-exit: serves until stopped
        r = run_cli("search", "restore the database", "--root", str(d.notes), "--json", env=d.env)
        assert r.returncode == 0, r.stderr
        assert (f"the running daemon (pid {d.proc.pid}) runs remembrancer {build.version()} (build {OLD}), not this "
                f"remembrancer {build.version()} (build {build.fingerprint()})") in r.stderr
        assert "left running, and not used" in r.stderr and "fix: `remembrancer stop`" in r.stderr
        out = json.loads(r.stdout)
        assert out["results"]   # answered in-process, by this build's code
        assert out["index"]["verdict"] == "stale" and f"(build {OLD})" in out["index"]["reason"]
        assert "answered in-process, read-only" in out["index"]["reason"]
        assert d.proc.poll() is None and ping(d.sock)["daemon"]["build"]["fingerprint"] == OLD

        status = run_cli("status", "--root", str(d.notes), env=d.env)
        assert status.returncode == 0, status.stderr
        assert (f"daemon: pid {d.proc.pid} on {d.sock} runs remembrancer {build.version()} (build {OLD}), NOT this "
                f"remembrancer {build.version()} (build {build.fingerprint()}): not used (answered in-process, "
                "read-only)\n  fix: `remembrancer stop`") in status.stdout
        raw = json.loads(run_cli("status", "--root", str(d.notes), "--json", env=d.env).stdout)
        assert raw["client_build"]["fingerprint"] == build.fingerprint()
        assert raw["other_build_daemon"]["build"]["fingerprint"] == OLD and raw["other_build_daemon"]["pid"] == d.proc.pid

        # no roots: nothing to answer from in-process; status still shows the daemon, flagged
        bare = run_cli("status", env=d.env)
        assert bare.returncode == 0 and "NOT this remembrancer" in bare.stdout, bare.stdout + bare.stderr
        assert "freshness" not in bare.stdout   # the old daemon's verdicts are not passed off

        doctor = run_cli("doctor", "--json", env=d.env)
        checks = {c["check"]: c for c in json.loads(doctor.stdout)}
        assert checks["daemon"]["status"] == "FAIL" and f"(build {OLD})" in checks["daemon"]["detail"]
        assert "remembrancer stop" in checks["daemon"]["fix"]
        assert checks["remembrancer"]["detail"].startswith(f"{build.version()} (build {build.fingerprint()})")

        # `stop` works whatever the build; then a client of this build serves itself
        stopped = run_cli("stop", env=d.env)
        assert f"stopped daemon pid {d.proc.pid}" in stopped.stdout
        assert d.proc.poll() == 0   # gone when `stop` says so, not only its socket


@pytest.mark.slow
def test_a_client_older_than_the_installed_code_does_not_replace_the_daemon_of_the_installed_build(
        tmp_path, tiny_model_dir):
    """An MCP server started before an upgrade runs the old code: the daemon of the installed build
    is the right one, and the old client says it must be restarted instead of replacing it."""
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLES, notes)
    with DaemonProc(tmp_path, [notes], tiny_model_dir, extra=("--idle-exit", "600")).start() as d:
        try:
            r = run_cli("search", "restore the database", "--root", str(notes), "--json",
                        env={**d.env, build.TEST_FINGERPRINT_ENV: OLD})
            assert r.returncode == 0, r.stderr
            assert (f"this process runs remembrancer {build.version()} (build {OLD}), but the installed one is "
                    f"remembrancer {build.version()} (build {build.fingerprint()})") in r.stderr
            assert "restart this process" in json.loads(r.stdout)["index"]["reason"]
            assert d.proc.poll() is None   # not replaced
        finally:
            stop_daemon_at(d.sock)


def test_version_names_the_build(tmp_path):
    r = run_cli("--version")
    assert r.returncode == 0
    assert r.stdout == f"remembrancer {build.version()} (build {build.fingerprint()})\n"


def test_the_fingerprint_is_of_the_code_and_changes_with_it(tmp_path, monkeypatch):
    """The package's .py files and service templates, by path inside the package: a wheel's layout
    (subpackages inside the package folder) and a checkout's give the same digest."""
    files = {name: build._files(folder) for name, folder in build._folders()}
    assert "wire.py" in files[""] and "build.py" in files[""] and "server.py" in files["daemon"]
    assert "remembrancer.service.in" in files["systemd"]
    assert not any("__pycache__" in f or f.endswith(".pyc") for fs in files.values() for f in fs)
    real = build.on_disk()
    assert real == build.on_disk() and len(real) == build.LENGTH
    # a wheel's layout of the same files
    wheel = tmp_path / "site" / "remembrancer"
    for name, folder in build._folders():
        for rel in files[name]:
            dest = wheel / name / rel if name else wheel / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f"{folder}/{rel}", dest)
    monkeypatch.setattr(build, "_folders", lambda: [("", str(wheel))] + [(n, str(wheel / n)) for n in build.SUBPACKAGES])
    same = build.on_disk()
    assert same == real
    (wheel / "indexer" / "redact.py").write_text((wheel / "indexer" / "redact.py").read_text() + "\n# changed\n")
    assert build.on_disk() != same
