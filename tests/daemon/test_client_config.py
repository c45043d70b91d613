"""A client whose config is not the running daemon's: refused by the daemon, never answered under
the daemon's settings. The daemon was started without the client's `[redact] deny` (a service, an
earlier session), and the files that deny keeps out were served to the CLI, to MCP and to the Claude
Code hook, fresh and without a word. A real daemon on a real socket; real clients in processes of
their own."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from mcp.client.stdio import StdioServerParameters

from tests.support.cli import run_cli
from tests.support.daemon import DaemonProc, mcp_calls

DENIED = "hosts/db1.md"


@pytest.mark.slow
def test_a_client_with_another_config_is_refused_by_the_running_daemon(tmp_path, notes, tiny_model_dir):
    with DaemonProc(tmp_path, [notes], tiny_model_dir) as d:
        d.start()
        mine = tmp_path / "config.toml"   # the daemon's
        deny = tmp_path / "deny.toml"
        deny.write_text(mine.read_text() + '[redact]\ndeny = ["hosts/**"]\n')
        copy = tmp_path / "elsewhere" / "same.toml"   # another file with the same settings
        copy.parent.mkdir()
        copy.write_text(mine.read_text())

        refused = run_cli("search", "pg-primary", "--root", str(notes), "--json",
                          env={**d.env, "REMEMBRANCER_CONFIG": str(deny)})
        assert refused.returncode == 2, refused
        assert DENIED not in refused.stdout
        err = json.loads(refused.stdout)["error"]
        assert err["code"] == "config_mismatch" and "[redact]" in err["message"], err
        assert str(mine) in err["message"] and str(deny) in err["message"]
        assert "remembrancer stop" in err["hint"] and err["valid_options"] == [str(mine)]

        for env in (d.env, {**d.env, "REMEMBRANCER_CONFIG": str(copy)}):   # its own config, or the same settings
            served = run_cli("search", "pg-primary", "--root", str(notes), "--json", env=env)
            assert served.returncode == 0, served
            assert DENIED in [r["path"] for r in json.loads(served.stdout)["results"]]

        # the Claude Code hook: its session line with the daemon's config, nothing with the other
        event = json.dumps({"hook_event_name": "SessionStart", "cwd": str(notes)})
        hook = [sys.executable, "-P", "-m", "remembrancer.hooks.claude_code"]

        def said(config) -> str:
            env = {**d.env, "REMEMBRANCER_CONFIG": str(config), "CLAUDE_PROJECT_DIR": str(notes)}
            for _ in range(5):   # a cold interpreter may miss the 250 ms deadline once
                out = subprocess.run(hook, input=event, env=env, capture_output=True, text=True, timeout=30).stdout
                if out:
                    return out
            return out
        assert "remembrancer: memory in" in said(mine)
        assert said(deny) == ""

        # an MCP session with the other config against the running daemon: a structured refusal
        server = StdioServerParameters(command=sys.executable, env={**d.env, "REMEMBRANCER_CONFIG": str(deny)},
                                       args=["-m", "remembrancer", "mcp", "--root", str(notes)], cwd=str(tmp_path))
        _, (search, read) = mcp_calls(server, d.sock, [("search", {"query": "pg-primary"}),
                                                       ("read", {"path": DENIED})])
        for answer in (search, read):
            assert answer.is_error, answer
            assert answer.structured_content["error"]["code"] == "config_mismatch"
            assert "pg-primary" not in answer.content[0].text and "10.20" not in answer.content[0].text
