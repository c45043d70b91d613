"""The scope differential: a scoped server answers exactly as a corpus of only the scoped files.

Every MCP tool (listed from the server itself) is called with the same arguments against (a) the
full corpus served with `--scope journal/ --scope services/` and (b) a corpus holding only those
folders, with their history (tests/support/scope_world.py), and the answers — text and structured content,
scores included — are compared field by field. What may legitimately differ is normalised, and
only that: absolute paths of the roots and index folders, timestamps and durations, the catalog's
generation counters (opaque version stamps: each catalog counts its own writes), the scoped
server's `scope` field in index_status, and commit ids (the scoped history is a rewritten
history: ids are mapped back, see scope_world.py). The in-process run goes through the real MCP
server, Link and local backend; one stdio run checks the real client and daemon path too.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import anyio
import pytest

from tests.support.paths import PROJECT
from tests.support.scope_world import (OUTSIDE, QUERIES, SCOPED_DOCS, build, calls_for, differences, normalise,
                                       run_differential, to_scoped_ids)
from tests.support.env import remembrancer_env


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build(tmp_path_factory.mktemp("scope-world"))


def _server(root: Path, app: Path, embedder, scope: list[str]):
    from remembrancer.daemon.connect import LocalBackend
    from remembrancer.indexer.config import Config, make_roots
    from remembrancer.indexer.store.scope import normalize

    _Indexed = _local_backend()
    from remembrancer.mcp_server.link import Link
    from remembrancer.mcp_server.server import build_server

    cfg = Config(roots=make_roots([root]), verify_repos=[app])
    writer = LocalBackend(cfg, readonly=False, embedder=embedder)
    writer.refresh()
    writer.close()
    link = Link(cfg, 60.0, scope=normalize(scope))
    link.backend = _Indexed(cfg, readonly=True, embedder=embedder)
    return build_server(link, doc_types=cfg.doc_types), link


def _local_backend():
    from remembrancer.daemon.connect import LocalBackend

    class Indexed(LocalBackend):
        """The engine in-process over the index just built. Tool calls run on worker threads, so
        the engine is read-only; nothing changes under it, so it is fresh (and the Link has no
        daemon to look for)."""

        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.readonly = False

        def refresh(self):
            return self.last_report
    return Indexed


# Without the slash too: `journal` never holds journal-archive/ (nor JOURNAL/).
@pytest.mark.slow
@pytest.mark.parametrize("scope", [["journal/", "services/"], ["journal", "./services"]])
def test_scoped_server_answers_exactly_like_a_corpus_of_only_the_scope(world, tiny_embedder, tmp_path, monkeypatch,
                                                                        scope):
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("REMEMBRANCER_SOCKET", str(tmp_path / "no-daemon.sock"))
    full, full_link = _server(world["full"], world["app"], tiny_embedder, scope)
    only, only_link = _server(world["only"], world["app"], tiny_embedder, [])
    calls = calls_for(world)
    run = run_differential(full, full_link, only, only_link, world, calls)
    tools_a, answers_a, answers_b = run.tools_a, run.answers_a, run.answers_b
    assert set(tools_a) == set(run.tools_b)
    called = {n for n, _ in calls}
    assert called == set(tools_a), f"tools never called: {set(tools_a) - called}"
    diffs, differing = run.diffs, sum(bool(d) for d in run.per_call)
    if os.environ.get("SCOPE_DIFF_DUMP"):
        Path(os.environ["SCOPE_DIFF_DUMP"]).write_text(json.dumps(
            [{"call": [n, a], "scoped": x, "only": y} for (n, a), x, y in zip(calls, answers_a, answers_b)], indent=1))
    assert not diffs, (f"{differing} of {len(calls)} answers differ ({len(diffs)} fields):\n"
                       + "\n".join(diffs[:60]))
    # The comparison can fail: the scoped corpus really holds more than the scope.
    plain = [a for (n, args), a in zip(calls, answers_a) if n == "search" and set(args) == {"query"}]
    assert all(not a["is_error"] for a in plain)
    assert sum(bool(a["structured"].get("results")) for a in plain) >= len(QUERIES) // 2
    outside = [a for (n, args), a in zip(calls, answers_a) if n == "read" and args.get("path") in OUTSIDE]
    assert outside and all(a["is_error"] for a in outside)


def test_the_differential_sees_a_leak(world, tiny_embedder, tmp_path, monkeypatch):
    """Without the scope, the same comparison finds differences (the check is not vacuous)."""
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("REMEMBRANCER_SOCKET", str(tmp_path / "no-daemon.sock"))
    full, full_link = _server(world["full"], world["app"], tiny_embedder, [])
    only, only_link = _server(world["only"], world["app"], tiny_embedder, [])
    calls = [("search", {"query": "replication lag on db1"}), ("neighbors", {"path": "journal/2030-02-10.md"})]
    assert all(run_differential(full, full_link, only, only_link, world, calls, map_ids=False).per_call)


@pytest.mark.slow
def test_over_stdio_with_the_daemon(world, tiny_model_dir, tmp_path):
    """The real path: `remembrancer mcp --scope journal/` (a daemon on a socket) against
    `remembrancer mcp` over the only-scoped corpus — a few tools, the same comparison."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    (tmp_path / "config.toml").write_text(f'[model]\npath = "{tiny_model_dir}"\n[verify]\nrepos = ["{world["app"]}"]\n')
    sockdir = Path(tempfile.mkdtemp(prefix="rmb-sd-", dir="/tmp"))
    calls = [("index_status", {}), ("search", {"query": "replication lag on db1"}),
             ("neighbors", {"path": "journal/2030-02-10.md"}), ("verify", {"text": world["commits"][1][:12]}),
             ("read", {"path": "journal/host-db1.md"}), ("latest", {"terms": ["replication"]})]

    def params(which: str, scope: list[str]) -> StdioServerParameters:
        env = remembrancer_env(data=tmp_path / f"data-{which}", config=tmp_path / "config.toml",
                               socket=sockdir / f"{which}.sock", home=tmp_path)
        args = ["-m", "remembrancer", "mcp", "--root", str(world[which]), "--idle-exit", "2"]
        args += [x for s in scope for x in ("--scope", s)]
        return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(PROJECT))

    async def go(p, cs):
        async with Client(p, read_timeout_seconds=120) as c:
            for _ in range(240):   # the daemon's first index run must be over (a loaded machine is slow)
                st = (await c.call_tool("index_status", {})).structured_content or {}
                if (st.get("freshness") or {}).get("verdict") == "fresh" and (st.get("daemon") or {}).get("last_ingest"):
                    break
                await anyio.sleep(0.25)
            out = []
            for name, args in cs:
                r = await c.call_tool(name, args)
                st = r.structured_content or {}
                if name == "index_status":   # the daemon's own facts differ; its last run is the scope's
                    st = {**{k: v for k, v in st.items() if k not in ("daemon", "freshness")},
                          "last_ingest": st["daemon"]["last_ingest"]}
                out.append({"is_error": bool(r.is_error), "structured": st})
            return out

    try:
        a = anyio.run(go, params("full", ["journal/", "services/"]), calls)
        b = anyio.run(go, params("only", []), [(n, to_scoped_ids(x, world["ids"])) for n, x in calls])
    finally:   # the daemons exit on their own (--idle-exit 2); their sockets' folder goes now
        shutil.rmtree(sockdir, ignore_errors=True)
    diffs = []
    for (name, args), x, y in zip(calls, a, b):
        diffs += differences(normalise(x, world, "full"), normalise(y, world, "only"), name)
    assert not diffs, "\n".join(diffs[:40])
    assert a[1]["structured"]["results"] and a[4]["is_error"]
    assert a[0]["structured"]["last_ingest"]["scanned"] == len(SCOPED_DOCS)
