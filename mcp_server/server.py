"""The stdio MCP server over the memory index: search, read, list_documents, index_status, and the
memory-native tools history (time), latest (exact terms), neighbors (links) and verify (commits).

A client of the daemon (started on demand when none serves this corpus; a read-only engine
in-process when none can start). Tool descriptions are written from the index as it is on disk;
the daemon is reached (or started) at the first tool call only: the handshake and tools/list —
all a health check such as `claude mcp list` does — create, index and start nothing.
stdout is the JSON-RPC stream: logs go to stderr, and nothing else may write to fd 1.

No `from __future__ import annotations` here: the SDK reads the tool signatures at run time.
"""

import contextlib
import json
import logging
import os
import re
import sys
import threading
import time
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.message import SessionMessage
from mcp.types import CallToolResult, TextContent, ToolAnnotations, jsonrpc_message_adapter
from pydantic import ValidationError

from remembrancer.daemon.connect import wait_for_first_index
from remembrancer.indexer import indexes
from remembrancer.indexer import requests as rq
from remembrancer.indexer.answers import (DocumentList, HistoryAnswer, LatestAnswer, NeighborsAnswer, Outline, Page,
                                          SearchAnswer, StatusAnswer, VerifyAnswer)
from remembrancer.indexer.config import DOC_TYPES, load_config
from remembrancer.indexer.errors import UserError, echo, scrub_error, scrubbed
from remembrancer.indexer.search.querylog import LOGGED_TOOLS, QueryLog
from remembrancer.indexer.search.answer import ALTERNATES_HINT

from . import describe, render
from .choose import choose_corpus, paths_from_uris
from .link import Link

log = logging.getLogger("remembrancer.mcp")

SERVER_NAME = "remembrancer"
ROOTS_WAIT_S = 2.0            # how long the client may take to answer roots/list
LIST_LIMIT = 100              # list_documents rows per answer (~4000 tokens with the structured copy)

Result = Annotated[CallToolResult, dict[str, Any]]
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)

BASE_INSTRUCTIONS = (
    "remembrancer: the team's working memory, a folder of Markdown (journal, host/service records, "
    "runbooks, lessons, plans, docs). Use `search` first — it returns the best section in full, "
    "short runners-up in full too, and pointers to others; open a pointer with `read(path, heading)`. Every search answer starts with the "
    "index's freshness verdict; if it says STALE, recent edits may be missing. Journal entries are "
    "observations on a date (newest wins); host/service records are current state; plans are intentions.\n"
    "Which tool: relevance ('what do we know about X', 'how do I …') → search; time for one host or service "
    "('what have we done on db1', 'what changed since Tuesday') → history; exact strings — SHAs, flags, error "
    "text, numbers — newest first ('did the migration finish') → latest; links and backlinks → neighbors; "
    "'did that commit really land' → verify.")


# -- results ---------------------------------------------------------------------------------------

def ok(text: str, data: dict) -> CallToolResult:
    """A result in both forms, on purpose: clients hand the model one of them, not both — Claude
    Code (2.1) and VS Code give it the structured content alone when there is one, others the text
    blocks — so each copy must carry the answer whole (the best section's `content`, the freshness,
    `no_strong_match`). What looks like the answer twice (about 5 KB for one search of the sample
    notes: 1.9 KB of text, 3.5 KB structured) is one copy per kind of client, not twice the tokens."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def fail(err: dict) -> CallToolResult:
    """An error result; every error a tool sends passes `scrub_error` (indexer/errors.py)."""
    err = scrub_error(err)
    return CallToolResult(content=[TextContent(type="text", text=render.error_text(err))],
                          structured_content={"error": err}, is_error=True)


def guarded(tool: str, fn) -> CallToolResult:
    """Run one tool body: UserError → structured error; anything else → one line, details to stderr."""
    try:
        return fn()
    except UserError as e:
        return fail(e.to_dict())
    except Exception as e:
        log.exception("tool %s failed", tool)
        first = str(e).splitlines()[0] if str(e) else ""
        return fail({"code": "internal", "message": f"internal error in {tool}: {type(e).__name__}"
                     + (f": {first}" if first else "") + " (details in the server log on stderr)"})


def validation_error(tool: str, exc: ValidationError) -> dict:
    """Pydantic's complaint about the arguments as the same structured error the engine gives."""
    errs = exc.errors()
    first = errs[0] if errs else {}
    loc = [str(p) for p in first.get("loc", ())]
    param = loc[0] if loc else None
    msg = first.get("msg", "invalid argument")
    message = f"{param}: {msg}" if param else msg
    if param and "input" in first and not isinstance(first["input"], dict):
        message += f", got {echo(repr(first['input']))}"
    err: dict = {"code": "bad_input", "message": message}
    if param:
        err["param"] = param
    ctx = first.get("ctx") or {}
    if "expected" in ctx:
        err["valid_options"] = [x.strip(" '\"") for x in str(ctx["expected"]).replace(" or ", ",").split(",")
                                if x.strip(" '\"")]
    others = sorted({str(e["loc"][0]) for e in errs[1:] if e.get("loc")} - {param})
    hints = [ALTERNATES_HINT] if param == "alternates" else []   # the engine's own wording for them
    if param == "query" and first.get("type") == "string_too_long":
        hints.append(rq.QUERY_TOO_LONG_HINT)
    if others:
        hints.append("also invalid: " + ", ".join(others))
    if hints:
        err["hint"] = "; ".join(hints)
    return err


class RememberServer(MCPServer):
    """MCPServer whose argument errors are structured like the engine's (code, message, param).

    Without --root the corpus is chosen once the client is known (its roots answer roots/list):
    `corpus_chooser` runs before the first tools/list or tools/call, then tool descriptions are
    written from that corpus. `connector` runs before the first tools/call only."""

    corpus_chooser = None
    connector = None
    _choosing = None
    link = None              # set by build_server: its corpus's redaction policy covers argument errors

    # Served: tools only. The SDK answers these with empty lists and declares the capabilities;
    # a client would offer the user resources and prompts that never come, so they are not served.
    UNSERVED = ("resources/list", "resources/read", "resources/templates/list", "resources/subscribe",
                "resources/unsubscribe", "prompts/list", "prompts/get")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for method in self.UNSERVED:
            self._lowlevel_server._request_handlers.pop(method, None)

    async def _handle_list_tools(self, ctx, params):
        await self._choose_corpus(ctx)
        return await super()._handle_list_tools(ctx, params)

    async def _handle_call_tool(self, ctx, params):
        import anyio

        await self._choose_corpus(ctx)
        async with self._choosing:
            connector, self.connector = self.connector, None
            if connector is not None:
                await anyio.to_thread.run_sync(connector)
        return await super()._handle_call_tool(ctx, params)

    async def _choose_corpus(self, ctx) -> None:
        import anyio

        if self._choosing is None:
            self._choosing = anyio.Lock()
        if self.corpus_chooser is None:
            return
        async with self._choosing:
            chooser, self.corpus_chooser = self.corpus_chooser, None
            if chooser is not None:
                roots = await client_roots(ctx)
                await anyio.to_thread.run_sync(chooser, roots)

    async def run_stdio_async(self) -> None:
        """The SDK's stdio transport (as MCPServer.run_stdio_async), its messages read through
        `Reread` (a line its parser refuses for a lone surrogate is answered, not dropped)."""
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read_stream, write_stream):
            await self._lowlevel_server.run(Reread(read_stream), write_stream,
                                            self._lowlevel_server.create_initialization_options())

    async def list_tools(self):
        """The tools, each schema closed (`additionalProperties: false`): an argument the tool does not
        take is refused (call_tool), so the schema says so."""
        return [t.model_copy(update={"input_schema": {**t.input_schema, "additionalProperties": False}})
                for t in await super().list_tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        try:   # first: an error that quoted a lone surrogate could not be sent (no JSON encoder takes one)
            rq.check_text(arguments or {})
        except UserError as e:
            return fail(e.to_dict())
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            valid = sorted(tool.parameters.get("properties", {}))
            unknown = sorted(set(arguments or {}) - set(valid))
            if unknown:   # refused, never ignored: `scope:` for `path:` would widen the answer silently
                return fail(self.policy_redacted(
                    {"code": "bad_input", "param": unknown[0], "valid_options": valid,
                     "message": f"{name} takes no parameter {echo(unknown[0])}"
                                + (f" (nor {', '.join(echo(u) for u in unknown[1:])})" if unknown[1:] else ""),
                     "hint": f"{name}'s parameters: {', '.join(valid) or 'none'}"},
                    {"parameter": " ".join(unknown)}))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            if isinstance(e.__cause__, ValidationError):
                return fail(self.policy_redacted(validation_error(name, e.__cause__), arguments))
            # the SDK's own text ("Unknown tool: <name>") through the same chokepoint
            said = self.policy_redacted({"message": scrubbed(str(e))}, {"tool": name, **(arguments or {})})
            raise ToolError(said["message"]) from None

    def policy_redacted(self, err: dict, arguments: dict) -> dict:
        """An argument error without the values the corpus's secret-hash file lists (they need
        not look like secrets, so `scrub_error`'s patterns miss them); nothing quoted back if that
        policy is unusable."""
        from remembrancer.indexer.api import echoes_redacted
        from remembrancer.indexer.redact_policy import RedactorSource

        config = getattr(self.link, "config", None)
        if config is None:
            return err
        sources = self.__dict__.setdefault("_redaction", {})
        source = sources.setdefault(config.redact, RedactorSource(config.redact))
        try:
            return echoes_redacted(source.current(), err, arguments or {}, lowered=True)
        except UserError:
            return {**err, "message": err["message"].split(", got ", 1)[0]}


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


class Reread:
    """The stdio transport's stream of incoming messages, with the lines its JSON parser refused for
    a lone surrogate ("\\ud800": valid JSON, not text) read again by Python's. The SDK drops a line
    it cannot parse without a word, so a tools/call holding one was never answered and its client
    waited for ever. Read again, the call reaches call_tool, which refuses it naming the argument
    (requests.check_text); a lone surrogate anywhere else becomes U+FFFD, as the transport decodes
    invalid UTF-8. Every other item passes as it came."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):   # last_context (the sender's contextvars), close, aclose, clone
        return getattr(self._inner, name)

    def __aiter__(self):
        return self

    async def __anext__(self):
        return reread(await self._inner.__anext__())

    async def receive(self):
        return reread(await self._inner.receive())

    async def __aenter__(self):
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self._inner.__aexit__(*exc)


def reread(item):
    """`item`, or the message its refused line holds when a lone surrogate was why (see Reread)."""
    if not isinstance(item, ValidationError):
        return item
    errs = item.errors()
    line = errs[0].get("input") if len(errs) == 1 and errs[0].get("type") == "json_invalid" else None
    if not isinstance(line, str):
        return item
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):
        return item
    if not _holds_surrogate(msg):
        return item   # refused for another reason: the SDK's own handling
    try:
        params = msg.get("params") if isinstance(msg, dict) else None
        if msg.get("method") == "tools/call" and isinstance(params, dict) and "arguments" in params:
            msg = {**_replaced(msg), "params": {**_replaced(params), "arguments": params["arguments"]}}
        else:
            msg = _replaced(msg)
        return SessionMessage(jsonrpc_message_adapter.validate_python(msg, by_name=False))
    except Exception:   # not a message even so: the SDK's handling, as for any unparsable line
        return item


def _holds_surrogate(v) -> bool:
    stack = [v]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if _SURROGATE_RE.search(v):
                return True
        elif isinstance(v, dict):
            stack += [*v.keys(), *v.values()]
        elif isinstance(v, list):
            stack += v
    return False


def _replaced(v):
    """`v` with each lone surrogate of its strings (keys too, at any depth) replaced by U+FFFD."""
    if isinstance(v, str):
        return _SURROGATE_RE.sub("\ufffd", v)
    if isinstance(v, dict):
        return {_replaced(k): _replaced(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_replaced(x) for x in v]
    return v


async def client_roots(ctx) -> list[str]:
    """The folders the MCP client says it works in (roots/list), or [] if it has none or says nothing."""
    import warnings

    import anyio

    try:
        session = ctx.session
        caps = getattr(session, "client_capabilities", None)
        if caps is None and session.client_params is not None:
            caps = session.client_params.capabilities
        if caps is None or caps.roots is None:
            return []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots/list is deprecated in newer protocol versions
            with anyio.fail_after(ROOTS_WAIT_S):
                result = await session.list_roots()
        return paths_from_uris(r.uri for r in result.roots)
    except Exception as e:  # a client that cannot answer roots/list: the next way to choose applies
        log.info("the MCP client's roots are unknown (%s: %s)", type(e).__name__, e)
        return []


def tool_descriptions(facts, doc_types, conversations=(), repositories=(), code=()) -> dict[str, str]:
    """Every tool's description, written from the live index (and the session's conversation
    folders, the repositories whose commits it searches, its source folders)."""
    talk = f"\n{describe.conversations_note(conversations)}" if conversations else ""
    talk += f"\n{describe.commits_note(repositories)}" if repositories else ""
    talk += f"\n{describe.code_note(code)}" if code else ""
    return {"search": describe.index_map(facts) + talk, "read": describe.read_description(facts),
            "list_documents": describe.list_description(facts, doc_types),
            "index_status": describe.status_description(), "history": describe.history_description(facts),
            "latest": describe.latest_description(facts), "neighbors": describe.neighbors_description(facts),
            "verify": describe.verify_description(facts)}


def commit_repositories(link: Link, config) -> list:
    """The repositories whose commits this session searches (corpus "commits"): none over a team
    store (it holds the notes only), in a scoped session (refused them: indexer/search/across.py),
    or when the description says nothing of the corpus."""
    if config is None or not config.roots or not getattr(link, "describes_corpus", True) \
            or getattr(link, "store", None) is not None or getattr(link, "scope", None):
        return []
    from remembrancer.indexer.ingest.commit_log import commits_config

    found = commits_config(config)
    return [r.path for r in found.roots] if found is not None else []


def index_facts(link: Link) -> "describe.IndexFacts":
    if not getattr(link, "describes_corpus", True):   # one description for callers of several scopes
        return describe.IndexFacts()
    config = getattr(link, "config", None)
    if config is not None and not config.roots and config.conversations:   # conversations alone
        return peek(config.conversation_config())
    if link.backend is not None:
        return describe.gather(link.call)
    if link.config is not None and link.config_error is None and not link.start_problem:
        return peek(link.config)
    if (getattr(link, "config", 1) is None and getattr(link, "config_error", None) is None
            and not getattr(link, "start_problem", None)):
        return describe.IndexFacts()  # the corpus is chosen when the client has said who it is
    return describe.IndexFacts(warning=link.start_problem or "no index available")


def peek(config) -> "describe.IndexFacts":
    """The facts of the index as it is on disk, read in place: no daemon is asked or started and
    nothing is created (a daemon asked about a corpus opens and indexes it)."""
    from remembrancer.daemon.connect import LocalBackend

    where = ", ".join(str(r.path) for r in config.roots)
    if not indexes.built(config):
        return describe.IndexFacts(warning=f"{where} is not indexed yet: the first tool call indexes it")
    try:
        backend = LocalBackend(config, readonly=True)
    except Exception as e:  # a broken index must not stop the server from starting
        return describe.IndexFacts(warning=f"the index cannot be read: {e}")

    def call(method: str, **params) -> dict:
        out = backend.call(method, **params)
        # not judged here (this read-only look is always "stale"): the first call's answer says it
        return {**out, "freshness": {}} if method == "status" else out
    try:
        return describe.gather(call)
    finally:
        backend.close()


# -- the server ------------------------------------------------------------------------------------

def build_server(link: Link, instructions: str = "", doc_types: tuple[str, ...] = DOC_TYPES,
                 querylog: QueryLog | None = None, *, token_verifier=None, auth=None,
                 client=lambda: "mcp") -> MCPServer:
    """The MCP server over `link`, with descriptions from the index as it is now. With a
    `querylog`, every question (search, history, latest, neighbors, verify) is logged locally,
    under `client()` (over HTTP: the token's name). `token_verifier` and `auth`: bearer tokens
    (mcp_server/http.py)."""
    facts = index_facts(link)
    config = getattr(link, "config", None)   # a stand-in link (tests) may have none
    desc = tool_descriptions(facts, doc_types, config.conversations if config is not None else (),
                             commit_repositories(link, config), config.code if config is not None else ())
    if facts.warning:
        log.warning("remembrancer MCP: %s", facts.warning)
    server_instructions = BASE_INSTRUCTIONS
    if facts.warning:
        server_instructions += f"\nWARNING: {facts.warning}."
    if instructions:
        server_instructions += "\n\n" + instructions.strip()
    server = RememberServer(SERVER_NAME, description="Hybrid search over a Markdown working memory.",
                            instructions=server_instructions, version=_version(), token_verifier=token_verifier,
                            auth=auth)
    server.link = link
    log_checked = threading.Event()

    def check_log() -> None:
        """A query log that cannot be written is said once, at the first question it would hold."""
        if log_checked.is_set():
            return
        log_checked.set()
        from remembrancer.indexer.query_log_check import log_unwritable

        problem = log_unwritable(querylog.path)
        if problem:
            log.warning("remembrancer MCP: %s", problem)

    def call(tool: str, method: str, **params) -> dict:
        """link.call, timed and written to the query log (answers and errors alike)."""
        if querylog is None or tool not in LOGGED_TOOLS:
            return link.call(method, **params)
        check_log()
        t0 = time.perf_counter()
        try:
            out = link.call(method, **params)
        except UserError as e:
            querylog.record(tool, params, None, (time.perf_counter() - t0) * 1000, error=e.to_dict(), client=client())
            raise
        except Exception as e:
            querylog.record(tool, params, None, (time.perf_counter() - t0) * 1000,
                            error={"code": "internal", "message": type(e).__name__}, client=client())
            raise
        querylog.record(tool, params, out, (time.perf_counter() - t0) * 1000, client=client())
        return out

    def answer(tool: str, render_text, **params) -> Result:
        """One read-only tool call: the index's dict as structured content, its rendering as text."""
        def body():
            out = call(tool, tool, **params)
            return ok(render_text(out), out)
        return guarded(tool, body)

    def search(query, limit, type, path, tags, since, until, exact, alternates, corpus) -> Result:
        extra = {"alternates": alternates} if alternates else {}
        if corpus != "notes":
            extra["corpus"] = corpus
        return answer("search", lambda out: render.search_text(SearchAnswer.parse(out)), query=query, limit=limit,
                      type=type, path=path, tags=tags, since=since, until=until, exact=exact, **extra)

    def history(entity, topic, since, until, limit) -> Result:
        return answer("history", lambda out: render.history_text(HistoryAnswer.parse(out)), entity=entity, topic=topic, since=since, until=until,
                      limit=limit)

    def latest(terms, since, until, type, path, limit, corpus) -> Result:
        extra = {"corpus": corpus} if corpus != "notes" else {}
        return answer("latest", lambda out: render.latest_text(LatestAnswer.parse(out)), terms=terms, since=since, until=until, type=type, path=path,
                      limit=limit, **extra)

    def neighbors(path, limit) -> Result:
        return answer("neighbors", lambda out: render.neighbors_text(NeighborsAnswer.parse(out)), path=path, limit=limit)

    def verify(path, heading, text) -> Result:
        return answer("verify", lambda out: render.verify_text(VerifyAnswer.parse(out)), path=path, heading=heading, text=text)

    def read(path, heading, lines, outline, offset, max_chars, uuid, around) -> Result:
        def body():
            if outline:
                out = link.call("outline", path=path)
                return ok(render.outline_text(Outline.parse(out)), out)
            talk = {**({"uuid": uuid} if uuid else {}), **({"around": around} if around else {})}
            out = link.call("read", path=path, heading=heading, lines=lines, offset=offset, max_chars=max_chars,
                            **talk)
            return ok(render.read_text(Page.parse(out)), out)
        return guarded("read", body)

    def list_documents(path, type, offset) -> Result:
        def body():
            out = link.call("list", path=path, type=type, limit=LIST_LIMIT, offset=offset)
            return ok(render.list_text(DocumentList.parse(out)), out)
        return guarded("list_documents", body)

    def index_status() -> Result:
        def body():
            st = link.call("status")
            return ok(render.status_text(StatusAnswer.parse(st)), st)
        return guarded("index_status", body)

    # each tool's parameters — names, types, defaults, bounds, descriptions — are its request's (indexer/requests.py)
    for fn, params in ((search, rq.SearchParams), (read, rq.ReadParams), (list_documents, rq.ListParams),
                       (index_status, rq.StatusParams), (history, rq.HistoryParams), (latest, rq.LatestParams),
                       (neighbors, rq.NeighborsParams), (verify, rq.VerifyParams)):
        fn.__signature__ = params.tool_signature(Result)

    server.add_tool(search, description=desc["search"], annotations=READ_ONLY,
                    title="Search the memory")
    server.add_tool(read, description=desc["read"], annotations=READ_ONLY,
                    title="Read a section, outline or page")
    server.add_tool(list_documents, description=desc["list_documents"],
                    annotations=READ_ONLY, title="List documents")
    server.add_tool(index_status, description=desc["index_status"], annotations=READ_ONLY,
                    title="Index status and freshness")
    server.add_tool(history, description=desc["history"], annotations=READ_ONLY,
                    title="History of a host or service, newest first")
    server.add_tool(latest, description=desc["latest"], annotations=READ_ONLY,
                    title="Sections with exact terms, newest first")
    server.add_tool(neighbors, description=desc["neighbors"], annotations=READ_ONLY,
                    title="Links, backlinks and unlinked neighbours")
    server.add_tool(verify, description=desc["verify"], annotations=READ_ONLY,
                    title="Check cited commit SHAs in git")
    return server


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("remembrancer")
    except Exception:
        return ""


@contextlib.contextmanager
def stdout_to_stderr():
    """While setting up, fd 1 (the future JSON-RPC stream) points at stderr, for C libraries and
    child processes too; sys.stdout is swapped for the same reason. Restored on exit — the SDK's
    stdio transport then takes fd 1 over and diverts it again while it serves."""
    sys.stdout.flush()
    saved_fd = os.dup(1)
    saved_stdout = sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stderr.flush()
        with contextlib.suppress(Exception):
            saved_stdout.flush()
        os.dup2(saved_fd, 1)
        os.close(saved_fd)
        sys.stdout = saved_stdout


def _ensure_stderr_logging() -> None:
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                            format="%(levelname)s %(name)s: %(message)s")
    for h in root.handlers:
        if isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) is sys.stdout:
            h.setStream(sys.stderr)


def run(root_args: list[str] | None, idle_exit_s: float = 600.0, instructions: str = "",
        scopes: list[str] | None = None, store: str | None = None,
        conversation_args: list[str] | None = None, code_args: list[str] | None = None) -> int:
    """`remembrancer mcp`: choose the corpus (mcp_server/choose.py) or read a team store
    (indexer/team.py), connect (daemon, on-demand daemon, or read-only engine), serve stdio."""
    _ensure_stderr_logging()
    with stdout_to_stderr():
        from remembrancer.indexer.store.scope import check_exists, normalize

        config, config_error = None, None
        try:
            # with --root: the corpus; else the user's settings. --conversations: the conversation folders
            settings = load_config(root_args, conversation_args=conversation_args, code_args=code_args)
        except UserError as e:   # still serve: every tool answers with this error, the descriptions say it
            settings, config_error = None, e
        if root_args:
            config = settings
        try:
            scope = normalize(scopes)
            if scope and config is not None and config.roots:
                check_exists(config.roots, scope)   # a typo must not serve an empty corpus
        except UserError as e:
            print(f"remembrancer mcp: {e}", file=sys.stderr)
            return 2
        link = Link(config, idle_exit_s, config_error=None if store is not None else config_error, scope=scope, store=store,
                    root_args=root_args)   # a store reads its own config (indexer/team.py reader_config)
        if store is not None:   # a reader of the team store (an empty URL too): no daemon, no local index; it fails closed
            open_link(link, fail_closed=True)
            settings = link.config or settings
        server = build_server(link, instructions, settings.doc_types if settings else DOC_TYPES,
                              querylog=QueryLog.for_config(settings))
        if not root_args and store is None and config_error is None:
            server.corpus_chooser = lambda roots: choose_later(server, link, roots, settings)
        if store is None:
            server.connector = lambda: connect_at_first_call(link)
    try:
        server.run("stdio")
    finally:
        with stdout_to_stderr():
            link.close()
    return 0


def open_link(link: Link, fail_closed: bool = False, wait: bool = True) -> None:
    """Connect now; a failure is kept in `link.start_problem` (the descriptions and tools say it).
    `fail_closed`: a setup error is every call's answer (a team store never falls back to a local index)."""
    try:
        link.open()
        if wait:
            wait_for_first_index(link)
    except UserError as e:
        link.start_problem = str(e)   # build_server logs it, and says it in the descriptions
        if fail_closed and e.code != "store_unreachable":   # a server down now may be up at the next call
            link.config_error = e
    except Exception as e:  # the server still starts; each call retries and reports
        link.start_problem = f"{type(e).__name__}: {e}"
        log.exception("remembrancer MCP: connecting to the index failed")


def connect_at_first_call(link: Link) -> None:
    """The first tool call reaches the daemon (started on demand) for the chosen corpus."""
    if link.config is not None and link.backend is None:
        open_link(link, wait=bool(link.config.roots))   # conversations alone: the daemon waits for them


def choose_later(server: MCPServer, link: Link, client_roots: list[str], settings=None) -> None:
    """The corpus by choose.py's rule, then tool descriptions written from its index on disk
    (opened at the first tool call). With no notes corpus to serve but conversation folders
    (`settings`), the session serves the conversations alone."""
    from remembrancer.indexer.store.scope import check_exists

    conversations = settings.conversations if settings is not None else []
    try:
        config, source = choose_corpus(None, client_roots)
        if link.scope:
            check_exists(config.roots, link.scope)   # as with --root: a typo must not serve an empty corpus
    except UserError as e:   # every tool answers with it; the descriptions say it
        config, link.config_error, link.start_problem = None, e, str(e)
        if not conversations and not link.scope and settings is not None and settings.finds_conversations:
            link.awaiting_conversations = settings   # served alone once the project's folder appears
        if conversations and not link.scope:
            log.info("no notes corpus (%s); serving the conversations %s alone", e,
                     ", ".join(str(r.path) for r in conversations))
            config, link.config_error, link.start_problem = settings, None, None
            link.config = config
    else:
        log.info("serving the corpus %s (chosen from %s)", ", ".join(str(r.path) for r in config.roots), source)
        if conversations:   # --conversations, the config's, or the project's Claude Code folder
            config.conversations = list(conversations)
        if settings is not None and settings.code:   # --code, or the config's [code] roots
            config.code = list(settings.code)
        link.config = config
    facts = index_facts(link)
    if facts.warning:
        log.warning("remembrancer MCP: %s", facts.warning)
    for name, text in tool_descriptions(facts, config.doc_types if config else DOC_TYPES,
                                        config.conversations if config else (),
                                        commit_repositories(link, config), config.code if config else ()).items():
        tool = server._tool_manager.get_tool(name)
        if tool is not None:
            tool.description = text
