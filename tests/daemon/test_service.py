"""`service install` writes a unit with absolute paths (a service does not inherit the shell's PATH)."""

from __future__ import annotations

import os
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
