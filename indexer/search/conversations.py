"""Which session and which prompt a conversation result is: read back from what ingest kept.

ingest/conversation.py keeps a session's facts and each exchange's (the prompt's uuid, its
timestamp and branch) in the document's front-matter mapping; a result names its exchange by
its first line, so the lookup is one document row per result's file.
"""

from __future__ import annotations

import json

from remembrancer.indexer.answers import Result, SearchAnswer
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
    """Give every conversation result its session id, prompt uuid, timestamp and branch."""
    sessions: dict[str, dict] = {}
    for r in [*answer.results, *(answer.best_weak or [])]:
        if r.type not in CONVERSATION_TYPES:
            continue
        if r.path not in sessions:
            sessions[r.path] = session_of(view, r.path)
        describe(r, sessions[r.path])


def describe(r: Result, session: dict) -> None:
    """Fill one result's conversation fields from its session's stored facts."""
    exchange = (session.get("exchanges") or {}).get(str((r.lines or [0])[0])) or {}
    r.session_id = session.get("session_id")
    r.agent_id = session.get("agent_id")
    r.uuid = exchange.get("uuid")
    r.timestamp = exchange.get("timestamp")
    r.branch = exchange.get("branch") or session.get("branch")
