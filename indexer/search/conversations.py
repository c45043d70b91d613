"""Which session and which prompt a conversation result is, and the commits it made: read back
from what ingest kept, and from git.

ingest/conversation.py keeps a session's facts and each exchange's (the prompt's uuid, its
timestamp and branch) in the document's front-matter mapping; a result names its exchange by
its first line, so the lookup is one document row per result's file.

An exchange's commits are the ones it quotes (a hash in its text) and the ones made while it
ran — committed between its prompt and the next one, in the session's working repository — each
checked as `verify` checks a citation: in which repository, and whether it landed on the
default branch (indexer/memory/commits.py). The repositories are the session's working folder
(its `cwd`, when it is a repository on this machine), the notes' and `[verify] repos`.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from datetime import datetime
from pathlib import Path

from remembrancer.indexer.answers import Result, SearchAnswer, VerifiedCommit
from remembrancer.indexer.memory import commits as git_commits
from remembrancer.indexer.ingest.transcripts import DOC_TYPES as CONVERSATION_TYPES


def session_of(view, path: str) -> dict:
    """The session facts stored for one transcript (empty when it is not one, or is gone)."""
    doc = view.catalog.document(path)
    if doc is None or doc["doc_type"] not in CONVERSATION_TYPES:
        return {}
    try:
        fm = json.loads(doc["front_matter"] or "{}")
    except (TypeError, ValueError):
        return {}
    return fm if isinstance(fm, dict) else {}


def annotate(view, answer: SearchAnswer) -> None:
    """Give every conversation result its session id, prompt uuid, timestamp and branch, and the
    one carried in full its commits."""
    sessions: dict[str, dict] = {}
    found = SessionCommits(view.config)
    for r in [*answer.results, *(answer.best_weak or [])]:
        if r.type not in CONVERSATION_TYPES:
            continue
        if r.path not in sessions:
            sessions[r.path] = session_of(view, r.path)
        describe(r, sessions[r.path])
        if r.content is not None:
            r.commits = found.of(r, sessions[r.path]) or None


WALK_MAX = 2000   # newest commits of a repository searched for the ones made during an exchange


def _seconds(ts: str | None) -> float | None:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() if ts else None
    except ValueError:
        return None


class SessionCommits:
    """The commits of exchanges, with one checker per working folder for a whole answer."""

    def __init__(self, config):
        self.config = config
        self._checkers: dict[str, git_commits.CommitChecker] = {}

    def _checker(self, cwd: str | None) -> git_commits.CommitChecker:
        key = cwd or ""
        if key not in self._checkers:
            here = [Path(cwd)] if cwd and Path(cwd).is_dir() else []
            self._checkers[key] = git_commits.CommitChecker(here, list(self.config.verify_repos))
        return self._checkers[key]

    def of(self, r: Result, session: dict) -> list[VerifiedCommit]:
        """The commits exchange `r` quotes or made while it ran, each checked."""
        checker = self._checker(session.get("cwd"))
        cites = git_commits.find_shas(r.content or "")
        found = git_commits.check_citations(checker, cites) if cites else []
        start, end = _seconds(r.timestamp), _span_end(session, (r.lines or [0])[0])
        if start is not None:
            for t, sha in commit_times(session.get("cwd")):
                if start <= t <= (end if end is not None else start + 3600) and not any(
                        f.get("commit") == sha for f in found):
                    found.append({"sha": sha[:12], "cited_as": "committed during the exchange", **checker.check(sha)})
        verified, _ = git_commits.split_verified(found)
        return [VerifiedCommit.parse(v) for v in verified]


_WALKS: OrderedDict[tuple, list[tuple[float, str]]] = OrderedDict()   # (work tree, branch tips) → commit_times
_WALKS_KEPT = 16
_walks_lock = threading.Lock()


def commit_times(cwd: str | None) -> list[tuple[float, str]]:
    """(commit time, id) of the newest commits (WALK_MAX) of every local branch of the repository
    holding the session's working folder, oldest first; [] when it is not one on this machine.
    Kept per work tree and branch tips: a later search walks again only after a commit."""
    from remembrancer.indexer.ingest.corpus import open_repo

    repo = open_repo(Path(cwd)) if cwd and Path(cwd).is_dir() else None
    if repo is None:
        return []
    try:
        import pygit2

        tips = tuple(str(repo.branches[b].target) for b in sorted(repo.branches.local)[:50])
        key = (str(repo.workdir), tips)
        with _walks_lock:
            if key in _WALKS:
                _WALKS.move_to_end(key)
                return _WALKS[key]
        found: dict[str, float] = {}
        if tips:
            walker = repo.walk(tips[0], pygit2.enums.SortMode.TIME)
            for t in tips[1:]:
                walker.push(t)
            for i, c in enumerate(walker):
                if i >= WALK_MAX:
                    break
                found[str(c.id)] = float(c.commit_time)
    except Exception:   # an unreadable history: no commits found by time, never a failure
        return []
    out = sorted((t, sha) for sha, t in found.items())
    with _walks_lock:
        _WALKS[key] = out
        while len(_WALKS) > _WALKS_KEPT:
            _WALKS.popitem(last=False)
    return out


def _span_end(session: dict, line: int) -> float | None:
    """When the exchange starting at `line` ended: the next exchange's prompt, else the session's last line."""
    later = sorted((int(k), v) for k, v in (session.get("exchanges") or {}).items() if int(k) > line)
    return _seconds(later[0][1].get("timestamp") if later else session.get("ended"))


def describe(r: Result, session: dict) -> None:
    """Fill one result's conversation fields from its session's stored facts."""
    exchange = (session.get("exchanges") or {}).get(str((r.lines or [0])[0])) or {}
    r.session_id = session.get("session_id")
    r.agent_id = session.get("agent_id")
    r.uuid = exchange.get("uuid")
    r.timestamp = exchange.get("timestamp")
    r.branch = exchange.get("branch") or session.get("branch")
