"""Which commit a commits-corpus result is: its full hash and author, read back from what ingest
kept in the document's front-matter mapping (indexer/ingest/commit_log.py)."""

from __future__ import annotations

import json

from remembrancer.indexer.answers import SearchAnswer
from remembrancer.indexer.config import COMMIT_TYPE


def annotate(view, answer: SearchAnswer) -> None:
    """Give every commit result its full hash and author (one document row per result)."""
    for r in [*answer.results, *(answer.best_weak or [])]:
        if r.type != COMMIT_TYPE:
            continue
        doc = view.catalog.document(r.path)
        try:
            facts = json.loads(doc["front_matter"] or "{}") if doc is not None else {}
        except (TypeError, ValueError):
            facts = {}
        if isinstance(facts, dict):
            r.commit, r.author = facts.get("commit"), facts.get("author")
