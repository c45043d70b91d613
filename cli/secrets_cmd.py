"""`remembrancer secrets hash` — make the secret-hash file where the secrets live.

Values are read from stdin (one per line, or `name<TAB>value`), never from argv, so they do not
end up in shell history or in `ps`. The output is the file indexer/redact.py reads:

    salt <hex>                      # salt bytes = bytes.fromhex(<hex>)
    <sha256(salt_bytes + utf-8 value) hex>\t<name>

With --out FILE the hashes are appended to FILE (created 0600 with a new salt if missing; an
existing file keeps its salt). Without --out the whole file is printed to stdout.

Note: this module is `cli.secrets_cmd` (not `cli.secrets`, which would shadow the standard
library module when `cli/` is on sys.path); it deliberately does not import the standard library's
`secrets` (random bytes come from os.urandom), so running `python cli/main.py` — which puts
cli/ on sys.path — cannot confuse the two.
"""

from __future__ import annotations

import getpass
import os
import sys
from pathlib import Path

from remembrancer.indexer.errors import UserError
from remembrancer.indexer.redact import MIN_SECRET_CHARS, salted_sha256
from remembrancer.indexer.redact_policy import NAME_RE, RedactionError, load_hash_file

DEFAULT_NAME = "secret"
SALT_BYTES = 16


def _salt(salt_hex: str | None) -> bytes:
    if salt_hex is None:
        return os.urandom(SALT_BYTES)
    try:
        salt = bytes.fromhex(salt_hex.strip())
    except ValueError:
        raise UserError("--salt must be hex digits", param="salt") from None
    if len(salt) < 8:
        raise UserError("--salt must be at least 8 bytes (16 hex digits)", param="salt")
    return salt


def parse_values(stdin_text: str, name: str | None = None) -> list[tuple[str, str]]:
    """(name, value) pairs from stdin text: `value` lines (named --name, default "secret") or
    `name<TAB>value` lines. Blank lines and lines starting with `#` are skipped. Errors name the
    line number, never the value."""
    default = name or DEFAULT_NAME
    if not NAME_RE.match(default):
        raise UserError(f"--name {default!r}: use letters, digits, _ . - (up to 40)", param="name")
    pairs: list[tuple[str, str]] = []
    for no, raw in enumerate(stdin_text.splitlines(), 1):
        line = raw.rstrip("\r\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if "\t" in line:
            n, value = line.split("\t", 1)
            n = n.strip()
            if not NAME_RE.match(n):
                raise UserError(f"stdin line {no}: the name before the TAB must be letters, digits, _ . - "
                                "(up to 40)", param="stdin")
        else:
            n, value = default, line
        value = value.strip()
        if len(value) < MIN_SECRET_CHARS:
            raise UserError(f"stdin line {no}: value shorter than {MIN_SECRET_CHARS} characters; it would "
                            "match ordinary words (and a short value is easy to guess from its hash)",
                            param="stdin")
        if any(c.isspace() for c in value):
            raise UserError(f"stdin line {no}: value contains whitespace; only whole tokens are matched, "
                            "so hash each word on its own line", param="stdin")
        pairs.append((n, value))
    if not pairs:
        raise UserError("no values on stdin", param="stdin",
                        hint="pipe the values in, one per line (or name<TAB>value), e.g. from your secret store")
    return pairs


def hash_lines(pairs: list[tuple[str, str]], salt: bytes) -> list[str]:
    return [f"{salted_sha256(salt, value)}\t{n}" for n, value in pairs]


def hash_secrets(stdin_text: str, name: str | None = None, salt_hex: str | None = None) -> str:
    """A complete secret-hash file for the values in `stdin_text` (a new random salt unless given)."""
    salt = _salt(salt_hex)
    return "\n".join([f"salt {salt.hex()}", *hash_lines(parse_values(stdin_text, name), salt)]) + "\n"


def _read_stdin(stdin) -> str:
    if stdin.isatty():  # typed by hand: no echo, one value per prompt, empty line ends
        values = []
        while True:
            v = getpass.getpass("value (empty line to finish): ")
            if not v:
                break
            values.append(v)
        return "\n".join(values)
    return stdin.read()


def write_hash_file(out: Path, pairs: list[tuple[str, str]], salt_hex: str | None) -> tuple[int, int]:
    """Append to `out` (its salt is kept), or create it 0600. Returns (added, already there)."""
    if out.exists():
        try:
            existing = load_hash_file(out)
        except RedactionError as e:
            raise UserError(f"--out {out}: {e.message}", param="out",
                            hint="fix the file, or write a new one with another --out") from None
        salt = existing.salt
        if salt_hex is not None and _salt(salt_hex) != salt:
            raise UserError(f"--out {out} already has another salt", param="salt",
                            hint="leave out --salt to append with the file's own salt")
        text = out.read_text(encoding="utf-8")
        known = set(existing.digests)
    else:
        salt = _salt(salt_hex)
        text, known = f"salt {salt.hex()}\n", set()
    lines = [ln for ln in hash_lines(pairs, salt) if ln.split("\t", 1)[0] not in known]
    lines = list(dict.fromkeys(lines))
    if not lines:
        return 0, len(pairs)
    if text and not text.endswith("\n"):
        text += "\n"
    text += "\n".join(lines) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, out)
    return len(lines), len(pairs) - len(lines)


def add_parser(sub) -> None:
    """`secrets hash [--name NAME] [--salt HEX] [--out FILE]` on the CLI's subparsers."""
    p = sub.add_parser("secrets", help="make the secret-hash file that redaction uses (values from stdin)")
    ss = p.add_subparsers(dest="secrets_command", required=True, metavar="ACTION")
    hp = ss.add_parser("hash", help="hash values read from stdin (one per line, or name<TAB>value); never from argv",
                       description="Reads secret values from stdin — one per line, or name<TAB>value — and "
                                   "writes `salt <hex>` plus one `<sha256>\\t<name>` line per value. Values "
                                   "are never taken from the command line.")
    hp.add_argument("--name", default=None, help=f"label for lines without a name (default: {DEFAULT_NAME}); "
                    "shows as [REDACTED:<name>]")
    hp.add_argument("--salt", default=None, metavar="HEX", help="salt as hex (default: 16 random bytes; "
                    "with --out on an existing file: that file's salt)")
    hp.add_argument("--out", default=None, metavar="FILE", help="append to FILE (created 0600 if missing) "
                    "instead of printing a new file")


def main(args, stdin=None, stdout=None, stderr=None) -> int:
    """Run `secrets hash` for parsed `args` (attributes: name, salt, out). Returns an exit code."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if getattr(args, "secrets_command", "hash") != "hash":
        raise UserError(f"unknown secrets action {args.secrets_command!r}", options=["hash"])
    pairs = parse_values(_read_stdin(stdin), args.name)
    if args.out:
        out = Path(args.out).expanduser()
        added, dup = write_hash_file(out, pairs, args.salt)
        print(f"{out}: {added} hash(es) added" + (f", {dup} already there" if dup else "")
              + f" (names: {', '.join(sorted({n for n, _ in pairs}))})", file=stderr)
        print("point [redact] secret_hashes (or REMEMBRANCER_SECRET_HASHES) at it; the next index run "
              "re-reads every document with the new list", file=stderr)
    else:
        stdout.write(hash_secrets("\n".join(f"{n}\t{v}" for n, v in pairs), salt_hex=args.salt))
    return 0
