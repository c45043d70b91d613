"""The daemon's socket protocol: newline-delimited JSON, one request → one response.

    → {"id": 7, "method": "search", "params": {"query": "restore db", "limit": 5}}
    ← {"id": 7, "ok": true, "result": {...}}
    ← {"id": 7, "ok": false, "error": {"code": "bad_input", "message": "...", "param": "limit"}}

Methods (params → result):
    search   query, limit, type, path, tags, since, until, exact, explain → search contract + "index"
    read     path, heading | lines [a, b], offset, max_chars               → section / page
    outline  path                                                         → sections with sizes
    list     path (prefix), type                                          → documents
    history  entity, topic, since, until, limit                           → an entity's sections, newest first
    latest   terms, since, until, type, path, limit                       → sections with ALL terms, newest first
    neighbors path, limit                                                 → links out/in, unresolved, similar
    verify   path [+ heading] | text                                      → cited commit SHAs checked in git
    status   —                                                            → daemon + index facts
    notify   root (path), event ("post-commit", "save", …)                → {"queued": n}
    reindex  full (bool)                                                  → {"queued": n}
             wait (bool): a full pass that starts now, waited for              → {"report": {...}, "pid": n}
    stop     —                                                            → {"stopping": true}
    forget   index (an index folder's name)                               → {"closed": n, "removed": bool}

Every method but notify, stop and forget may name its corpus: `"roots": [folders]` (opened on first use),
or `"within": folder` (the open corpus holding that folder; never opens one). Without either,
the daemon's default corpus (the roots it was started with) answers, as before corpora existed;
`status` without either lists the daemon and its corpora without opening any.

A request line is at most MAX_REQUEST_BYTES; a connection idle for IDLE_TIMEOUT_S is closed.
"""

from __future__ import annotations

import json

MAX_REQUEST_BYTES = 1_000_000
IDLE_TIMEOUT_S = 30.0
METHODS = ("search", "read", "outline", "list", "history", "latest", "neighbors", "verify",
           "status", "notify", "reindex", "stop", "forget")


class ProtocolError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def encode(obj: dict) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def decode_request(line: bytes) -> tuple[object, str, dict]:
    """(id, method, params) from one request line, or ProtocolError with a clear message."""
    if len(line) > MAX_REQUEST_BYTES:
        raise ProtocolError("too_large", f"request over {MAX_REQUEST_BYTES} bytes")
    try:
        req = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError("malformed", f"request is not a JSON object on one line: {e}") from None
    if not isinstance(req, dict):
        raise ProtocolError("malformed", "request must be a JSON object")
    method = req.get("method")
    if method not in METHODS:
        raise ProtocolError("unknown_method", f"unknown method {method!r}; valid: {', '.join(METHODS)}")
    params = req.get("params") or {}
    if not isinstance(params, dict):
        raise ProtocolError("malformed", "params must be a JSON object")
    return req.get("id"), method, params
