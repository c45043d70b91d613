"""One question over notes and conversations: which corpus a request reads, and the answer over both.

Notes and conversations are separate corpora with their own indexes and statistics (a word common
in transcripts is not common in notes). A request names the one it reads with `corpus`: "notes"
(the default), "conversations", or for `search` "all" — then each corpus answers with its own
ranking and the answer keeps them apart: the best of each in full (the better first), then the
runners-up of both as pointers, each result saying its corpus, and each index's freshness.

Claude Code's own memory files (a project's `memory/` folder) sit beside its transcripts and are
indexed with them (config.Root.takes), but they are notes: a notes search also asks the
conversations index for its memory files, and shows them (as corpus "memory") only when one
matches well; a conversations search reads the transcripts alone.
"""

from __future__ import annotations

from typing import Callable

from remembrancer.indexer.answers import SearchAnswer
from remembrancer.indexer.config import CONVERSATIONS, MEMORY_TYPE, NOTES
from remembrancer.indexer.ingest.transcripts import DOC_TYPES as TRANSCRIPT_TYPES
from remembrancer.indexer.errors import UserError

ALL = "all"
CORPORA = (NOTES, CONVERSATIONS, ALL)
# The methods a conversations corpus answers (it has no host or service records for `history`,
# no links for `neighbors`, no cited commits of its own for `verify`).
CONVERSATION_METHODS = ("search", "read", "outline", "list", "latest")
NO_FOLDER_HINT = ("pass --conversations DIR (a Claude Code project folder, e.g. ~/.claude/projects/-home-me-app), "
                  "set [conversations] roots in the config file, or run from the project folder whose "
                  "Claude Code transcripts should be searched")

Reader = Callable[[str, dict], dict]


def corpus_param(params: dict, method: str) -> str:
    """The corpus a request reads (popped from its params), checked against what `method` can read."""
    which = params.pop("corpus", None)
    if which is None:   # a transcript's path names its corpus
        path = params.get("path")
        which = CONVERSATIONS if method in ("read", "outline") and isinstance(path, str) \
            and path.lower().endswith(".jsonl") else NOTES
    if which not in CORPORA:
        raise UserError(f"corpus must be one of {', '.join(CORPORA)}, got {which!r}", param="corpus",
                        options=list(CORPORA))
    if which == ALL and method != "search":
        raise UserError(f"corpus \"all\" is for search; {method} reads one corpus", param="corpus",
                        options=[NOTES, CONVERSATIONS])
    if which == CONVERSATIONS and method not in CONVERSATION_METHODS:
        raise UserError(f"{method} reads notes only", param="corpus", options=[NOTES])
    return which


def answer(method: str, params: dict, notes: Reader | None, conversations: Reader | None) -> dict | SearchAnswer:
    """Answer `method` from the corpus its params name (each reader gives its wire JSON);
    `conversations` None: none is configured. A search over both (or over notes and Claude Code's
    memory files) is the combined SearchAnswer, for the caller to fit to the request's budget."""
    params = dict(params)
    which = corpus_param(params, method)
    limit = params.get("limit", 5) if isinstance(params.get("limit", 5), int) else 5
    if notes is None and conversations is not None and which != CONVERSATIONS:   # a session of conversations alone
        out = conversations(method, params)
        if method == "search":
            out["notes"] = [*(out.get("notes") or []), "no notes folder in this session: the conversations "
                            "(and Claude Code's memory files) were searched"]
        return out
    if which == CONVERSATIONS or (which == ALL and conversations is not None):
        if conversations is None:
            raise UserError("no conversation folder is configured for this session", param="corpus",
                            options=[NOTES], hint=NO_FOLDER_HINT)
        if which == CONVERSATIONS:
            if method == "search" and not params.get("type"):
                params["type"] = list(TRANSCRIPT_TYPES)   # the memory files are notes
            return conversations(method, params)
        return combine(SearchAnswer.parse(notes(method, dict(params))),
                       SearchAnswer.parse(conversations(method, dict(params))), limit)
    if method in ("read", "outline") and conversations is not None:
        try:
            return notes(method, params)
        except UserError as e:   # a memory file's path: the conversations index holds it
            if e.code != "not_found":
                raise
            try:
                return conversations(method, params)
            except UserError:
                raise e from None
    if notes is None:
        raise UserError("no notes folder is configured for this session", param="corpus",
                        hint="pass --root DIR, or set roots = [\"~/notes\"] in the config file")
    out = notes(method, params)
    if which == ALL:
        out["notes"] = [*(out.get("notes") or []), "no conversation folder is configured: only the notes were searched"]
    elif method == "search" and conversations is not None and not params.get("type"):
        memory = SearchAnswer.parse(conversations(method, {**params, "type": [MEMORY_TYPE]}))
        if memory.results and not memory.no_strong_match:
            return combine(SearchAnswer.parse(out), memory, limit, quiet=True)
    return out


def _across(r) -> tuple:
    """The order of results from two corpora: each corpus's fused scores are scaled to its own
    candidates, so they are not compared; the semantic match is (the same model's cosine for both)."""
    return (-(r.scores.dense if r.scores is not None else 0.0), -(r.score or 0))


def _corpus_of(default: str, r) -> str:
    return "memory" if r.type == MEMORY_TYPE else default


def combine(notes: SearchAnswer, conversations: SearchAnswer, limit: int, quiet: bool = False) -> SearchAnswer:
    """The answer over both corpora: each result keeps its own corpus's rank and says which it is
    ("memory" for Claude Code's memory files). `quiet`: the second answer is only the memory
    files of a notes search (its absence of a match is not news)."""
    for corpus, ans in ((NOTES, notes), (CONVERSATIONS, conversations)):
        for r in [*ans.results, *(ans.best_weak or [])]:
            r.corpus = _corpus_of(corpus, r)
    out = SearchAnswer(query=notes.query, mode=notes.mode,
                       took_ms=round((notes.took_ms or 0) + (conversations.took_ms or 0), 1))
    sure = [a for a in (notes, conversations) if a.results and not a.no_strong_match]
    if sure:
        bests = sorted((a.results[0] for a in sure), key=_across)
        rest = sorted((r for a in sure for r in a.results[1:]), key=_across)
        for r in rest:   # the best of each corpus is the one carried in full
            r.content, r.content_truncated, r.content_total_chars = None, None, None
        out.results = bests + rest[:max(limit - len(bests), 0)]
        for name, a in ((NOTES, notes), (CONVERSATIONS, conversations)):
            if a not in sure and not quiet:
                out.notes = [*(out.notes or []), f"no strong match in the {name}"]
    else:
        out.no_strong_match = True
        out.best_weak = sorted([*(notes.best_weak or []), *(conversations.best_weak or [])], key=_across)[:limit]
        out.why_no_strong_match = [*(f"notes: {w}" for w in notes.why_no_strong_match or []),
                                   *(f"conversations: {w}" for w in conversations.why_no_strong_match or [])] or None
        if not out.best_weak:
            out.message = "no section matches in the notes or the conversations"
    for name, a in ((NOTES, notes), (CONVERSATIONS, conversations)):
        out.notes = [*(out.notes or []), *(f"{name}: {n}" for n in a.notes or [] if not (quiet and a is conversations))] or None
    out.index = notes.index
    out.conversations_index = conversations.index
    return out
