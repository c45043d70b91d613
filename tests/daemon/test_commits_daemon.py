"""Commits served live: a real `serve` daemon on a real socket opens the commits corpus of its
notes' repository when a request asks for it, a commit made with the git CLI (no hook installed)
is in the next answer, a hook's notify is enough without a search; and a real
`remembrancer mcp` answers `search` with `corpus: "commits"` over stdio."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.commit_history import build
from tests.support.corpus import git, write
from tests.support.daemon import DaemonProc, mcp_calls, stdio_mcp, wait_for
from tests.support.env import remembrancer_env


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "tollgate"
    return repo, build(repo)


@pytest.mark.slow
def test_a_new_commit_is_in_the_next_answer_without_a_hook(tmp_path, repo, tiny_model_dir):
    repo, hashes = repo
    notes = repo / "notes"
    with DaemonProc(tmp_path, [notes], tiny_model_dir) as d:   # stopped, and its log checked for a traceback, on the way out
        d.start()
        first = d.call("search", roots=[str(notes)], query="SUP-2231", corpus="commits")
        oid = hashes["retry: never retry after the upstream has started responding"]
        assert first["results"][0]["commit"] == oid and first["index"]["verdict"] == "fresh"
        st = d.call("status")
        assert (f"commits:{repo.resolve()}",) in {tuple(c["roots"]) for c in st["corpora"]}
        write(repo, "tollgate/limits.py", "BURST = 2\n")
        git(repo, "commit", "-qam", "limits: allow zebracorn bursts after a reconnect")
        new = git(repo, "rev-parse", "HEAD")
        # The notes' index too is read at the new HEAD before answering (no hook told the daemon):
        # fresh, not "catching up: HEAD of notes moved" until the next rescan.
        gateway = d.call("search", roots=[str(notes)], query="tollgate gateway")
        assert gateway["index"]["verdict"] == "fresh", gateway["index"]
        out = d.call("search", roots=[str(notes)], query="zebracorn", exact=True, corpus="commits")
        assert out["results"][0]["commit"] == new, out   # read before answering: no hook, no watcher
        assert out["index"]["verdict"] == "fresh"
        git(repo, "commit", "-q", "--allow-empty", "-m", "deploy: quokka canary for the limiter")
        d.call("notify", root=str(repo), event="post-commit")   # what the installed hook sends
        quokka = git(repo, "rev-parse", "HEAD")

        def indexed():
            st = d.call("status")
            line = next(c for c in st["corpora"] if c["roots"] == [f"commits:{repo.resolve()}"])
            fr = line.get("freshness") or {}   # the pass that wrote it has ended, too
            return line if fr.get("documents") == 59 and fr.get("verdict") == "fresh" else None
        wait_for(indexed, 20)
        both = d.call("search", roots=[str(notes)], query="quokka", exact=True, corpus="all")
        assert both["commits_index"]["verdict"] == "fresh" and both["index"]["verdict"]
        assert any(r.get("commit") == quokka and r["corpus"] == "commits" for r in both["results"])
        notes_only = d.call("search", roots=[str(notes)], query="quokka", exact=True)
        assert not any(r.get("commit") for r in notes_only.get("results") or notes_only.get("best_weak") or [])


@pytest.mark.slow
def test_mcp_search_over_commits(tmp_path, repo, tiny_model_dir):
    repo, hashes = repo
    server, sock = stdio_mcp(tmp_path, tiny_model_dir, "--root", str(repo / "notes"))
    tools, (hit, read) = mcp_calls(server, sock, [
        ("search", {"query": "SEC-112 security review", "corpus": "commits"}),
        ("read", {"path": "abc", "corpus": "commits"})])
    schema, description = tools["search"].input_schema["properties"]["corpus"], tools["search"].description
    assert schema["enum"] == ["notes", "conversations", "commits", "code", "all"]
    assert 'Also searchable: the commits of tollgate — corpus="commits"' in description
    oid = hashes['Revert "limits: fail open when Redis is unreachable"']
    assert hit.structured_content["results"][0]["commit"] == oid
    text = hit.content[0].text
    assert f"commit {oid} by Priya Raman" in text and "failing open let a scraper" in text
    assert "`git show <commit>` shows one's diff" in text and "read(path, heading)" not in text   # no file to read
    assert read.is_error and "corpus" in read.content[0].text   # read takes no corpus: a commit is no file


def test_commits_from_a_clone_without_a_daemon(tmp_path, repo, tiny_model_dir):
    """The CLI with no daemon running: the commits index is built in-process on first use, as the
    notes' is."""
    repo, hashes = repo
    (tmp_path / "config.toml").write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    env = remembrancer_env(data=tmp_path / "data", socket=tmp_path / "s" / "d.sock", config=tmp_path / "config.toml")
    out = subprocess.run([sys.executable, "-m", "remembrancer", "search", "--root", str(repo / "notes"),
                          "--corpus", "commits", "--json", "tollgate:revoked channel"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    best = json.loads(out.stdout)["results"][0]
    assert best["commit"] == hashes["auth: revoke keys immediately through Redis pub/sub"]
    assert "Traceback" not in out.stderr
