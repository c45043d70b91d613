"""The conversations as the README has a user meet them on the command line: from a project folder
whose Claude Code transcripts are found by themselves, `index`, `search --corpus`, `read --uuid
--around -- PATH` and `latest --corpus`, in real processes (no daemon: answered in-process)."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import sandboxed_cli
from tests.support.transcripts import Session, slug


@pytest.mark.slow
def test_a_projects_conversations_from_the_command_line(tmp_path, tiny_model_dir):
    run = sandboxed_cli(tmp_path, tiny_model_dir)
    project = tmp_path / "code" / "app"
    project.mkdir(parents=True)
    claude = tmp_path / "claude"
    s = Session(claude / "projects", cwd=str(project), branch="fix/retries")
    s.prompt("Why does the uploader retry forever?")
    s.says("No cap on the retry loop; we decided on five retries with backoff.")
    s.prompt("And the zebracorn flag?")
    s.says("The zebracorn flag stays on.")
    assert s.path.parent.name == slug(str(project))
    env = {"CLAUDE_CONFIG_DIR": str(claude)}

    indexed = run("index", "--root", str(run.notes), cwd=project, env_extra=env)
    assert indexed.returncode == 0, indexed.stderr
    assert "conversations: 1 transcripts: 1 added" in indexed.stdout

    found = run("search", "zebracorn flag", "--root", str(run.notes), "--corpus", "conversations", "--json",
                cwd=project, env_extra=env)
    assert found.returncode == 0, found.stderr
    best = json.loads(found.stdout)["results"][0]
    assert best["session_id"] == s.session_id and best["branch"] == "fix/retries"
    assert best["path"] == s.path.name

    around = run("read", "--root", str(run.notes), "--uuid", s.uuids[-1], "--around", "1", "--", best["path"],
                 cwd=project, env_extra=env)
    assert around.returncode == 0, around.stderr
    assert "five retries" in around.stdout and "zebracorn flag stays on" in around.stdout

    newest = run("latest", "retry", "--root", str(run.notes), "--corpus", "conversations", "--json",
                 cwd=project, env_extra=env)
    assert newest.returncode == 0, newest.stderr
    assert [r["path"] for r in json.loads(newest.stdout)["results"]] == [s.path.name]

    bad = run("search", "x", "--root", str(run.notes), "--corpus", "conversations", cwd=tmp_path,
              env_extra={"CLAUDE_CONFIG_DIR": str(tmp_path / "none")})   # no project here: no conversations
    assert bad.returncode == 2 and "no conversation folder" in bad.stderr and "--conversations" in bad.stderr


def test_a_notes_search_answers_when_the_conversations_index_beside_it_cannot(tmp_path, tiny_model_dir,
                                                                            tiny_embedder, monkeypatch):
    """A notes search also looks in the conversations index for Claude Code's memory files. While
    another writer holds the notes' index (here this test's engine; `remembrancer index` in real
    life) the search answers read-only — and the conversations index, never built, made it fail:
    "no index yet for …/.claude/projects/…", exit 3. The notes answer, stale, saying why, and
    saying the memory files were not searched."""
    from tests.support.corpus import engine_for

    run = sandboxed_cli(tmp_path, tiny_model_dir)
    project = tmp_path / "code" / "app"
    project.mkdir(parents=True)
    assert run("index", "--root", str(run.notes), cwd=project).returncode == 0   # no transcripts yet
    claude = tmp_path / "claude"
    s = Session(claude / "projects", cwd=str(project))
    s.prompt("How does the redis failover work?")
    s.says("Sentinel promotes the replica.")
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", run.env["REMEMBRANCER_DATA_DIR"])
    writer = engine_for([run.notes], tiny_embedder)   # holds the notes' writer lock
    try:
        p = run("search", "pgbackrest restore", "--root", str(run.notes), "--corpus", "notes", "--json",
                cwd=project, env_extra={"CLAUDE_CONFIG_DIR": str(claude)})
    finally:
        writer.close()
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["results"] and out["results"][0]["path"].startswith("runbooks/")
    assert out["index"]["verdict"] == "stale" and "read-only" in out["index"]["reason"], out["index"]
    assert any(n.startswith("Claude Code's memory files were not searched: no index yet for") for n in out["notes"]), out


@pytest.mark.slow
def test_every_claude_code_projects_folder_of_the_project_is_read(tmp_path, tiny_model_dir):
    """Claude Code has written a project's sessions to more than one projects folder over time
    (`~/.claude/projects`, then `~/.config/claude/projects`; or several `CLAUDE_CONFIG_DIR` entries):
    only the first folder found was read, and the sessions in the other were "not in the corpus"."""
    run = sandboxed_cli(tmp_path, tiny_model_dir)
    project = tmp_path / "code" / "app"
    project.mkdir(parents=True)
    first, second = tmp_path / "cc1", tmp_path / "cc2"
    old = Session(first / "projects", cwd=str(project))
    old.prompt("Where is the heronpuddle config?")
    old.says("The heronpuddle config is in /etc/heronpuddle.toml.")
    new = Session(second / "projects", cwd=str(project))
    new.prompt("Where is the stoatlantern config?")
    new.says("The stoatlantern config is in /etc/stoatlantern.toml.")
    env = {"CLAUDE_CONFIG_DIR": f"{first},{second}"}

    indexed = run("index", "--root", str(run.notes), cwd=project, env_extra=env)
    assert indexed.returncode == 0, indexed.stderr
    assert "conversations: 2 transcripts: 2 added" in indexed.stdout, indexed.stdout
    for word, session in (("heronpuddle", old), ("stoatlantern", new)):
        found = run("search", f"{word} config", "--root", str(run.notes), "--corpus", "conversations", "--json",
                    cwd=project, env_extra=env)
        assert found.returncode == 0, found.stderr
        best = json.loads(found.stdout)["results"][0]
        assert best["session_id"] == session.session_id and word in best["content"], best
