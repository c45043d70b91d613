"""What each method takes: one declaration per method of its parameters — types, defaults, bounds
and the words that describe them.

Three users read these: the MCP tools (their signatures, hence their input schemas, are built
from the record: `tool_signature`), the socket (`from_wire` turns a request's untrusted JSON into
the record, with the engine's structured errors) and the CLI (its flags take their defaults and
bounds from here). A parameter is declared once, so the three cannot drift apart. Plain
dataclasses: the CLI reads them at every start, and pydantic is imported only by the MCP server.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from dataclasses import dataclass
from typing import Literal

from remembrancer.indexer.errors import UserError, echo

MAX_LIMIT = 100                  # history, latest, neighbors: sections per answer
HISTORY_LIMIT = 20
LATEST_LIMIT = 10
NEIGHBOR_LIMIT = 5
SEARCH_LIMIT = 50                # search: sections per answer
DEFAULT_PAGE_CHARS = 20_000      # read: one page
DEFAULT_BUDGET_TOKENS = 4000     # search: what an answer may cost the caller
MAX_OFFSET = 1 << 40             # read: the socket's ceiling on a character offset
MAX_LIST_OFFSET = 10**9          # list: the socket's ceiling on a document offset
MAX_AROUND = 10                  # read: exchanges of a conversation on each side of the one read
# search: the longest question. A question with a pasted error or log excerpt fits with room to spare
# (about a page); a longer text is a document, not a question: the dense leg reads only its first few
# hundred tokens, while every per-word step (keyword, literal, abstention) pays for all of it.
MAX_QUERY_CHARS = 4000
QUERY_TOO_LONG_HINT = ("ask with its distinctive part (the error message, an identifier, a short phrase) and a few "
                       "words; `latest` finds exact strings")
TOO_LONG_HINTS = {"query": QUERY_TOO_LONG_HINT,
                  "path": "a path prefix or a document path as search and list print it",
                  "topic": "a few words about what the sections are about",
                  "heading": "a section's breadcrumb as outline prints it, or a unique last part of it",
                  "terms": "give the distinctive part (an error code, an identifier, a short phrase), or use "
                           "search for a longer text",
                  "alternates": "give a list of up to 3 short rephrasings in the words the notes would use",
                  "type": "doc type names, as list_documents and index_status print them",
                  "tags": "front matter tags, as search results print them"}

ALTERNATES_HELP = ("Up to 3 rephrasings of the question, searched with it (the question keeps the most weight; "
                   "the answer says which phrasing found the best result). Use them for questions in your own "
                   "words (a symptom, a story, a vague description) and when a first search came back weak: "
                   "short and concrete, in the terms and names the notes would use — the tool, host, service, "
                   "command, setting or error text — not a repeat of the question. Example: for 'players got "
                   "stuck with a 403 after the update' try ['Cloudflare rule blocking client version', "
                   "'403 forbidden new app build'].")
CORPUS_HELP = ("Which memory to search. 'notes' (default): the written notes — records, runbooks, decisions, "
               "journal. 'conversations': past Claude Code sessions with this project — for 'did we …', 'last "
               "time …', 'in the session when …', 'which session fixed …', 'what did we decide about …'; each "
               "result is one exchange (a prompt and the work that answered it) with its session_id, uuid, "
               "timestamp and branch. 'commits': the commit messages of the notes' git repositories — for "
               "'why / when did we change …', 'which commit …'; each result is one commit (its hash, author, "
               "date and changed paths). 'code': the session's source folders (--code), each result one function, "
               "class or method. 'all': notes, conversations and commits, each ranked on its own, the best of each "
               "first.")
CONSTRAINTS = ("ge", "le", "min_length", "max_length")
# A parameter that is text or a list of texts (`type`, `tags`, `terms`, `alternates`) is bounded in
# both shapes: max_length for the text, max_items for the list, item_length for each of its texts.
LIST_BOUNDS = ("max_items", "item_length")
# The bounds of the text-or-list parameters: a few doc types, a few dozen tags, the terms
# `latest` takes (indexer/memory/tools.py checks the same figures after splitting a text).
MAX_TYPES, MAX_TYPE_CHARS = 20, 100
MAX_TAGS, MAX_TAG_CHARS = 20, 100
MAX_TERMS, MAX_TERM_CHARS = 20, 300
MAX_ALTERNATES, MAX_ALTERNATE_CHARS = 3, 300
MAX_HEADING_CHARS = 1000


def param(default=dataclasses.MISSING, *, description: str | None = None, socket_only: bool = False, **bounds):
    """A parameter: its default, its bounds (ge, le, min_length, max_length; max_items and
    item_length for a list) and its description.
    `socket_only`: an engine knob the MCP tool does not offer (the tool fixes it)."""
    assert set(bounds) <= set(CONSTRAINTS + LIST_BOUNDS), bounds
    return dataclasses.field(default=default, metadata={"description": description, "socket_only": socket_only,
                                                         **bounds})


TYPE_BOUNDS = {"max_length": MAX_TYPES * (MAX_TYPE_CHARS + 1), "max_items": MAX_TYPES, "item_length": MAX_TYPE_CHARS}
SINCE = "Only sections dated on or after YYYY-MM-DD."
UNTIL = "Only sections dated on or before YYYY-MM-DD."
PATH_PREFIX = "Only documents under this path prefix, e.g. 'runbooks/'."


class Params:
    """A method's parameters (each subclass a dataclass of `param`s)."""

    @classmethod
    def bounds(cls, name: str) -> tuple[object, int | None, int | None]:
        """(default, lowest, highest) of an integer parameter, as declared."""
        f = next(f for f in dataclasses.fields(cls) if f.name == name)
        return f.default, f.metadata.get("ge"), f.metadata.get("le")

    @classmethod
    def max_length(cls, name: str) -> int | None:
        """The declared longest value of a string parameter (None: unbounded)."""
        return next(f for f in dataclasses.fields(cls) if f.name == name).metadata.get("max_length")

    @classmethod
    def check_lengths(cls, params: dict) -> None:
        """Every text parameter within its declared max_length, and every list within its max_items
        of texts within item_length, for every caller alike: the MCP tool's schema says the same
        bounds, but the socket and the CLI never see that schema."""
        for name in _text_fields(cls):
            value = params.get(name)
            if isinstance(value, str):
                _bounded(value, cls, name, hint=TOO_LONG_HINTS.get(name, ""))
            elif isinstance(value, list):
                _bounded_list(value, cls, name)

    @classmethod
    def tool_signature(cls, returns) -> inspect.Signature:
        """The MCP tool's signature (pydantic `Field`s in `Annotated` types): the SDK builds the
        tool's input schema from it."""
        from typing import Annotated

        from pydantic import Field

        hints = typing.get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            if f.metadata["socket_only"]:
                continue
            kind = hints[f.name]
            if any(f.metadata.get(k) is not None for k in LIST_BOUNDS):   # each shape bounded on its own
                kind, spec = _shapes_bounded(kind, f.metadata), {"description": f.metadata["description"]}
            else:
                spec = {k: f.metadata[k] for k in ("description", *CONSTRAINTS) if f.metadata.get(k) is not None}
            default = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
            out.append(inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                         annotation=Annotated[kind, Field(**spec)], default=default))
        return inspect.Signature(out, return_annotation=returns)


def _shapes_bounded(kind, bounds: dict):
    """`str | list[str] | None` as `str(max_length) | list[str(item_length)](max_items) | None`: a
    bound on the union as a whole would bound neither shape in the schema."""
    from typing import Annotated

    from pydantic import Field

    shapes = []
    for shape in typing.get_args(kind) or (kind,):
        if shape is str and bounds.get("max_length") is not None:
            shape = Annotated[str, Field(max_length=bounds["max_length"])]
        elif typing.get_origin(shape) is list:
            (item,) = typing.get_args(shape)
            if item is str and bounds.get("item_length") is not None:
                item = Annotated[str, Field(max_length=bounds["item_length"])]
            shape = Annotated[list[item], Field(max_length=bounds["max_items"])] \
                if bounds.get("max_items") is not None else list[item]
        shapes.append(shape)
    return functools.reduce(lambda a, b: a | b, shapes) if len(shapes) > 1 else shapes[0]


# -- the socket's checks: untrusted JSON → a record, or the engine's structured error -----------------

@functools.cache
def _text_fields(model: type[Params]) -> tuple[str, ...]:
    """The parameters declared as text with a max_length, or as a list with list bounds."""
    hints = typing.get_type_hints(model)
    return tuple(f.name for f in dataclasses.fields(model)
                 if (f.metadata.get("max_length") is not None and hints[f.name] in (str, str | None))
                 or any(f.metadata.get(k) is not None for k in LIST_BOUNDS))


def _str(params, name: str, default: str | None = None) -> str | None:
    v = params.get(name, default)
    if v is None:
        return None
    if not isinstance(v, str):
        raise UserError(f"{name} must be a string", param=name)
    if not _is_text(v):   # a lone surrogate (valid as a JSON escape, not as text): check_text
        raise UserError(f"{name} is not valid Unicode text (it holds a lone surrogate)", param=name)
    return v


def _bounded(value: str, model: type[Params], name: str, hint: str = "") -> str:
    """`value`, if it is no longer than the parameter's declared max_length (the MCP tool's schema
    says the same bound, and its SDK refuses a longer value before the socket is asked)."""
    most = model.max_length(name)
    if most is not None and len(value) > most:
        raise UserError(f"{name} is {len(value)} characters, the most is {most}", param=name, hint=hint)
    return value


def _bounded_list(value: list, model: type[Params], name: str) -> list:
    """`value`, if it has at most max_items items and each text is at most item_length long."""
    f = next(f for f in dataclasses.fields(model) if f.name == name)
    most, longest = f.metadata.get("max_items"), f.metadata.get("item_length")
    if most is not None and len(value) > most:
        raise UserError(f"`{name}` takes at most {most} items, got {len(value)}", param=name,
                        hint=TOO_LONG_HINTS.get(name, ""))
    long = [v for v in value if isinstance(v, str) and longest is not None and len(v) > longest]
    if long:
        raise UserError(f"an item of `{name}` is {len(long[0])} chars, the most is {longest}", param=name,
                        hint=TOO_LONG_HINTS.get(name, ""))
    return value


def check_text(params: dict) -> None:
    """Every string of a request (names and values, at any depth) must be Unicode text: a lone
    surrogate ("\\ud800" is valid JSON) would reach tokenizers, tantivy and SQLite, which refuse it
    with exceptions of their own, and no JSON encoder can send it back. The error names the top-level
    parameter holding it (never quoting it: the answer could not be encoded)."""
    for name, value in params.items():
        shown = name if isinstance(name, str) and _is_text(name) else None
        stack = [name, value]
        while stack:
            v = stack.pop()
            if isinstance(v, str):
                if not _is_text(v):
                    raise UserError(f"{shown or 'a parameter name'} is not valid Unicode text "
                                    "(it holds a lone surrogate)", param=shown)
            elif isinstance(v, dict):
                stack += [*v.keys(), *v.values()]
            elif isinstance(v, list):
                stack += v


def _is_text(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _list(params, name: str) -> list[str]:
    v = params.get(name)
    if v is None or v == "":
        return []
    if isinstance(v, str):
        return [x for x in (s.strip() for s in v.split(",")) if x]
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return v
    raise UserError(f"{name} must be a string or a list of strings", param=name)


def _int(params, model: type[Params], name: str, hi: int | None = None) -> int:
    default, lo, declared_hi = model.bounds(name)
    hi = declared_hi if hi is None else hi
    v = params.get(name, default)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise UserError(f"{name} must be an integer from {lo} to {hi}, got {echo(repr(v))}", param=name)
    return v


def _bool(params, name: str, default: bool) -> bool:
    v = params.get(name, default)
    if not isinstance(v, bool):
        raise UserError(f"{name} must be true or false", param=name)
    return v


def _required(value: str | None, name: str) -> str:
    if not value:
        raise UserError(f"{name} is required", param=name)
    return value


# -- the methods --------------------------------------------------------------------------------------

@dataclass
class SearchParams(Params):
    query: str = param(description="The question or keywords, in plain words. May be empty when filters are "
                       "given (then: matching sections, newest first).", max_length=MAX_QUERY_CHARS)
    limit: int = param(5, ge=1, le=SEARCH_LIMIT, description="How many sections to return (1-50); the first "
                       "comes in full, the rest as pointers.")
    type: str | list[str] | None = param(None, description="Only these doc types (any of them), e.g. "
                                         "'runbook' or ['host', 'journal'].", **TYPE_BOUNDS)
    path: str | None = param(None, description=PATH_PREFIX, max_length=1000)
    tags: str | list[str] | None = param(None, description="Only documents having ALL these front matter tags.",
                                         max_length=MAX_TAGS * (MAX_TAG_CHARS + 1), max_items=MAX_TAGS,
                                         item_length=MAX_TAG_CHARS)
    since: str | None = param(None, description=SINCE, max_length=40)
    until: str | None = param(None, description=UNTIL, max_length=40)
    exact: bool = param(False, description="Literal, case-insensitive string match only — for error "
                        "messages, identifiers, paths.")
    alternates: list[str] | None = param(None, description=ALTERNATES_HELP, max_items=MAX_ALTERNATES,
                                         item_length=MAX_ALTERNATE_CHARS)
    corpus: Literal["notes", "conversations", "commits", "code", "all"] = param("notes", description=CORPUS_HELP)
    explain: bool = param(False, socket_only=True)
    budget_tokens: int = param(DEFAULT_BUDGET_TOKENS, ge=200, le=50_000, socket_only=True)

    @classmethod
    def from_wire(cls, params) -> "SearchParams":
        budget = _int(params, cls, "budget_tokens")
        cls.check_lengths(params)
        query = _str(params, "query", "") or ""
        return cls(query=query, limit=_int(params, cls, "limit"),
                   type=_list(params, "type"), path=_str(params, "path"), tags=_list(params, "tags"),
                   since=_str(params, "since"), until=_str(params, "until"),
                   exact=bool(params.get("exact", False)), explain=bool(params.get("explain", False)),
                   alternates=params.get("alternates") or [],   # validated by search (a structured error names it)
                   budget_tokens=budget)


@dataclass
class ReadParams(Params):
    path: str = param(description="Document path as search/list_documents print it, e.g. "
                      "'runbooks/postgres/restore.md'.", min_length=1, max_length=1000)
    heading: str | None = param(None, description="A section: its breadcrumb 'H1 > H2' or a unique last "
                                "part, e.g. 'Restore'.", max_length=MAX_HEADING_CHARS)
    lines: list[int] | str | None = param(None, description="A line range [start, end] (1-based, "
                                          "inclusive) or 'start:end'.", max_length=40, max_items=2)
    outline: bool = param(False, description="Return the document's sections with line ranges and "
                          "token sizes instead of text.")
    offset: int = param(0, ge=0, description="Character offset to start from (paging: use "
                        "next_offset from the previous answer).")
    max_chars: int = param(DEFAULT_PAGE_CHARS, ge=100, le=200_000, description="Most characters to return in "
                           "this page.")
    uuid: str | None = param(None, description="A conversation (a .jsonl path from a conversations search): "
                             "the exchange holding this line's uuid, e.g. a result's uuid.", max_length=100)
    around: int = param(0, ge=0, le=MAX_AROUND, description="A conversation: also this many exchanges before "
                        "and after the one read (0-10).")

    @classmethod
    def from_wire(cls, params) -> "ReadParams":
        cls.check_lengths(params)
        path = _required(_str(params, "path"), "path")
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
            return cls(path=path, outline=True)
        uuid = _str(params, "uuid")
        if uuid is not None and (heading is not None or lines is not None):
            raise UserError("give uuid, heading or lines, not several", param="uuid")
        return cls(path=path, heading=heading, lines=lines, offset=_int(params, cls, "offset", hi=MAX_OFFSET),
                   max_chars=_int(params, cls, "max_chars"), uuid=uuid, around=_int(params, cls, "around"))


@dataclass
class OutlineParams(Params):
    path: str = param(min_length=1, max_length=1000)

    @classmethod
    def from_wire(cls, params) -> "OutlineParams":
        cls.check_lengths(params)
        return cls(path=_required(_str(params, "path"), "path"))


@dataclass
class ListParams(Params):
    path: str | None = param(None, description="Path prefix, e.g. 'hosts/'.", max_length=1000)
    type: str | list[str] | None = param(None, description="Only these doc types.", **TYPE_BOUNDS)
    offset: int = param(0, ge=0, description="Skip this many documents (paging: the answer says the "
                        "next offset while more remain).")
    limit: int = param(200, ge=1, le=5000, socket_only=True)

    @classmethod
    def from_wire(cls, params) -> "ListParams":
        cls.check_lengths(params)
        return cls(path=_str(params, "path"), type=_list(params, "type"), limit=_int(params, cls, "limit"),
                   offset=_int(params, cls, "offset", hi=MAX_LIST_OFFSET))


@dataclass
class HistoryParams(Params):
    entity: str = param(description="A host or service: its name, an alias or an IP, e.g. 'db1', "
                        "'pg-primary', '10.20.1.11'.", min_length=1, max_length=200)
    topic: str | None = param(None, description="Only the sections about this (keyword + semantic match), "
                              "still in date order, e.g. 'backups'.", max_length=1000)
    since: str | None = param(None, description=SINCE, max_length=40)
    until: str | None = param(None, description=UNTIL, max_length=40)
    limit: int = param(HISTORY_LIMIT, ge=1, le=MAX_LIMIT, description="How many sections, newest first (1-100).")
    verify_commits: bool = param(True, socket_only=True)

    @classmethod
    def from_wire(cls, params) -> "HistoryParams":
        cls.check_lengths(params)
        return cls(entity=_str(params, "entity") or "", topic=_str(params, "topic"),
                   since=_str(params, "since"), until=_str(params, "until"), limit=_int(params, cls, "limit"),
                   verify_commits=_bool(params, "verify_commits", True))


@dataclass
class LatestParams(Params):
    terms: str | list[str] = param(description="The exact strings a section must ALL contain: a list (each "
                                   "verbatim), or one string split on spaces with \"quoted phrases\" kept "
                                   "whole. SHAs, --flags, error text, numbers, identifiers.",
                                   max_length=MAX_TERMS * (MAX_TERM_CHARS + 3), max_items=MAX_TERMS,
                                   item_length=MAX_TERM_CHARS)
    since: str | None = param(None, description=SINCE, max_length=40)
    until: str | None = param(None, description=UNTIL, max_length=40)
    type: str | list[str] | None = param(None, description="Only these doc types (any of them), e.g. 'journal'.",
                                         **TYPE_BOUNDS)
    path: str | None = param(None, description=PATH_PREFIX, max_length=1000)
    limit: int = param(LATEST_LIMIT, ge=1, le=MAX_LIMIT, description="How many sections, newest first (1-100).")
    corpus: Literal["notes", "conversations", "commits", "code"] = param(
        "notes", description="'notes' (default), 'conversations': the exchanges of past Claude Code sessions "
        "holding the terms, 'commits': the commits whose messages hold them, or 'code': the source files' "
        "definitions holding them, newest first.")
    verify_commits: bool = param(True, socket_only=True)

    @classmethod
    def from_wire(cls, params) -> "LatestParams":
        cls.check_lengths(params)
        terms = params.get("terms")
        if terms is None:
            terms = []
        elif not (isinstance(terms, str) or (isinstance(terms, list) and all(isinstance(x, str) for x in terms))):
            raise UserError("terms must be a string or a list of strings", param="terms")
        return cls(terms=terms, since=_str(params, "since"), until=_str(params, "until"),
                   type=_list(params, "type"), path=_str(params, "path"), limit=_int(params, cls, "limit"),
                   verify_commits=_bool(params, "verify_commits", True))


@dataclass
class NeighborsParams(Params):
    path: str = param(description="Document path as search prints it, e.g. 'hosts/db1.md'.",
                      min_length=1, max_length=1000)
    limit: int = param(NEIGHBOR_LIMIT, ge=1, le=MAX_LIMIT, description="How many unlinked similar sections "
                       "(1-100).")

    @classmethod
    def from_wire(cls, params) -> "NeighborsParams":
        cls.check_lengths(params)
        return cls(path=_str(params, "path") or "", limit=_int(params, cls, "limit"))


@dataclass
class VerifyParams(Params):
    path: str | None = param(None, description="A document whose cited commit SHAs to check, e.g. "
                             "'journal/2030/2030-02-12.md'.", max_length=1000)
    heading: str | None = param(None, description="Only this section of `path` (breadcrumb or a unique "
                                "last part).", max_length=1000)
    text: str | None = param(None, description="Or: text to scan for SHAs instead of a document, e.g. "
                             "'fixed in app@4f2a9c1'.", max_length=200_000)

    @classmethod
    def from_wire(cls, params) -> "VerifyParams":
        cls.check_lengths(params)
        return cls(path=_str(params, "path"), heading=_str(params, "heading"), text=_str(params, "text"))


@dataclass
class StatusParams(Params):
    """index_status takes nothing."""
