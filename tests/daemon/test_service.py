"""`service install` writes a unit with absolute paths (a service does not inherit the shell's PATH)."""

from __future__ import annotations

import os

import pytest
from tests.support.cli import run_cli



def run(tmp_path, *args):
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "REMEMBRANCER_DATA_DIR": str(tmp_path / "data"), "REMEMBRANCER_CONFIG": str(tmp_path / "none.toml")}
    return run_cli(*args, env=env, timeout=60)


def test_install_writes_an_absolute_unit_and_uninstall_removes_it(tmp_path):
    notes = tmp_path / "my notes"
    notes.mkdir()
    p = run(tmp_path, "service", "install", "--root", str(notes), "--no-start")
    assert p.returncode == 0, p.stderr
    unit = tmp_path / "cfg" / "systemd" / "user" / "remembrancer.service"
    text = unit.read_text()
    exec_line = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert exec_line.split("=", 1)[1].split()[0].startswith("/")          # absolute program
    assert f'--root "{notes.resolve()}"' in exec_line and " serve " in exec_line
    assert f'REMEMBRANCER_DATA_DIR={tmp_path / "data"}' in text and "WantedBy=default.target" in text
    p = run(tmp_path, "service", "uninstall")
    assert p.returncode == 0 and not unit.exists()


def test_install_without_roots_serves_every_corpus(tmp_path):
    """One daemon serves whatever corpus a request names: a unit needs no roots (given, they are
    only opened at start, warm)."""
    p = run(tmp_path, "service", "install", "--no-start")
    assert p.returncode == 0, p.stderr
    text = (tmp_path / "cfg" / "systemd" / "user" / "remembrancer.service").read_text()
    exec_line = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert exec_line.rstrip().endswith(" serve") and "--root" not in exec_line


def test_the_team_stores_writer_gets_its_own_unit_restarted_on_failure(tmp_path):
    notes = tmp_path / "shared"
    notes.mkdir()
    url = "postgresql://owner@%2Frun%2Fpostgresql/memory"
    p = run(tmp_path, "service", "install", "--store", url, "--root", str(notes), "--pull-every", "120", "--no-start")
    assert p.returncode == 0, p.stderr
    units = tmp_path / "cfg" / "systemd" / "user"
    text = (units / "remembrancer-writer.service").read_text()
    exec_line = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert exec_line.split("=", 1)[1].split()[0].startswith("/")
    assert " serve --store postgresql://owner@%%2Frun%%2Fpostgresql/memory --pull-every 120 --root " in exec_line
    assert "Restart=on-failure" in text and "team store's writer" in text
    assert not (units / "remembrancer.service").exists()   # the daemon's unit is another one
    p = run(tmp_path, "service", "install", "--no-start")
    assert p.returncode == 0 and (units / "remembrancer.service").exists()
    p = run(tmp_path, "service", "uninstall")
    assert p.returncode == 0 and not list(units.iterdir())


def test_a_writer_unit_never_keeps_a_password_and_needs_its_checkout(tmp_path):
    notes = tmp_path / "shared"
    notes.mkdir()
    p = run(tmp_path, "service", "install", "--store", "postgresql://owner:hunter2@db/memory", "--root", str(notes),
            "--no-start")
    assert p.returncode == 2 and "~/.pgpass" in p.stderr and "hunter2" not in p.stderr + p.stdout
    assert not (tmp_path / "cfg" / "systemd" / "user" / "remembrancer-writer.service").exists()
    p = run(tmp_path, "service", "install", "--store", "postgresql://owner@db/memory", "--no-start")
    assert p.returncode == 2 and "--root CHECKOUT" in p.stderr
    p = run(tmp_path, "service", "install", "--pull-every", "60", "--no-start")
    assert p.returncode == 2 and "goes with --store" in p.stderr


def test_a_writer_or_endpoint_that_systemd_did_not_take_is_told_its_own_command(tmp_path, monkeypatch):
    """Without a user bus (a container, an ssh session without linger) `systemctl --user` fails: the
    report's fallback names the unit that was written and the command that runs it — not the
    daemon's (`remembrancer mcp` starts a daemon on demand, but nothing starts a writer or an endpoint)."""
    from pathlib import Path

    from remembrancer.daemon import service
    from remembrancer.indexer.config import Config, Root

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setattr(service.sys, "platform", "linux")
    monkeypatch.setattr(service.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(service, "_run", lambda cmd: (False, "Failed to connect to bus: No medium found"))
    config = Config(roots=[Root("notes", Path("/srv/notes"))])
    url = "postgresql://owner@db-host/memory"
    for unit, cmd, name in (
            (service.writer_unit(config, url, 300), f"remembrancer serve --store {url} --pull-every 300 --root /srv/notes",
             "remembrancer-writer"),
            (service.http_unit(config, url, ["--host", "127.0.0.1", "--port", "8848"]),
             f"remembrancer serve-http --store {url} --root /srv/notes --host 127.0.0.1 --port 8848", "remembrancer-http")):
        ok, report = service.install_service(unit)
        text = "\n".join(report)
        assert not ok and "No medium found" in text
        assert f"`{cmd}`" in text and f"systemctl --user enable --now {name}`" in text, text
        assert "the daemon can still run" not in text and "`remembrancer mcp`" not in text
    ok, report = service.install_service(service.daemon_unit(config))
    assert not ok and service.FALLBACKS in report


# A folder name holding everything a unit line or a plist could change: a variable, a specifier,
# quotes, a backslash, a semicolon, XML's markup characters.
ODD = "a$HOME b\"c\\d%n'e;f&<g>"


def odd_setup(tmp_path):
    notes = tmp_path / f"notes {ODD}"
    notes.mkdir()
    config = tmp_path / "cfg%d$USER.toml"
    config.write_text("")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "REMEMBRANCER_DATA_DIR": str(tmp_path / "50%data$HOME"),
           "REMEMBRANCER_CONFIG": str(config)}
    return notes, env


def test_systemd_reads_every_path_and_setting_of_the_unit_back_unchanged(tmp_path):
    """systemd expands `%` specifiers on every line and `$VAR` in ExecStart=, and unquotes C escapes:
    the unit's text is what systemd itself reads back (`systemd-analyze verify` dumps the parsed
    unit at debug level) — the real parser, not a copy of its rules."""
    import shlex
    import shutil
    import subprocess

    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze (systemd's own unit parser) is not on this machine")
    notes, extra = odd_setup(tmp_path)
    p = run_cli("service", "install", "--root", str(notes), "--no-start", env={**os.environ, **extra}, timeout=60)
    assert p.returncode == 0, p.stderr
    unit = tmp_path / "cfg" / "systemd" / "user" / "remembrancer.service"
    dump = subprocess.run([analyze, "verify", str(unit)], env={**os.environ, "SYSTEMD_LOG_LEVEL": "debug"},
                          capture_output=True, text=True, timeout=60)
    lines = (dump.stdout + dump.stderr).splitlines()
    assert dump.returncode == 0, [line for line in lines if "remembrancer.service" in line][-5:]
    env = dict(line.split(": ", 1)[1].split("=", 1) for line in lines if line.strip().startswith("Environment: "))
    assert env["REMEMBRANCER_DATA_DIR"] == extra["REMEMBRANCER_DATA_DIR"]
    assert env["REMEMBRANCER_CONFIG"] == extra["REMEMBRANCER_CONFIG"]
    dumped = next(line for line in lines if "Command Line: " in line).split("Command Line: ", 1)[1]
    argv = shlex.split(dumped.replace("\\$", "$"))   # the dump C-escapes `$` (ODD has no `\` before one)
    # systemd keeps `$$` in the command until it runs it, then reads it as one `$` (a lone `$NAME` is a variable)
    assert all("$" not in a.replace("$$", "") for a in argv), argv
    assert [a.replace("$$", "$") for a in argv[1:]] == ["serve", "--root", str(notes.resolve())]


def test_a_launchd_agent_carries_every_path_and_setting_unchanged(tmp_path, monkeypatch):
    """The plist is XML: launchd passes its strings as they are (no shell, no variables), so what
    plistlib reads back is what the daemon gets; a control character XML cannot carry is refused."""
    import plistlib

    from remembrancer.daemon import service
    from remembrancer.indexer.config import load_config
    from remembrancer.indexer.errors import UserError

    notes, extra = odd_setup(tmp_path)
    for k, v in extra.items():
        monkeypatch.setenv(k, v)
    agent = plistlib.loads(service.render_plist(service.daemon_unit(load_config([str(notes)]))).encode())
    assert agent["ProgramArguments"][-3:] == ["serve", "--root", str(notes.resolve())]
    assert agent["EnvironmentVariables"]["REMEMBRANCER_DATA_DIR"] == extra["REMEMBRANCER_DATA_DIR"]
    assert agent["EnvironmentVariables"]["REMEMBRANCER_CONFIG"] == extra["REMEMBRANCER_CONFIG"]
    assert agent["StandardErrorPath"] == extra["REMEMBRANCER_DATA_DIR"] + "/daemon.log"
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "bell\x07data"))
    with pytest.raises(UserError, match="control character"):
        service.render_plist(service.daemon_unit(load_config([str(notes)])))
