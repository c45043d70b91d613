"""Errors a user (or an agent) is meant to read: what went wrong, and what to do about it."""

from __future__ import annotations

import re

ECHO_CHARS = 80          # a value quoted back in a message (terms.elide's default width)
_TOKEN_END = re.compile(r"\S*\Z")


def cut_whole(text: str, width: int) -> str:
    """`text` shortened to `width` characters at a token boundary, never inside a token: half a
    secret no longer looks like one to redaction, so a cut keeps whole tokens or none."""
    if len(text) <= width:
        return text
    head = text[:width - 1]
    if not text[width - 1].isspace():   # the cut falls inside a token: drop all of it
        head = _TOKEN_END.sub("", head)
    return head.rstrip() + "…"


def echo(value: object, width: int = ECHO_CHARS) -> str:
    """The one way a value someone typed goes back to them (an error, a message, a log line):
    secrets redacted as whole tokens first (indexer/redact.py's patterns), then cut whole-token-first."""
    from remembrancer.indexer.redact import DEFAULT_REDACTOR   # lazily: its patterns compile on first use

    return cut_whole(DEFAULT_REDACTOR.redact_text(str(value)), width)


def scrubbed(text: str) -> str:
    """An error's own text as it leaves: any secret-shaped token a message quotes, redacted."""
    from remembrancer.indexer.redact import DEFAULT_REDACTOR

    return DEFAULT_REDACTOR.redact_text(text) if text else text


def scrub_error(err: dict) -> dict:
    """A structured error (`UserError.to_dict`, the MCP server's argument errors) with its
    message, hint and options scrubbed: the chokepoint every echoed error passes."""
    out = dict(err)
    for key in ("message", "hint"):
        if isinstance(out.get(key), str):
            out[key] = scrubbed(out[key])
    if isinstance(out.get("valid_options"), list):
        out["valid_options"] = [scrubbed(o) if isinstance(o, str) else o for o in out["valid_options"]]
    return out


class UserError(Exception):
    """A problem with the input or the setup, reported as one line plus a fix — never a traceback.

    `param` names the offending parameter and `options` lists valid values, so agents get a
    structured error they can act on. `index`: the freshness verdict (its JSON) of the index that
    found no such document — a "not found" from an index that is behind is no proof of absence.
    """

    def __init__(self, message: str, *, hint: str = "", param: str | None = None,
                 options: list[str] | None = None, code: str = "bad_input", index: dict | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.param = param
        self.options = options
        self.code = code
        self.index = index

    def to_dict(self) -> dict:
        """The error as it is sent: through `scrub_error` (a message may quote a typed secret)."""
        d: dict = {"code": self.code, "message": self.message}
        if self.param:
            d["param"] = self.param
        if self.options is not None:
            d["valid_options"] = self.options
        if self.hint:
            d["hint"] = self.hint
        if self.index is not None:
            d["index"] = self.index
        return scrub_error(d)

    def __str__(self) -> str:
        parts = [self.message]
        if self.options:
            # an empty option is a real one (a document's preamble is the heading ""): shown, not lost
            parts.append("valid: " + ", ".join(o if o else '""' for o in self.options))
        if self.hint:
            parts.append(self.hint)
        return scrubbed(" — ".join(parts))
