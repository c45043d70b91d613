"""Secrets never reach the index or an answer: redaction before storing and again before serving.

Two mechanisms, both replacing what they find with ``[REDACTED:<label>]``:

* **Pattern families** for well-known shapes (private-key blocks, credentials in URLs, ``sk-``
  keys, GitHub/Slack/AWS/Telegram and other vendor tokens, JWTs, bearer headers, cookies, ``key=value``
  / ``password: …`` secrets, variables named as secrets (``PGPASSWORD=``, ``SECRET_KEY_BASE=``),
  passwords on command lines and registry logins, Azure keys, password hashes, hex after a
  secret-ish word, a Kubernetes Secret's data, a credential named in prose: "the root password is …"). A value
  a family found by its context is redacted wherever else the same text holds it. Each family can be disabled in the config
  (``[redact] disable = ["long_hex"]``); an unknown name is refused (indexer/redact_policy.py).
* **A secret-hash file** naming live secrets without containing them::

      salt 3f9c…            # hex; the salt BYTES are bytes.fromhex(<hex>)
      <sha256 hex>\t<name>  # sha256(salt_bytes + value.encode("utf-8")).hexdigest()

  Every candidate token of the text (whitespace/quote/delimiter-separated tokens, the value
  part of ``key=value`` / ``key: value``, the pieces of a URL) whose salted hash is listed
  becomes ``[REDACTED:<name>]`` — whatever its shape. The file is named by ``[redact]
  secret_hashes`` or by ``REMEMBRANCER_SECRET_HASHES`` (which wins). Once configured it is
  required: missing, malformed or empty → ``RedactionError`` (fail closed; indexer/redact_policy.py).

A file's path is judged too (:meth:`Redactor.redact_path`): a file whose name holds a secret is
not indexed (indexer/engine/writer.py), and messages about it name it redacted.

Line structure is kept: replacements happen within lines, and a multi-line private-key block
becomes one marker line followed by empty lines, so every section's line range stays true.
Redaction is idempotent, so serving can redact stored text again with the policy in force.

The engine stores :meth:`Redactor.policy_fingerprint` in the catalog; when it changes, every
document is read again (unchanged paragraphs are not re-embedded) and the derived stores are
rebuilt so no old text survives.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from remembrancer.indexer.ingest.meta import _glob_regex

# Bump when a pattern changes what it redacts: the fingerprint changes and the corpus is re-read.
REDACTOR_VERSION = 16
MIN_SECRET_CHARS = 6      # shorter values would match ordinary words (and are brute-forced from a hash)


def marker(label: str) -> str:
    return f"[REDACTED:{label}]"


# -- helpers for the pattern families ----------------------------------------------------------

# `<` also as HTML writes it (`&lt;token&gt;`, `&#x3C;Buffer>`: a type or a placeholder in a doc page)
_PLACEHOLDER_START = ("$", "<", "&lt;", "&#x3c;", "&#x3C;", "&#60;", "{", "[", "%", "*", "…", "(")
_PLACEHOLDER_WORDS = {"true", "false", "yes", "no", "none", "null", "nil", "on", "off", "required",
                      "optional", "redacted", "changeme", "password", "secret", "token", "example",
                      "secretstr", "secretbytes", "pass", "passwd", "pwd", "pw"}


def _placeholder(value: str) -> bool:
    v = value.strip("\"'`")
    return (not v or v.startswith(_PLACEHOLDER_START) or v.lower() in _PLACEHOLDER_WORDS
            or set(v) <= set("*xX.-_") or v.startswith(("/", "~/", "./", "../")))


def _looks_secret(value: str, min_len: int = 8) -> bool:
    """A value that is not a word, a number, a date or a path: long enough, with a digit or mixed case."""
    if len(value) < min_len or _placeholder(value):
        return False
    if value.isdigit() or re.fullmatch(r"[\d.:/T Z+-]+", value):
        return False  # numbers, dates, times, versions
    has_digit = any(c.isdigit() for c in value)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return has_digit or mixed


@dataclass(frozen=True)
class _Family:
    name: str
    doc: str
    apply: Callable[[str], tuple[str, int]]
    # Substrings every match contains (lower-case ones are looked for in the lower-cased text): a text
    # holding none of them is skipped by a str scan, far cheaper than the regex on a long line.
    hints: tuple[str, ...] = ()

    def may_match(self, text: str, lowered: Callable[[], str]) -> bool:
        if not self.hints:
            return True
        return any(h in (lowered() if h.islower() else text) for h in self.hints)


def _sub(pattern: re.Pattern, label: str, group: str | int = 0, check: Callable[[str], bool] | None = None):
    """Replace `group` of every match (the rest of the match is kept) when `check` accepts it."""

    def apply(text: str) -> tuple[str, int]:
        n = 0

        def repl(m: re.Match) -> str:
            nonlocal n
            value = m.group(group)
            if value is None or (check is not None and not check(value)):
                return m.group(0)
            n += 1
            s, e = m.start(group) - m.start(0), m.end(group) - m.start(0)
            whole = m.group(0)
            return whole[:s] + marker(label) + whole[e:]

        return pattern.sub(repl, text), n

    return apply


def _multi(*parts):
    def apply(text: str) -> tuple[str, int]:
        total = 0
        for p in parts:
            text, n = p(text)
            total += n
        return text, total
    return apply


# private keys: the whole block, padded with empty lines so the line count stays the same.
# Found with bounded patterns and str scans (one pass): a lazy `BEGIN.*?END` rescans the rest of
# the text from every BEGIN that has no END, which is quadratic on a paste of many BEGIN lines.
_PEM_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_PLACEHOLDER = re.compile(r"(?:x{3,}|X{3,}|\.{3}|…)[\"',]*" + r"[^\S\n]*\Z")
_PEM_BODY_LINE = re.compile(r"(?<![^\n])[ \t>]*(?:[A-Za-z0-9+/=]+|[A-Za-z-]+: .*)?[ \t\\\"',]*\Z")


def _private_keys(text: str) -> tuple[str, int]:
    if "PRIVATE KEY" not in text:
        return text, 0
    out: list[str] = []
    pos = n = 0
    ends = True  # False once no END line follows: every later BEGIN is a truncated paste
    while (m := _PEM_BEGIN.search(text, pos)) is not None:
        end = _PEM_END.search(text, m.end()) if ends else None
        ends = end is not None
        if end is None and _PEM_PLACEHOLDER.match(text, m.end(), _line_end(text, m.end())):
            out.append(text[pos:m.end()])  # `-----BEGIN PRIVATE KEY-----xxxx"`: an example, no key
            pos = m.end()
            continue
        if end is not None:
            block_end = end.end()
            lines = text.count("\n", m.start(), block_end)
        else:  # a truncated paste (no END line): the BEGIN line and the base64 lines after it
            block_end = _line_end(text, m.end())
            lines = 0
            while block_end < len(text):
                nxt = _line_end(text, block_end + 1)
                if not _PEM_BODY_LINE.match(text, block_end + 1, nxt):
                    break
                block_end, lines = nxt, lines + 1
        out += [text[pos:m.start()], marker("private_key"), "\n" * lines]
        pos, n = block_end, n + 1
    out.append(text[pos:])
    return "".join(out), n


# A PEM private key written in base64 (a kubeconfig's `client-key-data:`, a Kubernetes Secret's
# `tls.key:`, `base64 < key.pem`): the run starts with `-----BEGIN ` encoded, and its first bytes
# decode to a private key's BEGIN line (`client-certificate-data`, a certificate, is not a secret).
# A run wrapped at 64 or 76 columns goes on over the base64 lines after it.
_B64_PEM_START = "LS0tLS1CRUdJTi"     # base64 of "-----BEGIN "
_B64_RUN = re.compile(r"[A-Za-z0-9+/]*+={0,2}")
_B64_LINE = re.compile(r"(?<![^\n])[ \t]*+[A-Za-z0-9+/]++={0,2}[ \t\r\"',]*\Z")


def _b64_private_keys(text: str) -> tuple[str, int]:
    if _B64_PEM_START not in text:
        return text, 0
    out: list[str] = []
    pos = n = 0
    at = text.find(_B64_PEM_START)
    while at >= 0:
        if at > 0 and (text[at - 1].isalnum() or text[at - 1] in "+/="):
            at = text.find(_B64_PEM_START, at + 1)   # inside a longer run: not its start
            continue
        end = _B64_RUN.match(text, at).end()
        head = text[at:at + min(end - at, 120) // 4 * 4]
        try:
            first = base64.b64decode(head).split(b"\n", 1)[0]
        except ValueError:
            first = b""
        if b"PRIVATE KEY" not in first:
            at = text.find(_B64_PEM_START, end)
            continue
        breaks = ""   # the line breaks of the lines it goes on over (line numbers stay true)
        block = _line_end(text, end)
        if end - at in (60, 64, 76) and not text[end:block].strip(" \t\r\"',"):   # wrapped
            last = end
            while block < len(text):
                nxt = _line_end(text, block + 1)
                if not _B64_LINE.match(text, block + 1, nxt):
                    break
                last = block = nxt
            if last > end:   # keep the line breaks, and a closing quote after the last line's base64
                start = text.rfind("\n", 0, last) + 1
                tail = text[start:last]
                breaks = "".join(c for c in text[end:start] if c in "\r\n") + tail[len(tail.rstrip(" \t\r\"',")):]
                end = last
        out += [text[pos:at], marker("private_key"), breaks]
        pos, n = end, n + 1
        at = text.find(_B64_PEM_START, end)
    out.append(text[pos:])
    return "".join(out), n


def _line_end(text: str, pos: int) -> int:
    nl = text.find("\n", pos)
    return len(text) if nl < 0 else nl


_H = r"[^\S\n]"  # horizontal whitespace: no pattern crosses a line
# A word boundary by ASCII letters, digits and `_`: Python's `\b` counts CJK characters as word
# characters, so a token written against them ("令牌ghp_…", "密钥AKIA…") had no boundary and was
# never redacted. Every family pattern below says `\b` and means this.
_ASCII_B = r"(?:(?<=[A-Za-z0-9_])(?![A-Za-z0-9_])|(?<![A-Za-z0-9_])(?=[A-Za-z0-9_]))"


def _compile(pattern: str, flags: int = 0) -> re.Pattern:
    return re.compile(pattern.replace(r"\b", _ASCII_B), flags)


# Repeats are bounded (a scheme is short): an unbounded `[A-Za-z0-9+.-]*` before `://` rescans the
# rest of a long `a-a-a-…` line from every word start (quadratic: 5 MB kept `index` busy for hours).
# The user may be empty (`redis://:pw@host`); the password may hold `@` (it ends at the last `@`
# before the host, where the greedy repeat stops; it backtracks at most 256 characters).
# A redaction marker is never read as `user:password@` (`https://[REDACTED:long_hex]@host`: its `:` is the
# marker's): the user holds no `[`/`]` unless it is a whole marker (a user the hash file listed).
_URL_CREDS = _compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,31}://(?:\[REDACTED:[A-Za-z0-9_.-]{1,40}\]|[^\s:/?#@'\"<>\[\]]{0,256})"
                      r":(?P<pw>[^\s/?#'\"<>]{1,256})@")
# `deploy_ghp_…`: `_` is a word character, so a token glued after one has no \b before it; its
# prefix is distinctive enough to be its own boundary (no letter or digit before it).
_GITHUB = _compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b")
_SLACK_TOKEN = _compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{10,}")
_SLACK_HOOK = _compile(r"\bhooks\.slack\.com/(?:services|workflows|triggers)/(?P<v>[A-Za-z0-9/_-]{8,})")
_AWS_ID = _compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
# A secret access key standing alone (a table cell, a config value, prose): exactly 40 characters
# of base64 without padding, not glued to a slug, a file name or an escape (`-`, `_`, `.`, `%`, `\`),
# and not followed by `.ext` or a domain. Judged in Python (_aws_secret_alone).
_AWS_SECRET_ALONE = re.compile(r"(?<![A-Za-z0-9/+_.%\\-])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=_%-]|\.[A-Za-z0-9])")
_TELEGRAM = _compile(r"\b\d{8,10}:[A-Za-z0-9_-]{35}\b")
_VENDOR = _compile(
    r"\b(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"          # Grafana service account
    r"|glc_[A-Za-z0-9+/=]{32,}"                           # Grafana Cloud
    r"|glpat-[A-Za-z0-9_-]{20,}"                          # GitLab
    r"|AIza[0-9A-Za-z_-]{35}"                             # Google API key
    r"|npm_[A-Za-z0-9]{36}"                               # npm
    r"|pypi-AgE[A-Za-z0-9_-]{50,}"                        # PyPI
    r"|hf_[A-Za-z0-9]{34,}"                               # Hugging Face
    r"|do[opr]_v1_[a-f0-9]{64}"                           # DigitalOcean
    r"|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"          # SendGrid
    r"|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"                # Shopify
    r"|dckr_pat_[A-Za-z0-9_-]{27,}"                       # Docker Hub
    r"|hv[sb]\.[A-Za-z0-9_-]{24,}"                        # HashiCorp Vault
    r"|whsec_[A-Za-z0-9+/=]{24,}"                         # Stripe webhook signing secret
    r"|AGE-SECRET-KEY-1[0-9A-Z]{58}"                      # age secret key
    r"|GOOG1[0-9A-Z]{40,80}"                              # Google Cloud Storage HMAC access id
    r"|rmb_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"            # remembrancer's own HTTP token (team token create)
    r"|cio[A-Za-z0-9]{32}(?![A-Za-z0-9_-])"               # crates.io API token
    r"|[a-z]{2,8}_(?:srv|server|secret|live|prod|pat|sdk)_[A-Za-z0-9]{24,}"  # a product's own key (sbx_srv_…)
    r")")
_SK = re.compile(r"(?<![A-Za-z0-9_-])(?:sk|rk)[-_](?:live[-_]|test[-_]|proj-|ant-(?:api\d\d-)?|svcacct-)?"
                 r"[A-Za-z0-9_-]{20,}")
# A JWT is three dot-separated base64url runs, the first two starting with `eyJ`. The runs are found
# whole (they start where the previous character is not base64url, so no run is rescanned from
# inside itself); where the token starts inside the first run (after a `-`) is found in Python.
_JWT_RUNS = re.compile(r"(?<![A-Za-z0-9_-])(?P<a>[A-Za-z0-9_-]{11,}+)\.(?P<b>eyJ[A-Za-z0-9_-]{8,}+)\.[A-Za-z0-9_-]*+")


def _jwt(text: str) -> tuple[str, int]:
    """`eyJ….eyJ….…` where the first `eyJ` starts its run or follows a `-` (a word boundary)."""
    n = 0

    def repl(m: re.Match) -> str:
        nonlocal n
        a = m.group("a")
        start = 0 if a.startswith("eyJ") else a.find("-eyJ") + 1  # the leftmost start, or 0 if none
        if not a.startswith("eyJ", start) or len(a) - start < 11:  # eyJ and 8 more before the dot
            return m.group(0)
        n += 1
        return a[:start] + marker("jwt")

    return _JWT_RUNS.sub(repl, text), n
_BEARER = _compile(r"(?i)\bbearer" + _H + r"+(?P<v>[A-Za-z0-9._~+/=-]{16,})")
# The header and its value: `Authorization: Basic …`, `"Authorization": "Token …"`, and with no colon when the
# value is quoted after a space (nginx `proxy_set_header Authorization "Basic …";`).
_AUTH_HEADER = _compile(r"(?i)\b(?:proxy-)?authorization(?:[\"']?" + _H + r"*[:=]" + _H + r"*[\"']?|" + _H + r"{1,8}[\"'])"
                          r"(?:basic|token|digest|negotiate|apikey)" + _H + r"+(?P<v>[A-Za-z0-9._~+/=-]{8,})")
# `Basic <base64>` with no header before it (a question, a log line): a credential when the base64 decodes
# to `user:password` (_basic_credentials); "Basic Authentication" and other words do not.
_BASIC = _compile(r"\b(?i:basic)" + _H + r"{1,8}(?P<v>[A-Za-z0-9+/]{8,1024}+={0,2}+)(?![A-Za-z0-9+/=])")


def _basic_credentials(value: str) -> bool:
    """base64 of `user:password` (either may be empty, not both): printable text holding a colon."""
    if len(value) % 4:
        return False
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except ValueError:
        return False
    user, colon, password = decoded.partition(":")
    return (bool(colon) and bool(user or password) and decoded.isprintable()
            and not any(c.isspace() for c in decoded))
# Cookies: a session cookie is a credential. `Cookie: a=v; b=w` (every value), `Set-Cookie: a=v; Path=/;
# HttpOnly` (the first pair's value; the attributes after it stay), curl's `-b`/`--cookie 'a=v'`.
# The names stay readable; a value is redacted when it could be a session (_cookie_value).
_COOKIE_HEADER = _compile(r"(?i)(?<![A-Za-z0-9_-])(?P<set>set-)?cookie[\"']?" + _H + r"{0,8}:" + _H
                          + r"{0,8}[\"']?(?P<pairs>[^\n\"'`]{1,4096})")
_CURL_COOKIE = _compile(r"(?:\bcurl\b[^\n]{0,512}?(?<!\S)-b|(?<![A-Za-z0-9_-])--cookie)(?:" + _H + r"{1,8}|=)[\"']?(?P<pairs>[^\s\"'`][^\n\"'`]{0,4095})")
_COOKIE_PAIR = re.compile(r"(?P<name>[^\s=;,]{1,256})=(?P<v>[^\s;,\"\\]{1,4096})")


def _cookie_value(value: str) -> bool:
    """A cookie value worth hiding: 8+ characters with a digit or mixed case (a session id, a signed
    token), not a placeholder (`$SESSION`, `<id>`) or a number, date or path."""
    return _looks_secret(value.strip("\"'"), 8) and not value.startswith(("[REDACTED:", "$"))


def _cookies(text: str) -> tuple[str, int]:
    n = 0

    def pairs(m: re.Match, first_only: bool) -> str:
        nonlocal n
        out, pos, seg = [], m.start("pairs"), m.group("pairs")
        start = 0
        for p in _COOKIE_PAIR.finditer(seg):
            if first_only and p.start() > 0 and seg[:p.start()].strip():
                break
            if not first_only and p.start() > 0 and seg[start:p.start()].strip(" ;"):
                break   # not a `name=value; name=value` list any more
            v = p.group("v")
            if _cookie_value(v):
                out.append(seg[start:p.start("v")] + marker("cookie"))
                n += 1
            else:
                out.append(seg[start:p.end("v")])
            start = p.end("v")
            if first_only:
                break
        out.append(seg[start:])
        return m.group(0)[:pos - m.start(0)] + "".join(out)

    if "ookie" in text or "OOKIE" in text:
        text = _COOKIE_HEADER.sub(lambda m: pairs(m, bool(m.group("set"))), text)
    if "curl" in text or "--cookie" in text:
        text = _CURL_COOKIE.sub(lambda m: pairs(m, False), text)
    return text, n


# A key's name as people write it in prose as well: "API key:", "access key =" (a space between).
_SECRET_KEY = (r"(?:pass(?:word|wort|wd|phrase)?|kennwort|pwd|secret|token|api[_ -]?key|apikey|access[_ -]?key|"
               r"private[_ -]?key|auth[_ -]?key|credentials?|psk|pre[_ -]?shared[_ -]?key)s?")
_KEY_VALUE = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?P<k>(?:[A-Za-z0-9]+[_.-]){0,8}" + _SECRET_KEY + r")(?![A-Za-z0-9])"
    r"[\"'*`]*" + _H + r"*[:=]" + _H + r"*[*\"'`]*" + _H + r"*(?P<v>[^\s\"'`*]+)")
_CLI_FLAG = re.compile(
    r"(?i)(?<![A-Za-z0-9-])--(?:[a-z0-9]+-)*(?:password|passwd|passphrase|token|secret|api-?key|"
    r"access-key|secret-key|auth-token|client-secret|plaintext)(?:=|" + _H + r"+)[\"']?(?P<v>[^\s\"'`]+)")
_LONG_HEX = re.compile(r"(?<![0-9A-Za-z])(?P<pre>(?:sha\d*|md5|blake2[bs]?)[:=])?(?:0x)?(?P<v>[0-9a-f]{32,}|[0-9A-F]{32,})"
                       r"(?![0-9A-Za-z])")


def _kv_value(value: str) -> bool:
    return _looks_secret(value.rstrip(".,;:)]}"))


_GO_TEST_NAME = re.compile(r"(?:Test|Benchmark|Example|Fuzz)[A-Za-z0-9_/.-]*")


def _test_verdict(m: re.Match, group: str) -> bool:
    """`--- PASS: TestParse2Items` is `go test`'s verdict before the test's name, not a password:
    the bare key `PASS` in capitals, a colon, then a Go test's name (`DB_PASS: X`, `pass: X`,
    `PASS=X` and `PASS: "X"` stay secrets)."""
    return (m.group("k") == "PASS" and group == "v" and ":" in m.string[m.end("k"):m.start(group)]
            and bool(_GO_TEST_NAME.fullmatch(m.group(group).rstrip(".,;:)]}>"))))


def _key_value(text: str) -> tuple[str, int]:
    n = 0

    def repl(m: re.Match) -> str:
        nonlocal n
        raw = m.group("v")
        value = raw.rstrip(".,;:)]}>")  # keep closing punctuation: it is not the secret
        if not (_looks_secret(value) or (_field_kind(m.group("k")) == "value" and _word_passphrase(value))) \
                or _test_verdict(m, "v"):
            return m.group(0)
        n += 1
        s = m.start("v") - m.start(0)
        return m.group(0)[:s] + marker("key_value") + raw[len(value):]

    text = _KEY_VALUE.sub(repl, text)
    text, k = _sub(_CLI_FLAG, "key_value", "v", _kv_value)(text)
    return text, n + k


def _entropy(value: str) -> float:
    """Shannon entropy per character, in bits."""
    counts: dict[str, int] = {}
    for c in value:
        counts[c] = counts.get(c, 0) + 1
    return -sum(k / len(value) * math.log2(k / len(value)) for k in counts.values())


_WORDISH = re.compile(r"[A-Z]?[a-z]{3,}")


def _aws_secret_alone(value: str) -> bool:
    """A 40-character key that looks random: digits, lower and upper case letters (a git commit id is
    lower-case hex: never), no long repeats, and not made of words — a camelCase identifier or a
    path (`handleUserAuthenticationCallback2Request`, `home/User1/Projects/…`) has most of its letters
    in runs of 3+ lower-case letters with the vowels of words; a random key rarely does (about 1 in
    650 random keys is missed, most for lacking a digit or a case: bench/redaction_audit.py
    --random-aws-keys)."""
    if not (any(c.isdigit() for c in value) and any(c.islower() for c in value) and any(c.isupper() for c in value)):
        return False
    if _entropy(value) < 4.0:
        return False
    letters = [c for c in value if c.isalpha()]
    vowels = sum(c in "aeiouAEIOU" for c in letters)
    wordish = sum(len(w) for w in _WORDISH.findall(value))
    return not (vowels >= 0.3 * len(letters) and wordish >= 0.6 * len(letters))


def _aws(text: str) -> tuple[str, int]:
    """Key ids anywhere; a 40-char secret key on a line that carries a key id, or standing alone
    when it looks random (_aws_secret_alone)."""
    n = 0
    if any(p in text for p in _AWS_PREFIXES):
        out = []
        for line in text.split("\n"):
            if _AWS_ID.search(line):
                line, k = _AWS_ID.subn(marker("aws"), line)
                n += k
                line, k = _sub(_AWS_SECRET, "aws", 0, lambda v: _looks_secret(v, 40))(line)
                n += k
            out.append(line)
        text = "\n".join(out)
    text, k = _sub(_AWS_SECRET_ALONE, "aws", 0, _aws_secret_alone)(text)
    return text, n + k


# -- a credential named in prose ------------------------------------------------------------------
# "The root password is Tr0ub4dor3xYz", "the api key for stripe is Kz8…", "Password for the admin
# account: AdminAcctPw2031x", "The root password on edge3 is still Xc5$…", "the wifi key is Hy3#…":
# a secret word, then a linking verb (`is`, `was`, `'s`, `has been`, an adverb or two after it:
# `is still`, `was then`; `set/changed to`), or up to six words saying whose (`for/of/on …`) and
# the verb, a colon or `=` (`password: X` itself is key_value's). The value must have a
# credential's character mix (_prose_value): prose goes on with words ("the password is stored in
# Vault", "is still rotated monthly"); `key` alone is no secret word ("the key is to restart").
# Every repeat is bounded.
_KEY_KINDS = (r"(?:api|access|private|auth|signing|encryption|decryption|master|license|admin|root|unseal|recovery|"
              r"wi-?fi|wlan|wpa2?|wep|network)")
_PROSE_WORD = (r"(?:pass(?:word|wort|wd|phrase|code)|kennwort|pwd|secret(?:[ _-]?key)?|token|credentials?|psk|"
               + _KEY_KINDS + r"[ _-]?key)")
_PROSE_ADVERB = (r"(?:still|now|currently|just|also|again|then|actually|probably|likely|usually|always|simply|"
                 r"temporarily|apparently|really|literally)")
_PROSE_SET_TO = r"(?:set|changed|reset|updated|rotated|switched)" + _H + r"{1,8}to"
_PROSE_IS = (r"(?:(?:" + _H + r"{1,8}(?:is|was|are|were|ist|war|(?:has|have|had)" + _H + r"{1,8}been|will" + _H
             + r"{1,8}be)|['\u2019]s)(?:" + _H + r"{1,8}" + _PROSE_ADVERB + r"){0,2}(?:" + _H + r"{1,8}" + _PROSE_SET_TO
             + r")?|" + _H + r"{1,8}" + _PROSE_SET_TO + r")(?:" + _H + r"{0,8}:)?(?=[\s\"'`*])")
_PROSE_WHOSE = r"(?:" + _H + r"{1,8}(?:for|of|on|to|at|in|that|which)(?:" + _H + r"{1,8}[^\s:=|`\"'*]{1,64}){1,6})"
# a parenthetical between the word and its value: "unseal key (drill only): X", "password (prod) is X"
_PROSE_ASIDE = r"(?:" + _H + r"{0,8}\([^()\n]{1,80}\))"
_PROSE_SECRET = _compile(
    r"(?i)(?<![A-Za-z0-9])(?P<w>" + _PROSE_WORD + r")s?"   # after `_`, `.`, `-` too: `db_password is …`
    r"(?:(?:" + _PROSE_WHOSE + "|" + _PROSE_ASIDE + r")(?:" + _PROSE_IS + "|" + _H + r"{0,8}[:=])|" + _PROSE_IS + ")"
    r"[\"'`*]{0,3}" + _H + r"{0,8}[\"'`*]{0,3}(?P<v>[^\s\"'`*|]{1,256})")
_SEGMENT = re.compile(r"[^-_./\\]+")


def _prose_value(value: str, quoted: bool = False) -> bool:
    """A value in prose that has a credential's character mix: 8+ characters, not a placeholder, a
    word, a number, a date or a path, with letters and digits (or symbols) that alternate — at
    least three changes between letter and digit, or lower- to upper-case, counted inside its
    `-`/`_`/`.`-separated parts (a symbol counts one), or digits, symbols and both cases together.
    `AES-256-GCM`, `OAuth2-based`, `k8s-native`, `id_ed25519` are terms, not credentials;
    `S3cr3tPlain`, `Tr0ub4dor3xYz`, `P@ssw0rd1`, `Summer2024!` are, and so is a word whose case
    changes inside it, with digits (`mArshTit-0419`: two changes, one of them no name's capital)."""
    v = value if quoted else value.rstrip(".,;:!?)]}>")
    if len(v) < 8 or v.lower() in _ENV_WORDS or _placeholder(v) or _PLACEHOLDER_RE.search(v):
        return False
    if v.isdigit() or re.fullmatch(r"[\d.:/T Z+-]+", v) or "://" in v or v.startswith(("/", "~/", "./", "../")):
        return False
    symbol = any(c in "!@#$%^&*+=?~" for c in v)
    changes = int(symbol)
    camel = False   # a lower-case letter followed by a capital inside one part
    for part in _SEGMENT.findall(v):
        alnum = [c for c in part if c.isalnum()]
        for a, b in zip(alnum, alnum[1:]):
            changes += (a.isdigit() != b.isdigit()) or (a.islower() and b.isupper())
            camel = camel or (a.islower() and b.isupper())
    if not any(c.isalpha() for c in v):
        return False
    digit = any(c.isdigit() for c in v)
    if digit or symbol:
        # or all four kinds of character a password policy asks for (`Summer2024!`)
        return (changes >= 3 or (changes >= 2 and camel and digit)
                or (symbol and digit and any(c.isupper() for c in v) and any(c.islower() for c in v)))
    # letters alone: a long run whose case changes every few characters (not a CamelCase name)
    return len(v) >= 12 and changes >= 0.4 * len(v)


# "Rotate db password: new one is Pr0dDbPw2031x" (a commit message): the secret word earlier in the
# sentence, then "(the) new one is X" / "old value: X". The gap is short and stops at a sentence's end (`.`,
# `!`, `?`); a `;` may stand in it ("Rotated the admin token; the new one is X"), and the value after one is
# judged harder (_prose_secrets): "the token; the new one is valid for 90 days" and "the API key; the new one
# is i3en.2xlarge" stay.
_PROSE_NEW_ONE = _compile(
    r"(?i)(?<![A-Za-z0-9])(?P<w>" + _PROSE_WORD + r")s?[^\n.!?]{0,40}?(?<![A-Za-z0-9])"
    r"(?:new|old|current|previous|temporary|temp|initial|next|replacement)" + _H + r"{1,8}(?:one|value)"
    r"(?:" + _PROSE_IS + "|" + _H + r"{0,8}[:=])[\"'`*]{0,3}" + _H + r"{0,8}[\"'`*]{0,3}(?P<v>[^\s\"'`*|]{1,256})")

_NEW_ONE = re.compile(r"(?:new|old|current|previous|temporary|temp|initial|next|replacement)" + _H + r"{1,8}(?:one|value)")


def _prose_secrets(text: str) -> tuple[str, int]:
    n = 0

    def repl(m: re.Match) -> str:
        nonlocal n
        raw = m.group("v")
        quoted = m.string[m.end("v"):m.end("v") + 1] in ("\"", "'", "`", "*")   # its end is the quote's
        value = raw if quoted and raw else raw.rstrip(".,;:!?)]}>")
        if m.re is _PROSE_NEW_ONE and ";" in m.string[m.end("w"):m.start("v")]:
            # another clause: the value may be another thing's ("the API key; the new one is i3en.2xlarge"),
            # so it is judged as one right after a secret word is (both cases or a symbol, not words)
            if not _bare_credential(value.rstrip("*")):
                return m.group(0)
        elif not (_prose_value(value, quoted) or _quoted_credential(m, value) or _linked_passphrase(m, value)):
            return m.group(0)
        n += 1
        s = m.start("v") - m.start(0)
        return m.group(0)[:s] + marker("prose_secret") + raw[len(value):]

    text = _PROSE_SECRET.sub(repl, text)
    if _NEW_ONE.search(text.lower()):   # a cheap look for the rare anchor before the costly pattern
        text = _PROSE_NEW_ONE.sub(repl, text)
    for pattern in (_PROSE_DIRECT, _PROSE_LOGIN, _PROSE_LOGIN_PAIR, _ADMIN_PAIR, _JSON_VALUE):
        text, k = _bare_credentials(pattern, text)
        n += k
    text, k = _spaced_passphrases(text)
    return text, n + k


# words that only ever name a secret's value (not `secret`, `token` or `api key`, which also name a thing:
# "the secret `db-creds-v2`"; not `pass`: "tests pass `test_io2`")
_VALUE_WORD = re.compile(r"(?i)(?:pass(?:word|wort|wd|phrase|code)|kennwort|pwd|pw|psk|pre[ _-]?shared[ _-]?key|"
                         r"(?:wi-?fi|wlan|wpa2?|wep|network|unseal|recovery|root|admin|master)[ _-]?key)s?")


def _quoted_credential(m: re.Match, value: str) -> bool:
    """A value in quotes right after a word that only names a secret's value ("psk `…`", "the
    passphrase was '…'"): any secret-like string (_secret_value), even words and a year
    (`wren-sensors-4ever-2045`), which _prose_value reads as a term, or words alone joined by `-`
    (`sunflower-meadow-river`: _word_passphrase)."""
    if "w" not in m.re.groupindex or not _VALUE_WORD.fullmatch(m.group("w")):
        return False
    before, after = m.string[m.start("v") - 1:m.start("v")], m.string[m.end("v"):m.end("v") + 1]
    return (before in ("\"", "'", "`") and after == before and (_secret_value(value) or _word_passphrase(value))
            and not _NOT_BARE.search(value) and not value.startswith("-"))


# Words of prose and of compound modifiers ("one-time-use", "end-to-end", "set-by-ansible"): a value
# holding one is a phrase about the secret, not a passphrase made of words.
_PROSE_PARTS = frozenset("""
a an the and or but nor not no yes yet so as at by for from in into of off on onto out over per to up via with
without within under upon than then that this these those there here where when what which who whom whose why how
is are was were be been being am has have had do does did done can could may might must shall should will would
it its it's he she they them their his her our ours your yours my me we us you i all any some each every both either
neither none one two three four five six seven eight nine ten first second last next new old same other another
only also just still even ever never always often again once twice very too more most less least much many few
use used uses using see set sets get got make made keep kept ask asked read write written store stored save saved
change changed reset rotate rotated rotation rotating update updated generate generated generating generator
manage managed managing derive derived define defined provide provided require required enable enabled disable
disabled protect protected encrypt encrypted decrypt decrypted base based level like side wide free less style
aware specific only time term long short lived hard coded plain text clear open close closed end ends start
self auto multi single double non pre post sub semi case sensitive insensitive default random strong weak
factor step way ways word words phrase phrases key keys pass password passwords passphrase passphrases passcode
secret secrets token tokens psk code codes pin value values vault manager file files env environment config
please here now today tomorrow soon later dummy example examples sample samples test tests testing fake mock
placeholder change changeme insecure unsafe safe local development dev prod production staging admin user users
root guest login logins account accounts system systems service services machine host server client team
known unknown empty blank unset missing same different shared common public private internal external
upper lower digit digits symbol symbols letter letters number numbers character characters mixed complex simple
length
""".split())


def _word_passphrase(value: str) -> bool:
    """Words joined by `-` (a diceware or xkcd passphrase: `correct-horse-battery-staple`): three or
    more words of 3–12 letters (lower-case, or each capitalised), perhaps one number among them,
    15 or more letters in all, and none a word of prose or of a compound modifier (`one-time-use`,
    `end-to-end`, `set-by-ansible`, `auto-generated-daily` stay terms)."""
    v = value.rstrip(".,;:!?)]}>")
    if not _HYPHEN_WORDS.fullmatch(v) or _PLACEHOLDER_RE.search(v):
        return False
    parts = v.split("-")
    words = [p for p in parts if not p.isdigit()]
    if len(words) < 3 or len(parts) - len(words) > 1 or sum(map(len, words)) < 15:
        return False
    if not (all(w.islower() for w in words) or all(w[0].isupper() and w[1:].islower() for w in words)):
        return False
    return not any(w.lower() in _PROSE_PARTS for w in words)


_HYPHEN_WORDS = re.compile(r"(?:[A-Za-z][a-z]{2,11}|\d{1,4})(?:-(?:[A-Za-z][a-z]{2,11}|\d{1,4})){2,9}")


def _linked_passphrase(m: re.Match, value: str) -> bool:
    """Words joined by `-` after a word that only names a value and a verb or a colon ("the wifi
    passphrase is correct-horse-battery-staple", "WPA2 PSK: tangerine-walrus-echo-marble", "passphrase
    for the backup laptop: purple-monkey-dishwasher-galaxy"). Right after the word with no verb or
    colon, only quoted (_quoted_credential): prose goes on with words there."""
    if "w" not in m.re.groupindex or not _VALUE_WORD.fullmatch(m.group("w")):
        return False
    between = m.string[m.end("w"):m.start("v")]
    if m.re is _PROSE_DIRECT and ":" not in between:
        return False
    return _word_passphrase(value) or _word_and_number(value)


_TITLED_WORD = re.compile(r"[A-Z][a-z]{3,}")


def _word_and_number(value: str) -> bool:
    """A capitalised word and a number of three digits or more joined by `-`, `_` or `.` (the
    password an office hands round: `Tillage-2291`, `Summer_2024`): after "the password is" a
    credential, though no letter and digit alternate in it. `AES-256`, `SHA256-hashed` and
    `v2-2024` hold no capitalised word."""
    v = value.rstrip(".,;:!?)]}>")
    parts = re.split(r"[-_.]", v)
    return (len(v) >= 8 and len(parts) >= 2 and all(p.isalnum() for p in parts)
            and any(_TITLED_WORD.fullmatch(p) for p in parts) and any(p.isdigit() and len(p) >= 3 for p in parts))


# Words separated by spaces only after a colon right after `passphrase` (its whose or a
# parenthetical between), and only when they run to the end of the line ("LUKS passphrase: glacier
# orbit velvet thunder"); or in quotes after a word that only names a value ("the passphrase is
# 'correct horse battery staple'"). Four to ten words of letters, none a word of prose: "Passphrase:
# four random words like in the XKCD comic" and "passphrase: kept in the safe" stay.
_SPACED_PASSPHRASE = _compile(
    r"(?<![A-Za-z0-9])(?P<w>(?i:pass[ -]?phrase)s?)[*`]{0,3}(?:" + _PROSE_ASIDE + "|" + _PROSE_WHOSE + r")?" + _H
    + r"{0,8}:[*`]{0,3}" + _H + r"{1,8}[*`]{0,3}(?P<v>[a-z]{2,12}(?:" + _H + r"[a-z]{2,12}){3,9})[*`]{0,3}" + _H
    + r"{0,8}\.?" + _H + r"{0,8}(?=\n|\Z)")
_QUOTED_PASSPHRASE = _compile(
    r"(?<![A-Za-z0-9])(?P<w>(?i:pass(?:word|wort|phrase|code)|kennwort|psk|pre[ _-]?shared[ _-]?key|"
    r"(?:wi-?fi|wlan|wpa2?|network)[ _-]?key)s?)[*`]{0,3}(?:" + _PROSE_ASIDE + "|" + _PROSE_WHOSE + r")?(?:"
    + _PROSE_IS + "|" + _H + r"{0,8}:)?" + _H + r"{0,8}(?P<q>[\"'`])(?P<v>[A-Za-z]{2,12}(?: [A-Za-z]{2,12}){3,9})[\"'`]")

_QUOTED_WORDS = re.compile(r"[\"'`][A-Za-z]{2,12} [A-Za-z]{2,12} [A-Za-z]{2,12} [A-Za-z]{2,12}")


def _spaced_words(value: str) -> bool:
    words = value.split()
    return (4 <= len(words) <= 10 and (all(w.islower() for w in words) or all(w[:1].isupper() and w[1:].islower()
                                                                            for w in words))
            and not any(w.lower() in _PROSE_PARTS for w in words))


def _spaced_passphrases(text: str) -> tuple[str, int]:
    n = 0

    def repl(m: re.Match) -> str:
        nonlocal n
        v = m.group("v")
        if not _spaced_words(v):
            return m.group(0)
        if "q" in m.re.groupindex and m.string[m.end("v"):m.end("v") + 1] != m.group("q"):
            return m.group(0)
        n += 1
        s, e = m.start("v") - m.start(0), m.end("v") - m.start(0)
        return m.group(0)[:s] + marker("prose_secret") + m.group(0)[e:]

    low = text.lower()
    if "passphrase" in low or "pass phrase" in low or "pass-phrase" in low:
        text = _SPACED_PASSPHRASE.sub(repl, text)
    if _QUOTED_WORDS.search(text):   # four words in quotes are rare: a cheap look first
        text = _QUOTED_PASSPHRASE.sub(repl, text)
    return text, n


def _bare_credentials(pattern: re.Pattern, text: str) -> tuple[str, int]:
    """The `v` of every match that _bare_credential accepts; closing punctuation after it is kept."""
    n = 0

    def repl(m: re.Match) -> str:
        nonlocal n
        raw = m.group("v")
        value = raw.rstrip(".,;:)]}>*")   # `*` closes Markdown bold
        if not value or not (_bare_credential(value) or _quoted_credential(m, value) or _linked_passphrase(m, value)):
            return m.group(0)
        n += 1
        s, e = m.start("v") - m.start(0), m.end("v") - m.start(0)
        return m.group(0)[:s] + marker("prose_secret") + raw[len(value):] + m.group(0)[e:]

    return pattern.sub(repl, text), n


# The value right after the secret word, with no `is` between: "Log in with password Vx8#kQ2mZr91",
# "admin pw Ku2*oF6hZn58", "(pass Lz4^iU8jCx35)", "Vault unseal key: Nf6@tG9kYh12". Prose goes on with
# words after these words ("pass the test", "password reset flow", "use password managers", "the pass
# rate"), and code with names ("kubectl get secret db-creds-5h8t9k", "--- PASS: TestFoo2Bar3"), so the
# value is judged harder than after `is` (_bare_credential). `pass` and `pw` in capitals are not the
# words (a test runner's PASS); `password: X` and `password=X` are key_value's.
_PROSE_DIRECT = _compile(
    r"(?<![A-Za-z0-9])(?P<w>(?i:pass(?:word|wort|wd|phrase|code)s?|kennworts?|pwd|secret(?:[ _-]?key)?|token|credentials?|psk|"
    + _KEY_KINDS + r"[ _-]?key)|[Pp]ass|[Pp]w|PW)[*`]{0,3}"
    r"(?:" + _PROSE_ASIDE + "?" + _H + r"{0,8}:" + _H + r"{0,8}|" + _H + r"{1,8})[\"'`*]{0,3}(?P<v>[^\s\"'`*|][^\s\"'`|]{0,255})")
# "login admin / Pq9&eT4gXw63", "The admin login for cache2 is admin / Vq7#…": a user, then the
# password after a spaced slash; between the word and the user, whose (`for cache2`) and a linking
# verb or a colon, as after a secret word. After a verb or a colon the pair may be glued by a colon
# ("the login for cache2 is admin:Vq7#…"); glued without one it is a path or a host:port.
_LOGIN_WORD = r"(?i)(?<![A-Za-z0-9])(?:log[ -]?ins?|user(?:name)?s?|creds|credentials)[*`]{0,3}"
_LOGIN_USER = r"[\"'`]?[A-Za-z0-9._@+-]{1,64}"
_LOGIN_PASS = r"[\"'`]?(?P<v>[^\s\"'`*|][^\s\"'`|]{0,255})"
_PROSE_LOGIN = _compile(_LOGIN_WORD + r"(?:" + _PROSE_WHOSE + r"(?:" + _PROSE_IS + "|" + _H + r"{0,8}:)|" + _PROSE_IS
                        + r"|:)?" + _H + r"{1,8}" + _LOGIN_USER + _H + r"{1,8}/" + _H + r"{1,8}" + _LOGIN_PASS)
_PROSE_LOGIN_PAIR = _compile(_LOGIN_WORD + r"(?:" + _PROSE_WHOSE + r")?(?:" + _PROSE_IS + "|" + _H + r"{0,8}:)" + _H
                             + r"{1,8}" + _LOGIN_USER + r":" + _LOGIN_PASS)
# An administrator's user and a password after a spaced slash with no login word before them ("admin /
# Ad9mZx4Qp7Lw" in a question, a table cell): the password judged as right after a secret word.
_ADMIN_PAIR = _compile(r"(?<![A-Za-z0-9._@/-])(?i:admin|administrator|root)" + _H + r"{1,8}/" + _H + r"{1,8}" + _LOGIN_PASS)
# A JSON "value" (a tool call's input: `{"path": "kv/app", "value": "Gr33nT34!Kettle#77"}`, an ECS or
# Kubernetes `{"name": "DB_PASSWORD", "value": "…"}`) holding a credential-shaped string.
_JSON_VALUE = re.compile(r"\"(?:value|secret_?value|secretValue)\"" + _H + r"{0,8}:" + _H + r"{0,8}\"(?P<v>[^\s\"]{1,256})\"")
_SYMBOLS = "!@#$%^&*+=?~"
# code, not a credential: a path, a file name, an argument (`pass exc_type=ImportError`), a call or an index
_NOT_BARE = re.compile(r"[/\\()\[\]{}<>]|\.[a-z]{1,5}$|^[A-Za-z_][A-Za-z0-9_.-]*=")


def _bare_credential(value: str) -> bool:
    """A value standing right after a secret word (no `is`): a credential's character mix
    (_prose_value), with both cases or a symbol (a lower-case slug with digits is a name:
    `db-creds-5h8t9k`), not a path or a file name, and not made of words unless it holds a symbol
    (`OAuth2AccessToken`, `TestFoo2Bar3` are names; `Cl0udBurst#2031`, `Summer2024!` are passwords)."""
    v = value
    if not _prose_value(v, quoted=True) or _NOT_BARE.search(v):
        return False
    symbol = any(c in _SYMBOLS for c in v)
    mixed = any(c.isupper() for c in v) and any(c.islower() for c in v)
    if not (symbol or mixed):
        return False
    letters = [c for c in v if c.isalpha()]
    vowels = sum(c in "aeiouAEIOU" for c in letters)
    wordish = sum(len(w) for w in _WORDISH.findall(v))
    return symbol or not (vowels >= 0.3 * len(letters) and wordish >= 0.6 * len(letters))


# Hex is a secret by its context, not by its length: a 32-hex rule id, zone id or node id is kept;
# hex after a secret-ish word (`key`, `token`, `secret`, `password`, an `Authorization` header) on
# the same line, within _HEX_CONTEXT characters, is redacted.
_HEX_CONTEXT = 48
_HEX_WORDS = re.compile(r"(?i)key|token|secret|pass(?:w|$|[^a-z])|pwd|auth|credential|bearer|signature|hmac|cookie|session")


def _long_hex(text: str) -> tuple[str, int]:
    """32+ hex digits after a secret-ish word, except 40-digit ones (git commit ids) and labelled digests."""
    n = 0

    def repl(m: re.Match) -> str:
        nonlocal n
        v = m.group("v")
        if m.group("pre") or len(v) == 40 or v.isdigit() or not any(c.isdigit() for c in v):
            return m.group(0)
        line_start = text.rfind("\n", 0, m.start()) + 1
        if not _HEX_WORDS.search(text, max(line_start, m.start() - _HEX_CONTEXT), m.start()):
            return m.group(0)
        n += 1
        return marker("long_hex")

    return _LONG_HEX.sub(repl, text), n


# -- environment-style assignments and command lines ----------------------------------------------
# A variable whose *name* says it holds a secret (PGPASSWORD, MYSQLPASSWORD, DJANGO_SECRET_KEY,
# SECRET_KEY_BASE, B2_ACCOUNT_KEY, requirepass, HTTP_Passwd, clientSecret…). A bounded regex finds
# `name = value`, `export NAME=value`, `name: value`, quoted values, and config lines `name value`;
# the name's words (glued or not) and the value are judged in Python (_secret_name, _secret_value).
_ENV_ASSIGN = re.compile(
    r"(?<![A-Za-z0-9_.$-])(?P<k>[A-Za-z_][A-Za-z0-9_.-]{0,63})[\"']?" + _H + r"{0,8}[:=]" + _H + r"{0,8}"
    r"(?:\"(?P<dq>[^\"\n]{1,256})\"|'(?P<sq>[^'\n]{1,256})'|(?P<v>[^\s\"'`]{1,256}))")
_CONF_LINE = re.compile(r"(?m)^" + _H + r"{0,16}(?:export" + _H + r"+)?(?P<k>[A-Za-z_][A-Za-z0-9_.-]{0,63})" + _H
                        + r"{1,32}(?P<v>[^\s\"'`]{1,256})" + _H + r"{0,16}$")
_NAME_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z0-9]+(?![a-z])")
# a name's last word that holds a secret; glued forms are found by suffix (MYSQLPASSWORD, requirepass)
_SECRET_WORD_ENDS = ("password", "passwd", "passphrase", "pwd", "pass", "pw", "secret", "secrets", "token",
                     "tokens", "credential", "credentials", "creds", "auth", "apikey", "accesskey", "privatekey",
                     "secretkey", "accountkey", "masterkey", "signingkey", "sig")
# `…_KEY` is a secret when the word before says so (API_KEY, SECRET_KEY, STRIPE_SECRET_KEY)
_KEY_QUALIFIERS = {"api", "secret", "access", "private", "account", "master", "signing", "encryption", "client",
                   "app", "auth", "service", "webhook", "hmac", "shared", "session", "license", "sas", "storage",
                   "deploy", "admin", "root", "crypt", "jwt", "cookie", "csrf", "application", "decryption",
                   "unseal", "recovery", "write", "ingest", "ingestion"}
# words after the secret word that still name the value itself (SECRET_KEY_BASE, TOKEN_VALUE)
_VALUE_SUFFIXES = {"base", "value", "b64", "base64", "hex", "raw", "str", "plain", "cleartext", "prod", "dev",
                   "staging", "test", "live", "1", "2", "old", "new", "current", "next", "previous", "rw", "ro"}


def _name_words(name: str, plural: bool = False) -> list[str]:
    """A name's words, lower-cased, without the words after the secret word that still name the
    value (SECRET_KEY_BASE, TOKEN_VALUE); `plural`: a last word in the plural made singular
    (api_keys, passwords: a list's or a column's name)."""
    words = [w.lower() for w in _NAME_WORDS.findall(name)]
    if plural and words and len(words[-1]) > 3 and words[-1].endswith("s") and not words[-1].endswith("ss"):
        words[-1] = words[-1][:-1]
    while len(words) > 1 and words[-1] in _VALUE_SUFFIXES:
        words.pop()
    return words


def _secret_name(name: str) -> bool:
    """A variable name that says its value is a secret (not TOKEN_EXPIRY, PASSWORD_FILE, max_tokens)."""
    words = _name_words(name)
    if not words:
        return False
    last = words[-1]
    if last == "key":
        return len(words) > 1 and (words[-2] in _KEY_QUALIFIERS or words[-2].endswith(("secret", "api")))
    if last in ("max", "min", "num", "count"):
        return False
    if last == "id":   # AWS_ACCESS_KEY_ID, S3_ACCESS_KEY_ID, B2_APPLICATION_KEY_ID: the half of a pair needed first
        return words[-3:-1] in (["access", "key"], ["application", "key"])
    return last.endswith(_SECRET_WORD_ENDS) and not last.endswith(("bypass", "compass", "passthrough", "oauth"))


# `<` and `>` also as HTML writes them (`&#x3C;Buffer>`, `&lt;token&gt;`: a type or a placeholder in a doc page)
_PLACEHOLDER_RE = re.compile(r"(?i)(?:x{3,}|\.{3}|your[_-]|my[_-]|example|placeholder|changeme|change[_-]me|dummy|"
                             r"redacted|secret[_-]?here|<|>|&(?:lt|gt|#x0{0,4}3[ce]|#0{0,4}6[02]);|\{\{|\}\}|%s|%\(|"
                             r"\$\(|\$\{|^\\?\$[A-Za-z_]|^\\|\*{4,}|^-+$)")
_ENV_WORDS = {"true", "false", "yes", "no", "none", "null", "nil", "on", "off", "required", "optional", "str", "string",
              "bytes", "secretstr", "secretbytes", "int", "bool", "env", "file", "prompt", "ask", "empty", "unset",
              "password", "secret", "token", "passwordless", "disabled", "enabled"}


def _secret_value(value: str) -> bool:
    """A value worth hiding behind a secret name: 6+ characters with a digit, mixed case or a symbol —
    not a placeholder (`changeme`, `<password>`, `${VAR}`, `xxx`, `your-token`), a word, a number, a
    path or a type (`SecretStr`). A lower-case word such as a local `plotline` is kept."""
    v = value.strip()
    # a leading `*` is part of a password here (`_placeholder` reads it as Markdown bold)
    if len(v) < 6 or v.lower() in _ENV_WORDS or _placeholder(v.lstrip("*") or v) or _PLACEHOLDER_RE.search(v):
        return False
    if v.isdigit() or re.fullmatch(r"[\d.:/T Z+-]+", v) or v.startswith(("/", "~/", "./", "../", "http")):
        return False
    digit = any(c.isdigit() for c in v)
    alpha = any(c.isalpha() for c in v)
    mixed = any(c.isupper() for c in v[1:]) and any(c.islower() for c in v)
    symbol = any(c in "*@!#%^&+=?~|" for c in v)
    return (digit and alpha) or mixed or (symbol and alpha)


def _env_secrets(text: str) -> tuple[str, int]:
    n = 0

    def assign(m: re.Match) -> str:
        nonlocal n
        group = next(g for g in ("dq", "sq", "v") if m.group(g) is not None)
        raw = m.group(group)
        value = raw.rstrip(",;") if group == "v" else raw
        if not _secret_name(m.group("k")) or not _secret_value(value) or _test_verdict(m, group):
            return m.group(0)
        n += 1
        s, e = m.start(group) - m.start(0), m.start(group) - m.start(0) + len(value)
        return m.group(0)[:s] + marker("env_secret") + m.group(0)[e:]

    return _ENV_ASSIGN.sub(assign, text), n


# Kubernetes `env:` entries: `- name: CF_API_TOKEN` and, on the next line, `value: "…"`.
_K8S_ENV = re.compile(r"(?m)^" + _H + r"{0,32}-" + _H + r"+name:" + _H + r"*[\"']?(?P<k>[A-Za-z_][A-Za-z0-9_.-]{0,63})[\"']?"
                      + _H + r"*\n" + _H + r"{0,32}value:" + _H + r"*"
                      r"(?:\"(?P<dq>[^\"\n]{1,256})\"|'(?P<sq>[^'\n]{1,256})'|(?P<v>[^\s\"'`]{1,256}))")
# A .pgpass line: host:port:database:user:password
_PGPASS = re.compile(r"(?m)^" + _H + r"{0,16}[A-Za-z0-9.*_-]{1,253}:(?:\d{1,5}|\*):[^:\s]{1,63}:[^:\s]{1,63}:"
                     r"(?P<v>[^\s]{1,256})" + _H + r"{0,16}$")


def _k8s_env(text: str) -> tuple[str, int]:
    n = 0

    def repl(m: re.Match) -> str:
        nonlocal n
        group = next(g for g in ("dq", "sq", "v") if m.group(g) is not None)
        if not _secret_name(m.group("k")) or not _secret_value(m.group(group)):
            return m.group(0)
        n += 1
        s = m.start(group) - m.start(0)
        return m.group(0)[:s] + marker("env_secret") + m.group(0)[s + len(m.group(group)):]

    return _K8S_ENV.sub(repl, text), n


# -- values by their place: a YAML list under a secret's name, a table column headed by one ---------
# What a field's name says of the values under it: "value" for words that only name a value
# (password, passphrase, PSK, …), "thing" for words that also name a thing (secret, token, api key:
# a list of `secrets:` in a compose file holds their names), None for anything else.
_VALUE_NAME_ENDS = ("password", "passwort", "kennwort", "passwd", "passphrase", "passcode", "pwd", "psk")
_THING_NAME_ENDS = ("secret", "token", "credential", "apikey", "accesskey", "secretkey", "privatekey")


def _field_kind(name: str) -> str | None:
    """What a key's, a list's or a column's name says its values are: "value" when the name only
    ever names a secret's value (password, passphrase, psk, a wifi or pre-shared key: words joined by
    `-` are a passphrase there), "thing" when it names a secret that may also be a name (secret,
    token, api key), None when it names no secret."""
    words = _name_words(name, plural=True)
    if not words:
        return None
    last = words[-1]
    if last.endswith(_VALUE_NAME_ENDS) and not last.endswith(("bypass", "compass")):
        return "value"
    if last == "key" and len(words) > 1 and words[-2] in ("wifi", "fi", "wpa", "wpa2", "wlan", "network", "unseal", "recovery", "shared"):
        return "value"
    if last.endswith(_THING_NAME_ENDS) or (last == "key" and len(words) > 1 and (
            words[-2] in _KEY_QUALIFIERS or words[-2].endswith(("secret", "api")))):
        return "thing"
    return None


# where a secret is kept or how one logs in, not a secret: a password column may say so in one word
_NOT_A_VALUE = {"1password", "bitwarden", "lastpass", "keepass", "keepassxc", "keychain", "vault", "sops", "ssm",
                "doppler", "infisical", "dashlane", "keeper", "oauth", "oauth2", "oidc", "saml", "saml2", "sso", "ldap",
                "kerberos", "mtls", "n/a"}
_ENV_NAME = re.compile(r"(?<![A-Za-z0-9_${])\$?\{?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\}?")


def _field_value(kind: str, value: str) -> bool:
    """A value under a field named as a secret: for a word that only names a value, a secret's mix
    (_secret_value) with a digit, a symbol or a case change inside a word, or words joined by `-`;
    for a word that also names a thing, a credential's mix with both cases or a symbol and not made of
    words (_bare_credential), or a long run with no separator (hex): `db_password_2` and a generated
    name (`app-secrets-5h8t9k2m7c`) are names. Never words with spaces, a placeholder, a variable's
    name, a store (`1Password`), a path."""
    v = value.strip()
    if (not v or any(c.isspace() for c in v) or v.lower() in _NOT_A_VALUE or _ENV_NAME.fullmatch(v)
            or "://" in v or v.startswith(("[REDACTED:", "/", "~/", "./", "../"))):
        return False
    if kind == "value":
        if _word_passphrase(v):
            return True
        return _secret_value(v) and (any(c.isdigit() for c in v) or any(c in _SYMBOLS for c in v)
                                     or _prose_value(v, quoted=True))
    return _bare_credential(v) or (len(v) >= 16 and v.isalnum() and _prose_value(v, quoted=True))


# `api_keys:` then `- Mz9Kp2…` items (a block list at its indent or deeper), or `tokens: [a, b]` (flow)
_YAML_LIST_KEY = re.compile(r"(?m)^(?P<ind>[ \t]{0,32}(?:-[ \t]{1,8})?)[\"']?(?P<k>[A-Za-z_][A-Za-z0-9_.-]{0,63})[\"']?"
                            r"[ \t]{0,8}:[ \t]{0,8}(?:(?P<flow>\[[^\]\n]{1,1024}\])[ \t]{0,8})?(?:#[^\n]{0,256})?\r?$")
_YAML_ITEM = re.compile(r"(?P<ind>[ \t]{0,64})-[ \t]{1,8}(?:\"(?P<dq>[^\"\n]{1,256})\"|'(?P<sq>[^'\n]{1,256})'"
                        r"|(?P<v>[^\s\"'#][^\s#]{0,255}))[^\S\n]{0,16}(?:#[^\n]{0,256})?\Z")
_YAML_LIST_HINT = re.compile(r":[ \t]{0,8}(?:\[|#|\r?\n|\Z)")
_FLOW_ITEM = re.compile(r"[^,\[\]]{1,1024}")


def _yaml_secret_lists(text: str) -> tuple[str, int]:
    if not _YAML_LIST_HINT.search(text):   # a key that ends its line or opens a flow list: a literal first
        return text, 0
    n = 0
    out: list[str] = []
    pos = done = 0   # done: the end of the last list read (a key line inside it was read as an item)
    for m in _YAML_LIST_KEY.finditer(text):
        if m.start() < done:
            continue
        kind = _field_kind(m.group("k"))
        if kind is None:
            continue
        if m.group("flow"):   # `tokens: [a, b]`: each item, quoted or not
            flow, base = m.group("flow"), m.start("flow")
            for it in _FLOW_ITEM.finditer(flow):
                raw = it.group(0)
                v = raw.strip().strip("\"'")
                if v and _field_value(kind, v):
                    s = base + it.start() + raw.index(v)
                    quoted = text[s - 1:s] in ("\"", "'")
                    out += [text[pos:s], marker("env_secret") if quoted else _yaml_quoted(marker("env_secret"))]
                    pos, n = s + len(v), n + 1
            continue
        indent = len(m.group("ind").expandtabs())
        at = m.end()
        while at < len(text):
            end = _line_end(text, at + 1)
            line = text[at + 1:end]
            if line.strip() and not line.lstrip().startswith("#"):
                item = _YAML_ITEM.match(line)
                if item is None or len(item.group("ind").expandtabs()) < indent:
                    break
                g = next(g for g in ("dq", "sq", "v") if item.group(g) is not None)
                if _field_value(kind, item.group(g)):
                    s = at + 1 + item.start(g)
                    out += [text[pos:s], marker("env_secret")]
                    pos, n = at + 1 + item.end(g), n + 1
            at = end
        done = at
    out.append(text[pos:])
    return "".join(out), n


# A Markdown table: the cells of a column whose header names a secret ("| service | user | password |").
_TABLE_DELIM = re.compile(r"(?<![^\n])[ \t]{0,3}\|?(?:[ \t]{0,8}:?-++:?[ \t]{0,8}\|){1,64}(?:[ \t]{0,8}:?-++:?[ \t]{0,8})?"
                          r"\r?\Z")
_TABLE_CELL = re.compile(r"(?:\\.|[^|\\])*+")
_HEADER_NOISE = re.compile(r"\([^()]{0,80}\)|[*`_]")


def _table_cells(line: str) -> list[tuple[int, int]]:
    """The spans of a table row's cells (without the outer pipes; `\\|` is no separator)."""
    spans, pos = [], 0
    body_start = len(line) - len(line.lstrip())
    if line.startswith("|", body_start):
        pos = body_start + 1
    while pos <= len(line):
        m = _TABLE_CELL.match(line, pos)
        spans.append((m.start(), m.end()))
        pos = m.end() + 1
    if spans and not line[spans[-1][0]:].strip():
        spans.pop()   # after a closing pipe
    return spans


def _table_columns(text: str) -> tuple[str, int]:
    """In a Markdown table, each cell of a column whose header names a secret (`password`, `API key`,
    `token`, `PSK`, …: _field_kind) holding a value (_field_value); empty cells, placeholders, prose
    ("in 1Password"), variable names stay."""
    if "|" not in text or "-" not in text:
        return text, 0
    lines = text.split("\n")
    n = 0
    i = 1
    while i < len(lines):
        if "-" not in lines[i] or "|" not in lines[i] or not _TABLE_DELIM.match(lines[i]):
            i += 1
            continue
        header = lines[i - 1]
        kinds = {}
        for c, (s, e) in enumerate(_table_cells(header)):
            name = _HEADER_NOISE.sub("", header[s:e]).strip()
            if name and len(name) <= 40:
                kind = _field_kind(name)
                if kind is not None:
                    kinds[c] = kind
        pairs = len(_table_cells(header)) == 2   # a key/value table: each row's label names its value
        i += 1
        while i < len(lines) and "|" in lines[i] and lines[i].strip():
            if kinds or pairs:
                row = lines[i]
                cells = _table_cells(row)
                for c in sorted(kinds, reverse=True):
                    if c >= len(cells):
                        continue
                    s, e = cells[c]
                    cell = row[s:e]
                    inner = cell.strip().strip("`*\"'")
                    if not inner or not _field_value(kinds[c], inner):
                        continue
                    at = s + cell.index(inner)
                    row = row[:at] + marker("env_secret") + row[at + len(inner):]
                    n += 1
                cells = _table_cells(row)
                if pairs and len(cells) == 2:
                    (ls, le), (s, e) = cells
                    cell = row[s:e]
                    inner = cell.strip().strip("`*\"'")
                    if inner and _row_value(row[ls:le], inner):
                        at = s + cell.index(inner)
                        row = row[:at] + marker("env_secret") + row[at + len(inner):]
                        n += 1
                lines[i] = row
            i += 1
    return ("\n".join(lines), n) if n else (text, 0)


_LABEL_NOISE = re.compile(r"\([^()]{0,80}\)|[*`]")
# a variable's name, not a word: `DB_PASSWORD`, `PGPASSWORD`, `clientSecret`, `smtp.pass` (`secret` and
# `Pass` alone are words: judged as a column's header is)
_VARIABLE = re.compile(r"(?=[^\n]{0,63}(?:[_.-]|[a-z][A-Z])|[A-Z0-9]{3,64}\Z)[A-Za-z_][A-Za-z0-9_.-]{0,63}")
# not a value but a type or a call (`VARCHAR(64)`, `Optional[str]`) or a reference to one (`secrets.DB_PASSWORD`)
_TYPE_OR_REF = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}(?:\([^()]{0,64}\)|\[[^\[\]]{0,64}\])|(?:[A-Za-z_][A-Za-z0-9_]{0,63}\.){1,8}"
                          r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def _row_value(label: str, value: str) -> bool:
    """In a two-column table (`| name | value |`, `| Setting | Value |`), the value of a row whose label
    names a secret — the same as `KEY=value`. A variable's name that says it holds a secret
    (`REDIS_PASSWORD`, `SMTP_PASS`, `API_TOKEN`: _secret_name) names a value; words (`admin password`,
    `Wi-Fi key`, `API key (prod)`) are read as a column's header (_field_kind). The value is judged as
    under such a field (_field_value): never words with spaces, a placeholder, a variable's name, a
    store (`1Password`), a path, a provider's name (`| GITHUB_TOKEN | GitHub |`), a type or a reference."""
    name = _LABEL_NOISE.sub("", label).strip()
    if not name or len(name) > 64:
        return False
    kind = "value" if _VARIABLE.fullmatch(name) and _secret_name(name) else _field_kind(name)
    return kind is not None and not _TYPE_OR_REF.fullmatch(value.strip()) and _field_value(kind, value)


def _conf_lines(text: str) -> tuple[str, int]:
    """`requirepass X`, `HTTP_Passwd  X`, a `.netrc` `password X` line: a config line of name and value."""
    n = 0

    def repl(m: re.Match) -> str:
        nonlocal n
        if not _secret_name(m.group("k")) or not _secret_value(m.group("v")):
            return m.group(0)
        n += 1
        s = m.start("v") - m.start(0)
        return m.group(0)[:s] + marker("env_secret") + m.group(0)[s + len(m.group("v")):]

    return _CONF_LINE.sub(repl, text), n


# Passwords on command lines: `curl -u user:pw`, `mysql -pPW`, `sshpass -p PW`, `redis-cli -a PW`, and a
# `.netrc` line `machine h login u password PW`. The command is named first, then its flag on the line.
_CLI_PASSWORD = _compile(
    r"(?<![A-Za-z0-9_-])(?:curl\b[^\n]{0,512}?(?<!\S)(?:-u|--user)(?:" + _H + r"+|=)[\"']?[^\s:\"']{0,128}:"
    r"|(?:mysql|mysqldump|mysqladmin|mysqlimport|mariadb|mariadb-dump)\b[^\n]{0,512}?(?<!\S)-p[\"']?(?=[^\s\"'])"
    r"|sshpass\b[^\n]{0,64}?(?<!\S)-p" + _H + r"*[\"']?"
    r"|redis-cli\b[^\n]{0,512}?(?<!\S)-a" + _H + r"+[\"']?"
    r"|(?:machine|login)" + _H + r"[^\n]{0,256}?(?<![A-Za-z0-9_-])password" + _H + r"+[\"']?"
    r"|(?:docker|podman|nerdctl|buildah|skopeo|oras|helm)\b[^\n]{0,64}?\blogin\b[^\n]{0,512}?(?<!\S)-p(?:" + _H
    + r"+|=)[\"']?"
    # openssl's `-k PW` (enc) and `-pass pass:PW` / `-passin pass:PW` / `-passout pass:PW`
    r"|openssl\b[^\n]{0,512}?(?<!\S)(?:-k" + _H + r"+[\"']?|-pass(?:in|out)?" + _H + r"+[\"']?pass:)"
    r")(?P<v>[^\s\"']{1,256})")
# `htpasswd -b FILE USER PW` / `htpasswd -nb USER PW` (batch mode: the password on the command line);
# the arguments are read in Python (_htpasswd_batch). `.htpasswd` (a file's name) is not the command.
_HTPASSWD_CMD = _compile(r"(?<![A-Za-z0-9_.-])htpasswd(?P<args>(?:" + _H + r"{1,8}[^\s|;&<>]{1,256}){2,12})")
_SHELL_ARG = re.compile(r"\"[^\"\s]{0,256}\"|'[^'\s]{0,256}'|[^\s]{1,256}")
# A password piped to a login that reads it from stdin (`echo PW | docker login -u bob --password-stdin`,
# also `printf '%s' PW | …`), or given as a here-string (`… --password-stdin <<< PW`).
_STDIN_PASSWORD = _compile(
    r"(?<![A-Za-z0-9_-])(?:echo|printf)" + _H + r"{1,8}(?:-[neE]{1,3}" + _H + r"{1,8})?"
    r"(?:[\"']%s(?:\\n)?[\"']" + _H + r"{1,8})?[\"']?(?P<v>[^\s\"'|;&]{1,256})[\"']?" + _H + r"{0,8}\|"
    # a login's --password-stdin, or sudo's -S (it reads the password from stdin)
    r"(?:[^\n]{0,256}?--password-stdin\b|" + _H + r"{0,8}sudo\b[^\n|]{0,64}?(?<!\S)"
    r"(?:-[AbEeHiKklnPsVv]{0,8}S[AbEeHiKklnPsVv]{0,8}|--stdin)(?![^\s]))"   # -S among flags that take no value
    r"|--password-stdin" + _H + r"{0,8}<<<" + _H + r"{0,8}[\"']?(?P<h>[^\s\"']{1,256})")
_AZURE = re.compile(r"(?i)(?<![A-Za-z0-9])(?:(?:Shared)?Access(?:Key)?|AccountKey|SharedAccessKey)=(?P<v>[A-Za-z0-9+/]{16,256}={0,2})"
                    r"|(?<=[?&;])sig=(?P<s>[A-Za-z0-9%+/]{16,256}(?:=|%3[Dd]){0,2})")
_PASSWORD_HASH = re.compile(r"\$(?:apr1|2[aby]|5|6|argon2(?:id|i|d))\$[./A-Za-z0-9$=,+]{8,256}|\{S?SHA\}[A-Za-z0-9+/]{20,256}={0,2}")


def _stdin_passwords(text: str) -> tuple[str, int]:
    """The password piped or given as a here-string to a `--password-stdin` login, or piped to `sudo -S`."""
    if "--password-stdin" not in text and "sudo" not in text:
        return text, 0
    n = 0

    def repl(m: re.Match) -> str:
        nonlocal n
        g = "v" if m.group("v") is not None else "h"
        if not _secret_value(m.group(g)):
            return m.group(0)
        n += 1
        s = m.start(g) - m.start(0)
        return m.group(0)[:s] + marker("cli_password") + m.group(0)[s + len(m.group(g)):]

    return _STDIN_PASSWORD.sub(repl, text), n


def _htpasswd_batch(text: str) -> tuple[str, int]:
    """The password of `htpasswd -b[c…] FILE USER PW` and `htpasswd -nb USER PW`: its options come
    first (`-C`/`-r` take a number), then the file (not with `-n`), the user and the password."""
    if "htpasswd" not in text:
        return text, 0
    n = 0

    def repl(m: re.Match) -> str:
        nonlocal n
        args = list(_SHELL_ARG.finditer(m.group("args")))
        flags, i = "", 0
        while i < len(args) and args[i].group(0).startswith("-") and len(args[i].group(0)) > 1:
            flags += args[i].group(0)[1:]
            i += 2 if args[i].group(0) in ("-C", "-r") else 1
        if "b" not in flags or "D" in flags or "v" in flags:
            return m.group(0)
        at = i + (1 if "n" in flags else 2)
        if at >= len(args):
            return m.group(0)
        a = args[at]
        s, e = a.span()
        if a.group(0)[:1] in "\"'":
            s, e = s + 1, e - 1
        value = m.group("args")[s:e]
        if not _secret_value(value):
            return m.group(0)
        n += 1
        off = m.start("args") - m.start(0)
        return m.group(0)[:off + s] + marker("cli_password") + m.group(0)[off + e:]

    return _HTPASSWD_CMD.sub(repl, text), n


# A plain htpasswd line `user:password` (Apache accepts plain text on some systems), only where the
# text says it is an htpasswd file: in a code block whose info string, whose line before it, or whose
# earlier line (a comment, `cat .htpasswd`) names htpasswd. Anywhere else `name:value` is a host and
# a port, a key and a value, a time.
_FENCE = re.compile(r"[ \t]{0,3}(?P<f>`{3,}|~{3,})(?P<info>[^\n]{0,256})")
_HTPASSWD_LINE = re.compile(r"[ \t]{0,16}[A-Za-z_][A-Za-z0-9._@-]{0,63}:(?P<v>[^\s:]{1,256})[^\S\n]{0,16}\Z")


def _htpasswd_plain(text: str) -> tuple[str, int]:
    if "htpasswd" not in text.lower():
        return text, 0
    lines = text.split("\n")
    n = 0
    fence = None       # the open fence's marker
    evidence = False   # the open block is an htpasswd file
    before = ""        # the last non-blank line outside a block
    for i, line in enumerate(lines):
        if "\x00" in line:   # a boundary between texts redacted together (ingest/conversation.py)
            fence, evidence, before = None, False, ""
            continue
        f = _FENCE.match(line)
        if fence is None:
            if f is not None:
                fence = f.group("f")
                evidence = "htpasswd" in f.group("info").lower() or "htpasswd" in before.lower()
            elif line.strip():
                before = line
            continue
        if f is not None and f.group("f").startswith(fence) and not f.group("info").strip():
            fence, evidence, before = None, False, ""
            continue
        if "htpasswd" in line.lower():
            evidence = True
            continue
        m = _HTPASSWD_LINE.match(line) if evidence else None
        if m is not None and not m.group("v").startswith(("[REDACTED:", "$")) and _secret_value(m.group("v")):
            lines[i] = line[:m.start("v")] + marker("password_hash") + line[m.end("v"):]
            n += 1
    return ("\n".join(lines), n) if n else (text, 0)


def _azure(text: str) -> tuple[str, int]:
    """AccountKey=… / SharedAccessKey=… of a connection string, and a SAS token's sig=…"""
    n = 0

    def repl(m: re.Match) -> str:
        nonlocal n
        g = "v" if m.group("v") is not None else "s"
        n += 1
        s = m.start(g) - m.start(0)
        return m.group(0)[:s] + marker("azure") + m.group(0)[s + len(m.group(g)):]

    return _AZURE.sub(repl, text), n


# -- a Kubernetes Secret's values -----------------------------------------------------------------
# The values under `data:` (base64) and `stringData:` of a manifest whose `kind` is `Secret`, in the
# same mapping: `kubectl get secret -o yaml` writes `data:` before `kind:`, `kubectl get secrets -o
# yaml` lists them as the items of `items:`. A certificate (`tls.crt`, `ca.crt`) stays, and so do
# placeholders and templates (`{{ .Values.password | b64enc }}`, `<base64>`, `${DB_PASSWORD}`).
_YAML_LINE = re.compile(r"(?P<ind>[ \t]{0,64})(?P<item>-[ \t]{1,8})?")
_KIND_SECRET = re.compile(r"kind:[ \t]{0,8}(?P<q>[\"']?)Secret(?P=q)[ \t]{0,8}(?:#[^\n]{0,256})?")
_SECRET_DATA_KEY = re.compile(r"(?:data|stringData):[ \t]{0,8}(?:#[^\n]{0,256})?")
_DATA_ENTRY = re.compile(r"(?P<k>\"[^\"\n]{1,253}\"|'[^'\n]{1,253}'|[A-Za-z0-9._-]{1,253}):(?:[ \t]+(?P<v>[^\n]*))?")
_BLOCK_SCALAR = re.compile(r"[|>][-+0-9]{0,2}[ \t]{0,8}(?:#[^\n]{0,256})?")
_B64_CERT = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"   # base64 of "-----BEGIN CERTIFICATE-----"


def _yaml_shape(line: str) -> tuple[int, bool]:
    """(the column its key, its text, starts at; whether it starts a list item)."""
    m = _YAML_LINE.match(line)
    return m.end(), m.group("item") is not None


def _yaml_edge(line: str) -> bool:
    """A line no mapping goes on over: a document marker, a code fence, a boundary between texts
    redacted together (ingest/conversation.py)."""
    s = line.strip()
    return s in ("---", "...") or s.startswith(("```", "~~~")) or "\x00" in line


def _yaml_skip(line: str) -> bool:
    s = line.strip()
    return not s or s.startswith("#")


def _secret_data_value(value: str) -> bool:
    v = value.strip("\"'")
    return (len(v) >= 4 and not _placeholder(value) and not _PLACEHOLDER_RE.search(v) and not v.startswith(_B64_CERT)
            and v.lower() not in _ENV_WORDS)


def _k8s_secret_values(lines: list[str], start: int, end: int, parent: int) -> tuple[int, int]:
    """Redact the entries of the `data:`/`stringData:` mapping whose lines begin at `start` (its key
    at column `parent`); returns where it ends and how many values were replaced."""
    n, k, col = 0, start, None
    while k <= end:
        line = lines[k]
        if _yaml_skip(line):
            k += 1
            continue
        ind, item = _yaml_shape(line)
        if ind <= parent or _yaml_edge(line):
            break
        col = ind if col is None else col
        m = _DATA_ENTRY.fullmatch(line, ind) if ind == col and not item else None
        k += 1
        if m is None:
            continue
        raw = (m.group("v") or "").split(" #", 1)[0].rstrip()
        if _BLOCK_SCALAR.fullmatch(raw):   # the value is the lines below, more indented
            body = []
            while k <= end and (not lines[k].strip() or _yaml_shape(lines[k])[0] > col) and not _yaml_edge(lines[k]):
                if lines[k].strip():
                    body.append(k)
                k += 1
            first = lines[body[0]].strip() if body else ""
            if not body or first.startswith(("-----BEGIN CERTIFICATE", "[REDACTED:", _B64_CERT)) \
                    or all("{{" in lines[b] for b in body):   # a certificate, done already, a template
                continue
            for b in body:
                bat = len(lines[b]) - len(lines[b].lstrip())
                lines[b] = lines[b][:bat] + marker("k8s_secret")
            n += 1
        elif raw and _secret_data_value(raw):
            s = m.start("v")
            if raw[0] in "\"'" and raw[-1] == raw[0] and len(raw) > 1:
                s, raw = s + 1, raw[1:-1]
            lines[k - 1] = line[:s] + marker("k8s_secret") + line[s + len(raw):]
            n += 1
    return k, n


def _k8s_secrets(text: str) -> tuple[str, int]:
    if "Secret" not in text or "ata:" not in text:
        return text, 0
    lines = text.split("\n")
    n = 0
    done: dict[int, int] = {}   # a key column → the last line of the last mapping read at it (each is read once)
    for i, line in enumerate(lines):
        if "Secret" not in line:
            continue
        col, item = _yaml_shape(line)
        if _KIND_SECRET.fullmatch(line, col) is None or done.get(col, -1) >= i:
            continue
        lo = hi = i   # the mapping holding `kind: Secret`: its lines at that column or deeper
        j = i - 1
        while not item and j >= 0 and not _yaml_edge(lines[j]):
            if not _yaml_skip(lines[j]):
                jcol, jitem = _yaml_shape(lines[j])
                if jcol < col:
                    break
                lo = j
                if jcol == col and jitem:   # the list item it is in starts here
                    break
            j -= 1
        j = i + 1
        while j < len(lines) and not _yaml_edge(lines[j]):
            if not _yaml_skip(lines[j]):
                jcol, jitem = _yaml_shape(lines[j])
                if jcol < col or (jcol == col and jitem):
                    break
                hi = j
            j += 1
        done[col] = hi
        k = lo
        while k <= hi:
            kcol, _ = _yaml_shape(lines[k])
            if kcol == col and _SECRET_DATA_KEY.fullmatch(lines[k], kcol):
                k, m = _k8s_secret_values(lines, k + 1, hi, col)
                n += m
            else:
                k += 1
    return ("\n".join(lines), n) if n else (text, 0)


# A BitLocker recovery key: 48 digits in eight groups of six, joined by `-`.
_BITLOCKER = re.compile(r"(?<![0-9-])[0-9]{6}(?:-[0-9]{6}){7}(?![0-9-])")
_BITLOCKER_PART = re.compile(r"-[0-9]{6}-")
# Substrings every _VENDOR match contains (the pattern is case-sensitive, so are they)
_VENDOR_HINTS = ("glsa_", "glc_", "glpat-", "AIza", "npm_", "pypi-", "hf_", "_v1_", "SG.", "shp", "dckr_pat_", "hvs.",
                 "hvb.", "whsec_", "AGE-SECRET-KEY-", "GOOG1", "rmb_", "cio", "_srv_", "_server_", "_secret_", "_live_", "_prod_",
                 "_pat_", "_sdk_")
_vendor_prefixed = _sub(_VENDOR, "vendor_token", 0, lambda v: _looks_secret(v))
_bitlocker = _sub(_BITLOCKER, "vendor_token")


def _vendor(text: str) -> tuple[str, int]:
    n = k = 0
    if any(h in text for h in _VENDOR_HINTS):
        text, n = _vendor_prefixed(text)
    if _BITLOCKER_PART.search(text):   # a literal `-` first: far cheaper than the whole pattern
        text, k = _bitlocker(text)
    return text, n + k


# Order matters: specific shapes first, so their labels win over the generic ones.
_AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA")
_KEY_WORDS = ("pass", "pwd", "secret", "token", "apikey", "api_key", "api-key", "api key", "accesskey", "access_key",
              "access-key", "access key", "privatekey", "private_key", "private-key", "private key", "authkey",
              "auth_key", "auth-key", "auth key", "credential", "kennwort", "psk", "preshared", "pre_shared",
              "pre-shared")
FAMILIES: tuple[_Family, ...] = (
    _Family("private_key", "PEM/OpenSSH/PGP private-key blocks, also in base64 (a kubeconfig's client-key-data)",
            _multi(_private_keys, _b64_private_keys), ("PRIVATE KEY", _B64_PEM_START)),
    _Family("k8s_secret", "the values under data: and stringData: of a Kubernetes Secret (kind: Secret; "
            "kubectl get secret -o yaml), certificates kept", _k8s_secrets, ("Secret",)),
    _Family("url_credentials", "the password in scheme://user:password@host",
            _sub(_URL_CREDS, "url_credentials", "pw", lambda v: not _placeholder(v)), ("://",)),
    _Family("github", "GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)", _sub(_GITHUB, "github"),
            ("gh", "github_pat_")),
    _Family("slack", "Slack tokens (xox?-, xapp-) and webhook URLs",
            _multi(_sub(_SLACK_TOKEN, "slack"), _sub(_SLACK_HOOK, "slack", "v")), ("xox", "xapp-", "hooks.slack.com")),
    # no hints: a secret access key may stand alone (the regex skips inside any longer run at once)
    _Family("aws", "AWS access key ids (AKIA…), the 40-char secret key on the same line, and a random-looking "
            "40-char secret key standing alone", _aws),
    _Family("telegram", "Telegram bot tokens (123456789:AA…)", _sub(_TELEGRAM, "telegram"), (":",)),
    _Family("vendor_token", "Grafana, GitLab, Google, npm, PyPI, Hugging Face, DigitalOcean, SendGrid, "
            "Shopify, Docker Hub, Vault tokens, Stripe webhook secrets (whsec_), age secret keys, Google Cloud "
            "Storage HMAC access ids (GOOG1…), remembrancer's own HTTP tokens (rmb_…), crates.io tokens (cio…), a product's own prefixed keys (xyz_srv_…, xyz_live_…), BitLocker "
            "recovery keys (eight groups of six digits)", _vendor, _VENDOR_HINTS + ("-",)),
    _Family("sk_key", "sk-… / sk_live_… / rk_… API keys (OpenAI, Anthropic, Stripe)",
            _sub(_SK, "sk_key", 0, lambda v: any(c.isdigit() for c in v)), ("sk-", "sk_", "rk-", "rk_")),
    _Family("jwt", "JSON Web Tokens (eyJ….eyJ….…)", _jwt, ("eyJ",)),
    _Family("bearer", "Authorization: Bearer/Basic/Token credentials; Basic <base64 of user:password> anywhere",
            _multi(_sub(_BEARER, "bearer", "v", lambda v: _looks_secret(v, 16)),
                   _sub(_AUTH_HEADER, "bearer", "v", lambda v: not _placeholder(v)),
                   _sub(_BASIC, "bearer", "v", _basic_credentials)), ("bearer", "authorization", "basic")),
    _Family("cookie", "session cookies: the values of Cookie: / Set-Cookie: headers and of curl -b / --cookie "
            "(names and attributes stay)", _cookies, ("ookie", "curl")),
    _Family("key_value", "values of password/secret/token/api_key keys (key=value, key: value, --token v)",
            _key_value, _KEY_WORDS),
    _Family("azure", "Azure AccountKey=/SharedAccessKey= of a connection string, a SAS token's sig=", _azure,
            ("accountkey=", "accesskey=", "sig=")),
    _Family("cli_password", "passwords on command lines: curl -u user:pw, mysql -pPW, sshpass -p, redis-cli -a, "
            "docker login -p PW, echo PW | docker login --password-stdin, .netrc password",
            _multi(_sub(_CLI_PASSWORD, "cli_password", "v", _secret_value), _stdin_passwords, _htpasswd_batch),
            ("curl", "mysql", "mariadb", "sshpass", "redis-cli", "password", "login", "openssl", "htpasswd", "sudo")),
    _Family("env_secret", "values of variables named as secrets (PGPASSWORD=, SECRET_KEY_BASE=, export API_KEY=, "
            "DB_PASSWORD: …, requirepass …, a Kubernetes env entry, a .pgpass line), the items of a YAML list and the "
            "cells of a Markdown table's column named so (api_keys:, | password |) and the value of a two-column table's row "
            "named so (| REDIS_PASSWORD | … |)",
            _multi(_env_secrets, _conf_lines, _k8s_env, _sub(_PGPASS, "env_secret", "v", _secret_value),
                   _yaml_secret_lists, _table_columns),
            ("pass", "pwd", "pw", "psk", "secret", "token", "key", "cred", "auth", "sig", ":")),
    _Family("password_hash", "password hashes ($apr1$ htpasswd, bcrypt $2y$, crypt $6$, argon2, {SSHA}) and a plain "
            "password in a code block holding an htpasswd file",
            _multi(_sub(_PASSWORD_HASH, "password_hash"), _htpasswd_plain),
            ("$apr1$", "$2a$", "$2b$", "$2y$", "$5$", "$6$", "$argon2", "{SSHA}", "{SHA}", "htpasswd")),
    _Family("long_hex", "32+ hex digits after a secret-ish word (key, token, secret, password, Authorization) — "
            "not bare ids, not 40-digit git commit ids, not sha256:… digests", _long_hex),
    # last: a value every family before it recognises keeps that family's label
    _Family("prose_secret", "a credential named in prose: \"the password is X\", \"password for the admin "
            "account: X\", \"the root password on edge3 is still X\", \"the login for cache2 is admin / X\" — when X "
            "has a credential's character mix",
            _prose_secrets, ("pass", "pwd", "pw", "PW", "secret", "token", "cred", "key", "psk", "kennwort", "value",
                             "Value", "log", "user", "admin", "root")),
)
FAMILY_NAMES: tuple[str, ...] = tuple(f.name for f in FAMILIES)


# -- the secret-hash file ----------------------------------------------------------------------

@dataclass(frozen=True)
class SecretHashes:
    path: Path
    salt: bytes                  # bytes.fromhex(<the hex on the salt line>)
    digests: dict[str, str]      # sha256 hex → name
    file_sha256: str

    def digest(self, value: str) -> str:
        return salted_sha256(self.salt, value)


def salted_sha256(salt: bytes, value: str) -> str:
    """The one hash both sides use: sha256(salt_bytes + utf-8 value), lowercase hex."""
    return hashlib.sha256(salt + value.encode("utf-8")).hexdigest()


# Candidate tokens for hash matching (all within one line).
_WS_TOKEN = re.compile(r"\S+")
_DELIMS = re.compile(r"[\"'`,;()\[\]{}<>|]+")
_INNER = re.compile(r"[=:@/&?#]")
_EDGE_OPEN = "\"'`([{<*"
_EDGE_CLOSE = "\"'`)]}>.,;:!?*"


def _candidates(line: str) -> set[tuple[int, int]]:
    spans: set[tuple[int, int]] = set()

    def add(s: int, e: int) -> None:
        if e - s >= MIN_SECRET_CHARS:
            spans.add((s, e))

    for m in _WS_TOKEN.finditer(line):
        s, e = m.span()
        add(s, e)
        tok = m.group(0)
        a, b = 0, len(tok)
        while a < b and tok[a] in _EDGE_OPEN:
            a += 1
        while b > a and tok[b - 1] in _EDGE_CLOSE:
            b -= 1
        add(s + a, s + b)
        pos = s
        for piece in _DELIMS.split(tok):
            ps = line.index(piece, pos) if piece else pos
            pe = ps + len(piece)
            pos = pe
            add(ps, pe)
            for sep in "=:":  # the value part of key=value / key: value
                k = piece.find(sep)
                if k >= 0:
                    add(ps + k + 1, pe)
            start = ps
            for im in _INNER.finditer(piece):
                add(start, ps + im.start())
                start = ps + im.end()
            add(start, pe)
    return spans


# -- the redactor ------------------------------------------------------------------------------

SERVED_CHARS = 8192   # served strings longer than this are redacted each time, not kept
SERVED_KEPT = 4096    # served strings kept with their redacted form (cleared whole when full)
PATHS_KEPT = 65536    # corpus paths kept with redact_path's verdict (cleared whole when full)


class Redactor:
    """Pattern families (all but `disable`d ones) plus an optional secret-hash file."""

    def __init__(self, families: tuple[str, ...] | None = None, hashes: SecretHashes | None = None,
                 deny: tuple[str, ...] = ()):
        names = FAMILY_NAMES if families is None else tuple(families)
        unknown = [n for n in names if n not in FAMILY_NAMES]
        if unknown:
            raise ValueError(f"unknown redaction family {unknown[0]!r}")   # [redact] disable is checked first
        self.families = tuple(f for f in FAMILIES if f.name in names)
        self.hashes = hashes
        self.deny = tuple(deny)
        self._deny_res = [_glob_regex(g) for g in self.deny]
        self._served: dict[str, str] = {}   # redact_obj's strings, redacted (this policy's, so never stale)
        self._paths: dict[str, tuple[str, dict[str, int]]] = {}   # redact_path's verdicts: every run walks them all

    def __reduce__(self):  # by family names: the families' functions are closures (indexer/ingest/sandbox.py)
        return (Redactor, (tuple(f.name for f in self.families), self.hashes, self.deny))

    # -- text --
    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        """Text with every secret replaced by [REDACTED:<label>], and the count per label."""
        counts: dict[str, int] = {}
        if self.hashes is not None:
            text = self._redact_hashes(text, counts)
        low: list[str] = []

        def lowered() -> str:  # once per family that changed the text, and only if a hint needs it
            if not low or low[0][0] is not text:
                low[:] = [(text, text.lower())]
            return low[0][1]

        for fam in self.families:
            if not fam.may_match(text, lowered):
                continue
            before = text
            text, n = fam.apply(text)
            if n:
                text, k = _elsewhere(before, text, fam.name)
                counts[fam.name] = counts.get(fam.name, 0) + n + k
        if counts and text.lstrip("\ufeff").startswith("---"):
            text = _yaml_safe_front_matter(text)
        return text, counts

    def redact_text(self, text: str) -> str:
        return self.redact(text)[0]

    def redact_obj(self, obj):
        """Every string in a JSON-like structure (a response) redacted; other values as they are.
        Answers repeat their strings (paths, breadcrumbs, the same sections' snippets), so each
        string up to SERVED_CHARS is redacted once per policy (up to SERVED_KEPT of them)."""
        if isinstance(obj, str):
            if len(obj) > SERVED_CHARS:
                return self.redact(obj)[0]
            done = self._served.get(obj)
            if done is None:
                if len(self._served) >= SERVED_KEPT:
                    self._served.clear()
                done = self._served[obj] = self.redact(obj)[0]
            return done
        if isinstance(obj, dict):
            return {k: self.redact_obj(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.redact_obj(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self.redact_obj(v) for v in obj)
        return obj

    def echoed_secrets(self, obj) -> list[str]:
        """The pieces of the strings in `obj` (a request's parameters) that redaction removes,
        longest first: a reply that echoes a piece of a query (a word it did not find, a value an
        error names) must not carry `hunter2xyz` just because `password=` was cut off it."""
        found: set[str] = set()
        for value in _strings(obj):
            redacted = self.redact(value)[0]
            if redacted == value:
                continue
            kept = {line[s:e] for line in redacted.split("\n") for s, e in _candidates(line)}
            for line in value.split("\n"):
                found.update(line[s:e] for s, e in _candidates(line) if line[s:e] not in kept)
        return sorted(found, key=len, reverse=True)

    def redact_echoes(self, obj, secrets: list[str]):
        """`obj` with every occurrence of the given pieces replaced by [REDACTED:query]."""
        if not secrets:
            return obj
        if isinstance(obj, str):
            for piece in secrets:
                if piece in obj:
                    obj = obj.replace(piece, marker("query"))
            return obj
        if isinstance(obj, dict):
            return {k: self.redact_echoes(v, secrets) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return type(obj)(self.redact_echoes(v, secrets) for v in obj)
        return obj

    def _redact_hashes(self, text: str, counts: dict[str, int]) -> str:
        hashes = self.hashes
        out = []
        for line in text.split("\n"):
            hits: list[tuple[int, int, str]] = []
            for s, e in _candidates(line):
                name = hashes.digests.get(hashes.digest(line[s:e]))
                if name is not None:
                    hits.append((s, e, name))
            if hits:
                # longest first, then non-overlapping, then replace right to left
                hits.sort(key=lambda h: (h[0] - h[1], h[0]))
                chosen: list[tuple[int, int, str]] = []
                for h in hits:
                    if all(h[1] <= c[0] or h[0] >= c[1] for c in chosen):
                        chosen.append(h)
                for s, e, name in sorted(chosen, reverse=True):
                    line = line[:s] + marker(name) + line[e:]
                    counts[name] = counts.get(name, 0) + 1
            out.append(line)
        return "\n".join(out)

    # -- paths --
    def redact_path(self, path: str) -> tuple[str, dict[str, int]]:
        """A path (or a message naming one) with the secrets it holds replaced, and the count per
        family. A file or folder name holding a token (`memory/ghp_….md`) would be stored, listed and
        served as it is: such a file is not indexed, and every message about it names it redacted.
        The path is looked at as written and with `/` and `.` read as spaces, so an extension or a
        folder does not hide the token next to it (`memory/<40-char key>.md`)."""
        known = self._paths.get(path)
        if known is None:
            if len(self._paths) >= PATHS_KEPT:
                self._paths.clear()
            known = self._paths[path] = self._redact_path(path)
        return known[0], dict(known[1])

    def _redact_path(self, path: str) -> tuple[str, dict[str, int]]:
        shown, counts = self.redact(path)
        spaced = _PATH_SPACES.sub(" ", path)
        red, more = self.redact(spaced)
        if not more:
            return shown, counts
        label = min(more)
        for piece in removed_pieces(spaced, red):
            if piece in shown:
                shown = shown.replace(piece, marker(label))

        def holds(p: str) -> bool:
            return bool(self.redact(p)[1] or self.redact(_PATH_SPACES.sub(" ", p))[1])

        if holds(shown):   # a piece not found as it was removed: each folder or name holding one goes whole
            shown = "/".join(marker(label) if holds(p) else p for p in shown.split("/"))
            if holds(shown):
                shown = marker(label)
        for k, v in more.items():
            counts[k] = max(counts.get(k, 0), v)
        return shown, counts

    def denied(self, *paths: str) -> bool:
        """A path (corpus path or root-relative) matched by a `[redact] deny` glob: never indexed or read."""
        return any(r.fullmatch(p) for r in self._deny_res for p in paths if p)

    # -- identity --
    def policy_fingerprint(self) -> str:
        """Changes whenever what gets redacted changes: code version, enabled families, hash file."""
        key = {"version": REDACTOR_VERSION, "families": [f.name for f in self.families],
               "hashes": self.hashes.file_sha256 if self.hashes else None}
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()

    def describe(self) -> dict:
        return {"ok": True, "families": [f.name for f in self.families],
                "disabled": [n for n in FAMILY_NAMES if n not in {f.name for f in self.families}],
                "secret_hashes": str(self.hashes.path) if self.hashes else None,
                "hash_count": len(self.hashes.digests) if self.hashes else 0,
                "deny": list(self.deny), "fingerprint": self.policy_fingerprint()[:16]}


MARKER_RE = re.compile(r"\[REDACTED:[A-Za-z0-9_.-]+\]")
_PATH_SPACES = re.compile(r"[/\\.\n]")
PROPAGATED_CHARS = 8   # a value found by its context is looked for elsewhere in the text from this length


def removed_pieces(old: str, new: str) -> list[str]:
    """The pieces of the line `old` that markers replaced in `new` (the text between markers is
    copied from `old`, so it is found there in order)."""
    pieces: list[str] = []
    kept = MARKER_RE.split(new)
    pos = len(kept[0])
    for i, literal in enumerate(kept[1:], 1):
        last = i == len(kept) - 1
        at = len(old) - len(literal) if last else old.find(literal, pos + 1) if literal else pos + 1
        if at < pos:
            break
        piece = old[pos:at]
        if piece and not MARKER_RE.fullmatch(piece):
            pieces.append(piece)
        pos = at + len(literal)
    return pieces


def removed_secrets(before: str, after: str) -> set[str]:
    """The values redaction took out of `before` (as `after` shows it, line by line) that look like
    secrets on their own (a `plotline:plotline` password must not take the project's name with it),
    or are a passphrase of words (`correct-horse-battery-staple`, `glacier orbit velvet thunder`)."""
    values: set[str] = set()
    for a, b in zip(before.split("\n"), after.split("\n")):
        if a != b and b.strip():
            for piece in removed_pieces(a, b):
                # `NAME=value` taken out whole: the value is the secret, wherever else it stands alone
                value = re.split(r"\s*[=:]\s*", piece, maxsplit=1)[-1].strip("\"'`")
                values.update(v for v in (piece, value)
                              if _looks_secret(v, PROPAGATED_CHARS) or _word_passphrase(v) or _spaced_words(v))
    return values


def redact_values(text: str, values, label: str) -> tuple[str, int]:
    """Every whole occurrence of these values replaced by [REDACTED:label] (longest first)."""
    n = 0
    for v in sorted(values, key=len, reverse=True):
        text, k = re.subn(r"(?<![A-Za-z0-9])" + re.escape(v) + r"(?![A-Za-z0-9])", marker(label), text)
        n += k
    return text, n


def _elsewhere(before: str, after: str, label: str) -> tuple[str, int]:
    """A value a family found by its context (`POSTMARK_TOKEN=v`) is a secret wherever else the text
    holds it (`printf … 'v' >> .env`): every other whole occurrence is redacted too."""
    return redact_values(after, {v for v in removed_secrets(before, after) if v in after}, label)


# A marker where a YAML plain scalar starts (`[REDACTED:github]: x`, `token: [REDACTED:x] more`) reads
# as a flow sequence: the front matter would no longer parse and the record would lose its aliases
# and IPs. Such a scalar (key, or value to the end of the line) is single-quoted; a quoted one is not
# touched again, so redaction stays idempotent. Every repeat is bounded: the pattern is matched at
# line starts, but must stay linear from any position.
_FM_MARKER_SCALAR = re.compile(
    r"(?P<pre>[ \t]{0,64}(?:-[ \t]{1,8}){0,8})(?P<key>\[REDACTED:[A-Za-z0-9_.-]{1,40}\][^:\n]{0,256}?)(?=:(?:[ \t]|$))"
    r"|(?P<vpre>[ \t]{0,64}(?:-[ \t]{1,8}){0,8}[^\s:#'\"\[{][^:\n]{0,256}?:[ \t]{1,64})(?=\[REDACTED:)"
    # a list item (`api_keys:` then `- [REDACTED:env_secret]`), to a comment or the end of the line
    r"|(?P<lpre>[ \t]{0,64}(?:-[ \t]{1,8}){1,8})(?=\[REDACTED:)")
_FM_COMMENT = re.compile(r"(?<![ \t])[ \t]++#")


def _yaml_quoted(scalar: str) -> str:
    return "'" + scalar.replace("'", "''") + "'"


def _yaml_safe_front_matter(text: str) -> str:
    lines = text.split("\n")
    if lines[0].lstrip("\ufeff").strip() != "---":
        return text
    for i in range(1, min(len(lines), 1000)):
        line = lines[i]
        if line.strip() in ("---", "..."):
            break
        if "[REDACTED:" not in line:
            continue
        m = _FM_MARKER_SCALAR.match(line)
        if m is None:
            continue
        if m.group("key") is not None:
            lines[i] = m.group("pre") + _yaml_quoted(m.group("key")) + line[m.end("key"):]
        elif m.group("lpre") is not None:
            rest = line[m.end():]
            c = _FM_COMMENT.search(rest)
            cut = c.start() if c else len(rest.rstrip())
            lines[i] = m.group("lpre") + _yaml_quoted(rest[:cut]) + rest[cut:]
        else:  # the value, to the end of the line
            lines[i] = m.group("vpre") + _yaml_quoted(line[m.end():].rstrip())
    return "\n".join(lines)


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


DEFAULT_REDACTOR = Redactor()


def redact(text: str) -> tuple[str, dict[str, int]]:
    """Default families, no hash file (the engine uses its configured Redactor)."""
    return DEFAULT_REDACTOR.redact(text)


# -- documents that must not be indexed at all ---------------------------------------------------

_TRUE = {"true", "yes", "on", "1"}
_FM_SECRET_LINE = re.compile(r"(?im)^secret[ \t]*:[ \t]*['\"]?(?:true|yes|on|1)['\"]?[ \t]*(?:#.*)?$")


def is_secret_document(front_matter: object, text: str) -> bool:
    """Front matter `secret: true` — also when the YAML around it is broken (fail closed)."""
    if isinstance(front_matter, dict) and "secret" in front_matter:
        v = front_matter["secret"]
        return v is True or (isinstance(v, (str, int)) and str(v).strip().lower() in _TRUE)
    lines = text.lstrip("\ufeff").split("\n", 200)
    if not lines or lines[0].strip() != "---":
        return False
    for line in lines[1:]:
        if line.strip() in ("---", "..."):
            break
        if _FM_SECRET_LINE.match(line):
            return True
    return False
