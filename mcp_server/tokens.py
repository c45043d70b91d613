"""Bearer tokens for the MCP endpoint over HTTP (`remembrancer serve-http`).

`remembrancer team token create NAME [--scope PREFIX…]` prints a token once; this machine keeps only
its SHA-256, with the token's name, its scopes (path prefixes it may read; none: everything) and
when it was made, in `<data dir>/http-tokens.json` (0600). `revoke` removes it: the next request
carrying it is refused. The endpoint reads the file again whenever it changes, so a revocation
needs no restart. A token has 256 bits of randomness, so a plain hash is enough (no salt or
stretching: there is nothing to guess)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from remembrancer.indexer.config import data_dir, ensure_data_dir
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.store import scope as scope_mod

TOKENS_FILE = "http-tokens.json"
PREFIX = "rmb_"   # makes a leaked token recognisable (and redactable) as remembrancer's
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


@dataclass(frozen=True)
class TokenRecord:
    name: str
    sha256: str
    scopes: list[str] = field(default_factory=list)
    created_at: float = 0.0

    def shown(self) -> dict:
        """What `token list` prints: never the hash."""
        return {"name": self.name, "scopes": self.scopes, "created_at": self.created_at}


def tokens_path() -> Path:
    return data_dir() / TOKENS_FILE


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def load() -> list[TokenRecord]:
    path = tokens_path()
    if not path.exists():
        return []
    try:
        rows = json.loads(path.read_text(encoding="utf-8")).get("tokens", [])
        return [TokenRecord(str(r["name"]), str(r["sha256"]), list(r.get("scopes") or []), float(r.get("created_at", 0)))
                for r in rows]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise UserError(f"cannot read the token file {path}: {e}", code="tokens_unreadable",
                        hint="fix or remove it, then create the tokens again") from None


def _save(records: list[TokenRecord]) -> None:
    ensure_data_dir()
    path = tokens_path()
    tmp = path.with_suffix(".tmp")
    try:   # the whole file first, then in its place: a full or read-only disk leaves the old file as it was
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"tokens": [asdict(r) for r in records]}, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        if tmp.is_file():
            tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write the token file {path}: {e.strerror or e}", code="tokens_unwritable",
                        hint="free space on its disk or make it writable (or set REMEMBRANCER_DATA_DIR); "
                             "nothing was changed: the tokens are as they were") from None


def create(name: str, scopes: list[str]) -> tuple[str, TokenRecord]:
    """A new token (returned once, never stored) and its record."""
    if not NAME_RE.fullmatch(name or ""):
        raise UserError(f"not a usable token name: {name!r}", param="name",
                        hint="letters, digits and . _ @ - (up to 64), e.g. alice-laptop")
    records = load()
    if any(r.name == name for r in records):
        raise UserError(f"a token named {name} exists", param="name", hint="revoke it first, or pick another name")
    token = PREFIX + secrets.token_urlsafe(32)
    record = TokenRecord(name, _digest(token), list(scope_mod.normalize(scopes)), time.time())
    _save(records + [record])
    return token, record


def revoke(name: str) -> TokenRecord:
    records = load()
    gone = [r for r in records if r.name == name]
    if not gone:
        raise UserError(f"no token named {name}", param="name", options=[r.name for r in records] or None)
    _save([r for r in records if r.name != name])
    return gone[0]


class TokenBook:
    """The tokens as the endpoint checks them: the file read again when it changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stamp: tuple | None = None
        self._by_digest: dict[str, TokenRecord] = {}

    def _current(self) -> dict[str, TokenRecord]:
        path = tokens_path()
        try:
            st = path.stat()
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = None
        with self._lock:
            if stamp != self._stamp:
                self._by_digest = {r.sha256: r for r in load()} if stamp else {}
                self._stamp = stamp
            return self._by_digest

    def check(self, token: str) -> TokenRecord | None:
        """The record of a valid token, else None. Looked up by its hash: a lookup's timing can only
        tell about hashes, from which no token follows."""
        return self._current().get(_digest(token))

    def count(self) -> int:
        return len(self._current())
