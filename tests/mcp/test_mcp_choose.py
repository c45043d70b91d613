"""Which corpus `remembrancer mcp` serves (mcp_server/choose.py), what it says when none will do,
and that a health check (initialize + tools/list, all `claude mcp list` does) leaves nothing
behind: real MCP server processes over stdio, real CLI subprocesses, the tiny model."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import ListRootsResult, Root
from tests.support.cli import run_cli
from tests.support.env import remembrancer_env
from tests.support.paths import PROJECT

EXAMPLES = PROJECT / "examples" / "notes"


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    sockdir = Path(tempfile.mkdtemp(prefix="rmb-choose-", dir="/tmp"))  # AF_UNIX paths must stay short
    env = remembrancer_env(data=tmp_path / "data", socket=sockdir / "d.sock", home=home,
                           config=tmp_path / "config.toml")   # absent: no configured roots
    yield env
    _stop(env)
    shutil.rmtree(sockdir, ignore_errors=True)


@pytest.fixture
def world(env, tmp_path, tiny_model_dir):
    """Notes, an unrelated code project and a fresh folder; the config names the tiny model only."""
    Path(env["REMEMBRANCER_CONFIG"]).write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLES, notes)
    code = tmp_path / "code"
    (code / "src").mkdir(parents=True)
    (code / "README.md").write_text("# Widget\n\nThe widget service renders widgets.\n")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    return {"env": env, "notes": notes.resolve(), "code": code.resolve(), "fresh": fresh.resolve(), "tmp": tmp_path}


def _stop(env: dict) -> None:
    """Stop a daemon a session may have started on demand (its idle exit would take a while)."""
    run_cli("stop", env=env, timeout=60)


def indexes(env: dict) -> list[str]:
    d = Path(env["REMEMBRANCER_DATA_DIR"]) / "indexes"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def session(env: dict, cwd: Path, args=(), roots: list[Path] | None = None, calls=(), command=None):
    """One MCP session: (instructions, tools by name, [results of `calls`])."""
    cmd = command or [sys.executable, "-m", "remembrancer", "mcp", "--idle-exit", "5", *args]
    p = StdioServerParameters(command=cmd[0], args=cmd[1:], env=env, cwd=str(cwd))

    async def list_roots(context):
        return ListRootsResult(roots=[Root(uri=r.as_uri()) for r in roots])

    async def main():
        kw = {"list_roots_callback": list_roots, "mode": "legacy"} if roots else {}
        async with Client(p, read_timeout_seconds=120, **kw) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            return c.instructions, tools, [await c.call_tool(name, a) for name, a in calls]
    return anyio.run(main)


def search_error(env: dict, cwd: str | None = None) -> dict:
    _, _, [res] = session(env, Path(cwd or env["HOME"]), calls=[("search", {"query": "restore the database"})])
    assert res.is_error
    return res.structured_content["error"]


def served_roots(res) -> list[str]:
    return [r["path"] for r in res.structured_content["roots"]]


def cli(env: dict, *args: str, cwd=None) -> subprocess.CompletedProcess:
    return run_cli(*args, env=env, cwd=cwd, timeout=300)


# -- what is refused, and said ---------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("project", ["home", "/"])
def test_a_home_or_root_project_dir_is_named_as_refused(env, project):
    """CLAUDE_PROJECT_DIR was given: the error says it was refused and why, not that none was given."""
    where = env["HOME"] if project == "home" else "/"
    err = search_error({**env, "CLAUDE_PROJECT_DIR": where})
    assert "no CLAUDE_PROJECT_DIR" not in err["message"]
    said = "is the home folder" if project == "home" else "is /"
    assert f"CLAUDE_PROJECT_DIR={where} {said}, never taken as a corpus" in err["message"]
    assert err["param"] == "root" and "--root" in err["hint"] and "remembrancer mcp" in err["hint"]
    assert not Path(env["REMEMBRANCER_SOCKET"]).exists()   # nothing was opened for it


def test_a_folder_not_indexed_is_named_and_the_fix_said(env, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    err = search_error(env, cwd=str(project))
    assert err["message"].startswith("no corpus to serve: no --root, no roots in the config file; ")
    assert f"the working directory {project.resolve()} is not an indexed corpus" in err["message"]
    assert "mcp config --root" in err["hint"] and "remembrancer index --root" in err["hint"]
    assert indexes(env) == [] and not Path(env["REMEMBRANCER_SOCKET"]).exists()


# -- a health check leaves nothing behind ----------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("how", ["project", "root"])
def test_a_health_check_creates_no_corpus_and_starts_no_daemon(world, how):
    """`claude mcp list` in a folder: initialize + tools/list. Neither a folder the client connected
    from (roots, CLAUDE_PROJECT_DIR, cwd) nor a pinned --root not yet indexed is created, indexed or
    served by a daemon left running; the descriptions say what the first call will do."""
    env, fresh = world["env"], world["fresh"]
    if how == "project":
        _, tools, _ = session({**env, "CLAUDE_PROJECT_DIR": str(fresh)}, fresh, roots=[fresh])
    else:
        _, tools, _ = session(env, fresh, args=["--root", str(world["notes"])])
    assert indexes(env) == []
    assert not Path(env["REMEMBRANCER_SOCKET"]).exists()
    assert {"search", "read", "index_status"} <= set(tools)
    said = "no corpus to serve" if how == "project" else "is not indexed yet: the first tool call indexes it"
    assert said in tools["search"].description


@pytest.mark.slow
def test_tools_list_of_an_indexed_corpus_describes_it_without_a_daemon(world):
    env, notes = world["env"], world["notes"]
    assert cli(env, "index", "--root", str(notes)).returncode == 0
    before = indexes(env)
    _, tools, _ = session(env, world["fresh"], args=["--root", str(notes)])
    assert "runbook" in tools["search"].description and "not indexed" not in tools["search"].description
    assert indexes(env) == before and not Path(env["REMEMBRANCER_SOCKET"]).exists()


# -- which corpus answers --------------------------------------------------------------------------

@pytest.mark.slow
def test_the_config_roots_win_over_the_project_the_client_opened(world):
    """From a code project that is itself an indexed corpus, a registration without --root serves the
    config's roots (the user's notes), not the project."""
    env, notes, code = world["env"], world["notes"], world["code"]
    assert cli(env, "index", "--root", str(code)).returncode == 0
    cfg = Path(env["REMEMBRANCER_CONFIG"])
    cfg.write_text(f'roots = ["{notes}"]\n' + cfg.read_text())
    _, _, [st] = session({**env, "CLAUDE_PROJECT_DIR": str(code)}, code, roots=[code], calls=[("index_status", {})])
    assert served_roots(st) == [str(notes)]


@pytest.mark.slow
def test_from_home_the_config_roots_answer(world):
    env, notes = world["env"], world["notes"]
    cfg = Path(env["REMEMBRANCER_CONFIG"])
    cfg.write_text(f'roots = ["{notes}"]\n' + cfg.read_text())
    home = Path(env["HOME"])
    _, _, [res] = session({**env, "CLAUDE_PROJECT_DIR": str(home)}, home,
                          calls=[("search", {"query": "restore the database"})])
    assert not res.is_error and res.structured_content["results"]


@pytest.mark.slow
def test_an_indexed_project_is_served_and_a_folder_inside_it_too(world):
    """No --root, no config roots: the folder the client opened is served when it is an indexed
    corpus (here indexed with the CLI), and a subfolder of one serves that corpus."""
    env, code = world["env"], world["code"]
    assert cli(env, "index", "--root", str(code)).returncode == 0
    _, _, [st] = session({**env, "CLAUDE_PROJECT_DIR": str(code / "src")}, code / "src", calls=[("index_status", {})])
    assert served_roots(st) == [str(code)]
    assert len(indexes(env)) == 1


@pytest.mark.slow
def test_the_printed_registration_from_an_unrelated_project_answers_from_the_notes(world):
    """`mcp config --root NOTES --scope journal/ --instructions …`: the Claude Code line, parsed back,
    carries every flag, and the command it registers, started in an unrelated project that the client
    names as its root, serves NOTES within the scope, with the instructions."""
    env, notes, code = world["env"], world["notes"], world["code"]
    r = cli(env, "mcp", "config", "--root", str(notes), "--scope", "journal/", "--instructions", "Ask it's memory first")
    assert r.returncode == 0, r.stderr
    add = next(line for line in r.stdout.splitlines() if line.startswith("claude mcp add"))
    words = shlex.split(add)
    assert words[:6] == ["claude", "mcp", "add", "--scope", "user", "remembrancer"]   # before the variadic --env
    assert any(w.startswith("REMEMBRANCER_DATA_DIR=") for w in words[:words.index("--")])
    server = words[words.index("--") + 1:]
    assert server[server.index("--root") + 1] == str(notes)
    assert server[server.index("--scope") + 1] == "journal"
    assert server[server.index("--instructions") + 1] == "Ask it's memory first"
    instructions, _, [st, found] = session({**env, "CLAUDE_PROJECT_DIR": str(code)}, code, roots=[code],
                                          command=server + ["--idle-exit", "5"],
                                          calls=[("index_status", {}), ("list_documents", {})])
    assert served_roots(st) == [str(notes)] and "Ask it's memory first" in instructions
    paths = [d["path"] for d in found.structured_content["documents"]]
    assert paths and all(p.startswith("journal/") for p in paths)


@pytest.mark.slow
def test_a_scope_naming_nothing_in_the_chosen_corpus_is_refused(world):
    """Without --root the corpus is chosen late (here: the config's roots); a mistyped --scope is still
    refused by name, as with --root, instead of serving an empty corpus."""
    env, notes = world["env"], world["notes"]
    cfg = Path(env["REMEMBRANCER_CONFIG"])
    cfg.write_text(f'roots = ["{notes}"]\n' + cfg.read_text())
    _, _, [res] = session(env, world["fresh"], args=["--scope", "jornal"], calls=[("search", {"query": "restore"})])
    assert res.is_error and "scope 'jornal' names no folder" in res.structured_content["error"]["message"]
    assert "journal" in res.structured_content["error"]["valid_options"]
    r = cli(env, "mcp", "config", "--scope", "jornal")
    assert r.returncode == 2 and "scope 'jornal' names no folder" in r.stderr and r.stdout == ""


def test_a_clients_nested_roots_serve_the_outer_folder(tmp_path, monkeypatch):
    """A workspace and one of its folders, both sent as roots: the indexed corpus of the outer folder,
    not the nested-roots refusal a user typing them would get."""
    from remembrancer.indexer import indexes as known
    from remembrancer.indexer.config import Config, make_roots
    from remembrancer.mcp_server.choose import choose_corpus

    outer = tmp_path / "ws"
    (outer / "notes").mkdir(parents=True)
    monkeypatch.setenv("REMEMBRANCER_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    d = Config(roots=make_roots([outer])).index_dir()   # an index of the outer folder, as `index` leaves it
    d.mkdir(parents=True)
    (d / "catalog.sqlite3").write_bytes(b"")
    known.record(d, [outer.resolve()])
    cfg, source = choose_corpus(None, [str(outer / "notes"), str(outer)], env={}, cwd=str(tmp_path))
    assert source == "the MCP client's roots, an indexed corpus" and [r.path for r in cfg.roots] == [outer.resolve()]


# -- the project's conversations, found after the session started -----------------------------------

def _late_transcripts(world, args):
    """One MCP session in a project whose Claude Code transcript folder does not exist yet (Claude
    Code creates it when the session's first line is written, after starting the MCP servers): a
    conversations search, then the folder and a session appear, then the same searches again."""
    from tests.support.transcripts import Session

    project = world["code"]
    projects = Path(world["env"]["HOME"]) / ".claude" / "projects"
    p = StdioServerParameters(command=sys.executable, args=["-m", "remembrancer", "mcp", "--idle-exit", "5", *args],
                              env=world["env"], cwd=str(project))
    ask = {"query": "how do we page the llamaherd on-call", "corpus": "conversations"}

    async def main():
        async with Client(p, read_timeout_seconds=120) as c:
            before = await c.call_tool("search", ask)
            s = Session(projects, cwd=str(project))
            s.prompt("How do we page the llamaherd on-call?")
            s.says("Page llamaherd through the PagerDuty service LH-1.")
            after = await c.call_tool("search", ask)
            every = await c.call_tool("search", {**ask, "corpus": "all"})
            return before, after, every, s
    return anyio.run(main)


@pytest.mark.slow
def test_a_sessions_conversations_are_found_once_claude_code_creates_their_folder(world):
    """The server looked for the project's transcript folder at start-up only: for the whole first
    session in a new project, corpus "conversations" failed ("no conversation folder is configured")
    and "all" left them out."""
    before, after, every, s = _late_transcripts(world, ["--root", str(world["notes"])])
    assert before.is_error and "no conversation folder" in before.structured_content["error"]["message"]
    assert not after.is_error, after.content[0].text
    best = after.structured_content["results"][0]
    assert best["session_id"] == s.session_id and "LH-1" in best["content"]
    assert not every.is_error
    out = every.structured_content
    assert any(r.get("session_id") == s.session_id for r in out["results"]), out["results"]
    assert not any("conversation" in n and "not searched" in n for n in out.get("notes") or []), out.get("notes")


@pytest.mark.slow
def test_a_session_with_nothing_to_serve_serves_the_conversations_once_they_appear(world):
    """No --root, no configured roots, a project folder that is no corpus: nothing to serve at
    start-up; the project's transcripts, once Claude Code writes them, are served alone."""
    before, after, _, s = _late_transcripts(world, [])
    assert before.is_error
    assert not after.is_error, after.content[0].text
    assert after.structured_content["results"][0]["session_id"] == s.session_id
