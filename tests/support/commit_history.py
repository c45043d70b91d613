"""A real git history made with the git CLI from tests/data/commits/history.jsonl (a small API
gateway's six months: 57 commits by three authors, a merged branch, two reverts, one secret in a
message), and its labelled questions as `remembrancer eval` cases.

Every commit's date and author are fixed, so the hashes are the same on every machine; a case's
label names its commit by subject and gets its hash here."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "data" / "commits"
HISTORY = HERE / "history.jsonl"
QUESTIONS = HERE / "questions.jsonl"


def _git(repo: Path, *args: str, when: str = "2033-01-01T00:00:00+00:00", who: str = "Mira Okafor") -> str:
    email = who.lower().replace(" ", ".") + "@tollgate.example"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(repo.parent), "TZ": "UTC",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": who, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": who,
           "GIT_COMMITTER_EMAIL": email, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL).stdout.strip()


def _commit(repo: Path, c: dict) -> None:
    for rel in c["paths"]:   # each changed path gets a line naming the change: a real diff, a real tree
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        with p.open("a", encoding="utf-8") as fh:
            fh.write(f"# {c['subject']}\n")
    _git(repo, "add", "-A")
    message = c["subject"] + (f"\n\n{c['body']}" if c["body"] else "")
    _git(repo, "commit", "-q", "--allow-empty", "-m", message, when=c["date"], who=c["author"])


def build(repo: Path) -> dict[str, str]:
    """The history in a new repository at `repo` (branch main, a notes folder beside the code);
    returns each commit's subject → full hash."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "notes").mkdir()
    (repo / "notes" / "gateway.md").write_text("# Gateway\n\nThe tollgate API gateway: rate limits, auth, proxy.\n")
    for line in HISTORY.read_text(encoding="utf-8").splitlines():
        c = json.loads(line)
        merge = c.get("merge")
        if merge is None:
            _commit(repo, c)
            continue
        base = _git(repo, "rev-parse", "HEAD")
        _git(repo, "checkout", "-q", "-b", merge["branch"])
        for inner in merge["commits"]:
            _commit(repo, inner)
        _git(repo, "checkout", "-q", "main")
        _git(repo, "merge", "-q", "--no-ff", "-m", c["subject"], merge["branch"], when=c["date"], who=c["author"])
        assert _git(repo, "merge-base", "HEAD", merge["branch"]) != base
    out = _git(repo, "log", "--format=%H%x00%s")
    return {subject: oid for oid, subject in (row.split("\0", 1) for row in out.splitlines())}


def cases(hashes: dict[str, str], short: int = 12) -> list[dict]:
    """The labelled questions as `remembrancer eval` cases over the commits corpus: a label is the
    commit's corpus path (its short hash) and heading (its subject)."""
    rows = []
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        rows.append({"id": q["id"], "stratum": q["stratum"], "query": q["query"], "answerable": bool(q["expect"]),
                     "expect": [{"path": hashes[s][:short], "heading": s, "grade": 3} for s in q["expect"]]})
    return rows
