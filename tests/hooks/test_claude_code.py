"""At home in Claude Code: the hook script's output contract against the real daemon on a real
socket (the script run as Claude Code runs it: a process, JSON on stdin), the settings.json
installer, and `mcp config` (with --install into a Claude Desktop config file).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.paths import PROJECT
from tests.support.daemon import wait_for
from tests.support.two_projects import Serve, serve, serving_both, two_projects  # noqa: F401  (fixtures)
from tests.support.cli import run_cli

MODULE = "remembrancer.hooks.claude_code"

STRONG = "how do I restore the alpha database with pg_restore from the nightly dump"
WEAK = "how do I enable --frobnicate-xyz on kf4"   # an identifier the corpus does not have


def run_hook(world, event: dict, sock: str | None = None) -> tuple[subprocess.CompletedProcess, float]:
    env = {**world["env"], **({"REMEMBRANCER_SOCKET": sock} if sock else {})}
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-P", "-m", "remembrancer.hooks.claude_code"], input=json.dumps(event),
                       env=env, capture_output=True, text=True, timeout=30, cwd=event.get("cwd"))
    return r, time.monotonic() - t0


def prompt(repo: Path, text: str) -> dict:
    return {"hook_event_name": "UserPromptSubmit", "prompt": text, "cwd": str(repo), "session_id": "s1"}


@pytest.mark.slow
def test_prompt_hook_adds_the_top_section_only_for_a_strong_match(two_projects, serve):
    world, d = two_projects, serve()
    alpha = world["repos"]["alpha"]
    d.wait_fresh(alpha, 1)   # a client naming alpha by its roots opened it (as the MCP server does)
    strong = d.call("search", roots=[str(alpha)], query=STRONG, limit=1)
    weak = d.call("search", roots=[str(alpha)], query=WEAK, limit=1)
    assert not strong["no_strong_match"] and weak["no_strong_match"]   # the premise, from the daemon itself

    r, _ = run_hook(world, prompt(alpha, STRONG))
    assert r.returncode == 0 and r.stderr == ""
    assert "pg_restore" in r.stdout and "notes.md:1-" in r.stdout and "Postgres restore" in r.stdout
    r, _ = run_hook(world, prompt(alpha, WEAK))
    assert r.returncode == 0 and r.stdout == ""
    # A folder inside the project finds the project's corpus (Claude Code's cwd may be a subfolder).
    (alpha / "src").mkdir()
    r, _ = run_hook(world, prompt(alpha / "src", STRONG))
    assert "pg_restore" in r.stdout

    d.wait_fresh(alpha, 1)   # the new folder was a change the watcher reported
    line, _ = run_hook(world, {"hook_event_name": "SessionStart", "cwd": str(alpha), "source": "startup"})
    assert line.returncode == 0 and line.stdout.count("\n") == 1
    assert str(alpha) in line.stdout and "index fresh" in line.stdout and "1 documents" in line.stdout


@pytest.mark.slow
def test_prompt_hook_never_opens_a_corpus_nor_fails(two_projects, serve):
    """beta was never opened: the hook prints nothing and the daemon did not start indexing it."""
    world, d = two_projects, serve()
    beta = world["repos"]["beta"]
    r, _ = run_hook(world, prompt(beta, "kafka consumers rebalance when a broker restarts"))
    assert r.returncode == 0 and r.stdout == ""
    assert d.call("status")["corpora"] == []
    for bad in ("not json", json.dumps([1, 2]), json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": 7})):
        p = subprocess.run([sys.executable, "-P", "-m", "remembrancer.hooks.claude_code"], input=bad,
                           env=world["env"], capture_output=True, text=True, timeout=30)
        assert (p.returncode, p.stdout, p.stderr) == (0, "", "")


@pytest.mark.slow
def test_a_folder_that_merely_holds_corpora_gets_no_memory_and_a_project_gets_its_own_conversations(two_projects, serve):
    """Claude Code started in a folder ABOVE the corpora (the home folder, `/`, ~/code) was given the
    corpus with the longest root under it: another project's notes, or another project's transcripts
    (they live under ~/.claude). Only a corpus whose root holds the folder answers, or the
    conversations of the folder's own project."""
    from tests.support.transcripts import Session

    world = two_projects
    d, alpha, beta = serving_both(world, serve)
    home, parent = Path(world["env"]["HOME"]).resolve(), world["tmp"].resolve()
    gamma = parent / "gamma"   # a project with no notes of its own, only its Claude Code sessions
    (gamma / "src").mkdir(parents=True)
    talk = Session(home / ".claude" / "projects", cwd=str(gamma))
    talk.prompt("How do I restore the alpha database with pg_restore from the nightly dump?")
    talk.says("Restore the alpha database with pg_restore from the nightly dump; it takes an hour.")
    folder = str(talk.path.parent)
    d.call("search", roots=[str(alpha)], conversations=[folder], corpus="conversations", query="pg_restore")
    wait_for(lambda: len(d.call("status")["corpora"]) == 3)

    for where in (parent, home, Path("/")):   # each holds corpora (home: the transcripts); none is its own
        r, _ = run_hook(world, prompt(where, STRONG))
        assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), (where, r.stdout)
        line, _ = run_hook(world, {"hook_event_name": "SessionStart", "cwd": str(where), "source": "startup"})
        assert (line.returncode, line.stdout) == (0, ""), (where, line.stdout)
    (beta / "sub").mkdir()
    for where, expect in ((alpha, str(alpha)), (beta / "sub", str(beta)), (gamma / "src", folder)):
        line, _ = run_hook(world, {"hook_event_name": "SessionStart", "cwd": str(where), "source": "startup"})
        assert f"memory in {expect} " in line.stdout, (where, line.stdout)
    r, _ = run_hook(world, prompt(alpha, STRONG))
    assert "notes.md:1-" in r.stdout and ".jsonl" not in r.stdout   # alpha's notes, not gamma's sessions


def test_prompt_hook_with_the_daemon_down_or_stuck_is_silent_and_quick(two_projects, tmp_path):
    world = two_projects
    alpha = world["repos"]["alpha"]
    r, took = run_hook(world, prompt(alpha, STRONG))   # no daemon at all
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    # A daemon that accepts and never answers: the hook's own deadline ends it.
    sock_path = str(Path(world["sock"]).parent / "stuck.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(sock_path)
    srv.listen(8)
    held = []
    threading.Thread(target=lambda: held.append(srv.accept()), daemon=True).start()
    try:
        r, took = run_hook(world, prompt(alpha, STRONG), sock=sock_path)
    finally:
        srv.close()
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert held, "the hook did connect to the stuck daemon"
    assert took < 10   # loose: the script's deadline is 0.25 s; this only catches a hook that waits it out
    print(f"hook against a stuck daemon: {took * 1000:.0f} ms including interpreter start-up")


# Issue 27 item 1: ordinary coding prompts, which no notes answer (bench/claude_hook_ordinary_prompts.txt has more).
ORDINARY = ("thanks!", "continue", "what is 2+2", "please refactor the login form to use react hooks",
            "explain what this function does", "hi")


@pytest.mark.slow
@pytest.mark.real_model
def test_prompt_hook_stays_silent_on_ordinary_prompts_and_answers_a_memory_question(two_projects):
    """The sample notes with the real model: the search does not abstain on most ordinary prompts (a
    coding prompt shares common words and some meaning with any notes), so "did not abstain" alone
    put a journal entry or runbook into nearly every prompt; the hook's gate keeps them out."""
    world = {**two_projects, "env": {**two_projects["env"]}}
    Path(world["env"]["REMEMBRANCER_CONFIG"]).write_text("")   # the packaged default model
    notes = world["tmp"] / "notes"
    shutil.copytree(PROJECT / "examples" / "notes", notes)
    d = Serve(world)
    try:
        d.call("search", roots=[str(notes)], query="restore")   # open the corpus, as the MCP server does
        d.wait_fresh(notes, len(list(notes.rglob("*.md"))))
        passed = [p for p in ORDINARY
                  if not d.call("search", roots=[str(notes)], query=p, limit=1)["no_strong_match"]]
        assert len(passed) >= 3   # the premise: the search alone lets most of them through
        for text in ORDINARY:
            r, _ = run_hook(world, prompt(notes, text))
            assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), text
        r, _ = run_hook(world, prompt(notes, "how do I restore the database from a backup"))
        assert r.returncode == 0 and "runbooks/postgres/restore.md" in r.stdout
    finally:
        d.stop()


# -- settings.json ---------------------------------------------------------------------------------

def claude_hooks(*args: str, env=None) -> subprocess.CompletedProcess:
    return run_cli("claude-hooks", *args, env=env, timeout=60)


def test_claude_hooks_install_is_idempotent_and_keeps_the_users_hooks(tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"model": "opus", "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo mine"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh"}]}]}}
    settings.write_text(json.dumps(theirs))
    first = claude_hooks("install", "--settings", str(settings))
    assert first.returncode == 0 and "installed" in first.stdout
    once = json.loads(settings.read_text())
    again = claude_hooks("install", "--settings", str(settings))
    assert "already installed" in again.stdout and json.loads(settings.read_text()) == once
    assert once["model"] == "opus" and once["hooks"]["PreToolUse"] == theirs["hooks"]["PreToolUse"]
    ups = once["hooks"]["UserPromptSubmit"]
    assert ups[0] == theirs["hooks"]["UserPromptSubmit"][0] and len(ups) == 2
    ours = [h for g in ups for h in g["hooks"] if "remembrancer" in h["command"]]
    assert len(ours) == 1 and ours[0]["command"].startswith(f"test -x {sys.executable} && ")
    assert len(once["hooks"]["SessionStart"]) == 1
    # The command Claude Code will run works as written (a shell line), silently with no daemon.
    p = subprocess.run(ours[0]["command"], shell=True, input=json.dumps({"hook_event_name": "SessionStart",
                       "cwd": str(tmp_path)}), capture_output=True, text=True, timeout=30)
    assert (p.returncode, p.stdout) == (0, "")
    gone = claude_hooks("uninstall", "--settings", str(settings))
    assert gone.returncode == 0 and "removed" in gone.stdout
    assert json.loads(settings.read_text()) == theirs
    assert "not installed" in claude_hooks("uninstall", "--settings", str(settings)).stdout


def test_claude_hooks_install_into_each_folder_of_a_comma_separated_claude_config_dir(tmp_path):
    """CLAUDE_CONFIG_DIR="a,b" (several Claude Code config folders, read one by one for the
    conversations) was taken as one path: the hooks went to a folder literally named "a,". They go
    into each folder's settings.json; a broken one stops both before anything is written."""
    first, second = tmp_path / "cc1", tmp_path / "cc2"
    second.mkdir()
    (second / "settings.json").write_text(json.dumps({"model": "opus"}))
    env = {**os.environ, "CLAUDE_CONFIG_DIR": f"{first}, {second}"}
    r = claude_hooks("install", env=env)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cc1", "cc2"]   # no folder named "cc1,"
    for folder in (first, second):
        data = json.loads((folder / "settings.json").read_text())
        assert all(MODULE in g["hooks"][0]["command"] for e in ("UserPromptSubmit", "SessionStart") for g in data["hooks"][e])
        assert str(folder / "settings.json") in r.stdout
    assert json.loads((second / "settings.json").read_text())["model"] == "opus"
    again = claude_hooks("install", env=env)
    assert "already installed" in again.stdout
    gone = claude_hooks("uninstall", env=env)
    assert gone.returncode == 0 and "removed" in gone.stdout
    assert json.loads((first / "settings.json").read_text()) == {}
    assert json.loads((second / "settings.json").read_text()) == {"model": "opus"}
    (second / "settings.json").write_text("{not json")
    broken = claude_hooks("install", env=env)
    assert broken.returncode == 2 and "not valid JSON" in broken.stderr
    assert json.loads((first / "settings.json").read_text()) == {}   # nothing written to the good one either


def test_claude_hooks_refuses_a_broken_settings_file(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text("{not json")
    r = claude_hooks("install", "--settings", str(settings))
    assert r.returncode == 2 and "not valid JSON" in r.stderr and settings.read_text() == "{not json"


# -- mcp config ------------------------------------------------------------------------------------

def test_mcp_config_prints_absolute_paths_and_install_merges(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    desktop = tmp_path / "Claude" / "claude_desktop_config.json"
    desktop.parent.mkdir()
    desktop.write_text(json.dumps({"mcpServers": {"other": {"command": "/bin/other"}}, "theme": "dark"}))
    cmd = [sys.executable, "-m", "remembrancer", "mcp", "config", "--root", str(notes), "--install",
           "--desktop-config", str(desktop)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    add = next(line for line in r.stdout.splitlines() if line.startswith("claude mcp add"))
    assert "--scope user" in add and " -- /" in add and add.endswith(f" mcp --root {notes.resolve()}")
    exe = add.split(" -- ", 1)[1].split()[0]
    assert Path(exe).is_absolute() and Path(exe).exists()
    data = json.loads(desktop.read_text())
    assert data["theme"] == "dark" and data["mcpServers"]["other"] == {"command": "/bin/other"}
    ours = data["mcpServers"]["remembrancer"]
    assert Path(ours["command"]).exists() and ours["args"][-3:] == ["mcp", "--root", str(notes.resolve())]
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert "already installed" in again.stdout and json.loads(desktop.read_text()) == data


def test_mcp_config_carries_every_flag_into_every_line_and_the_desktop_entry(tmp_path):
    """--scope and --instructions (and --idle-exit) were dropped: an agent meant to see journal/ got
    everything. Each printed line and the entry --install writes run the same command."""
    import shlex

    notes = tmp_path / "notes"
    (notes / "journal").mkdir(parents=True)
    desktop = tmp_path / "claude_desktop_config.json"
    flags = ["--root", str(notes), "--scope", "journal/", "--instructions", "only the journal", "--idle-exit", "30"]
    r = run_cli("mcp", "config", *flags, "--install", "--desktop-config", str(desktop), timeout=60)
    assert r.returncode == 0, r.stderr
    want = ["mcp", "--root", str(notes.resolve()), "--scope", "journal", "--instructions", "only the journal",
            "--idle-exit", "30"]
    add = next(line for line in r.stdout.splitlines() if line.startswith("claude mcp add"))
    words = shlex.split(add)
    assert words[words.index("--") + 1:][-len(want):] == want
    printed = json.loads(r.stdout[r.stdout.index("{"):r.stdout.rindex("}") + 1])
    assert printed["mcpServers"]["remembrancer"]["args"][-len(want):] == want
    assert json.loads(desktop.read_text())["mcpServers"]["remembrancer"]["args"][-len(want):] == want


def test_mcp_config_carries_a_team_store(tmp_path):
    """`mcp config --store URL` registers a reader of the team store: the flag reaches both lines."""
    import shlex

    notes = tmp_path / "notes"
    notes.mkdir()
    url = "postgresql://alice@db-host/memory"
    r = run_cli("mcp", "config", "--root", str(notes), "--store", url, timeout=60)
    assert r.returncode == 0, r.stderr
    add = shlex.split(next(line for line in r.stdout.splitlines() if line.startswith("claude mcp add")))
    cmd = add[add.index("--") + 1:]
    assert cmd[1] == "mcp" and cmd[cmd.index("--store") + 1] == url
    printed = json.loads(r.stdout[r.stdout.index("{"):r.stdout.rindex("}") + 1])["mcpServers"]["remembrancer"]["args"]
    assert printed[printed.index("--store") + 1] == url


@pytest.mark.parametrize("extra, param", [(["--scope", "jornal"], "scope"), (["--desktop-config", "x.json"], "desktop-config"),
                                          (["--root", "/no/such/notes"], "root")])
def test_mcp_config_refuses_a_flag_it_cannot_honour(tmp_path, extra, param):
    notes = tmp_path / "notes"
    (notes / "journal").mkdir(parents=True)
    args = extra if param == "root" else ["--root", str(notes), *extra]
    r = run_cli("mcp", "config", *args, timeout=60)
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and param.split("-")[0] in r.stderr


def test_the_hook_script_stays_light():
    """It runs before every prompt: stdlib and the socket only, never the engine or the MCP SDK."""
    code = ("import sys, remembrancer.hooks.claude_code; heavy = ('tantivy', 'onnxruntime', 'numpy', 'hnswlib', "
            "'tokenizers', 'mcp', 'pydantic', 'platformdirs'); print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in heavy or m.startswith(('remembrancer.indexer', 'remembrancer.daemon'))))")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_installed_hook_carries_the_remembrancer_environment(two_projects, serve, tmp_path):
    """A daemon on a custom socket: the command written to settings.json reaches it on its own,
    run by a shell whose environment has no REMEMBRANCER_* at all (as Claude Code may run it)."""
    import os
    import shlex

    world, d = two_projects, serve()
    alpha = world["repos"]["alpha"]
    d.wait_fresh(alpha, 1)
    odd = str(tmp_path / "it's a data dir")   # a value the shell must get back verbatim
    settings = tmp_path / "settings.json"
    r = claude_hooks("install", "--settings", str(settings), env={**world["env"], "REMEMBRANCER_DATA_DIR": odd})
    assert r.returncode == 0, r.stderr
    cmd = json.loads(settings.read_text())["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    words = shlex.split(cmd)
    assert words[:4] == ["test", "-x", os.path.abspath(sys.executable), "&&"] and words[-2:] == ["||", "true"]
    words = words[4:-2]
    assert words[:3] == [f"REMEMBRANCER_CONFIG={world['env']['REMEMBRANCER_CONFIG']}", f"REMEMBRANCER_DATA_DIR={odd}",
                         f"REMEMBRANCER_SOCKET={world['sock']}"]
    assert words[3:] == [os.path.abspath(sys.executable), "-P", "-m", "remembrancer.hooks.claude_code"]
    scrubbed = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": world["env"]["HOME"]}
    for event, expect in (({"hook_event_name": "SessionStart", "cwd": str(alpha), "source": "startup"}, "index fresh"),
                          (prompt(alpha, STRONG), "pg_restore")):
        p = subprocess.run(["/bin/sh", "-c", cmd], input=json.dumps(event), env=scrubbed, cwd=str(alpha),
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 0 and expect in p.stdout, (event["hook_event_name"], p.stdout, p.stderr)
    # `mcp config` carries the same variables: the two registrations agree
    mcp = run_cli("mcp", "config", env={**world["env"], "REMEMBRANCER_DATA_DIR": odd}, timeout=60)
    add = next(line for line in mcp.stdout.splitlines() if line.startswith("claude mcp add"))
    assert [w for w in shlex.split(add) if w.startswith("REMEMBRANCER_")] == words[:3]


def test_a_removed_install_leaves_hooks_that_are_silent_with_exit_0(tmp_path):
    """After `pipx/uv tool uninstall` the settings still name the hook: every prompt must not run a
    command that exits 127 (interpreter gone) or 1 (package gone) in front of the user."""
    settings = tmp_path / "settings.json"
    assert claude_hooks("install", "--settings", str(settings)).returncode == 0
    cmd = json.loads(settings.read_text())["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    gone_python = cmd.replace(os.path.abspath(sys.executable), str(tmp_path / "venv-removed" / "bin" / "python3"))
    no_package = tmp_path / "bare" / "bin" / "python3"   # an interpreter without remembrancer installed
    no_package.parent.mkdir(parents=True)
    no_package.symlink_to(sys.base_prefix + "/bin/python3")
    gone_package = cmd.replace(os.path.abspath(sys.executable), str(no_package))
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "how do I restore", "cwd": str(tmp_path)})
    for line in (gone_python, gone_package):
        p = subprocess.run(["/bin/sh", "-c", line], input=event, capture_output=True, text=True, timeout=30,
                           env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
        assert (p.returncode, p.stdout) == (0, ""), (line, p.returncode, p.stderr)


def test_each_install_command_says_what_its_actions_do():
    for command, words in (("service", ("systemd", "stop, disable and remove")),
                           ("hooks", ("post-commit", "put back")),
                           ("claude-hooks", ("UserPromptSubmit", "remove them"))):
        p = run_cli(command, "--help", timeout=60)
        assert p.returncode == 0 and "{install,uninstall}" in p.stdout, p.stdout
        flat = " ".join(p.stdout.split())
        assert "ACTION" not in p.stdout and all(w in flat for w in words), p.stdout


def test_the_injected_text_holds_the_best_section_and_the_runners_up_carried_whole():
    from remembrancer.hooks.claude_code import context_text

    best = {"path": "runbooks/restore.md", "heading": "Restore", "lines": [7, 10], "content": "Use this when data is lost."}
    steps = {"path": "runbooks/restore.md", "heading": "Restore > Steps", "lines": [16, 26],
             "content": "1. Stop PostgreSQL.\n2. pgbackrest restore."}
    pointer = {"path": "hosts/db1.md", "heading": "db1 > Backups", "lines": [3, 8], "snippet": "pgBackRest since …"}
    text = context_text({"results": [best, steps, pointer]})
    assert "Use this when data is lost." in text and "2. pgbackrest restore." in text
    assert "db1 > Backups" not in text   # a pointer without its text is not put in front of the model
    alone = context_text({"results": [best, pointer]})
    assert "Also close" not in alone and alone.endswith("Use this when data is lost.\n")
