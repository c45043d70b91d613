"""Errors a user (or an agent) is meant to read: what went wrong, and what to do about it."""

from __future__ import annotations


class UserError(Exception):
    """A problem with the input or the setup, reported as one line plus a fix — never a traceback.

    `param` names the offending parameter and `options` lists valid values, so agents get a
    structured error they can act on.
    """

    def __init__(self, message: str, *, hint: str = "", param: str | None = None,
                 options: list[str] | None = None, code: str = "bad_input"):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.param = param
        self.options = options
        self.code = code

    def to_dict(self) -> dict:
        d: dict = {"code": self.code, "message": self.message}
        if self.param:
            d["param"] = self.param
        if self.options is not None:
            d["valid_options"] = self.options
        if self.hint:
            d["hint"] = self.hint
        return d

    def __str__(self) -> str:
        parts = [self.message]
        if self.options:
            parts.append("valid: " + ", ".join(self.options))
        if self.hint:
            parts.append(self.hint)
        return " — ".join(parts)
