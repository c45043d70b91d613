"""Request parameters (as JSON) → calls on one request's read view → response dicts.

One place turns untrusted parameters into typed calls, so the daemon, the in-process fallback
of the MCP server and the CLI give the same answers and the same structured errors.
"""

from __future__ import annotations

import json

from remembrancer.indexer.search import across, reader
from remembrancer.indexer.ingest.chunks import CHARS_PER_TOKEN, estimate_tokens, whole_lines
from remembrancer.indexer.answers import DocumentList, DocumentSummary, SearchAnswer, StatusAnswer
from remembrancer.indexer.engine import Engine, ReadView
from remembrancer.indexer.errors import UserError, echo
from remembrancer.indexer.requests import (HistoryParams, LatestParams, ListParams, NeighborsParams, OutlineParams,
                                           ReadParams, SearchParams, VerifyParams)
from remembrancer.indexer.store.filters import Filters
from remembrancer.indexer.search.answer import SearchRequest, search


def filters_from(p) -> Filters:
    """The filters a request's parameters name (those it has: list takes no tags nor dates)."""
    return Filters(types=p.type, path=p.path, tags=getattr(p, "tags", []), since=getattr(p, "since", None),
                   until=getattr(p, "until", None))


def do_search(view: ReadView, params) -> dict:
    """A search as the socket answers it: the wire JSON of its SearchAnswer, fitted to the budget."""
    p = SearchParams.from_wire(params)
    req = SearchRequest(query=p.query, limit=p.limit, filters=filters_from(p), exact=p.exact, explain=p.explain,
                        alternates=p.alternates, content_chars=p.budget_tokens * CHARS_PER_TOKEN)
    return fit_budget(search(view, req), p.budget_tokens).to_json()


def fit_budget(out: SearchAnswer, budget_tokens: int) -> SearchAnswer:
    """Keep a response under its token budget: runners-up carried whole become pointers first, then
    snippets shrink, then the best section's text is cut, then trailing pointers drop — and the
    response says what was left out."""
    results = out.shown
    left_out: list[str] = []

    def size() -> int:
        return estimate_tokens(json.dumps(out.to_json(), ensure_ascii=False))

    carried = [r for r in results[1:] if r.content is not None]
    while carried and size() > budget_tokens:   # the runners-up carried whole go back to pointers first
        dropped = carried.pop()
        dropped.content = None
        left_out.append(f"the text of {dropped.path} § {dropped.heading or '(preamble)'} (a pointer only)")
    for width in (160, 80):
        if size() <= budget_tokens:
            break
        for r in results:
            if len(r.snippet or "") > width:
                r.snippet = r.snippet[:width] + "…"
        left_out.append(f"snippets shortened to {width} chars")
    if results and results[0].content is not None and size() > budget_tokens:
        over = (size() - budget_tokens) * CHARS_PER_TOKEN + 200
        first = results[0]
        content = first.content
        total = first.content_total_chars or len(content)   # search may have cut it to the budget already
        first.content_total_chars = None
        keep = max(len(content) - over, 400)
        if keep < len(content):
            first.content = whole_lines(content[:keep])
            first.content_truncated = True
            if first.lines:   # the lines it still carries
                top = first.content_lines[0] if first.content_lines else first.lines[0]
                first.content_lines = [top, top + first.content.rstrip("\n").count("\n")]
            left_out.append(f"first result cut to {keep} of {total} chars (use read for the rest)")
    while len(results) > 1 and size() > budget_tokens:
        dropped = results.pop()
        left_out.append(f"dropped {dropped.path} § {dropped.heading or '(preamble)'}")
    if left_out:
        out.left_out = left_out
    return out


def do_read(view: ReadView, params) -> dict:
    p = ReadParams.from_wire(params)
    if p.outline:
        return reader.outline(view, p.path).to_json()
    return reader.read(view, p.path, heading=p.heading, lines=p.lines, offset=p.offset,
                       max_chars=p.max_chars, uuid=p.uuid, around=p.around).to_json()


def do_outline(view: ReadView, params) -> dict:
    return reader.outline(view, OutlineParams.from_wire(params).path).to_json()


def do_list(view: ReadView, params) -> dict:
    redactor = view.redaction.current()  # fail closed: a broken redaction policy serves nothing
    from remembrancer.indexer.store.filters import validate

    p = ListParams.from_wire(params)
    f = validate(filters_from(p), view.catalog, view.config.doc_types)
    docs = [DocumentSummary(path=d.path, type=d.doc_type, date=d.date, title=d.title, sections=d.sections,
                            tokens=d.chars // 4, tags=d.tags) for d in view.catalog.document_summaries(f)]
    page = DocumentList(documents=docs[p.offset:p.offset + p.limit], total=len(docs), offset=p.offset or None)
    if len(docs) > p.offset + p.limit:
        page.truncated, page.next_offset = True, p.offset + p.limit
    if not docs and f.active():
        page.message, page.closest = _empty_listing(view, f)
    return redactor.redact_obj(page.to_json())   # served redacted again, as every answer is


def _empty_listing(view: ReadView, f: Filters) -> tuple[str, list[str] | None]:
    """Why a filtered listing is empty — a path prefix under which no document is indexed (with the
    top-level folders nearest to it), else the filters together — so "0 documents" is never
    taken for an empty folder the index holds."""
    import difflib

    if not f.path or view.catalog.document_summaries(Filters(path=f.path)):
        return f"no indexed document matches {f.describe()}", None
    folders = sorted({p.split("/", 1)[0] for p in view.catalog.document_paths() if "/" in p})
    closest = [c + "/" for c in difflib.get_close_matches(f.path.split("/", 1)[0], folders, n=3, cutoff=0.5)]
    message = f"no indexed document is under the path {echo(repr(f.path))}"
    if closest:
        message += f"; the closest top-level folders: {', '.join(closest)}"
    elif folders:
        message += (f"; the top-level folders are {', '.join(c + '/' for c in folders[:10])}"
                    + (" …" if len(folders) > 10 else ""))
    return message, closest or None


def do_history(view: ReadView, params) -> dict:
    from remembrancer.indexer.memory.tools import history

    p = HistoryParams.from_wire(params)
    return history(view, p.entity, topic=p.topic, since=p.since, until=p.until, limit=p.limit,
                   check_commits=p.verify_commits).to_json()


def do_latest(view: ReadView, params) -> dict:
    from remembrancer.indexer.memory.tools import latest

    p = LatestParams.from_wire(params)
    return latest(view, p.terms, since=p.since, until=p.until, types=p.type, path=p.path, limit=p.limit,
                  check_commits=p.verify_commits).to_json()


def do_neighbors(view: ReadView, params) -> dict:
    from remembrancer.indexer.memory.tools import neighbors

    p = NeighborsParams.from_wire(params)
    return neighbors(view, p.path, limit=p.limit).to_json()


def do_verify(view: ReadView, params) -> dict:
    from remembrancer.indexer.memory.tools import verify

    p = VerifyParams.from_wire(params)
    return verify(view, path=p.path, heading=p.heading, text=p.text).to_json()


# Every read method's answer carries the freshness verdict (a listing or a read too: which documents
# exist and where their sections are is the index's word, not the files'), and a writable engine in
# the client's process (no daemon) refreshes before each: never an answer of a pass that did not finish.
READ_METHODS = {"search": do_search, "read": do_read, "outline": do_outline, "list": do_list,
                "history": do_history, "latest": do_latest, "neighbors": do_neighbors, "verify": do_verify}
# Errors that say the index has no such document: they carry the verdict too, and an index that is
# behind says so in the message — a file added since may just not be read yet.
ABSENT_CODES = ("not_found",)


def dispatch_read(engine: Engine, method: str, params: dict, freshness) -> dict | None:
    """Answer a read-only method (READ_METHODS), or None if `method` is not one.

    `freshness` is a callable giving the verdict the caller can vouch for (a daemon knows its
    queue; an in-process engine knows whether it just refreshed)."""
    fn = READ_METHODS.get(method)
    if fn is None:
        return None
    params = dict(params)
    with engine.view(params.pop("scope", None) or ()) as view:
        try:
            out = fn(view, params)
        except UserError as e:  # an error that names a secret typed into the request names it redacted
            if e.code in ABSENT_CODES:
                absent(e, freshness(view))
            raise _redacted_error(engine, e, params) from None
        out["index"] = freshness(view).to_json()
    return _redacted_echoes(engine, out, params)


def absent(e: UserError, fresh) -> None:
    """A "no such document" from an index: with its verdict, and, when the index is behind (a pass
    not finished, changes queued, the read-only fallback), said in the message — never a plain
    "not found" for a file the index has not read yet."""
    e.index = fresh.to_json()
    if fresh.verdict != "fresh":
        e.message = f"{e.message} — {fresh.line()} It may exist but not be indexed yet."
        e.hint = "ask again once the index has caught up (`remembrancer status` says when)" + (
            f"; {e.hint}" if e.hint else "")
        e.args = (e.message,)



def read_across(method: str, params: dict, notes, conversations, commits=None, code=None) -> dict:
    """A read method over the corpus its `corpus` parameter names (search/across.py): `notes`,
    `conversations`, `commits` and `code` answer (method, params) on their own corpus; None when
    there is none. An answer over several is fitted to the request's budget as one."""
    out = across.answer(method, params, notes, conversations, commits, code)
    if isinstance(out, SearchAnswer):
        budget = SearchParams.from_wire({k: v for k, v in params.items() if k == "budget_tokens"}).budget_tokens
        return fit_budget(out, budget).to_json()
    return out


def answer_in_process(engine: Engine, method: str, params: dict, freshness) -> dict | None:
    """A read method or `status`, answered by an engine in this process (no daemon in between:
    the local read-only backend, a team-store reader); None for anything else."""
    out = dispatch_read(engine, method, params, freshness)
    if out is None and method == "status":
        with engine.view(params.get("scope") or ()) as view:
            out = StatusAnswer(index=view.status(), daemon=None, freshness=freshness(view)).to_json()
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
