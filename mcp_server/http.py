"""The MCP tools over HTTP: `remembrancer serve-http` (MCP streamable HTTP, the SDK's transport).

A teammate reaches the memory with a bearer token instead of database credentials or a local
index: `claude mcp add --transport http memory https://host/mcp --header "Authorization: Bearer …"`.
Tokens are this machine's (mcp_server/tokens.py); a token with scopes reads only those path
prefixes, enforced as a scoped reader's (the engine's scope walls; under a scoped database role,
within its grants too). Every tool is the stdio server's (mcp_server/server.py build_server),
answered by one backend — a team store's reader or this machine's daemon — so N agents cost the
database one reader's connections, not N. Each call is logged with its token's name (stderr and
the query log). TLS belongs to a reverse proxy in front (docs/team.md)."""

from __future__ import annotations

import logging
import time

from remembrancer.indexer.errors import UserError
from remembrancer.indexer.store import scope as scope_mod
from remembrancer.mcp_server.tokens import TokenBook

log = logging.getLogger(__name__)

DEFAULT_PORT = 8848
DEFAULT_PATH = "/mcp"


class TokenVerifier:
    """The SDK's bearer check (mcp.server.auth.provider.TokenVerifier) over this machine's tokens."""

    def __init__(self, book: TokenBook) -> None:
        self.book = book

    async def verify_token(self, token: str):
        from mcp.server.auth.provider import AccessToken

        record = self.book.check(token)
        if record is None:
            log.warning("refused a request: unknown or revoked token")
            return None
        return AccessToken(token=token, client_id=record.name, scopes=list(record.scopes))


def current_token():
    """The AccessToken of the request being answered (set by the SDK's auth middleware), or None:
    `client_id` is the token's name, `scopes` its path prefixes."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    return get_access_token()


def _client() -> str:
    """The query log's `client` of an HTTP call: the token's name."""
    token = current_token()
    return f"http:{token.client_id if token else '?'}"


class TokenScopedLink:
    """The served link as one request's token may use it: its scopes applied to every call
    (inside them, a narrower scope the call asks for), and the call logged under its name."""

    # The tool descriptions are the same for every token: they do not describe the corpus (its
    # counts, types and tags), which a scoped token's holder may not see whole.
    describes_corpus = False

    def __init__(self, link) -> None:
        self._link = link

    def __getattr__(self, name):
        return getattr(self._link, name)

    def call(self, method: str, **params) -> dict:
        token = current_token()
        if token is None:   # the middleware refuses these first; never answered unauthenticated
            raise UserError("no valid bearer token", code="unauthorized",
                            hint="send `Authorization: Bearer TOKEN` (remembrancer team token create NAME)")
        if token.scopes:
            params = {**params, "scope": list(scope_mod.effective_scope(tuple(token.scopes), params.get("scope")))}
        t0 = time.perf_counter()
        try:
            return self._link.call(method, **params)
        finally:
            log.info("token %s: %s (%.0f ms)", token.client_id, method, (time.perf_counter() - t0) * 1000)


def serve(link, *, host: str, port: int, path: str, public_url: str | None, settings=None,
          instructions: str = "") -> int:
    """Build the server over `link` with bearer auth and serve it until interrupted."""
    from mcp.server.auth.settings import AuthSettings

    from remembrancer.indexer.config import DOC_TYPES
    from remembrancer.indexer.search.querylog import QueryLog
    from remembrancer.mcp_server.server import build_server

    book = TokenBook()
    if not book.count():
        raise UserError("no tokens: every request to the HTTP endpoint needs one", code="no_tokens",
                        hint="remembrancer team token create NAME [--scope PREFIX …] (printed once)")
    base = public_url or f"http://{host}:{port}"
    auth = AuthSettings(issuer_url=base, resource_server_url=None, required_scopes=None)
    server = build_server(TokenScopedLink(link), instructions, settings.doc_types if settings else DOC_TYPES,
                          querylog=QueryLog.for_config(settings), token_verifier=TokenVerifier(book), auth=auth,
                          client=_client)
    log.info("remembrancer MCP over HTTP on http://%s:%d%s (%d tokens)", host, port, path, book.count())
    server.run("streamable-http", host=host, port=port, streamable_http_path=path)
    return 0


def run(root_args: list[str] | None, store: str | None, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
        path: str = DEFAULT_PATH, public_url: str | None = None, instructions: str = "",
        idle_exit_s: float = 600.0) -> int:
    """`remembrancer serve-http`: a team store's reader (`store`) or this machine's corpus (its
    daemon, started on demand), served to token holders over HTTP."""
    from remembrancer.indexer.config import load_config
    from remembrancer.mcp_server.link import Link
    from remembrancer.mcp_server.server import _ensure_stderr_logging, open_link

    if not path.startswith("/"):
        raise UserError(f"--path must start with /, got {path!r}", param="path")
    _ensure_stderr_logging()
    logging.getLogger(__name__).setLevel(logging.INFO)   # the per-token request log
    if store is not None:
        link = Link(None, idle_exit_s, store=store, root_args=root_args)
        open_link(link, fail_closed=True)
        settings = link.config
    else:
        settings = load_config(root_args)
        if not settings.roots:
            raise UserError("serve-http needs a corpus: --root DIR (or roots in the config), or --store URL",
                            param="root")
        link = Link(settings, idle_exit_s)
    return serve(link, host=host, port=port, path=path, public_url=public_url, settings=settings,
                 instructions=instructions)
