"""One question over notes, conversations and commits: which corpus a request reads, and the answer
over several.

Notes, conversations and the commits of the notes' repositories are separate corpora with their
own indexes and statistics (a word common in transcripts or commit messages is not common in
notes). A request names the one it reads with `corpus`: "notes" (the default), "conversations",
"commits", or for `search` "all" — then each corpus answers with its own ranking and the answer
keeps them apart: the best of each in full (the better first), then the runners-up of all as
pointers, each result saying its corpus, and each index's freshness.

Claude Code's own memory files (a project's `memory/` folder) sit beside its transcripts and are
indexed with them (config.Root.takes), but they are notes: a notes search also asks the
conversations index for its memory files, and shows them (as corpus "memory") only when one
matches well; a conversations search reads the transcripts alone.
"""

from __future__ import annotations

from typing import Callable

from remembrancer.indexer.answers import SearchAnswer
from remembrancer.indexer.config import CODE, COMMITS, CONVERSATIONS, MEMORY_TYPE, NOTES
from remembrancer.indexer.ingest.transcripts import DOC_TYPES as TRANSCRIPT_TYPES
from remembrancer.indexer.errors import UserError, echo

ALL = "all"
CORPORA = (NOTES, CONVERSATIONS, COMMITS, CODE, ALL)
# The methods a conversations corpus answers (it has no host or service records for `history`,
# no links for `neighbors`, no cited commits of its own for `verify`).
CONVERSATION_METHODS = ("search", "read", "outline", "list", "latest")
# A commits corpus has no files to read: a commit's search result carries its whole message.
COMMIT_METHODS = ("search", "latest")
# Source files are files: read and outline open them, as notes are opened.
CODE_METHODS = ("search", "read", "outline", "list", "latest")
NO_CODE_HINT = "pass --code DIR, or set [code] roots = [\"~/code/app\"] in the config file"
NO_REPOSITORY_HINT = ("keep the notes in a git repository, or list the repositories whose commits should be "
                      "searched in [verify] repos")
NO_FOLDER_HINT = ("pass --conversations DIR (a Claude Code project folder, e.g. ~/.claude/projects/-home-me-app), "
                  "set [conversations] roots in the config file, or run from the project folder whose "
                  "Claude Code transcripts should be searched (Claude Code creates a project's folder when its "
                  "first session writes; an MCP session looks for it again at each request)")

Reader = Callable[[str, dict], dict]


def corpus_param(params: dict, method: str) -> str:
    """The corpus a request reads (popped from its params), checked against what `method` can read."""
    which = params.pop("corpus", None)
    if which is None:   # a transcript's path names its corpus
        path = params.get("path")
        which = CONVERSATIONS if method in ("read", "outline") and isinstance(path, str) \
            and path.lower().endswith(".jsonl") else NOTES
    if which not in CORPORA:
        raise UserError(f"corpus must be one of {', '.join(CORPORA)}, got {echo(repr(which))}", param="corpus",
                        options=list(CORPORA))
    if which == ALL and method != "search":
        raise UserError(f"corpus \"all\" is for search; {method} reads one corpus", param="corpus",
                        options=[NOTES, CONVERSATIONS])
    if which == CONVERSATIONS and method not in CONVERSATION_METHODS:
        raise UserError(f"{method} reads notes only", param="corpus", options=[NOTES])
    if which == CODE and method not in CODE_METHODS:
        raise UserError(f"{method} reads notes only", param="corpus", options=[NOTES])
    if which == COMMITS and method not in COMMIT_METHODS:
        raise UserError(f"{method} does not read commits (a commit's search result carries its whole message)",
                        param="corpus", options=[NOTES])
    return which


def answer(method: str, params: dict, notes: Reader | None, conversations: Reader | None,
           commits: Reader | None = None, code: Reader | None = None) -> dict | SearchAnswer:
    """Answer `method` from the corpus its params name (each reader gives its wire JSON);
    `conversations` None: none is configured; `commits` None: the notes are in no git repository;
    `code` None: no source folder is configured (code is searched only when asked: never by "all").
    A search over several (or over notes and Claude Code's memory files) is the combined
    SearchAnswer, for the caller to fit to the request's budget."""
    params = dict(params)
    which = corpus_param(params, method)
    limit = params.get("limit", 5) if isinstance(params.get("limit", 5), int) else 5
    # A scope is a wall around some notes: a commit's message may speak of files outside it, and the
    # source folders are no part of it.
    scoped = bool(params.get("scope")) and commits is not None
    if params.get("scope") and which in (COMMITS, CODE):
        raise UserError(f"a scoped session does not search {which}: " + (
            "a commit's message may speak of files outside its scope" if which == COMMITS
            else "the source folders are outside its scope"), param="corpus", options=[NOTES], code="out_of_scope")
    if params.get("scope"):
        commits, code = None, None
    if which == CODE:
        if code is None:
            raise UserError("no source folder is configured for this session", param="corpus", options=[NOTES],
                            hint=NO_CODE_HINT)
        return code(method, params)
    if which == COMMITS:
        if commits is None:
            raise UserError("no git repository holds this session's notes: there are no commits to search",
                            param="corpus", options=[NOTES], hint=NO_REPOSITORY_HINT)
        return commits(method, params)
    if notes is None and conversations is not None and which != CONVERSATIONS:   # a session of conversations alone
        out = conversations(method, params)
        if method == "search":
            out["notes"] = [*(out.get("notes") or []), "no notes folder in this session: the conversations "
                            "(and Claude Code's memory files) were searched"]
        return out
    if which == CONVERSATIONS:
        if conversations is None:
            raise UserError("no conversation folder is configured for this session", param="corpus",
                            options=[NOTES], hint=NO_FOLDER_HINT)
        if method == "search" and not params.get("type"):
            params["type"] = list(TRANSCRIPT_TYPES)   # the memory files are notes
        return conversations(method, params)
    if which == ALL:
        if notes is None:
            raise UserError("no notes folder is configured for this session", param="corpus",
                            hint="pass --root DIR, or set roots = [\"~/notes\"] in the config file")
        parts, missed = [], []
        for name, read in ((NOTES, notes), (CONVERSATIONS, conversations), (COMMITS, commits)):
            if read is None:
                continue
            try:
                parts.append((name, SearchAnswer.parse(read(method, dict(params)))))
            except (UserError, OSError) as e:
                if name == NOTES:
                    raise
                # a corpus beside the notes that cannot answer (no index yet, a full disk) is said, not fatal
                missed.append(f"the {name} were not searched: {_why(e)}")
        out = combine(parts, limit) if len(parts) > 1 else parts[0][1]
        out.notes = [*(out.notes or []), *missed] or None
        if conversations is None:
            out.notes = [*(out.notes or []), "no conversation folder is configured: they were not searched"]
        if scoped:
            out.notes = [*(out.notes or []), "a scoped session does not search commits"]
        elif commits is None:
            out.notes = [*(out.notes or []), "the notes are in no git repository: there are no commits to search"]
        return out if len(parts) > 1 else out.to_json()
    others = [r for r in (conversations, code) if r is not None]
    if method in ("read", "outline") and others and notes is not None:
        try:
            return notes(method, params)
        except UserError as e:   # a memory file's or a source file's path: another index holds it
            if e.code != "not_found":
                raise
            for other in others:
                try:
                    return other(method, params)
                except UserError:
                    continue
            raise e from None
    if notes is None:
        raise UserError("no notes folder is configured for this session", param="corpus",
                        hint="pass --root DIR, or set roots = [\"~/notes\"] in the config file")
    out = notes(method, params)
    if method == "search" and conversations is not None and not params.get("type"):
        # The notes were asked for: the conversations index holding Claude Code's memory files is
        # only looked in, and one that cannot answer (none built yet, a full disk) leaves the notes'
        # answer as it is, saying so.
        try:
            memory = SearchAnswer.parse(conversations(method, {**params, "type": [MEMORY_TYPE]}))
        except (UserError, OSError) as e:
            out["notes"] = [*(out.get("notes") or []), f"Claude Code's memory files were not searched: {_why(e)}"]
            return out
        if memory.results and not memory.no_strong_match:
            return combine([(NOTES, SearchAnswer.parse(out)), (CONVERSATIONS, memory)], limit, quiet=True)
    return out


def _why(e: Exception) -> str:
    """Why a corpus beside the one asked for did not answer, in one line with its fix."""
    if isinstance(e, UserError):
        return e.message + (f" ({e.hint})" if e.hint else "")
    return f"{type(e).__name__}: {e}"


def _across(r) -> tuple:
    """The order of results from several corpora: each corpus's fused scores are scaled to its own
    candidates, so they are not compared; the semantic match is (the same model's cosine for all)."""
    return (-(r.scores.dense if r.scores is not None else 0.0), -(r.score or 0))


def _corpus_of(default: str, r) -> str:
    return "memory" if r.type == MEMORY_TYPE else default


def combine(parts: list[tuple[str, SearchAnswer]], limit: int, quiet: bool = False) -> SearchAnswer:
    """The answer over several corpora (the notes' first): each result keeps its own corpus's rank
    and says which it is ("memory" for Claude Code's memory files). `quiet`: the second answer is
    only the memory files of a notes search (its absence of a match is not news)."""
    for corpus, ans in parts:
        for r in [*ans.results, *(ans.best_weak or [])]:
            r.corpus = _corpus_of(corpus, r)
    first = parts[0][1]
    answers = [a for _, a in parts]
    out = SearchAnswer(query=first.query, mode=first.mode, took_ms=round(sum(a.took_ms or 0 for a in answers), 1))
    sure = [a for a in answers if a.results and not a.no_strong_match]
    if sure:
        bests = sorted((a.results[0] for a in sure), key=_across)
        rest = sorted((r for a in sure for r in a.results[1:]), key=_across)
        for r in rest:   # the best of each corpus is the one carried in full
            r.content, r.content_truncated, r.content_total_chars, r.content_lines = None, None, None, None
        out.results = bests + rest[:max(limit - len(bests), 0)]
        if not quiet:
            out.notes = [f"no strong match in the {name}" for name, a in parts if a not in sure] or None
    else:
        out.no_strong_match = True
        out.best_weak = sorted((r for a in answers for r in a.best_weak or []), key=_across)[:limit]
        out.why_no_strong_match = [f"{name}: {w}" for name, a in parts for w in a.why_no_strong_match or []] or None
        if not out.best_weak:
            out.message = "no section matches in the " + " or the ".join(name for name, _ in parts)
    for i, (name, a) in enumerate(parts):
        if quiet and i:
            continue
        out.notes = [*(out.notes or []), *(f"{name}: {n}" for n in a.notes or [])] or None
    out.index = first.index
    for name, a in parts[1:]:
        if name == CONVERSATIONS:
            out.conversations_index = a.index
        elif name == COMMITS:
            out.commits_index = a.index
    return out
