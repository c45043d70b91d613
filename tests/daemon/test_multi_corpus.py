"""One daemon for every corpus of a user: a real `serve` process on a real socket, two git
repositories whose real hooks notify it, and real `remembrancer mcp` processes (no --root)
driven by the SDK's stdio client from each project's folder. The tiny model keeps it fast.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import ListRootsResult, Root

from tests.support.daemon import wait_for
from tests.support.two_projects import run_git, serve, serving_both, two_projects  # noqa: F401  (fixtures)
from tests.support.cli import run_cli


@pytest.mark.slow
def test_two_corpora_one_daemon_fresh_after_commits_one_model(two_projects, serve):
    world = two_projects
    d, alpha, beta = serving_both(world, serve)
    for repo, rel, text in ((alpha, "backups.md", "# Backups\n\nalpha backups run at 02:00 with pgbackrest.\n"),
                            (beta, "topics.md", "# Topics\n\nbeta topic retention is seven days.\n")):
        (repo / rel).write_text(text)
        run_git(repo, world["env"], "add", "-A")
        run_git(repo, world["env"], "commit", "-q", "-m", f"add {rel}")
    a, b = d.wait_fresh(alpha, 2), d.wait_fresh(beta, 2)
    assert a["index_dir"] != b["index_dir"]   # each corpus keeps its own index
    assert [r["path"] for r in a["roots"]] == [str(alpha)] and [r["path"] for r in b["roots"]] == [str(beta)]
    st = d.call("status")   # no corpus named: the daemon and its corpus list
    assert st["daemon"]["multi_corpus"] and st["daemon"]["notifications"] >= 2
    listed = {tuple(c["roots"]): c["freshness"]["verdict"] for c in st["corpora"]}
    assert listed == {(str(alpha),): "fresh", (str(beta),): "fresh"}
    assert st["daemon"]["model_loads"] == 1   # one model for both corpora
    hits = d.call("search", roots=[str(beta)], query="topic retention")
    assert hits["results"] and all(r["path"] in ("notes.md", "topics.md") for r in hits["results"])
    assert "backups.md" not in {r["path"] for r in hits["results"]}
    # A notification for a folder no corpus holds is ignored, and says so.
    other = world["tmp"] / "elsewhere"
    other.mkdir()
    out = d.call("notify", root=str(other), event="post-commit")
    assert out["corpora"] == [] and "no corpus" in out["ignored"]


@pytest.mark.slow
def test_idle_corpus_released_and_reopened(two_projects, serve):
    world, d = two_projects, serve("--corpus-idle", "1")
    alpha = world["repos"]["alpha"]
    d.wait_fresh(alpha, 1)
    wait_for(lambda: [c for c in d.call("status")["corpora"] if c["state"] == "closed"], 20)
    (closed,) = d.call("status")["corpora"]
    assert closed["roots"] == [str(alpha)] and closed["state"] == "closed"
    (alpha / "later.md").write_text("# Later\n\nwritten while the corpus was closed.\n")
    st = d.wait_fresh(alpha, 2)   # reopened on demand, caught up with what changed meanwhile
    assert st["daemon"]["model_loads"] == 1   # the shared model stayed loaded


def mcp_params(world, cwd: Path, **env) -> StdioServerParameters:
    """The one user-scope command line: no --root."""
    return StdioServerParameters(command=sys.executable, args=["-m", "remembrancer", "mcp", "--idle-exit", "30"],
                                 env={**world["env"], **env}, cwd=str(cwd))


def mcp_search(p: StdioServerParameters, query: str, roots: list[Path] | None = None) -> tuple[dict, dict]:
    async def list_roots(context):
        return ListRootsResult(roots=[Root(uri=r.as_uri()) for r in roots])

    async def main():
        # roots/list exists on handshake-era connections (what Claude Code speaks); the 2026-07-28
        # protocol deprecates it and forbids server-initiated requests
        kw = {"list_roots_callback": list_roots, "mode": "legacy"} if roots else {}
        async with Client(p, read_timeout_seconds=60, **kw) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            res = await c.call_tool("search", {"query": query})
            st = await c.call_tool("index_status", {})
            return {"search": res.structured_content, "tools": tools}, st.structured_content
    return anyio.run(main)


@pytest.mark.slow
def test_mcp_in_each_project_answers_from_its_own_corpus(two_projects, serve):
    """Each project is an indexed corpus (the daemon was asked for it): a session opened there serves it."""
    world = two_projects
    d, alpha, beta = serving_both(world, serve)
    # alpha: the client names its project through roots/list; beta: CLAUDE_PROJECT_DIR (no roots)
    a, a_st = mcp_search(mcp_params(world, alpha), "restore the database", roots=[alpha])
    b, b_st = mcp_search(mcp_params(world, beta, CLAUDE_PROJECT_DIR=str(beta)), "broker restarts rebalance")
    assert [r["path"] for r in a_st["roots"]] == [str(alpha)]
    assert [r["path"] for r in b_st["roots"]] == [str(beta)]
    for out, word in ((a, "pg_restore"), (b, "session.timeout")):
        results = out["search"].get("results") or out["search"].get("best_weak")
        assert results and word in results[0]["content" if "content" in results[0] else "snippet"]
    assert "1 document" in a["tools"]["search"].description or "notes" in a["tools"]["search"].description
    assert a_st["daemon"]["pid"] == b_st["daemon"]["pid"] == d.proc.pid   # the one daemon
    assert d.call("status")["daemon"]["model_loads"] == 1


@pytest.mark.slow
def test_mcp_without_any_corpus_says_how_to_name_one(two_projects):
    """No --root, no roots from the client, no CLAUDE_PROJECT_DIR, no configured roots: a tool
    answers with the structured error and its fix (the server itself still starts)."""
    world = two_projects
    async def main():
        async with Client(mcp_params(world, world["tmp"]), read_timeout_seconds=60) as c:
            return await c.call_tool("search", {"query": "x"})
    res = anyio.run(main)
    assert res.is_error and "no corpus to serve" in res.content[0].text and "--root" in res.content[0].text


@pytest.mark.slow
def test_cli_search_on_a_new_corpus_waits_for_the_daemon_to_build_it(two_projects, serve):
    """The daemon takes any corpus: a first CLI search of one says it is being built and answers
    from the finished index (not an empty 'catching up' answer)."""
    world, d = two_projects, serve()
    beta = world["repos"]["beta"]
    r = run_cli("search", "kafka consumers rebalance broker", "--root", str(beta), env=world["env"])
    assert "no index yet" in r.stderr and "the daemon is building it now" in r.stderr
    assert "notes.md" in r.stdout and "0 documents" not in r.stdout
    assert d.status(beta)["daemon"]["pid"] == d.proc.pid


def test_a_corpus_asked_for_by_many_clients_at_once_is_opened_once(two_projects, serve):
    import threading

    world, d = two_projects, serve()
    alpha, beta = world["repos"]["alpha"], world["repos"]["beta"]
    d.wait_fresh(alpha, 1)
    answers: list = []
    threads = [threading.Thread(target=lambda: answers.append(d.status(beta))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(answers) == 8 and all(a and a["roots"][0]["path"] == str(beta) for a in answers)
    assert len({a["index_dir"] for a in answers}) == 1
    assert sorted(tuple(c["roots"]) for c in d.call("status")["corpora"]) == [(str(alpha),), (str(beta),)]
    log = (world["tmp"] / "daemon.log").read_text()
    assert log.count(f"opened corpus {beta}") == 1
    assert d.call("status")["daemon"]["model_loads"] == 1
