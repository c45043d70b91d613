"""A --store URL that cannot be one: empty, or too malformed to parse (an unclosed IPv6 bracket).
Real CLI processes and a real stdio MCP server: a one-line bad-input error (exit 2, the password
masked), never a traceback, and never a silent fall back to indexing the local folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.support.cli import run_cli
from tests.support.env import remembrancer_env
from tests.support.paths import PROJECT

PASSWORD = "Pw-s3cr3t-9917"
MALFORMED = "postgresql://alice@[::1/memory"
MALFORMED_WITH_PASSWORD = f"postgresql://alice:{PASSWORD}@[::1/memory"


@pytest.fixture
def world(tmp_path, tiny_model_dir):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Restart\n\nRestart the ledger service with systemctl.\n")
    (tmp_path / "config.toml").write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    env = remembrancer_env(data=tmp_path / "data", config=tmp_path / "config.toml", socket=tmp_path / "no.sock")
    env.pop("REMEMBRANCER_STORE", None)
    return {"env": env, "notes": notes, "data": tmp_path / "data"}


@pytest.mark.parametrize("command", [
    ["search", "restart"], ["index"], ["status"], ["serve-http"], ["notify", "--event", "manual"],
])
def test_a_malformed_store_url_is_a_one_line_bad_input(world, command):
    r = run_cli(*command, "--store", MALFORMED, "--root", str(world["notes"]), env=world["env"], timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--store is not a valid URL (Invalid IPv6 URL)" in lines[0], r.stderr


def test_a_malformed_url_with_a_password_is_said_masked_in_text_and_json(world):
    r = run_cli("search", "restart", "--store", MALFORMED_WITH_PASSWORD, "--root", str(world["notes"]), "--json",
                env=world["env"], timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert PASSWORD not in r.stdout + r.stderr
    err = json.loads(r.stdout)["error"]
    assert err["code"] == "bad_input" and err["param"] == "store"
    assert "postgresql://alice:***@[::1/memory" in err["message"]


@pytest.mark.parametrize("command", [["search", "restart"], ["index"], ["doctor"]])
def test_an_empty_store_is_refused_not_taken_for_no_store(world, command):
    r = run_cli(*command, "--store", "", "--root", str(world["notes"]), env=world["env"], timeout=60)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "--store is empty" in r.stderr and "Traceback" not in r.stderr
    assert not (world["data"] / "indexes").exists()   # nothing was indexed locally instead


def test_an_empty_store_variable_still_means_no_store(world):
    r = run_cli("index", "--root", str(world["notes"]), env={**world["env"], "REMEMBRANCER_STORE": ""}, timeout=120)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("url", [MALFORMED_WITH_PASSWORD, ""])
def test_mcp_with_a_bad_store_answers_initialize_and_every_call_with_the_error(world, url):
    params = StdioServerParameters(command=sys.executable, cwd=str(PROJECT), env=world["env"],
                                   args=["-m", "remembrancer", "mcp", "--store", url, "--root", str(world["notes"])])

    async def go():
        async with Client(params, read_timeout_seconds=60) as c:
            return c.instructions, await c.call_tool("search", {"query": "restart the ledger"})
    instructions, res = anyio.run(go)
    said = "--store is empty" if url == "" else "--store is not a valid URL"
    assert f"WARNING: {said}" in instructions
    assert res.is_error and said in res.content[0].text
    assert PASSWORD not in instructions + res.content[0].text
    assert not (world["data"] / "indexes").exists()   # a store session never falls back to a local index


@pytest.mark.parametrize("url", ["http://[::1/v1", "http://localhost:99999/v1", "http://localhost:port/v1"])
def test_a_malformed_model_server_url_in_the_config_is_a_config_error(world, tmp_path, url):
    (tmp_path / "config.toml").write_text(f'[model]\nurl = "{url}"\nname = "m"\n')
    r = run_cli("search", "restart", "--root", str(world["notes"]), env=world["env"], timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "[model] url must be an http:// or https:// URL" in r.stderr and "internal error" not in r.stderr


def test_safe_url_masks_what_it_cannot_parse_and_never_raises():
    from remembrancer.indexer.store.postgres.store import has_password, safe_url

    assert safe_url(MALFORMED_WITH_PASSWORD) == "postgresql://alice:***@[::1/memory"
    assert safe_url(MALFORMED) == MALFORMED and not has_password(MALFORMED)
    masked = safe_url("postgresql://u:p@ss/w@[::1/db?password=xyz")
    assert "p@ss/w" not in masked and "xyz" not in masked


def test_a_malformed_root_uri_from_an_mcp_client_is_skipped_not_fatal():
    from remembrancer.mcp_server.choose import paths_from_uris

    assert paths_from_uris(["file://[::1/x", Path("/tmp/notes").as_uri()]) == ["/tmp/notes"]


@pytest.mark.parametrize("url,said", [
    ("postgresql://alice@db-host/memory?bogus=1", 'invalid URI query parameter: "bogus"'),
    (f"postgresql://alice:{PASSWORD}%ZZ@db-host/memory", 'invalid percent-encoded token: "***"'),
])
def test_a_url_libpq_refuses_to_parse_is_a_bad_input_not_an_internal_error(world, url, said):
    r = run_cli("search", "restart", "--store", url, "--root", str(world["notes"]), "--json", env=world["env"],
                timeout=60)
    assert r.returncode == 2 and "internal error" not in r.stderr, (r.returncode, r.stderr)
    err = json.loads(r.stdout)["error"]
    assert err["code"] == "bad_input" and said in err["message"], err
    assert PASSWORD not in r.stdout + r.stderr
