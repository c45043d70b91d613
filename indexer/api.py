"""Request parameters (as JSON) → engine calls → response dicts.

One place turns untrusted parameters into typed calls, so the daemon, the in-process fallback
of the MCP server and the CLI give the same answers and the same structured errors.
"""

from __future__ import annotations

import json

from remembrancer.indexer.search import reader
from remembrancer.indexer.ingest.chunks import CHARS_PER_TOKEN, estimate_tokens
from remembrancer.indexer.errors import UserError, echo
from remembrancer.indexer.store.filters import Filters
from remembrancer.indexer.search.answer import SearchRequest, search

DEFAULT_BUDGET_TOKENS = 4000


def _str(params: dict, name: str, default: str | None = None) -> str | None:
    v = params.get(name, default)
    if v is None:
        return None
    if not isinstance(v, str):
        raise UserError(f"{name} must be a string", param=name)
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (valid as a JSON escape, not as text)
        raise UserError(f"{name} is not valid text (lone surrogate)", param=name) from None
    return v


def _list(params: dict, name: str) -> list[str]:
    v = params.get(name)
    if v is None or v == "":
        return []
    if isinstance(v, str):
        return [x for x in (s.strip() for s in v.split(",")) if x]
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return v
    raise UserError(f"{name} must be a string or a list of strings", param=name)


def _int(params: dict, name: str, default: int, lo: int, hi: int) -> int:
    v = params.get(name, default)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise UserError(f"{name} must be an integer from {lo} to {hi}, got {echo(repr(v))}", param=name)
    return v


def filters_from(params: dict) -> Filters:
    return Filters(types=_list(params, "type"), path=_str(params, "path"), tags=_list(params, "tags"),
                   since=_str(params, "since"), until=_str(params, "until"))


def do_search(engine, params: dict) -> dict:
    budget = _int(params, "budget_tokens", DEFAULT_BUDGET_TOKENS, 200, 50_000)
    req = SearchRequest(
        query=_str(params, "query", "") or "",
        limit=_int(params, "limit", 5, 1, 50),
        filters=filters_from(params),
        exact=bool(params.get("exact", False)),
        explain=bool(params.get("explain", False)),
        alternates=params.get("alternates") or [],   # validated by search (a structured error names it)
        content_chars=budget * CHARS_PER_TOKEN,
    )
    return fit_budget(search(engine, req), budget)


def fit_budget(out: dict, budget_tokens: int) -> dict:
    """Keep a response under its token budget: snippets shrink first, then the full content is
    cut, then trailing pointers drop — and the response says what was left out."""
    key = "best_weak" if out.get("no_strong_match") else "results"
    results = out.get(key) or []
    left_out: list[str] = []

    def size() -> int:
        return estimate_tokens(json.dumps(out, ensure_ascii=False))

    for width in (160, 80):
        if size() <= budget_tokens:
            break
        for r in results:
            if len(r.get("snippet", "")) > width:
                r["snippet"] = r["snippet"][:width] + "…"
        left_out.append(f"snippets shortened to {width} chars")
    if results and "content" in results[0] and size() > budget_tokens:
        over = (size() - budget_tokens) * CHARS_PER_TOKEN + 200
        content = results[0]["content"]
        total = results[0].pop("content_total_chars", len(content))   # search may have cut it to the budget already
        keep = max(len(content) - over, 400)
        if keep < len(content):
            results[0]["content"] = content[:keep]
            results[0]["content_truncated"] = True
            left_out.append(f"first result cut to {keep} of {total} chars (use read for the rest)")
    while len(results) > 1 and size() > budget_tokens:
        dropped = results.pop()
        left_out.append(f"dropped {dropped['path']} § {dropped['heading'] or '(preamble)'}")
    if left_out:
        out["left_out"] = left_out
    return out


def do_read(engine, params: dict) -> dict:
    path = _str(params, "path")
    if not path:
        raise UserError("path is required", param="path")
    heading = _str(params, "heading")
    lines = params.get("lines")
    if lines is not None:
        if isinstance(lines, str) and ":" in lines:
            lines = lines.split(":", 1)
        try:
            lines = (int(lines[0]), int(lines[1]))
        except (TypeError, ValueError, IndexError):
            raise UserError("lines must be [start, end] or \"start:end\"", param="lines") from None
    if heading is not None and lines is not None:
        raise UserError("give heading or lines, not both", param="lines")
    if params.get("outline"):
        return reader.outline(engine, path)
    return reader.read(engine, path, heading=heading, lines=lines,
                       offset=_int(params, "offset", 0, 0, 1 << 40),
                       max_chars=_int(params, "max_chars", reader.DEFAULT_PAGE_CHARS, 100, 200_000))


def do_outline(engine, params: dict) -> dict:
    path = _str(params, "path")
    if not path:
        raise UserError("path is required", param="path")
    return reader.outline(engine, path)


def do_list(engine, params: dict) -> dict:
    engine.redaction.current()  # fail closed: a broken redaction policy serves nothing
    f = filters_from({"path": params.get("path"), "type": params.get("type")})
    from remembrancer.indexer.store.filters import validate

    f = validate(f, engine.catalog, engine.config.doc_types)
    limit = _int(params, "limit", 200, 1, 5000)
    offset = _int(params, "offset", 0, 0, 10**9)
    docs = [{"path": d.path, "type": d.doc_type, "date": d.date, "title": d.title, "sections": d.sections,
             "tokens": d.chars // 4, "tags": d.tags} for d in engine.catalog.document_summaries(f)]
    out = {"documents": docs[offset:offset + limit], "total": len(docs)}
    if offset:
        out["offset"] = offset
    if len(docs) > offset + limit:
        out["truncated"] = True
        out["next_offset"] = offset + limit
    return out


def _bool(params: dict, name: str, default: bool) -> bool:
    v = params.get(name, default)
    if not isinstance(v, bool):
        raise UserError(f"{name} must be true or false", param=name)
    return v


def _terms(params: dict) -> list[str] | str:
    v = params.get("terms")
    if isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)):
        return v
    if v is None:
        return []
    raise UserError("terms must be a string or a list of strings", param="terms")


def do_history(engine, params: dict) -> dict:
    from remembrancer.indexer.memory.tools import HISTORY_LIMIT, MAX_LIMIT, history

    return history(engine, _str(params, "entity") or "", topic=_str(params, "topic"),
                   since=_str(params, "since"), until=_str(params, "until"),
                   limit=_int(params, "limit", HISTORY_LIMIT, 1, MAX_LIMIT),
                   check_commits=_bool(params, "verify_commits", True))


def do_latest(engine, params: dict) -> dict:
    from remembrancer.indexer.memory.tools import LATEST_LIMIT, MAX_LIMIT, latest

    return latest(engine, _terms(params), since=_str(params, "since"), until=_str(params, "until"),
                  types=_list(params, "type"), path=_str(params, "path"),
                  limit=_int(params, "limit", LATEST_LIMIT, 1, MAX_LIMIT),
                  check_commits=_bool(params, "verify_commits", True))


def do_neighbors(engine, params: dict) -> dict:
    from remembrancer.indexer.memory.tools import MAX_LIMIT, NEIGHBOR_LIMIT, neighbors

    return neighbors(engine, _str(params, "path") or "", limit=_int(params, "limit", NEIGHBOR_LIMIT, 1, MAX_LIMIT))


def do_verify(engine, params: dict) -> dict:
    from remembrancer.indexer.memory.tools import verify

    return verify(engine, path=_str(params, "path"), heading=_str(params, "heading"), text=_str(params, "text"))


READ_METHODS = {"search": do_search, "read": do_read, "outline": do_outline, "list": do_list,
                "history": do_history, "latest": do_latest, "neighbors": do_neighbors, "verify": do_verify}
# Answers about the index's content carry its freshness verdict; a local engine refreshes first.
FRESHNESS_METHODS = ("search", "history", "latest", "neighbors", "verify")


def dispatch_read(engine, method: str, params: dict, freshness) -> dict | None:
    """Answer a read-only method (READ_METHODS), or None if `method` is not one.

    `freshness` is a callable giving the verdict the caller can vouch for (a daemon knows its
    queue; an in-process engine knows whether it just refreshed)."""
    fn = READ_METHODS.get(method)
    if fn is None:
        return None
    params = dict(params)
    with engine.scoped(params.pop("scope", None) or ()):
        try:
            out = fn(engine, params)
        except UserError as e:  # an error that names a secret typed into the request names it redacted
            raise _redacted_error(engine, e, params) from None
        if method in FRESHNESS_METHODS:
            out["index"] = freshness()
    return _redacted_echoes(engine, out, params)



def answer_in_process(engine, method: str, params: dict, freshness) -> dict | None:
    """A read method or `status`, answered by an engine in this process (no daemon in between:
    the local read-only backend, a team-store reader); None for anything else."""
    out = dispatch_read(engine, method, params, freshness)
    if out is None and method == "status":
        with engine.scoped(params.get("scope") or ()):
            out = {**engine.status(), "daemon": None, "freshness": freshness()}
    return out

def _redacted_echoes(engine, out, params: dict, lowered: bool = False):
    """Pieces of secrets typed into the request, wherever the answer repeats them (indexer/redact.py)."""
    try:
        redactor = engine.redaction.current()
    except UserError:
        return out
    return echoes_redacted(redactor, out, params, lowered)


def echoes_redacted(redactor, out, params: dict, lowered: bool = False):
    """`out` without the pieces of `params` that `redactor` removes; `lowered`: in lower case
    too (an error may quote a value as it compared it, e.g. a doc type)."""
    pieces = redactor.echoed_secrets(params)
    if lowered:
        pieces = sorted(set(pieces) | {p.lower() for p in pieces}, key=len, reverse=True)
    return redactor.redact_echoes(out, pieces)


def _redacted_error(engine, e: UserError, params: dict) -> UserError:
    fields = _redacted_echoes(engine, {"message": e.message, "hint": e.hint, "options": e.options}, params,
                              lowered=True)
    e.message, e.hint, e.options = fields["message"], fields["hint"], fields["options"]
    e.args = (e.message,)
    return e
