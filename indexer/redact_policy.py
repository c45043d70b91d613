"""The redaction policy a user configures: `[redact]` in the config, the secret-hash file, and
the source the engine asks for the Redactor in force — failing closed while the policy cannot be
applied (indexer/redact.py holds the redaction itself).

Why a module of its own: these are the parts that refuse bad input with a UserError, while the
errors module redacts every message it sends with the default Redactor. Kept apart, neither
imports the other's importer."""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from remembrancer.indexer.errors import UserError
from remembrancer.indexer.redact import FAMILY_NAMES, Redactor, SecretHashes

ENV_SECRET_HASHES = "REMEMBRANCER_SECRET_HASHES"
NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,40}\Z")
HEX64_RE = re.compile(r"[0-9a-f]{64}\Z")


class RedactionError(UserError):
    """The redaction policy cannot be applied: indexing and serving stop until it is fixed."""

    def __init__(self, message: str, *, hint: str = ""):
        super().__init__(message, hint=hint or "fix or re-create the secret-hash file "
                         "(`remembrancer secrets hash --out FILE`), or remove the setting",
                         param="secret_hashes", code="redaction_unavailable")



# -- the secret-hash file ----------------------------------------------------------------------

def parse_hash_file(text: str, path: Path) -> SecretHashes:
    """`salt <hex>` then `<sha256>\\t<name>` lines; `#` comments and blank lines are allowed.

    Errors name the line number, never its content."""
    salt: bytes | None = None
    digests: dict[str, str] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("salt"):
            parts = line.split()
            if salt is not None:
                raise RedactionError(f"secret-hash file {path}: line {no}: a second salt line")
            if len(parts) != 2:
                raise RedactionError(f"secret-hash file {path}: line {no}: expected `salt <hex>`")
            try:
                salt = bytes.fromhex(parts[1])
            except ValueError:
                raise RedactionError(f"secret-hash file {path}: line {no}: the salt is not hex") from None
            if len(salt) < 8:
                raise RedactionError(f"secret-hash file {path}: line {no}: the salt is shorter than 8 bytes")
            continue
        if salt is None:
            raise RedactionError(f"secret-hash file {path}: line {no}: the first line must be `salt <hex>`")
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) != 2 or not HEX64_RE.match(parts[0].lower()) or not NAME_RE.match(parts[1]):
            raise RedactionError(f"secret-hash file {path}: line {no}: expected `<sha256 hex>\\t<name>` "
                                 "(name: letters, digits, _ . -, up to 40)")
        digests[parts[0].lower()] = parts[1]
    if salt is None or not digests:
        raise RedactionError(f"secret-hash file {path} is empty: it lists no secret hashes")
    return SecretHashes(path, salt, digests, hashlib.sha256(text.encode("utf-8")).hexdigest())


def load_hash_file(path: Path) -> SecretHashes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RedactionError(f"secret-hash file {path} is missing") from None
    except OSError as e:
        raise RedactionError(f"secret-hash file {path} cannot be read ({e.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RedactionError(f"secret-hash file {path} is not UTF-8 text") from None
    return parse_hash_file(text, path)


@dataclass(frozen=True)
class RedactionPolicy:
    """`[redact]` in the config: `disable = [...]`, `secret_hashes = "path"`, `deny = ["private/**"]`."""

    disable: tuple[str, ...] = ()
    secret_hashes: str | None = None   # as configured (relative paths: to the config file's folder)
    deny: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, raw: object, source: Path | None = None) -> RedactionPolicy:
        where = f"invalid config {source}" if source else "invalid config"
        if not isinstance(raw, dict):
            raise UserError(f"{where}: [redact] must be a table")
        unknown_keys = sorted(set(raw) - {"disable", "secret_hashes", "deny"})
        if unknown_keys:
            raise UserError(f"{where}: unknown [redact] setting {unknown_keys[0]!r}", param="redact",
                            options=["disable", "secret_hashes", "deny"])
        disable = raw.get("disable", [])
        if not isinstance(disable, list) or not all(isinstance(x, str) for x in disable):
            raise UserError(f"{where}: [redact] disable must be a list of family names", param="redact.disable",
                            options=list(FAMILY_NAMES))
        for name in disable:
            if name not in FAMILY_NAMES:
                raise UserError(f"{where}: [redact] disable names unknown family {name!r}",
                                param="redact.disable", options=list(FAMILY_NAMES))
        deny = raw.get("deny", [])
        if not isinstance(deny, list) or not all(isinstance(x, str) for x in deny):
            raise UserError(f"{where}: [redact] deny must be a list of path globs", param="redact.deny")
        hashes = raw.get("secret_hashes")
        if hashes is not None:
            if not isinstance(hashes, str) or not hashes.strip():
                raise UserError(f"{where}: [redact] secret_hashes must be a file path", param="redact.secret_hashes")
            p = Path(hashes).expanduser()
            if not p.is_absolute() and source is not None:
                p = source.parent / p
            hashes = str(p)
        return cls(tuple(disable), hashes, tuple(deny))

    def hash_file(self) -> Path | None:
        """REMEMBRANCER_SECRET_HASHES wins over the config; None when neither names a file."""
        env = os.environ.get(ENV_SECRET_HASHES, "").strip()
        if env:
            return Path(env).expanduser()
        return Path(self.secret_hashes) if self.secret_hashes else None

    def build(self) -> Redactor:
        """The Redactor this policy describes; RedactionError when a configured hash file is unusable."""
        path = self.hash_file()
        hashes = load_hash_file(path) if path is not None else None
        return Redactor(tuple(n for n in FAMILY_NAMES if n not in self.disable), hashes, self.deny)


@dataclass
class RedactorSource:
    """The engine's view of the policy: built once, rebuilt only when the hash file changes on disk.

    `current()` raises RedactionError while the hash file is unusable, so every caller that
    indexes or serves fails closed; `status()` says why without raising."""

    policy: RedactionPolicy = field(default_factory=RedactionPolicy)
    _key: tuple | None = None
    _redactor: Redactor | None = None
    _error: RedactionError | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _stat_key(self) -> tuple:
        path = self.policy.hash_file()
        if path is None:
            return (None,)
        try:
            st = path.stat()
            return (str(path), st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError as e:
            return (str(path), "error", e.errno)

    def current(self) -> Redactor:
        key = self._stat_key()
        if key != self._key:
            with self._lock:
                if key != self._key:
                    try:
                        self._redactor, self._error = self.policy.build(), None
                    except RedactionError as e:
                        self._redactor, self._error = None, e
                    self._key = key
        if self._error is not None:
            raise self._error
        return self._redactor

    def problem(self) -> str | None:
        try:
            self.current()
        except RedactionError as e:
            return str(e.message)
        return None

    def status(self) -> dict:
        try:
            return self.current().describe()
        except RedactionError as e:
            return {"ok": False, "error": e.message,
                    "effect": "indexing and serving are stopped until the secret-hash file is fixed"}
