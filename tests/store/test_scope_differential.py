"""The scope differential: a scoped server answers exactly as a corpus of only the scoped files.

Every MCP tool (listed from the server itself) is called with the same arguments against (a) the
full corpus served with `--scope journal/ --scope services/` and (b) a corpus holding only those
folders, with their history (tests/scope_world.py), and the answers — text and structured content,
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
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from tests.scope_world import build, map_ids_back

PROJECT = Path(__file__).resolve().parent.parent
VOLATILE = {"index_dir", "took_ms", "last_indexed_at", "generation", "fulltext_generation", "vectors_generation",
            "seconds", "at", "started_at", "indexed_at", "pid", "socket", "clients", "requests", "idle_exit_s",
            "model_loads", "notifications", "last_notification"}
QUERIES = ["replication lag on db1", "backup restore", "too many clients", "how do I restore the database",
           "pool size 40", "uppercase escape words JOURNAL", "journal-archive December", "db1", "pg1 replication",
           "pgbackrest", "what happened on 2030-02-10", "Okta SSO login", "wip replication tuning draft",
           "broken front matter", "10.9.0.11", "pg-primary"]
SCOPED_DOCS = ["journal/2030-02-10.md", "journal/2030-02-11.md", "journal/db1-log.md", "journal/pool.md",
               "journal/broken.md", "services/queue.md"]
OUTSIDE = ["hosts/db1.md", "JOURNAL/shout.md", "journal-archive/2029-12-01.md", "journal/host-db1.md",
           "runbooks/restore.md", "hosts/incident.md", "journal/follow-up.md", "Journal/2030-02-10.md"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build(tmp_path_factory.mktemp("scope-world"))


def calls_for(world) -> list[tuple[str, dict]]:
    """Representative arguments for every tool; commit ids are the full history's."""
    out: list[tuple[str, dict]] = [("index_status", {}), ("list_documents", {}), ("list_documents", {"path": "journal/"}),
                                   ("list_documents", {"type": "journal"}), ("list_documents", {"path": "hosts/"})]
    for q in QUERIES:
        out.append(("search", {"query": q}))
    out += [
        ("search", {"query": "replication", "limit": 10}),
        ("search", {"query": "replication", "type": "journal", "since": "2030-02-11"}),
        ("search", {"query": "backup", "tags": ["database"]}),
        ("search", {"query": "", "type": "journal"}),
        ("search", {"query": "", "tags": ["ops"]}),
        ("search", {"query": "too many clients", "exact": True}),
        ("search", {"query": "replication", "path": "journal/"}),
        ("search", {"query": "x", "type": "host"}),
        ("search", {"query": "x", "tags": ["nonexistent-tag"]}),
        ("latest", {"terms": ["replication"]}),
        ("latest", {"terms": "\"too many clients\" 40"}),
        ("latest", {"terms": ["db1", "pgbackrest"]}),
        ("latest", {"terms": ["UPPERCASE"]}),
        ("latest", {"terms": [world["app_ids"][0][:10]]}),
        ("latest", {"terms": ["replication"], "type": "journal", "since": "2030-02-11"}),
        ("history", {"entity": "db1"}),
        ("history", {"entity": "pg1", "topic": "replication"}),
        ("history", {"entity": "10.9.0.11"}),
        ("history", {"entity": "queue"}),
        ("history", {"entity": "pg-primary", "topic": "replication"}),
        ("history", {"entity": "mq", "since": "2030-02-11"}),
        ("search", {"query": "pg-primary replication", "limit": 8}),
        ("verify", {"text": f"fixed in app@{world['app_ids'][0][:10]} and {world['app_ids'][1][:7]}"}),
        ("verify", {"path": "journal/2030-02-10.md", "heading": "db1 replication lag"}),
        ("verify", {}),
    ]
    for c in world["commits"]:
        out.append(("verify", {"text": f"landed in {c[:12]}"}))
        out.append(("verify", {"text": c}))
        out.append(("latest", {"terms": [c[:10]]}))
    for p in SCOPED_DOCS:
        out += [("read", {"path": p}), ("read", {"path": p, "outline": True}), ("neighbors", {"path": p}),
                ("verify", {"path": p}), ("read", {"path": p, "lines": [1, 3]})]
    out.append(("read", {"path": "journal/2030-02-10.md", "heading": "Backup"}))
    for p in OUTSIDE:
        out += [("read", {"path": p}), ("neighbors", {"path": p}), ("verify", {"path": p})]
    return out


def to_scoped_ids(args: dict, mapping: dict[str, str]) -> dict:
    """The same question asked of the only-scoped corpus: a full commit id becomes its twin there."""
    text = json.dumps(args)
    for old, new in mapping.items():
        for n in (40, 12, 10, 7):
            text = text.replace(old[:n], new[:n])
    return json.loads(text)


def normalise(obj, world, which: str):
    text = json.dumps(obj, ensure_ascii=False, sort_keys=True)
    if which == "only":
        text = map_ids_back(text, world["ids"])
    text = text.replace(str(world[which]), "<root>")
    text = re.sub(r"generation \d+", "generation N", text)
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "<time>", text)
    text = re.sub(r"\(\d+(\.\d+)? ?ms\)", "(<ms>)", text)
    return _drop_volatile(json.loads(text))


def _drop_volatile(obj):
    if isinstance(obj, dict):
        return {k: ("<volatile>" if k in VOLATILE else _drop_volatile(v)) for k, v in obj.items() if k != "scope"}
    if isinstance(obj, list):
        return [_drop_volatile(v) for v in obj]
    if isinstance(obj, str) and obj.startswith("{") and obj.endswith("}"):
        try:  # a tool's text is JSON sometimes (errors): compare it as data
            return _drop_volatile(json.loads(obj))
        except ValueError:
            return obj
    return obj


def differences(a, b, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{where}.{k}: {'missing in scoped' if k not in a else 'missing in only-scoped'} "
                           f"({json.dumps(a.get(k, b.get(k)))[:160]})")
            else:
                out += differences(a[k], b[k], f"{where}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = [f"{where}: {len(a)} vs {len(b)} items"] if len(a) != len(b) else []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{where}[{i}]")
        return out
    if a != b:
        return [f"{where}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}"]
    return []


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


def _run_all(server, calls):
    from mcp import Client

    async def go():
        async with Client(server) as c:
            tools = (await c.list_tools()).tools
            answers = []
            for name, args in calls:
                r = await c.call_tool(name, args)
                answers.append({"is_error": bool(r.is_error), "text": [x.text for x in r.content],
                                "structured": r.structured_content})
            return {t.name: {"description": t.description, "schema": t.input_schema} for t in tools}, answers
    return anyio.run(go)


@dataclass
class Differential:
    tools_a: dict
    tools_b: dict
    answers_a: list
    answers_b: list
    tool_diffs: list[str]
    per_call: list[list[str]]   # the differing fields of each call's two answers

    @property
    def diffs(self) -> list[str]:
        return self.tool_diffs + [d for call in self.per_call for d in call]


def run_differential(a, a_link, b, b_link, world, calls, map_ids: bool = True, clean=lambda x: x) -> Differential:
    """Every call through server `a` (the scoped one) and server `b` (a corpus of only the scoped
    files, asked with that corpus's ids unless `map_ids` is off), both links closed after; each pair
    of answers, and the tool lists (their descriptions hold the store's age), normalised (and
    `clean`ed) and compared field by field."""
    try:
        tools_a, answers_a = _run_all(a, calls)
        tools_b, answers_b = _run_all(b, [(n, to_scoped_ids(x, world["ids"]) if map_ids else x) for n, x in calls])
    finally:
        a_link.close()
        b_link.close()
    per_call = [differences(clean(normalise(x, world, "full")), clean(normalise(y, world, "only")),
                            f"{name}({json.dumps(args)})")
                for (name, args), x, y in zip(calls, answers_a, answers_b)]
    return Differential(tools_a, tools_b, answers_a, answers_b,
                        differences(clean(normalise(tools_a, world, "full")), clean(normalise(tools_b, world, "only")), "tools"),
                        per_call)


# Without the slash too: `journal` never holds journal-archive/ (nor JOURNAL/).
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
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path),
               "REMEMBRANCER_DATA_DIR": str(tmp_path / f"data-{which}"),
               "REMEMBRANCER_CONFIG": str(tmp_path / "config.toml"),
               "REMEMBRANCER_SOCKET": str(sockdir / f"{which}.sock")}
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
