"""The memory tools (history, latest, neighbors, verify) through the real MCP stdio client.

`python -m cli.main mcp --root <fixture>` runs with a private environment: a config naming the
fixture's app repository for `verify` and a query log path, a data dir and a socket of its own;
the server starts a daemon on demand with the real default model (as in tests/mcp/test_mcp.py).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.support import memory as mf
from tests.support.cli import run_cli
from tests.support.daemon import stop_daemon_at
from tests.support.env import remembrancer_env
from tests.support.paths import PROJECT

FRESHNESS_LINE = re.compile(r"^Index (fresh|catching up: .+|STALE: .+)")
MEMORY_TOOLS = {"history", "latest", "neighbors", "verify"}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    base = tmp_path_factory.mktemp("mcpmem")
    fx = mf.build(base / "fx")
    home = base / "home"
    home.mkdir()
    log = base / "queries.jsonl"
    cfg = base / "config.toml"
    cfg.write_text(f'[verify]\nrepos = ["{fx["app"]}"]\n[log]\npath = "{log}"\n')
    sockdir = Path(tempfile.mkdtemp(prefix="rmb-mem-", dir="/tmp"))   # AF_UNIX paths must stay short
    env = remembrancer_env(data=base / "data", socket=sockdir / "daemon.sock", config=cfg, home=home)
    w = {**fx, "env": env, "sock": sockdir / "daemon.sock", "log": log}
    # Indexed first, as the README has a user do: the assertions below read the whole corpus, and a
    # daemon started on demand answers from a partial first pass (saying so) on a loaded machine.
    r = run_cli("index", "--root", str(fx["notes"]), env=env, cwd=PROJECT, timeout=300)
    assert r.returncode == 0, r.stderr
    yield w
    stop_daemon_at(w["sock"])   # the daemon this module's sessions started
    shutil.rmtree(sockdir, ignore_errors=True)


def session(world, fn):
    p = StdioServerParameters(command=sys.executable,
                              args=["-m", "remembrancer", "mcp", "--idle-exit", "30", "--root", str(world["notes"])],
                              env=world["env"], cwd=str(PROJECT))

    async def main():
        async with Client(p, read_timeout_seconds=120) as c:
            return await fn(c)
    return anyio.run(main)


def text(r) -> str:
    return r.content[0].text


@pytest.mark.slow
@pytest.mark.real_model
def test_memory_tools_over_mcp_stdio(world):
    shas = world["shas"]

    async def go(c):
        tools = (await c.list_tools()).tools
        calls = {
            "history": await c.call_tool("history", {"entity": "pg-primary", "limit": 5}),
            "history_topic": await c.call_tool("history", {"entity": "db1", "topic": "migration"}),
            "latest": await c.call_tool("latest", {"terms": ["0042"]}),
            "latest_relaxed": await c.call_tool("latest", {"terms": "0042 zzqx-nothing"}),
            "latest_sha": await c.call_tool("latest", {"terms": [shas["app_migration"]], "type": "journal"}),
            "neighbors": await c.call_tool("neighbors", {"path": "runbooks/postgres/failover.md"}),
            "verify": await c.call_tool("verify", {"path": "journal/2030/2030-02-10.md"}),
            "verify_text": await c.call_tool("verify", {"text": f"landed as app@{shas['app_migration'][:7]}"}),
            "search": await c.call_tool("search", {"query": "", "type": "journal", "tags": ["runbook"]}),
            "err_entity": await c.call_tool("history", {"entity": "db3"}),
            "err_path": await c.call_tool("neighbors", {"path": "hosts/nope.md"}),
            "err_verify": await c.call_tool("verify", {}),
            "err_limit": await c.call_tool("latest", {"terms": "x", "limit": 0}),
        }
        return tools, c.instructions, calls

    tools, instructions, r = session(world, go)
    by = {t.name: t for t in tools}
    assert MEMORY_TOOLS <= set(by)
    # descriptions tell an agent which axis each tool answers
    assert "Which tool:" in instructions and "→ history" in instructions and "→ verify" in instructions
    assert "history = one host/service over time" in by["search"].description
    assert "NOT by relevance" in by["history"].description and "newest first" in by["history"].description
    assert "ALL the given terms" in by["latest"].description and "no ranking" in by["latest"].description
    assert "backlinks" in by["neighbors"].description
    assert "UNKNOWN, never 'absent'" in by["verify"].description and "landed" in by["verify"].description
    for name in MEMORY_TOOLS:
        assert by[name].annotations.read_only_hint is True
        assert all(p.get("description") for p in by[name].input_schema["properties"].values())
    assert by["history"].input_schema["required"] == ["entity"]

    for key, res in r.items():
        if key.startswith("err_"):
            continue
        assert not res.is_error, (key, text(res))
        assert FRESHNESS_LINE.match(text(res).splitlines()[0]), (key, text(res)[:200])
        assert "Traceback" not in text(res)

    h = r["history"].structured_content
    assert h["entity"]["name"] == "db1" and len(h["results"]) == 5 and h["truncated"]
    dates = [x["date"] for x in h["results"]]
    assert dates == sorted(dates, reverse=True)
    assert "History of db1" in text(r["history"]) and "newest first" in text(r["history"])
    assert f"app@{shas['app_migration'][:10]}: landed on main" in text(r["history"])
    assert [x["path"] for x in r["history_topic"].structured_content["results"]] == \
        ["journal/2030/2030-02-12.md", "journal/2030/2030-02-10.md"]

    lt = r["latest"].structured_content
    assert [x["path"] for x in lt["results"]] == ["journal/2030/2030-02-12.md", "journal/2030/2030-02-10.md"]
    rel = r["latest_relaxed"].structured_content
    assert rel["relaxed"] and rel["not_in_corpus"] == ["zzqx-nothing"]
    assert "occurs nowhere in the corpus" in text(r["latest_relaxed"])
    assert [x["path"] for x in r["latest_sha"].structured_content["results"]] == ["journal/2030/2030-02-12.md"]

    nb = r["neighbors"].structured_content
    assert nb["counts"] == {"outbound": 6, "inbound": 0, "unresolved": 1}
    assert "Unresolved (broken) links:" in text(r["neighbors"]) and "tls-setup" in text(r["neighbors"])

    (v,) = r["verify"].structured_content["commits"]
    assert (v["verdict"], v["exists"], v["landed"]) == ("not_landed", True, False)
    assert v["replaced_by"]["commit"] == shas["app_migration"]
    assert "NOT landed on main" in text(r["verify"])
    assert r["verify_text"].structured_content["commits"][0]["verdict"] == "landed"

    s = r["search"].structured_content
    assert s["results"] == [] and "without tags=runbook" in s["message"] and s["emptied_by"]

    for key, param in (("err_entity", "entity"), ("err_path", "path"), ("err_verify", "path"),
                       ("err_limit", "limit")):
        res = r[key]
        assert res.is_error and res.structured_content["error"]["param"] == param, (key, text(res))
        assert "Traceback" not in text(res)
    assert {"db1", "db2"} <= set(r["err_entity"].structured_content["error"]["valid_options"])

    # every question went to the local query log, redacted, with its verdict and latency
    entries = [json.loads(x) for x in world["log"].read_text().splitlines()]
    tools_logged = [e["tool"] for e in entries]
    assert tools_logged.count("history") == 3
    assert tools_logged.count("latest") == 3                 # err_limit failed validation before any call
    assert tools_logged.count("verify") == 3 and tools_logged.count("neighbors") == 2
    assert tools_logged.count("search") == 1
    assert all(e["client"] == "mcp" and e["latency_ms"] >= 0 for e in entries)
    verdicts = {(e["tool"], e["query"]): e["verdict"] for e in entries}
    assert verdicts[("latest", "0042 zzqx-nothing")] == "relaxed"
    assert verdicts[("history", "db3")] == "error" and verdicts[("search", "")] == "empty"

    rep = run_cli("report", "--json", env=world["env"], cwd=PROJECT, timeout=60)
    assert rep.returncode == 0, rep.stderr
    summary = json.loads(rep.stdout)
    assert summary["queries"] == len(entries) and summary["by_tool"]["history"] == 3
    assert any(a["tool"] == "search" for a in summary["abstentions"])
