"""Secrets never reach the index or an answer (indexer/redact.py, cli/secrets_cmd.py).

The leak tests plant known fake secrets — in many shapes, plus one that only the secret-hash
file knows — in a fixture corpus, index it with a real engine (tiny model), and then look for
the secrets' bytes everywhere: every file under the data dir (raw and lower-cased, whole and
in fragments, plus tantivy's term dictionary), every tool output, every warning and log line.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import logging
import random
import re
import string
from pathlib import Path

import pytest

from remembrancer.indexer.answers import DocumentList, Freshness, Outline, Page, SearchAnswer, StatusAnswer
from remembrancer.cli import secrets_cmd as secrets_cli
from remembrancer.indexer import api
from remembrancer.indexer.search import reader
from remembrancer.indexer.config import Config, load_config, make_roots
from remembrancer.indexer.engine import Engine
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.redact import DEFAULT_REDACTOR, FAMILY_NAMES, Redactor, is_secret_document, redact, salted_sha256
from remembrancer.indexer.redact_policy import (ENV_SECRET_HASHES, RedactionError, RedactionPolicy, load_hash_file,
                                                parse_hash_file)
from remembrancer.indexer.search.answer import SearchRequest, search
from remembrancer.indexer.terms import elide
from remembrancer.mcp_server import render
from tests.support.cli import run_cli
from tests.support.corpus import write, write_tree

# -- planted fake secrets (random, seeded: never issued by anyone) ------------------------------------

_rng = random.Random(20310506)
ALNUM = string.ascii_letters + string.digits


def _rand(n: int, alphabet: str = ALNUM) -> str:
    while True:
        v = "".join(_rng.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in v) and (alphabet != ALNUM or (any(c.isupper() for c in v) and any(c.islower() for c in v))):
            return v


GITHUB = "ghp_" + _rand(36)
AWS_ID = "AKIA" + _rand(16, string.ascii_uppercase + string.digits)
AWS_SECRET = _rand(18) + "/" + _rand(10) + "+" + _rand(10)
PEM_LINES = [_rand(64, ALNUM + "+/") for _ in range(3)]
URL_PW = "Ur1" + _rand(13)
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJ" + _rand(24) + "." + _rand(32, ALNUM + "_-")
SLACK_PATH = "T0" + _rand(7, string.ascii_uppercase + string.digits) + "/B0" + \
    _rand(7, string.ascii_uppercase + string.digits) + "/" + _rand(24)
PASSWORD = _rand(18)
TELEGRAM = "7" + _rand(8, string.digits) + ":AA" + _rand(33, ALNUM + "_-")
SK_KEY = "sk-proj-" + _rand(40)
HEX_KEY = _rand(64, "0123456789abcdef")
BEARER = _rand(32)
CLI_TOKEN = _rand(29, string.ascii_uppercase + string.digits)
ENV_PGPASSWORD = _rand(14)
ENV_DJANGO = _rand(20) + "*" + _rand(6)          # a `*` inside the value
ENV_MYSQL = _rand(10) + "@" + _rand(6)           # an `@` inside the value
REDIS_PW = _rand(16)                             # redis://:pw@host (empty user)
AT_PW = _rand(8) + "@" + _rand(8)                # a URL password holding `@`
CURL_PW = _rand(12)
RULE_ID = "cbe6f4c310ee3c096d03da5b7e897125"     # a bare 32-hex id: not a secret, must stay readable
# Written against Chinese text, with no space or punctuation between (Python's `\b` saw no boundary there)
CJK_GITHUB = "ghp_" + _rand(36)
CJK_AWS_ID = "AKIA" + _rand(16, string.ascii_uppercase + string.digits)
CJK_TELEGRAM = "6" + _rand(8, string.digits) + ":AA" + _rand(33, ALNUM + "_-")
# Named in prose, given to a registry login, or standing alone in a table (no key id on the line)
PROSE_PW = _rand(16)                             # "The root password is …"
PROSE_LABEL_PW = _rand(16)                       # "Password for the admin account: …"
PROSE_API_KEY = _rand(20)                        # "The api key for stripe is …"
DOCKER_PW = _rand(14)                            # docker login -p …
DOCKER_STDIN_PW = _rand(14)                      # echo … | docker login --password-stdin
AWS_ALONE = _rand(20) + "/" + _rand(9) + "+" + _rand(9)   # 40 characters, alone in a table cell
# Named right after the secret word (no `is`), and session cookies in `curl -v` output
BARE_PW = {"bare_with_pw": "Vx8#kQ2mZr91", "bare_use_pw": "Hb3$wN7pLt44", "bare_login": "Pq9&eT4gXw63",
           "bare_pw": "Ku2*oF6hZn58", "bare_pass": "Lz4^iU8jCx35", "bare_unseal": "Nf6@tG9kYh12"}
# Named in everyday prose: whose, a linking verb with an adverb, a user and a password, a German word, a wifi key
LINKED_PW = {"linked_login": "Vq7#pLm2$Rt9", "linked_root": "Xc5$vBn8^Mm1", "linked_passwort": "Kj7&hGf4%Dd3",
             "linked_wifi": "Hy3#uJi9(Ol0"}
COOKIES = {"cookie_sessionid": "k3j9x8v2m4n7b1q5w0e6r8t2y4u7i9o1",
           "cookie_laravel": "eyJpdiI6IkZxV3JtN2c9PSIsInZhbHVlIjoiQmx1ZVNreSJ9",
           "cookie_connect": "s%3Aq8Zr4WmX2pLk9TnV.Yb7Hc3Jd5Kf1Lg8Mh2Nj"}
# A token in a file's NAME: the file is not indexed, and every message names it redacted
NAMED_TOKEN = "ghp_" + _rand(36)
NAMED_FILE = f"memory/{NAMED_TOKEN}.md"
# No recognisable shape at all (lower-case letters only): only the hash file can catch it.
HASH_ONLY = "lanternquietharborwick"
HASH_ONLY_NAME = "vault_unseal"

PATTERN_SECRETS = {
    "github": GITHUB, "aws_id": AWS_ID, "aws_secret": AWS_SECRET, "pem": PEM_LINES[1], "url_pw": URL_PW,
    "jwt": JWT, "slack": SLACK_PATH, "password": PASSWORD, "telegram": TELEGRAM, "sk": SK_KEY,
    "hex": HEX_KEY, "bearer": BEARER, "cli_token": CLI_TOKEN, "env_pgpassword": ENV_PGPASSWORD,
    "env_django": ENV_DJANGO, "env_mysql": ENV_MYSQL, "redis_pw": REDIS_PW, "at_pw": AT_PW, "curl_pw": CURL_PW,
    "cjk_github": CJK_GITHUB, "cjk_aws_id": CJK_AWS_ID, "cjk_telegram": CJK_TELEGRAM,
    "prose_pw": PROSE_PW, "prose_label_pw": PROSE_LABEL_PW, "prose_api_key": PROSE_API_KEY, "docker_pw": DOCKER_PW,
    "docker_stdin_pw": DOCKER_STDIN_PW, "aws_alone": AWS_ALONE, "named_token": NAMED_TOKEN, **BARE_PW, **COOKIES,
    **LINKED_PW,
}
ALL_SECRETS = {**PATTERN_SECRETS, "hash_only": HASH_ONLY}

CORPUS = {
    "journal/2031/2031-05-06.md": f"""# 2031-05-06

## 09:40 runner registration

Registered the new runner with the token Tobi pasted:

```bash
GH_TOKEN={GITHUB} gh api -X POST orgs/acme/actions/runners/registration-token --jq .token
./config.sh --url https://github.com/acme --token {CLI_TOKEN} \\
  --name gha-runner-02 --unattended
```

## 10:20 offsite bucket

```bash
mc alias set wasabi https://s3.eu-central-2.wasabisys.com {AWS_ID} {AWS_SECRET}
```

Commit bb0a6cbe05dd9b72a1f1a0803d7fdcdf2f3ad60c fixed the mirror job; WAL segment
0000000100000C1E00000042 was the last one archived.

## 11:00 grafana

```bash
curl -H "Authorization: Bearer {BEARER}" https://grafana.example.com/api/annotations
```
""",
    "hosts/db9.md": f"""---
host: db9
tags: [postgres]
---

# db9 — replica

## Connection

The app connects with postgres://app:{URL_PW}@db9.internal:5432/shop and the old libpq string was
`primary_conninfo = 'host=10.0.0.9 user=replicator password={PASSWORD}'`.

## Deploy key

-----BEGIN OPENSSH PRIVATE KEY-----
{PEM_LINES[0]}
{PEM_LINES[1]}
{PEM_LINES[2]}
-----END OPENSSH PRIVATE KEY-----

## After the key

The key above was rotated; the unseal word {HASH_ONLY} was typed at the console.
""",
    "services/alerts.md": f"""# Alerting

## Slack

```yaml
receivers:
  - name: slack-ops
    slack_configs:
      - api_url: https://hooks.slack.com/services/{SLACK_PATH}
```

## Bots

Telegram bot `{TELEGRAM}` posts to #ops; the session JWT was {JWT} for a while.
OpenAI key: {SK_KEY}
Signing key (hex): {HEX_KEY}
""",
    # only the hash file knows this one, in several shapes: heading, prose, quoted, key=value, URL
    "runbooks/vault/unseal.md": f"""# Unseal vault

## Unseal with {HASH_ONLY}

Type `{HASH_ONLY}` at the prompt, or run `vault operator unseal "{HASH_ONLY}"`.
Config line: unseal_word={HASH_ONLY}; mirror at https://vault.internal/{HASH_ONLY}/status.

## Afterwards

Check `vault status`.
""",
    # broken YAML front matter holding a secret: the parser's warning must not quote it
    "memory/broken-front-matter.md": f"""---
title: [unterminated {HASH_ONLY}
note: {HASH_ONLY}: {HASH_ONLY}
---

# Broken front matter

A lesson about front matter.
""",
    # environment-style assignments and command lines (issue 31)
    "services/app-env.md": f"""# app .env

```sh
PGPASSWORD={ENV_PGPASSWORD} psql -h db9 shop
export DJANGO_SECRET_KEY='{ENV_DJANGO}'
MYSQLPASSWORD={ENV_MYSQL}
REDIS_URL=redis://:{REDIS_PW}@cache1:6379/0
BROKER_URL=amqp://app:{AT_PW}@mq1:5672/
curl -u deploy:{CURL_PW} https://ci.example.com/api
```

Cloudflare rule {RULE_ID} blocks the scanner.
""",
    "memory/plain.md": "# Plain lesson\n\nNothing secret here: restart pgbouncer after editing its ini file.\n",
    # prose, registry logins, a secret access key alone in a table (and words and ids that must stay)
    "runbooks/registry.md": f"""# Registry and admin access

## Docker registry

```sh
docker login registry.example.com -u deploy -p {DOCKER_PW}
echo {DOCKER_STDIN_PW} | docker login ghcr.io -u deploy --password-stdin
```

## Accounts

The root password is {PROSE_PW} until the rotation.
Password for the admin account: {PROSE_LABEL_PW}
The api key for stripe is {PROSE_API_KEY}.
The password is stored in Vault and rotated monthly.

## CI credentials

| name | secret access key |
|---|---|
| ci | {AWS_ALONE} |

Commit a31cb421f5f2c5c61558f7d08f91b9a294ae0617 moved the registry mirror.
""",
    "runbooks/relay-access.md": f"""# Relay access

1. Log in with password {BARE_PW["bare_with_pw"]} and check the relay.
2. Use password {BARE_PW["bare_use_pw"]} for the admin UI.
3. login admin / {BARE_PW["bare_login"]}
4. admin pw {BARE_PW["bare_pw"]}
5. ssh root@edge1 (pass {BARE_PW["bare_pass"]})
6. Vault unseal key: {BARE_PW["bare_unseal"]}
7. The admin login for cache2 is admin / {LINKED_PW["linked_login"]} so be careful.
8. The root password on edge3 is still {LINKED_PW["linked_root"]}.
9. Passwort: {LINKED_PW["linked_passwort"]}
10. the wifi key is {LINKED_PW["linked_wifi"]}

Pass the smoke test before the password reset flow; use password managers.

## Debugging the login loop

```
$ curl -v -H 'Cookie: sessionid={COOKIES["cookie_sessionid"]}' https://app.example.com/admin/
< Set-Cookie: laravel_session={COOKIES["cookie_laravel"]}; path=/
< Set-Cookie: connect.sid={COOKIES["cookie_connect"]}; Path=/; HttpOnly
```
""",
    "journal/2031/2031-05-08.md": f"""# 2031-05-08 交接

## 令牌轮换

新的令牌{CJK_GITHUB}已经写进持续集成，旧令牌作废。备份任务的密钥{CJK_AWS_ID}只给它用。告警机器人令牌{CJK_TELEGRAM}不要外传。
""",
}


NAMED_WARNING = "memory/[REDACTED:github].md: not indexed (its name holds a secret: github); rename the file"


def fragments(secret: str) -> set[str]:
    """The secret and the alphanumeric runs of it a tokenizer could store (8+ chars)."""
    out = {secret}
    out.update(p for p in re.split(r"[^A-Za-z0-9]+", secret) if len(p) >= 8)
    return out


def hash_file_text(salt_hex: str, entries: list[tuple[str, str]]) -> str:
    return f"salt {salt_hex}\n" + "".join(f"{salted_sha256(bytes.fromhex(salt_hex), v)}\t{n}\n" for n, v in entries)


def leaks_in_text(text: str, secrets: dict[str, str] = ALL_SECRETS) -> list[str]:
    low = text.lower()
    return sorted({k for k, s in secrets.items() for frag in fragments(s) if frag.lower() in low})


def leaks_in_dir(d: Path, secrets: dict[str, str] = ALL_SECRETS) -> list[str]:
    found = []
    for p in sorted(d.rglob("*")):
        if not p.is_file():
            continue
        data = p.read_bytes()
        low = data.lower()
        for k, s in secrets.items():
            if any(f.encode() in data or f.lower().encode() in low for f in fragments(s)):
                found.append(f"{k} in {p.relative_to(d)}")
    return found


def leaks_in_terms(engine, secrets: dict[str, str] = ALL_SECRETS) -> list[str]:
    """tantivy's term dictionary may be compressed on disk: ask it for every term it holds."""
    searcher = engine.core.fulltext.index.searcher()
    terms = set()
    for field in ("path", "heading", "body", "stem", "ident"):
        terms.update(t for t, _ in searcher.terms_with_prefix(field, ""))
    frags = {k: {f.lower() for f in fragments(s)} for k, s in secrets.items()}
    return sorted({k for k, fs in frags.items() for t in terms if len(t) >= 8 for f in fs if t in f or f in t})


# -- fixtures -----------------------------------------------------------------------------------------

@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("REMEMBRANCER_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.delenv(ENV_SECRET_HASHES, raising=False)
    return tmp_path


@pytest.fixture
def corpus(env):
    return write_tree(env / "notes", CORPUS)


@pytest.fixture
def hashes(env):
    p = env / "keys" / "secret-hashes.txt"
    p.parent.mkdir()
    p.write_text(hash_file_text("a1b2c3d4e5f60718293a4b5c6d7e8f90", [(HASH_ONLY_NAME, HASH_ONLY)]))
    return p


def make_engine(root: Path, embedder, **redact_kw) -> Engine:
    return Engine(Config(roots=make_roots([root]), redact=RedactionPolicy(**redact_kw)), embedder=embedder)


def without_echo(text: str, query: str) -> str:
    """The text with the caller's query taken out: whole, and as messages quote it cut short."""
    for form in (query, *(elide(query, w)[:-1] for w in (40, 80) if len(query) > w)):
        text = text.replace(form, "<query>")
    return text


def tool_outputs(engine) -> list[str]:
    """What an agent can get out of the index: searches (also for the secrets themselves), reads
    (whole, per section, per line range, every small page), outlines, lists, status — as JSON and
    as the MCP server renders them."""
    outs: list[str] = []

    def keep(obj, text: str | None = None):
        outs.append(json.dumps(obj, ensure_ascii=False))
        if text is not None:
            outs.append(text)

    fresh = lambda view: Freshness("fresh")  # noqa: E731
    queries = ["runner registration token", "offsite bucket keys", "db9 connection password",
               "deploy key", "slack webhook", "telegram bot", "unseal vault", "hex signing key",
               "grafana bearer", *ALL_SECRETS.values(), "REDACTED"]
    for q in queries:
        for exact in (False, True):
            out = api.dispatch_read(engine, "search", {"query": q, "limit": 10, "exact": exact, "explain": True}, fresh)
            text = render.search_text(SearchAnswer.parse(out))
            # An answer may echo the caller's own query (a bare token has no shape to recognise),
            # whole or cut short; what must never appear is stored text — so the echo is taken out
            # before looking.
            outs.append(without_echo(json.dumps(out, ensure_ascii=False), q))
            outs.append(without_echo(text, q))
    for doc in api.dispatch_read(engine, "list", {}, fresh)["documents"]:
        path = doc["path"]
        out = api.dispatch_read(engine, "read", {"path": path}, fresh)
        keep(out, render.read_text(Page.parse(out)))
        outline = api.dispatch_read(engine, "read", {"path": path, "outline": True}, fresh)
        keep(outline, render.outline_text(Outline.parse(outline)))
        for s in outline["sections"]:
            keep(api.dispatch_read(engine, "read", {"path": path, "heading": s["heading"]}, fresh))
            keep(api.dispatch_read(engine, "read", {"path": path, "lines": s["lines"]}, fresh))
        offset = 0
        while True:  # paging can never reassemble a removed region
            page = api.dispatch_read(engine, "read", {"path": path, "offset": offset, "max_chars": 100}, fresh)
            keep(page)
            if not page["truncated"]:
                break
            offset = page["next_offset"]
    lst = api.dispatch_read(engine, "list", {}, fresh)
    keep(lst, render.list_text(DocumentList.parse(lst)))
    st = StatusAnswer(index=engine.view().status(), daemon=None).to_json()
    keep(st, render.status_text(StatusAnswer.parse(st)))
    return outs


# -- the leak tests -----------------------------------------------------------------------------------

def test_no_planted_secret_reaches_the_index_tool_output_or_logs(corpus, hashes, env, tiny_embedder,
                                                                 caplog, capsys, monkeypatch):
    monkeypatch.setenv(ENV_SECRET_HASHES, str(hashes))
    caplog.set_level(logging.DEBUG)
    write(corpus, NAMED_FILE, "# Runner notes\n\nThe runner registration moved to the new org.\n")
    engine = make_engine(corpus, tiny_embedder)
    report = engine.refresh()
    assert report.added == len(CORPUS) and report.skipped == 1   # the file named by a token is not indexed
    assert NAMED_WARNING in report.warnings

    data_dir = env / "data"
    assert list(data_dir.rglob("catalog.sqlite3")), "the index was written where we look"
    assert leaks_in_dir(data_dir) == []
    assert leaks_in_terms(engine) == []

    outs = tool_outputs(engine)
    assert leaks_in_text("\n".join(outs)) == []
    # the redaction really happened (markers are served) and answers still work
    joined = "\n".join(outs)
    for label in ("github", "aws", "private_key", "url_credentials", "jwt", "slack", "key_value",
                  "telegram", "sk_key", "long_hex", "bearer", "env_secret", "cli_password", "prose_secret",
                  "cookie", HASH_ONLY_NAME):
        assert f"[REDACTED:{label}]" in joined, label
    assert "bb0a6cbe05dd9b72a1f1a0803d7fdcdf2f3ad60c" in joined      # commit ids stay readable
    assert "a31cb421f5f2c5c61558f7d08f91b9a294ae0617 moved" in joined
    assert "The password is stored in Vault and rotated monthly." in joined   # prose about a password stays
    assert "Pass the smoke test before the password reset flow; use password managers." in joined
    assert "< Set-Cookie: connect.sid=[REDACTED:cookie]; Path=/; HttpOnly" in joined   # names and attributes stay
    assert NAMED_WARNING in joined                                    # status lists the skipped file, redacted
    assert f"Cloudflare rule {RULE_ID} blocks" in joined             # a bare 32-hex id too
    assert "0000000100000C1E00000042" in joined
    hits = search(engine.view(), SearchRequest("unseal vault", limit=3)).to_json()["results"]
    assert hits and hits[0]["path"] == "runbooks/vault/unseal.md"

    logs = "\n".join(r.getMessage() for r in caplog.records) + "\n".join(report.warnings)
    captured = capsys.readouterr()
    assert leaks_in_text(logs + captured.out + captured.err + json.dumps(engine.view().status().to_json())) == []
    assert any("secret(s) redacted" in w for w in report.warnings)
    assert any("invalid YAML front matter" in w for w in report.warnings)  # that warning exists, and is clean
    engine.close()


def test_policy_change_scrubs_what_was_stored_before(corpus, hashes, env, tiny_embedder, monkeypatch):
    """Index without the hash file: the hash-only secret is stored (and the scan finds it — the
    probe works). Configure the file: every document is read again and no file under the data
    dir, no term, no answer holds it any more."""
    engine = make_engine(corpus, tiny_embedder)
    engine.refresh()
    only = {"hash_only": HASH_ONLY}
    assert leaks_in_dir(env / "data", only), "positive control: the scan sees stored text"
    assert leaks_in_terms(engine, only)
    assert leaks_in_dir(env / "data", PATTERN_SECRETS) == []  # patterns were on all along
    engine.close()

    monkeypatch.setenv(ENV_SECRET_HASHES, str(hashes))
    engine = make_engine(corpus, tiny_embedder)
    before = tiny_embedder.texts_embedded
    report = engine.refresh()
    assert report.updated == len(CORPUS)                     # a policy change re-reads everything …
    assert tiny_embedder.texts_embedded - before < 15        # … but re-embeds only what changed
    assert leaks_in_dir(env / "data") == []
    assert leaks_in_terms(engine) == []
    assert leaks_in_text("\n".join(tool_outputs(engine))) == []

    again = engine.refresh()                                 # same policy: nothing to do
    assert (again.updated, again.added, again.embedded) == (0, 0, 0)
    engine.close()


def test_daemon_answers_and_log_hold_no_secret(tmp_path, tiny_model_dir):
    """The real daemon process, over its socket, with its log captured."""
    from tests.support.daemon import DaemonProc

    root = write_tree(tmp_path / "notes", CORPUS)
    write(root, NAMED_FILE, "# Runner notes\n\nThe runner registration moved to the new org.\n")
    hashes = tmp_path / "hashes.txt"
    hashes.write_text(hash_file_text("00112233445566778899aabbccddeeff", [(HASH_ONLY_NAME, HASH_ONLY)]))
    d = DaemonProc(tmp_path, [root], tiny_model_dir)
    d.env[ENV_SECRET_HASHES] = str(hashes)
    d.start()
    try:
        # (an answer may echo the caller's own query: that echo is taken out before looking)
        answers = [without_echo(json.dumps(d.search(q, limit=10), ensure_ascii=False), q)
                   for q in ["unseal vault", "db9 connection", *ALL_SECRETS.values()]]
        answers += [json.dumps(d.call("read", path=p), ensure_ascii=False) for p in CORPUS]
        answers.append(json.dumps(d.call("list"), ensure_ascii=False))
        answers.append(json.dumps(d.call("status"), ensure_ascii=False))
        assert leaks_in_text("\n".join(answers)) == []
        assert "[REDACTED:vault_unseal]" in "\n".join(answers)
    finally:
        d.stop()
    assert leaks_in_text(d.log.read_text(errors="replace")) == []
    assert leaks_in_dir(tmp_path / "data") == []


# -- memory-dev's eight planted secrets (copied from ../shared/eval/memory-dev-secrets.md) ------------

MEMORY_DEV_SNIPPETS = {
    "journal/2031/2031-05-06.md": """```bash
GH_TOKEN=ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d gh api -X POST orgs/lumenfold/actions/runners/registration-token --jq .token
cd /opt/actions-runner-02
./config.sh --url https://github.com/lumenfold --token AZDOC9IS0J8HT9LGMXG9EDN581U33 \\
  --name gha-runner-02 --labels lumen-build --unattended --replace
sudo ./svc.sh start
```
""",
    "journal/2031/2031-05-10.md": """```bash
mc alias set wasabi https://s3.eu-central-2.wasabisys.com AKIAXTPLPFT75V2SEH60 vRt/1fjORS+6ilI8ihN5KXSc7Tvo+hBKqFYY+kv5
mc mirror --overwrite --remove local/pgbackrest wasabi/lumenfold-pgbackrest-offsite
```

First mirror: 1 h 50 min for 390 GB. Keys also in 1Password › Infra › "wasabi offsite".
Mirror job fixed in `infra@27b3047e482ee73b60fcda01b2bf95c6e473401c`.
""",
    "journal/2031/2031-05-20.md": """```bash
curl -s -X POST https://grafana.lumenfold.io/api/annotations \\
  -H "Authorization: Bearer glsa_zJr4i0B3JrTAwR4y9ojfljoQoaF1Llqs_04dba41e" \\
  -H 'Content-Type: application/json' \\
  -d '{"time":1936972920000,"timeEnd":1937036520000,"tags":["loki","incident"],"text":"lumen-web logs lost"}'
```
""",
    "hosts/mon1.md": """```yaml
receivers:
  - name: slack-ops
    slack_configs:
      - api_url: https://hooks.slack.com/services/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
        channel: '#ops-alerts'
        send_resolved: true
```
""",
    "services/k3s.md": """```yaml
architecture: replication
auth:
  enabled: true
  password: MdgaKjIg8xNbe3nNyjOq
master:
  persistence:
    size: 8Gi
```
""",
    "runbooks/postgres/rebuild-replica.md": """```ini
primary_conninfo = 'host=10.40.1.11 port=5432 user=replicator password=9wMxEhh2FDEEtfjgVv application_name=pg2'
```
""",
}
MEMORY_DEV_SECRETS = [
    "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d", "AZDOC9IS0J8HT9LGMXG9EDN581U33", "AKIAXTPLPFT75V2SEH60",
    "vRt/1fjORS+6ilI8ihN5KXSc7Tvo+hBKqFYY+kv5", "glsa_zJr4i0B3JrTAwR4y9ojfljoQoaF1Llqs_04dba41e",
    "T04LUMEN1/B07ALRT9Q/53X83RZJzzzzgEOzdmenCkhv", "MdgaKjIg8xNbe3nNyjOq", "9wMxEhh2FDEEtfjgVv",
]
# Decoys from the same corpus: redacting these would damage answers without protecting anything.
MEMORY_DEV_DECOYS = """Deployed infra@bb0a6cbe05dd9b72a1f1a0803d7fdcdf2f3ad60c and 4595dcb49c75bcc316dff27d1648a6d85cfed9da,
then 27b3047e482ee73b60fcda01b2bf95c6e473401c and a31cb421f5f2c5c61558f7d08f91b9a294ae0617 (pipeline@3f2a9c1).
WAL 0000000100000C1E00000042 at C1E/42000000, then 0000000100000BF300000021.
./config.sh --url https://github.com/lumenfold --token <REGISTRATION_TOKEN> \\
kubectl -n data exec redis-node-0 -c redis -- redis-cli -a "$REDIS_PASSWORD" info memory
     "redis-cli -a \\"\\$REDIS_PASSWORD\\" --scan --pattern ':1:tile:*' | xargs -n 500 redis-cli unlink"
   The password comes from `~postgres/.pgpass`.
auth_query = SELECT usename, passwd FROM pgbouncer.get_auth($1)
Credentials live in 1Password (vault "Infra"); root user in 1Password › Infra › "minio1 root".
agent was not restarted; if it shows `Node password rejected`, someone re-installed it
stored it in 1Password and in the repository secret:
Never paste a password, token or key. Write where it lives instead.
- **Software:** MinIO `RELEASE.2031-03-19T21-07-44Z`, `mc` client on the host
Metrics: scraped by Prometheus with a bearer token generated by `mc admin prometheus generate`.
  -d '{"time":1936972920000,"timeEnd":1937036520000}'
notAfter=Jun 30 09:12:44 2032 GMT; k3s certificate 2031-06-30T09:12:44Z
secret: true
"""


def test_default_families_catch_all_eight_memory_dev_secrets():
    for rel, text in MEMORY_DEV_SNIPPETS.items():
        out, counts = redact(text)
        assert counts, rel
        assert out.count("\n") == text.count("\n"), rel
    everything = "\n".join(redact(t)[0] for t in MEMORY_DEV_SNIPPETS.values())
    for s in MEMORY_DEV_SECRETS:
        assert s not in everything, s
        for frag in fragments(s):
            assert frag not in everything, (s, frag)
    assert "infra@27b3047e482ee73b60fcda01b2bf95c6e473401c" in everything
    assert "1Password › Infra" in everything
    assert "--name gha-runner-02" in everything


def test_memory_dev_decoys_stay_readable():
    out, counts = redact(MEMORY_DEV_DECOYS)
    assert out == MEMORY_DEV_DECOYS, counts


# -- pattern families ---------------------------------------------------------------------------------

# base64 of a PEM private key (a kubeconfig's client-key-data) and of an EC key's first line
B64_KEY = ("LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcEFJQkFBS0NBUUVBdGVzdGtleWRhdGFmb3JxYXRlc3RpbmdvbmNseWFi"
           "Y2RlZmdoaWprbG1ub3AK")
B64_EC_KEY = "LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCk1IY0NBUUVFSUZha2VFY0tleUZvclRlc3RzT25seQ=="

@pytest.mark.parametrize("family,text,secret", [
    ("url_credentials", "DATABASE_URL=postgres://app:Hx7kLm2pQr9s@db1:5432/shop", "Hx7kLm2pQr9s"),
    ("url_credentials", "git clone https://deploy:gAbc123XyZ987@git.example.com/r.git", "gAbc123XyZ987"),
    ("github", "token github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv here", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv"),
    ("github", "ghs_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "ghs_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    # glued after `_` (a file name a commit changed, an env-ish name): the token's prefix is its boundary
    ("github", "changed: deploy_ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8.txt", "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ("slack", "SLACK_BOT=xoxb-2810384756-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "xoxb-2810384756-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("aws", "aws_access_key_id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("telegram", "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw9 ok", "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw9"),
    ("vendor_token", "GITLAB=glpat-xY7zA1bC2dE3fG4hI5jK", "glpat-xY7zA1bC2dE3fG4hI5jK"),
    ("vendor_token", "key AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    ("sk_key", "OPENAI_KEY: sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34", "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34"),
    ("sk_key", "stripe sk_live_51HabcdEFGhijKLmnop1234", "sk_live_51HabcdEFGhijKLmnop1234"),
    ("sk_key", "anthropic sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2", "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"),
    ("jwt", "cookie=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ("bearer", "curl -H 'Authorization: Bearer 7f3kQ9zLm2Xw8Rt4Yp6Vb1Nc'", "7f3kQ9zLm2Xw8Rt4Yp6Vb1Nc"),
    ("bearer", "Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", "dXNlcjpwYXNzd29yZDEyMw=="),
    ("key_value", "export API_KEY=Zq8Wx7Ec6Rv5Tb4", "Zq8Wx7Ec6Rv5Tb4"),
    ("key_value", '{"client_secret": "Jk3Lm9Np2Qr8St"}', "Jk3Lm9Np2Qr8St"),
    ("key_value", "**Password:** Tr0ub4dor&3x", "Tr0ub4dor&3x"),
    ("key_value", "mysql --password=Hunter2Hunter2 -u root", "Hunter2Hunter2"),
    ("key_value", "X-Api-Key: 9f8e7d6cBA54", "9f8e7d6cBA54"),
    ("key_value", "Support portal only. api key: Zq8vLm3XpR7tKw2NbY5c", "Zq8vLm3XpR7tKw2NbY5c"),   # prose: a space
    ("key_value", "Stripe API Key = Zq8vLm3XpR7tKw2NbY5e", "Zq8vLm3XpR7tKw2NbY5e"),
    ("key_value", "vault login -method=userpass --token s9Xk2Lm8Qw3Er7", "s9Xk2Lm8Qw3Er7"),
    ("long_hex", "encryption_key_material 4f1d9c2b7a6e8f3d0c5b1a9e7d3f2c8b6a4e0d9c1b7f5a3e8d2c6b0a9f4e1d7c3", "4f1d9c2b7a6e8f3d0c5b1a9e7d3f2c8b6a4e0d9c1b7f5a3e8d2c6b0a9f4e1d7c3"),
    ("long_hex", "Authorization: 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    # issue 31: environment-style assignments, glued names, quoted values, values with `*` / `@`
    ("env_secret", "PGPASSWORD=Xk9mQ2vLp7 psql -h db1", "Xk9mQ2vLp7"),
    ("env_secret", "export SECRET_KEY=django-insecure-8f#k2l!x9", "django-insecure-8f#k2l!x9"),
    ("env_secret", "DJANGO_SECRET_KEY='q7w*e8r9t0yUi'", "q7w*e8r9t0yUi"),
    ("env_secret", "SECRET_KEY_BASE=3b8f0c2a9d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c", "3b8f0c2a9d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c"),
    ("env_secret", 'STRIPE_SECRET_KEY="Zr8Qp2Lm5Nx7Vb3"', "Zr8Qp2Lm5Nx7Vb3"),
    ("env_secret", "JWT_SECRET_KEY: Zr8*hunter2x", "Zr8*hunter2x"),
    ("env_secret", "MYSQLPASSWORD=Sup3r*Secret", "Sup3r*Secret"),
    ("env_secret", "DB_PASSWORD=ab*Cd9xyz@1", "ab*Cd9xyz@1"),
    ("env_secret", "PGPASSWORD=*Xk9mQ2vLp psql", "*Xk9mQ2vLp"),
    ("env_secret", "B2_ACCOUNT_KEY=K005qY8wN3rT6vZ1xC4bM7kP0sD9fG2", "K005qY8wN3rT6vZ1xC4bM7kP0sD9fG2"),
    ("env_secret", "requirepass iprZXVS0K6MeTa8Ke4yMz2EE", "iprZXVS0K6MeTa8Ke4yMz2EE"),
    ("env_secret", "    HTTP_Passwd         uEy9OL43bDDL5tFd%iqCoJ", "uEy9OL43bDDL5tFd%iqCoJ"),
    ("env_secret", "  password Qw9rTy7uIo", "Qw9rTy7uIo"),   # a .netrc line of its own
    ("env_secret", "env:\n  - name: CF_API_TOKEN\n    value: \"pyvYlJ7-0tfsmRdhMNsYffAmo-yL92im9hqiAEMd\"",
     "pyvYlJ7-0tfsmRdhMNsYffAmo-yL92im9hqiAEMd"),
    ("env_secret", "db.example.com:5432:*:admin:GwosMIAVgKrH2Gp7cK1A", "GwosMIAVgKrH2Gp7cK1A"),   # .pgpass
    ("url_credentials", "REDIS_URL=redis://:Hx7kLm2pQr9s@cache1:6379/0", "Hx7kLm2pQr9s"),
    ("url_credentials", "rediss://:Hx7kLm2pQr9s@cache1:6380", "Hx7kLm2pQr9s"),
    ("url_credentials", "postgres://app:pa@ssWord9Xyz@db1/shop", "pa@ssWord9Xyz"),
    ("vendor_token", "STRIPE_WEBHOOK=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLtgP", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLtgP"),
    ("vendor_token", "AGE-SECRET-KEY-1QQPX4V9ZVR3N8NFJ0Y6W7PEAK8V6Q0TLMQ2W5C4A3HM7U9FJXGQSQ8Z3ZR",
     "AGE-SECRET-KEY-1QQPX4V9ZVR3N8NFJ0Y6W7PEAK8V6Q0TLMQ2W5C4A3HM7U9FJXGQSQ8Z3ZR"),
    ("vendor_token", "Server SDK key: `sbx_srv_Lxd1T44xF1KAO2D7bAD2ug6n4zvH7XbN`", "sbx_srv_Lxd1T44xF1KAO2D7bAD2ug6n4zvH7XbN"),
    ("azure", "DefaultEndpointsProtocol=https;AccountName=acct1;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFy+/abc==;EndpointSuffix=x",
     "Zm9vYmFyYmF6cXV4Zm9vYmFy+/abc=="),
    ("azure", "https://a.blob.core.windows.net/c/f?sv=2021-08-06&sp=r&sig=a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6%3D",
     "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"),
    ("cli_password", "machine api.example.com login deploy password Qw9rTy7uIo", "Qw9rTy7uIo"),
    ("cli_password", "curl -u admin:Pa55w0rdXy https://api.example.com", "Pa55w0rdXy"),
    ("cli_password", "mysql -u root -pS3cr3tPw mydb", "S3cr3tPw"),
    ("cli_password", "sshpass -p 'Zx9cV8bN7m' ssh root@h", "Zx9cV8bN7m"),
    ("cli_password", "redis-cli -h r1 -a Kp8sL2mN4q ping", "Kp8sL2mN4q"),
    ("password_hash", "admin:$apr1$r31.Xy9Z$HqJZimcKQFAMYayBlzkrA/", "$apr1$r31.Xy9Z$HqJZimcKQFAMYayBlzkrA/"),
    # a credential named in prose: "is"/"was", or words before a colon
    ("prose_secret", "DB password is S3cr3tPlainProse99", "S3cr3tPlainProse99"),
    ("prose_secret", "The root password is Tr0ub4dor3xYz.", "Tr0ub4dor3xYz"),
    ("prose_secret", "The api key for stripe is Kz8Lm3Nq9Pr2St7V", "Kz8Lm3Nq9Pr2St7V"),
    ("prose_secret", "Password for the admin account: AdminAcctPw2031x", "AdminAcctPw2031x"),
    ("prose_secret", "password for grafana: Gr4fanaPassw0rdZ", "Gr4fanaPassw0rdZ"),
    ("prose_secret", "the db_password was `Summer2024!` until May", "Summer2024!"),
    # a parenthetical before the colon or verb; whose as a relative clause ("that was in the first MR")
    ("prose_secret", "Its unseal key (drill only, not prod): `vU3-greenhouse-drill-kq82mZ4tPw`.", "vU3-greenhouse-drill-kq82mZ4tPw"),
    ("prose_secret", "the password (prod) is Zx81mQ2pLk", "Zx81mQ2pLk"),
    ("prose_secret", "the client secret that was in the first MR was `ll-sandbox-7d2e1c90x`", "ll-sandbox-7d2e1c90x"),
    # in quotes after a word that only names a value: words and a year are a passphrase
    ("prose_secret", "SSID `petrel-lab`, psk `wren-sensors-4ever-2045` (not the guest net)", "wren-sensors-4ever-2045"),
    # a capitalised word and a number, after a value's word and a verb or a colon
    ("prose_secret", "labelbench login plotmark-shared, password is Tillage-2291 — not in slack", "Tillage-2291"),
    ("prose_secret", 'the disk passphrase was "correct-horse-battery-9"', "correct-horse-battery-9"),
    # case changing inside a word, with digits, right after pw
    ("prose_secret", "user 'reviewer'. pw mArshTit-0419. then deploy", "mArshTit-0419"),
    ("key_value", "caddy hash-password --plaintext 'mArshTit-0419'", "mArshTit-0419"),
    ("env_secret", "S3_ACCESS_KEY_ID=KSTRL0CALL7QX2MB", "KSTRL0CALL7QX2MB"),
    ("prose_secret", "The token is: xKqPzRtLmWvYbNcJhGfD", "xKqPzRtLmWvYbNcJhGfD"),
    # a linking verb with an adverb (`is still`, `'s`, `has been`, `set to`), whose (`on edge3`), `=`
    ("prose_secret", "13. The root password on edge3 is still Xc5$vBn8^Mm1.", "Xc5$vBn8^Mm1"),
    ("prose_secret", "the wifi key is Hy3#uJi9(Ol0", "Hy3#uJi9(Ol0"),
    ("prose_secret", "The Wi-Fi key for the guest network is now Gq4%tY7uBn2x", "Gq4%tY7uBn2x"),
    ("prose_secret", "The root password's Xc5$vBn8^Mm1 on both hosts", "Xc5$vBn8^Mm1"),
    ("prose_secret", "the DB password was then Tr0ub4dor3xYz until the rotation", "Tr0ub4dor3xYz"),
    ("prose_secret", "root password set to Wd3!rT6yUi9o yesterday", "Wd3!rT6yUi9o"),
    ("prose_secret", "the vault token has been changed to Pk7Lm2Qx9Rz4", "Pk7Lm2Qx9Rz4"),
    ("prose_secret", "the password for edge3 = Xc5$vBn8^Mm1", "Xc5$vBn8^Mm1"),
    ("prose_secret", "the passphrase on the backup disk is currently `Summer2024!`", "Summer2024!"),
    ("prose_secret", "the PSK is Zr4Tq8wYp2Lx", "Zr4Tq8wYp2Lx"),
    ("prose_secret", "Das Passwort ist Kj7&hGf4%Dd3", "Kj7&hGf4%Dd3"),
    ("key_value", "14. Passwort: Kj7&hGf4%Dd3", "Kj7&hGf4%Dd3"),
    ("key_value", "Kennwort: Sommer2024xY", "Sommer2024xY"),
    # a pre-shared key is a secret by name, whatever its value looks like (a VPN's break-glass account)
    ("key_value", "psk: hunter2-FAKE-tg-rtm-2044", "hunter2-FAKE-tg-rtm-2044"),
    ("key_value", "pre_shared_key = Zq9xT4mK2pL8", "Zq9xT4mK2pL8"),
    ("key_value", "wifi_psk=Zq9xT4mK2pL8", "Zq9xT4mK2pL8"),
    # a login: whose and a verb before the user, then the password after a spaced slash or a colon
    ("prose_secret", "10. The admin login for cache2 is admin / Vq7#pLm2$Rt9 so be careful.", "Vq7#pLm2$Rt9"),
    ("prose_secret", "credentials for the replica are repl / Hb3$wN7pLt44", "Hb3$wN7pLt44"),
    ("prose_secret", "The login for grafana was still admin:Wm7!aS3dVb20", "Wm7!aS3dVb20"),
    # the value right after the secret word, no `is` between
    ("prose_secret", "1. Log in with password Vx8#kQ2mZr91 and check the relay.", "Vx8#kQ2mZr91"),
    ("prose_secret", "2. Use password Hb3$wN7pLt44 for the admin UI.", "Hb3$wN7pLt44"),
    ("prose_secret", "4. login admin / Pq9&eT4gXw63", "Pq9&eT4gXw63"),
    ("prose_secret", "5. admin pw Ku2*oF6hZn58", "Ku2*oF6hZn58"),
    ("prose_secret", "7. ssh root@edge1 (pass Lz4^iU8jCx35)", "Lz4^iU8jCx35"),
    ("prose_secret", "8. Vault unseal key: Nf6@tG9kYh12", "Nf6@tG9kYh12"),
    ("prose_secret", "[Task: check relay] Log in with password Cl0udBurst#2031 and check the relay", "Cl0udBurst#2031"),
    ("prose_secret", "the wifi passphrase Qm7xLp2vRt9k, the door passcode Zr4!Tq8wYp", "Qm7xLp2vRt9k"),
    ("prose_secret", "**password** Hb3$wN7pLt44**", "Hb3$wN7pLt44"),
    # a JSON "value" holding a credential (a tool call's input)
    ("prose_secret", '[mcp__vault__put_secret] {"path": "kv/marmoset", "value": "Gr33nT34!Kettle#77"}', "Gr33nT34!Kettle#77"),
    ("prose_secret", '{"name": "DB_PASSWORD", "value": "Zr8Qp2Lm5Nx7Vb3"}', "Zr8Qp2Lm5Nx7Vb3"),
    # session cookies: the values, not the names or the attributes
    ("cookie", "$ curl -v -H 'Cookie: sessionid=k3j9x8v2m4n7b1q5w0e6r8t2y4u7i9o1' https://app.example.com/admin/",
     "k3j9x8v2m4n7b1q5w0e6r8t2y4u7i9o1"),
    ("cookie", "< Set-Cookie: laravel_session=eyJpdiI6IkZxV3JtN2c9PSIsInZhbHVlIjoiQmx1ZVNreSJ9; path=/",
     "eyJpdiI6IkZxV3JtN2c9PSIsInZhbHVlIjoiQmx1ZVNreSJ9"),
    ("cookie", "< Set-Cookie: connect.sid=s%3Aq8Zr4WmX2pLk9TnV.Yb7Hc3Jd5Kf1Lg8Mh2Nj; Path=/; HttpOnly",
     "s%3Aq8Zr4WmX2pLk9TnV.Yb7Hc3Jd5Kf1Lg8Mh2Nj"),
    ("cookie", "< Set-Cookie: JSESSIONID=9A3F7C2E1B8D4F6A0C5E7B9D1F3A5C7E; Path=/; Secure", "9A3F7C2E1B8D4F6A0C5E7B9D1F3A5C7E"),
    ("cookie", '"Cookie": "theme=dark; session=Zx9Yw8Vu7Ts6Rq5"', "Zx9Yw8Vu7Ts6Rq5"),
    ("cookie", "curl -b 'sid=Qx8Lm2Np7Rt4Vw9' https://app.example.com/", "Qx8Lm2Np7Rt4Vw9"),
    ("cookie", "curl --cookie \"a=1; sid=Qx8Lm2Np7Rt4Vw9\" https://app.example.com/", "Qx8Lm2Np7Rt4Vw9"),
    # a 40-character secret access key standing alone (no key id on its line)
    ("aws", "| ci | Qw3rTy7UiOp1AsDfGh5JkL9ZxCvBnM2PoIuYtR4e |", "Qw3rTy7UiOp1AsDfGh5JkL9ZxCvBnM2PoIuYtR4e"),
    ("aws", "The secret key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY.", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("aws", "secret_access_key: vRt/1fjORS+6ilI8ihN5KXSc7Tvo+hBKqFYY+kv5", "vRt/1fjORS+6ilI8ihN5KXSc7Tvo+hBKqFYY+kv5"),
    # registry logins
    ("cli_password", "docker login -u bob -p DockerLoginPw77q", "DockerLoginPw77q"),
    ("cli_password", "docker login registry.example.com -u bob -p 'DockerLoginPw77q'", "DockerLoginPw77q"),
    ("cli_password", "echo DockerStdinPw55z | docker login -u bob --password-stdin", "DockerStdinPw55z"),
    ("cli_password", "echo -n 'DockerStdinPw55z' | sudo podman login quay.io -u bob --password-stdin", "DockerStdinPw55z"),
    ("cli_password", "printf '%s' Pw55zDockerStdin | docker login -u bob --password-stdin", "Pw55zDockerStdin"),
    ("cli_password", "docker login -u bob --password-stdin <<< 'Here9StringPw'", "Here9StringPw"),
    ("key_value", "docker login -u bob --password DockerLoginPw77q", "DockerLoginPw77q"),
    ("key_value", "docker login -u bob --password=DockerLoginPw77q", "DockerLoginPw77q"),
    ("key_value", "PASS: Hb3wN7pLt44x", "Hb3wN7pLt44x"),         # a PASS key, not a go test's verdict
    ("env_secret", 'PASS: "TestPassw0rd7"', "TestPassw0rd7"),     # quoted: a value, not a test's name
    # words joined by `-` after a word that only names a value, with a verb, a colon or quotes
    ("prose_secret", "The office wifi passphrase is correct-horse-battery-staple and guests use the other SSID.",
     "correct-horse-battery-staple"),
    ("key_value", "WPA2 PSK: tangerine-walrus-echo-marble", "tangerine-walrus-echo-marble"),
    ("prose_secret", "Disk encryption passphrase for the backup laptop: purple-monkey-dishwasher-galaxy",
     "purple-monkey-dishwasher-galaxy"),
    ("prose_secret", "Wi-Fi: SSID `acme-guest`, password `sunflower-meadow-river`.", "sunflower-meadow-river"),
    ("prose_secret", "the guest network key was Lantern-Orchid-Pebble-42 until May", "Lantern-Orchid-Pebble-42"),
    ("key_value", "**Passphrase:** tundra-saffron-kettle-mosaic", "tundra-saffron-kettle-mosaic"),
    ("key_value", "wifi_password: 'quartz-falcon-ember-lagoon'", "quartz-falcon-ember-lagoon"),
    # words separated by spaces: after `passphrase:` to the end of the line, or quoted after a value's word
    ("prose_secret", "LUKS passphrase: glacier orbit velvet thunder", "glacier orbit velvet thunder"),
    ("prose_secret", "- Backup passphrase (offsite disk): maple canyon ribbon falcon.", "maple canyon ribbon falcon"),
    ("prose_secret", 'the vault passphrase is "correct horse battery staple" for now', "correct horse battery staple"),
    # a value named earlier in the sentence: "Rotate db password: new one is X" (a commit message)
    ("prose_secret", "Rotate db password: new one is Pr0dDbPw2031x", "Pr0dDbPw2031x"),
    ("prose_secret", "Rotated the grafana API token, the new value: `Gt7xQm2LpR9vKw4z`", "Gt7xQm2LpR9vKw4z"),
    ("prose_secret", "vault root token revoked, the old one was hvq8Rm2Lx7Kp3Wz", "hvq8Rm2Lx7Kp3Wz"),
    # passwords on command lines: openssl, htpasswd in batch mode, a password piped to sudo -S
    ("cli_password", "openssl enc -aes-256-cbc -k Qw3rtyPass99 -in x -out y", "Qw3rtyPass99"),
    ("key_value", "openssl enc -d -aes256 -pass pass:Enc0dedPw77 -in b.enc", "Enc0dedPw77"),   # `pass:` is a key
    ("cli_password", "openssl rsa -in k.pem -passin 'pass:Kp9x2Q' -out k2.pem", "Kp9x2Q"),
    ("cli_password", "htpasswd -b /etc/nginx/.htpasswd admin N1ghtOwl2031", "N1ghtOwl2031"),
    ("cli_password", "sudo htpasswd -bB -C 12 /etc/apache2/.htpasswd bob 'Sw0rdfish#9'", "Sw0rdfish#9"),
    ("cli_password", "htpasswd -nb admin Gr4fanaWeb77 > auth", "Gr4fanaWeb77"),
    ("cli_password", "echo 'Zq8Kp3Wn7Rt2Lm5Vx9Bc' | sudo -S apt update", "Zq8Kp3Wn7Rt2Lm5Vx9Bc"),
    ("cli_password", "printf '%s\\n' Sud0Stdin42x | sudo -kS systemctl restart nginx", "Sud0Stdin42x"),
    # a name whose last words are an application's key (and that key's id), a GCS HMAC access id
    ("env_secret", "B2_APPLICATION_KEY=K002abcDEF123ghiJKL456mnoPQR789stu", "K002abcDEF123ghiJKL456mnoPQR789stu"),
    ("env_secret", "B2_APPLICATION_KEY_ID=0025f3a1b2c3d4e0000000001", "0025f3a1b2c3d4e0000000001"),
    ("env_secret", "export LARAVEL_APP_KEY=base64:Qm9ndXNBcHBLZXkxMjM0NTY3ODkwYWJj", "base64:Qm9ndXNBcHBLZXkxMjM0NTY3ODkwYWJj"),
    ("env_secret", "applicationKey: 'K005xYz9Wq2Lm8Rt4Np7Vb3Hc6'", "K005xYz9Wq2Lm8Rt4Np7Vb3Hc6"),
    ("env_secret", "UNSEAL_RECOVERY_KEY=Rk7Zq2Wx9Lm4Np8V", "Rk7Zq2Wx9Lm4Np8V"),
    ("vendor_token", "GCS_HMAC_ID=GOOG1EABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ABCDEFGHIJKLMNOP",
     "GOOG1EABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ABCDEFGHIJKLMNOP"),
    # a PEM private key in base64: a kubeconfig's client-key-data, a Secret's tls.key
    ("private_key", "    client-key-data: " + B64_KEY, B64_KEY),
    ("private_key", 'data:\n  tls.key: "' + B64_EC_KEY + '"', B64_EC_KEY),
    # a YAML list under a secret's name
    ("env_secret", "api_keys:\n  - Mz9Kp2Lq7Wx4Rt8Vb3Nc\n", "Mz9Kp2Lq7Wx4Rt8Vb3Nc"),
    ("env_secret", "  passwords:\n  - 'Hb3$wN7pLt44'   # old\n", "Hb3$wN7pLt44"),
    ("env_secret", "tokens: [Qx8Lm2Np7Rt4Vw9Kz, $CI_TOKEN]", "Qx8Lm2Np7Rt4Vw9Kz"),
    # the cells of a table column headed by a secret's word
    ("env_secret", "| service | user | password | note |\n|---|---|---|---|\n| grafana | admin | Gr4fanaAdm1n | monthly |",
     "Gr4fanaAdm1n"),
    ("env_secret", "| host | PSK |\n| --- | --- |\n| edge1 | `otter-lantern-cobalt-fig` |", "otter-lantern-cobalt-fig"),
    ("env_secret", "Name | API key (prod)\n:--|:--\nstripe | Kz8Lm3Nq9Pr2St7V", "Kz8Lm3Nq9Pr2St7V"),
    ("env_secret", "| name | token |\n|---|---|\n| ci | 8f7e6d5c4b3a29180716253443526170 |", "8f7e6d5c4b3a29180716253443526170"),
    ("env_secret", "| SSID | Wi-Fi key |\n|---|---|\n| office | Hy3uJi9Ol0xQ |", "Hy3uJi9Ol0xQ"),
    # a plain htpasswd line, where the text says it is an htpasswd file
    ("password_hash", "# htpasswd\n\n```\nbob:plainTextPw99\n```\n", "plainTextPw99"),
    ("password_hash", "```htpasswd\nalice:$apr1$r31.Xy9Z$HqJZimcKQFAMYayBlzkrA/\nbob:Pl4inPw2031\n```", "Pl4inPw2031"),
    ("password_hash", "```console\n$ cat /etc/nginx/.htpasswd\nops:Opsy2031pw\n```", "Opsy2031pw"),
    # a BitLocker recovery key
    ("vendor_token", "The BitLocker recovery key is 123456-234567-345678-456789-567890-678901-789012-890123.",
     "123456-234567-345678-456789-567890-678901-789012-890123"),
    # remembrancer's own HTTP token, alone on a line as `team token create` prints it
    ("vendor_token", "rmb_Q7vN2kLp9XzR4tW8mY3cH6bJ1dF5gS0aE-uT_iOq2Lw", "rmb_Q7vN2kLp9XzR4tW8mY3cH6bJ1dF5gS0aE-uT_iOq2Lw"),
    # a crates.io API token pasted in a journal entry
    ("vendor_token", "Leaked `cioZ7a8Xr2LmQ7Tb4wz3Vn9KpT4wYdQ0e1k` in the CI log; revoked it.", "cioZ7a8Xr2LmQ7Tb4wz3Vn9KpT4wYdQ0e1k"),
    # a Kubernetes Secret's data, as `kubectl get secret -o yaml` writes it (`kind:` after `data:`)
    ("k8s_secret", "apiVersion: v1\ndata:\n  api-key: SGVsbG9Xb3JsZDEyMw==\nkind: Secret\nmetadata:\n  name: partner\n",
     "SGVsbG9Xb3JsZDEyMw=="),
])
def test_family_catches_its_shape(family, text, secret):
    out, counts = redact(text)
    assert secret not in out and not any(f in out for f in fragments(secret))
    assert counts.get(family), (family, out, counts)
    assert f"[REDACTED:{family}]" in out


@pytest.mark.parametrize("text", [
    "secret: true",
    "token_count: 12345678",
    "password_file: /etc/app/password.txt",
    "password: ${DB_PASSWORD}",
    "password: <set in 1Password>",
    "api_key: changeme",
    "the password rotation is monthly",
    "max_tokens = 4096",
    "image: registry/app@sha256:" + "ab" * 32,
    "sha256:" + "0f" * 32,
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "commit 4595dcb49c75bcc316dff27d1648a6d85cfed9da",
    "Bearer authentication is configured in nginx",
    "scikit-learn and task-runner-20310506-abcdefghijk",
    "password: rotated-monthly",
    "postgres://app:${PGPASSWORD}@db1/shop",
    "started 2031-05-06T10:05:00Z, token_expiry: 2031-05-06T11:05:00Z",
    # placeholders are kept on purpose: they are not secrets, and the config they document stays readable
    "PGPASSWORD=changeme", "DB_PASSWORD=<password>", "DB_PASSWORD=${DB_PASSWORD}", "API_KEY=xxx", "SECRET_KEY=",
    "SECRET_KEY=your-secret-key", "export SECRET_KEY=$(cat /run/secrets/key)", "Token: gho_************************",
    "redis-cli -a \"$REDIS_PASSWORD\" ping", "curl -u \"$USER:$PASS\" https://x", "httpx.Client(proxy='socks5://user:pass@host:port')",
    # names that are not secrets, values that are words, types or paths
    "TOKEN_EXPIRY=2031-05-06T11:05:00Z", "RESTIC_PASSWORD_FILE=/etc/restic/password", "POSTGRES_PASSWORD: plotline",
    "postmark_server_token: SecretStr = SecretStr(\"\")", "password: passwordless", "AUTH_TYPE=Bearer",
    "TOKENIZERS_PARALLELISM=false", "sudo -u postgres psql", "docker run -u 1000:1000 img",
    '"privateKey": "-----BEGIN PRIVATE KEY-----xxxx"',
    # issue 27: ids and hashes are not secrets by their length (hex is a secret by its context)
    "Cloudflare rule id cbe6f4c310ee3c096d03da5b7e897125", "zone 7d1e0c5b9a2f48e3b6c4d0a19e8f7253",
    "https://bbad9e984d38d1a2aaa919f809cb0e6b@errors.kestrelgames.example/3",
    "node-1 58 4.1gb 60.2gb 3c7b9f1e2d4a6b8c0e2f4a6b8c0d2e4f 10.0.1.12",
    # prose about a secret, not the secret: words, terms, placeholders after "is" / "for …:"
    "the password is stored in Vault", "The password is rotated monthly.", "the key is to restart the agent",
    "The api key for stripe is in 1Password", "password for grafana: see the vault entry",
    "the access token is OAuth2-based", "the secret is AES-256-GCM encrypted", "The private key is id_ed25519",
    "the token is valid for 24h", "The password is 8 characters long", "the token expiry is 2031-05-06T11:05:00Z",
    "The password is $DB_PASSWORD", "the password for the replica is the same as the primary's",
    "The token is k8s-native", "the password issued by the portal", "the token is PostgreSQLReplication",
    # logins without a value, and other `-p`
    "docker run -p 8080:80 nginx", "echo $REGISTRY_TOKEN | docker login ghcr.io -u bob --password-stdin",
    'docker login -u bob -p "$DOCKER_PASSWORD"', "cat ~/.docker/pw | docker login -u bob --password-stdin",
    # 40 characters that are no secret: commit ids (either case), identifiers, paths
    "| ci | 4595dcb49c75bcc316dff27d1648a6d85cfed9da |", "git show 4595DCB49C75BCC316DFF27D1648A6D85CFED9DA",
    "handleUserAuthenticationCallback2Request(ctx)", "see home/User1/Projects/MyApp/build/outputs1 for it",
    "GET /inApps/v1/transactions/2000000812345678: 401 Unauthorized",
    # prose and code after password / pass / pw / secret / token with no `is`: words, names, arguments
    "pass the test", "Please pass the test suite before merging", "the password reset flow", "use password managers",
    "the pass rate is 98%", "Use password authentication for the replica", "admin pw reset link", "pass show infra/redis",
    "kubectl get secret db-creds-5h8t9k2m7c -o yaml", "token OAuth2AccessToken is refreshed",
    "Pass ``exc_type=ImportError`` to also skip", "you can pass ``suppress_health_check=list(HealthCheck)``",
    "the secret sauce is caching", "login admin / logout", "log in as root / Toor", "pass utf8mb4 as the charset",
    "password Summer", "token limit 4096", "the API key rotation runbook",
    # prose after a linking verb (`is still`, `'s`, `set to`), after whose (`on edge3`), and logins: words,
    # vaults, states, placeholders, a host:port, a path — no credential's mix
    "the password is in the vault", "the wifi key is rotated monthly", "the admin login is broken",
    "the key is to restart first", "the root password is stored in 1Password", "The root password on edge3 is still "
    "the same as on edge2.", "the wifi key is still set in the router config", "the password is still required",
    "the password is now empty", "the root password is managed by Ansible", "the token is still valid for 24h",
    "the password's length is 12", "the token's expiry is 2031-05-06T11:05:00Z", "the api key's scope is read-only",
    "The password was changed to a random one", "the password has been set to the default",
    "the token will be refreshed automatically", "the password is currently unset", "the passcode is still 12345678",
    "the wifi network key is on the fridge", "the network key is 10.0.0.0/8", "The Wi-Fi key is on the back of the router",
    "the root password was reset to the one in Bitwarden", "the secret is still AES-256-GCM encrypted",
    "the wifi key is WPA2-Personal", "the root password on db1 = the one in 1Password", "the token is still OAuth2-based",
    "The admin login for cache2 is admin / see 1Password", "the login for grafana is admin / admin",
    "The login page is /admin/login / OAuth2Callback", "user is root / wheel", "login is user@host:/var/log",
    "Login: https://grafana.example.com/login", "users are root / admin2 only", "logins for staging are in vault / Bitwarden",
    "the login for prod: see Vault / 1Password", "login for db: postgres / ${PGPASSWORD}", "the login is admin:admin",
    "The login for the proxy is host:8080", "the admin login for cache2 is admin / ReadTheDocs",
    "<code>{ psk: &#x3C;Buffer|TypedArray|DataView>, identity: &#x3C;string> }</code>",
    "the password is &lt;Secret9x&gt;", "Passwort: siehe Tresor", "Das Passwort ist im Tresor",
    "PSK: see Strongroom", "psk: ${WIFI_PSK}", "ipsec psk rotation runbook",
    # quoted names after words that also name a thing, or no value's word; a quoted word or flag
    "the password is AES-256 encrypted", "the password is SHA256-hashed now", "pass the Python-3110 test",
    "the password was Version-2 of it", "the password is in Vault-2024 (the new one)",
    "all tests pass `test_io2` now", "the secret `db-creds-v2` holds it", "the password `reset` flow",
    "the token `GITHUB_TOKEN` is injected", "use the password `--password-stdin` flag", "the psk `$WIFI_PSK`",
    "the password (see 1Password) is rotated monthly", "the token that CI uses is refreshed hourly",
    "he bought an iPhone15 Pro", "S3_ACCESS_KEY_ID_FILE=/run/secrets/s3", "aws_access_key_id = $AWS_KEY",
    # a JSON value that is no credential
    '{"name": "Content-Type", "value": "application/json"}', '{"value": "2031-05-06T11:05:00Z"}', '{"value": "k8s-app"}',
    # cookies without a session value, names and attributes
    "Set-Cookie: theme=dark; Path=/; HttpOnly", "the cookie: a small file", "Set-Cookie: csrftoken=$CSRF; Secure",
    "curl --cookie cookies.txt https://app.example.com/", "git checkout -b feature/login-2fa",
    "--- PASS: TestFoo2Bar3 (0.00s)", "    --- PASS: TestScheduler/adaptive_6h (0.01s)",   # go test's verdicts
    "--- PASS: BenchmarkParse2Items (1.20s)",
    # words joined by `-` that are terms, compound modifiers or prose, after a value's word or not
    "the password is case-sensitive", "the passphrase is one-time-use", "password: set-by-ansible",
    "psk: auto-rotated-weekly", "the password is end-to-end-encrypted", "the password `reset-token-flow` docs",
    "The wifi password is guest-network-open", "the PSK is rotated-quarterly-by-ops", "password: kebab-case-only",
    "passphrase is pulled-from-keyring", "the API token is correct-horse-battery-staple",   # not a value's word
    "use passphrase correct-horse-battery-staple",   # no verb, colon or quotes: prose goes on
    "the password policy follows the correct-horse-battery-staple comic",
    # words separated by spaces: prose after `passphrase:`, fewer than four words, not to the line's end
    "Passphrase rules: four random words like in the XKCD comic.", "Passphrase: four random words like in the XKCD comic.",
    "passphrase: kept in the safe", "Passphrase: ask security team lead", "passphrase: rotated every quarter",
    "LUKS passphrase: printed inside the drawer", "passphrase: glacier orbit velvet thunder, or so the runbook says",
    "the password is \"stored in the vault\"", "the passphrase is 'four random words'",
    # "new one is" that is no credential, or no secret word before it
    "Rotated the token; the new one is valid for 90 days", "password policy: the new one is documented in ADR-0042",
    "the password changed and the new one is in 1Password", "Replaced the disk. The new one is Samsung990Pro",
    "API key rotated, new one is OAuth2-based",
    # openssl, htpasswd, sudo without a password on the line
    "openssl enc -d -kfile pw.txt -in x", "openssl rsa -in k.pem -passin env:KEY_PW", "openssl s_client -connect h:443",
    'openssl enc -k "$PASS" -in x', "htpasswd -c /etc/nginx/.htpasswd admin", "htpasswd -B -C 12 /etc/.htpasswd bob",
    'htpasswd -nb admin "$PASSWORD"', "htpasswd -D /etc/nginx/.htpasswd bob", "cat /etc/nginx/.htpasswd admin N1ghtOwl2031",
    "echo hello | sudo -S true", "echo $SUDO_PW | sudo -S apt update", "echo 1 | sudo tee /proc/sys/vm/drop_caches",
    "echo 'Zq8Kp3Wn7Rt2Lm5Vx9Bc' | sudo -s", "echo Config2031x | sudo -uSteve tee /etc/app.conf", "echo deadbeef42 | sudo tee -a /etc/hosts",
    # names that are not an application's key, ids of other keys, a certificate in base64
    "B2_APPLICATION_KEY_FILE=/run/secrets/b2", "SSH_KEY_ID=abc123def456", "KMS_KEY_ID=1234abcd-12ab-34cd-56ef-1234567890ab",
    "APPLICATION_ID=Ab12345678", "CACHE_KEY=user42abc", "SERVER_KEY=/etc/ssl/private/server.key", "GOOG1 is a prefix",
    "client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZB",
    "client-key-data: DATA+OMITTED", "certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
    # lists under names that are not secrets, or of names, placeholders and mappings
    "secrets:\n  - db_password_2\n  - tls-cert-v1\n", "tokens:\n  - GITHUB_TOKEN\n  - NPM_TOKEN\n",
    "api_keys:\n  - name: stripe\n    env: STRIPE_KEY\n", "passwords:\n  - ${DB_PASSWORD}\n",
    "ssh_keys:\n  - Ab3dE6gH9jK2Lm4N\n", "tags: [Mz9Kp2Lq7Wx4Rt8Vb3Nc]", "tokens: [GITHUB_TOKEN, NPM_TOKEN]",
    # tables: columns that are not secrets, and a secret column's names, places, placeholders and prose
    "| service | token count | note |\n|---|---|---|\n| api | 4096 | Ab3dE6gH9jK2 |",
    "| Variable | Secret | Description |\n|---|---|---|\n| `DB_PASSWORD` | yes | the database's |",
    "| Name | Token | Scope |\n|---|---|---|\n| ci | `GITHUB_TOKEN` | repo |",
    "| service | password |\n|---|---|\n| grafana | in 1Password |\n| db | 1Password |\n| redis | (none) |\n"
    "| api | `$API_PASSWORD` |\n| ldap | LDAP-synced |\n| web | OAuth2 |\n| x | — |\n| y | |",
    "| Secret | Rotation |\n|---|---|\n| app-secrets-v2 | 90d |\n| db-creds | 30 days |\n| app-secrets-5h8t9k2m7c | 1d |",
    "secrets:\n  - app-secrets-5h8t9k2m7c\n", "the password is upper-lower-digits-symbols",
    "Rotated the API key; the new one is i3en.2xlarge",
    "| Password policy | Value |\n|---|---|\n| min length | 12 |\n| history | Ab3dE6gH9jK2 |",
    "| Password hash | User |\n|---|---|\n| Ab3dE6gH9jK2 | bob |", "| API key | Required |\n|---|---|\n| header | yes |",
    "| Auth | Notes |\n|---|---|\n| OAuth2 | via Okta |",
    # `name:value` lines with no word of htpasswd near them, and an htpasswd block's other lines
    "```\nbob:plainTextPw99\n```", "```\nlocalhost:8080\nredis:6379\n```", "backend:Release2031\n",
    "Create the htpasswd file:\n\n```sh\nhtpasswd -c /etc/nginx/.htpasswd admin\nlisten 10.0.0.1:8080;\n```",
    "# htpasswd\n\n```\nbob:$WEB_PASSWORD\nlocalhost:8080\n```",
    # six-digit groups that are not eight
    "ids 123456-234567-345678 and 2031-05-06", "123456-234567-345678-456789-567890-678901-789012",
])
def test_ordinary_text_is_left_alone(text):
    out, counts = redact(text)
    assert out == text, counts


def test_a_value_found_by_its_name_is_redacted_wherever_else_the_text_holds_it():
    text = ("POSTMARK_SERVER_TOKEN=b7e3c1d4-9a2f-4e6b-8c15-3f0a7d9e2b61\n"
            "printf 'TOKEN=%s\\n' 'b7e3c1d4-9a2f-4e6b-8c15-3f0a7d9e2b61' >> .env\n"
            "DATABASE_URL=postgresql://plotline:plotline@localhost/plotline\n")
    out, counts = redact(text)
    assert "b7e3c1d4" not in out and counts["key_value"] == 2
    assert out.count("plotline") == 2   # user and database name: a word-shaped password is not chased through the text (the project's name)


def test_a_passphrase_of_words_is_redacted_wherever_else_the_text_holds_it():
    text = ("The office wifi passphrase is correct-horse-battery-staple.\n"
            "LUKS passphrase: glacier orbit velvet thunder\n"
            "Guests join with correct-horse-battery-staple; the disk opens with `glacier orbit velvet thunder`.\n")
    out, counts = redact(text)
    assert "horse" not in out and "velvet" not in out and counts == {"prose_secret": 4}
    assert out.split("\n")[2] == "Guests join with [REDACTED:prose_secret]; the disk opens with `[REDACTED:prose_secret]`."


def test_the_line_shaped_rules_read_a_crlf_file_as_well():
    text = ("| service | password |\n|---|---|\n| grafana | Gr4fanaAdm1n |\n\n"
            "api_keys:\n  - Mz9Kp2Lq7Wx4Rt8Vb3Nc\n\n"
            "# htpasswd\n\n```\nbob:plainTextPw99\n```\n\n"
            "LUKS passphrase: glacier orbit velvet thunder\n\n"
            "tls.key: |\n" + "\n".join("  " + B64_KEY[i:i + 76] for i in range(0, len(B64_KEY), 76)) + "\nnext: 1\n")
    out, counts = redact(text.replace("\n", "\r\n"))
    assert out == redact(text)[0].replace("\n", "\r\n"), out
    assert counts == {"private_key": 1, "env_secret": 2, "password_hash": 1, "prose_secret": 1}


def test_a_cookie_header_keeps_its_names_and_attributes():
    out, counts = redact("< Set-Cookie: connect.sid=s%3Aq8Zr4WmX2pLk9TnV.Yb7Hc3Jd5Kf1Lg8Mh2Nj; Path=/; HttpOnly\n"
                         "> Cookie: sessionid=k3j9x8v2m4n7b1q5w0e6r8t2y4u7i9o1; theme=dark; csrftoken=Ab3dE6gH9jK2\n")
    assert out == ("< Set-Cookie: connect.sid=[REDACTED:cookie]; Path=/; HttpOnly\n"
                   "> Cookie: sessionid=[REDACTED:cookie]; theme=dark; csrftoken=[REDACTED:cookie]\n")
    assert counts == {"cookie": 3}


FRONT_MATTER_RECORD = """---
title: db1
aliases: [db-primary, pg1]
ips: [10.0.0.5, 10.0.1.5]
ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d: pasted as a key
token: ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d (old)
---

# db1

Primary database host.
"""


def test_a_secret_front_matter_key_leaves_the_front_matter_parseable(env, tiny_embedder):
    out, counts = redact(FRONT_MATTER_RECORD)
    assert counts["github"] == 2 and "ghp_" not in out
    assert redact(out) == (out, {})     # idempotent: the quoted marker is not touched again
    root = env / "notes"
    write(root, "hosts/db1.md", FRONT_MATTER_RECORD)
    engine = make_engine(root, tiny_embedder)
    report = engine.refresh()
    assert not any("invalid YAML" in w for w in report.warnings), report.warnings
    fm = engine.catalog.document("hosts/db1.md")["front_matter"]
    fm = json.loads(fm) if isinstance(fm, str) else fm
    assert fm["aliases"] == ["db-primary", "pg1"] and fm["ips"] == ["10.0.0.5", "10.0.1.5"]
    assert "ghp_" not in json.dumps(fm)
    engine.close()


def test_remembrancers_own_http_tokens_are_secrets(env, tiny_embedder):
    """`team token create` prints a bearer token (`rmb_` and 43 characters) alone on a line: pasted into
    a note, it is a `vendor_token` there as in its `Authorization: Bearer` line, and no search, read or
    index file gives it back. Words that begin the same way stay."""
    from remembrancer.mcp_server import tokens

    made = [tokens.create(f"laptop-{i}", [])[0] for i in range(20)]   # real tokens: random, some with `-` or `_`
    root = env / "notes"
    write(root, "ops/http-memory.md", "# HTTP memory access\n\n```\n$ remembrancer team token create laptop-0\n"
          f"{made[0]}\n```\n\nThe contractor's laptop uses {made[1]}.\n\n"
          f"curl -H 'Authorization: Bearer {made[2]}' https://memory.example.com/mcp\n\n"
          + "".join(f"- {t}\n" for t in made[3:]) + "\nTokens start with rmb_ and are shown once (rmb_not-a-token).\n")
    engine = make_engine(root, tiny_embedder)
    engine.refresh()
    secrets = {f"token{i}": t for i, t in enumerate(made)}
    fresh = lambda view: Freshness("fresh")  # noqa: E731
    for t in made[:3]:   # the index does not hold it to match
        assert not api.dispatch_read(engine, "search", {"query": t, "exact": True}, fresh)["results"]
    served = json.dumps([api.dispatch_read(engine, "search", {"query": "contractor laptop token"}, fresh),
                         api.dispatch_read(engine, "read", {"path": "ops/http-memory.md"}, fresh)])
    assert leaks_in_text(served, secrets) == [] and leaks_in_dir(env / "data", secrets) == []
    assert leaks_in_terms(engine, secrets) == []
    assert served.count("[REDACTED:vendor_token]") >= len(made)
    assert "Tokens start with rmb_ and are shown once (rmb_not-a-token)." in served
    engine.close()


KUBECTL_SECRETS = """```console
$ kubectl get secret db-creds -o yaml
apiVersion: v1
data:
  password: SjdxUHoyeFc5bUw0dlI=
  username: cmVwb3J0aW5n
  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrVENCK3dJSkFM
kind: Secret
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"v1","data":{"password":"SjdxUHoyeFc5bUw0dlI="},"kind":"Secret"}
  name: db-creds
  namespace: shop
type: Opaque
```

```yaml
apiVersion: v1
items:
- apiVersion: v1
  data:
    config: bm90IGEgc2VjcmV0IGF0IGFsbA==
  kind: ConfigMap
  metadata:
    name: app-config
- apiVersion: v1
  data:
    token: VGs4bVEyeFc3dkw5clA0
  kind: Secret
  metadata:
    name: ci-token
kind: List
```

```yaml
apiVersion: v1
kind: Secret
metadata:
  name: app
stringData:
  DATABASE_URL: "postgresql://app:Hx9vQ2mLp7RtZ4@db:5432/app"
  settings.json: |
    {"signing": "Mn3Bv8Cx1Zq6Wp"}
  password: "{{ .Values.password | b64enc }}"
  api-key: <base64 of the key>
  empty: ""
---
apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
spec:
  encryptedData:
    db-url: AgBy3i4OJSWK+PiTySYZZA9rO43cGDEq
---
apiVersion: v1
kind: ConfigMap
data:
  LOG_LEVEL: debug
  REGION: eu-west-1
```
"""


def test_a_kubernetes_secrets_values_are_redacted_and_what_is_not_one_stays(env, tiny_embedder):
    """The values under `data:` and `stringData:` of a manifest whose kind is Secret — `kubectl get
    secret -o yaml` (its `kind:` after `data:`, the value repeated in the last-applied annotation), a
    Secret among the items of a List, a manifest's `stringData:` (a value on its line, a block) —
    are secrets by their place; a certificate, templates and placeholders, a ConfigMap's data and a
    SealedSecret's (encrypted) data stay. Indexed, none of the values is in an answer or a file."""
    secrets = {"password": "SjdxUHoyeFc5bUw0dlI=", "username": "cmVwb3J0aW5n", "token": "VGs4bVEyeFc3dkw5clA0",
               "url": "Hx9vQ2mLp7RtZ4", "signing": "Mn3Bv8Cx1Zq6Wp"}
    out, counts = redact(KUBECTL_SECRETS)
    assert [k for k, v in secrets.items() if v in out] == [] and counts == {"k8s_secret": 6}   # and the annotation's
    for kept in ("tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJrVENCK3dJSkFM", "name: db-creds",
                 "config: bm90IGEgc2VjcmV0IGF0IGFsbA==", 'password: "{{ .Values.password | b64enc }}"',
                 "api-key: <base64 of the key>", 'empty: ""', "db-url: AgBy3i4OJSWK+PiTySYZZA9rO43cGDEq",
                 "LOG_LEVEL: debug", "REGION: eu-west-1", "type: Opaque"):
        assert kept in out, kept
    assert "  settings.json: |\n    [REDACTED:k8s_secret]\n" in out and out.count("\n") == KUBECTL_SECRETS.count("\n")
    assert redact(out) == (out, {})
    root = env / "notes"
    write(root, "ops/k8s-secrets.md", "# Kubernetes secrets of the shop\n\n" + KUBECTL_SECRETS)
    engine = make_engine(root, tiny_embedder)
    engine.refresh()
    fresh = lambda view: Freshness("fresh")  # noqa: E731
    served = json.dumps([api.dispatch_read(engine, "search", {"query": "db-creds secret password"}, fresh),
                         api.dispatch_read(engine, "read", {"path": "ops/k8s-secrets.md"}, fresh)])
    assert leaks_in_text(served, secrets) == [] and leaks_in_dir(env / "data", secrets) == []
    assert "[REDACTED:k8s_secret]" in served
    engine.close()


SECRET_LISTS_RECORD = """---
name: payments-api
type: component
api_keys:
  - Mz9Kp2Lq7Wx4Rt8Vb3Nc
  - "Ab3dE6gH9jK2Lm4N"   # the old one
tokens: [Qx8Lm2Np7Rt4Vw9Kz, $CI_TOKEN]
secrets:
  - app-secrets-v2
aliases: [payments, pay-api]
---

# Payments API
"""


def test_a_secret_list_in_front_matter_is_redacted_and_stays_a_list():
    """The items of a YAML list under a secret's name go; the front matter still parses, each item
    a string (a bare marker would read as a flow sequence), and the other fields stay."""
    from remembrancer.indexer.ingest.markdown import load_front_matter_yaml

    out, counts = redact(SECRET_LISTS_RECORD)
    assert counts == {"env_secret": 3}
    assert not any(v in out for v in ("Mz9Kp2Lq7Wx4Rt8Vb3Nc", "Ab3dE6gH9jK2Lm4N", "Qx8Lm2Np7Rt4Vw9Kz"))
    assert redact(out) == (out, {})
    fm = load_front_matter_yaml(out.split("---\n")[1])
    assert fm["api_keys"] == ["[REDACTED:env_secret]"] * 2
    assert fm["tokens"] == ["[REDACTED:env_secret]", "$CI_TOKEN"]
    assert fm["secrets"] == ["app-secrets-v2"] and fm["aliases"] == ["payments", "pay-api"]


def test_a_table_keeps_its_layout_and_only_the_secret_columns_cells_go():
    text = ("| service | user | password | note |\n"
            "|---|---|---|---|\n"
            "| grafana | admin | Gr4fanaAdm1n | rotated monthly |\n"
            "| jenkins | ci | `J3nk1ns-ci-2031` | |\n"
            "| sentry | ops | | in 1Password |\n"
            "\n"
            "| host | role |\n|---|---|\n| db1 | Ab3dE6gH9jK2 |\n")
    out, counts = redact(text)
    assert counts == {"env_secret": 2}
    assert out.split("\n") == [
        "| service | user | password | note |", "|---|---|---|---|",
        "| grafana | admin | [REDACTED:env_secret] | rotated monthly |", "| jenkins | ci | `[REDACTED:env_secret]` | |",
        "| sentry | ops | | in 1Password |", "", "| host | role |", "|---|---|", "| db1 | Ab3dE6gH9jK2 |", ""]


def test_a_wrapped_base64_private_key_goes_whole_and_keeps_the_line_count():
    import base64
    import textwrap

    pem = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(PEM_LINES) + "\n-----END PRIVATE KEY-----\n"
    wrapped = textwrap.wrap(base64.b64encode(pem.encode()).decode(), 76)
    text = "data:\n  tls.key: |\n" + "\n".join("    " + w for w in wrapped) + "\n  tls.crt: LS0tLS1CRUdJTiBDRVJU\n"
    out, counts = redact(text)
    assert counts == {"private_key": 1} and out.count("\n") == text.count("\n")
    assert not any(w in out for w in wrapped) and "tls.crt: LS0tLS1CRUdJTiBDRVJU" in out


def test_latest_echoes_a_hex_id_term_as_typed(corpus, env, tiny_embedder):
    engine = make_engine(corpus, tiny_embedder)
    engine.refresh()
    out = api.dispatch_read(engine, "latest", {"terms": [RULE_ID]}, lambda view: Freshness("fresh"))
    assert out["terms"] == [RULE_ID]
    assert out["results"] and out["results"][0]["path"] == "services/app-env.md"
    assert RULE_ID in json.dumps(out)
    engine.close()


LONG = 128 * 1024
FAMILY_UNITS = ["a", "A", "1", "0f", "a-", "a_", " ", "=", ":", "@", "/", '"', "'", "*", "$", "\\", "a:a@", "://:",
                "A_PASSWORD=", "PASSWORD ", "key ", "curl -u a:", "mysql -p", "redis-cli -a ", "sshpass -p ",
                "login a password ", "&sig=", "AccountKey=", "$apr1$", "- name: A_TOKEN\n", "a:1:a:a:", "a_srv_",
                "whsec_", "AGE-SECRET-KEY-1", "-----BEGIN PRIVATE KEY-----", "eyJ", "sk-", "ghp_", "AKIA",
                "password for a ", "token is ", "docker login -p ", "echo a | ", "--password-stdin <<< ", "aA0/+",
                "| password ", "|---", "| password |\n|---|\n", "| a1A2b3B4 ", "- tokens:\n", "api_keys:\n- aA1aA1aA1\n",
                "LS0tLS1CRUdJTi", "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVkt\n", "```htpasswd\na:aA1aA1\n", "a:aA1aA1\n",
                "htpasswd\n", "passphrase: abcd ", "passphrase is abcd-", "123456-", "htpasswd -b a a ",
                "echo a | sudo -S ", "openssl -k ", "password: new one is ", "tokens: [a, ", "rmb_",
                "kind: Secret\n", "data:\n  a: ", "- kind: Secret\n  data:\n    a: aA1aA1\n", "  a: |\n"]


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_every_family_stays_linear_on_128k_lines(family):
    """Catastrophic backtracking (super-linear regexes): every family on a 128 K-character line of
    each character class it touches. Linear work is milliseconds; a quadratic pattern takes seconds
    to minutes here, so the budget (10 s for the whole family) never flakes and still catches one."""
    from time import process_time
    apply = next(f.apply for f in DEFAULT_REDACTOR.families if f.name == family)
    started = process_time()
    for unit in FAMILY_UNITS:
        apply((unit * (LONG // len(unit) + 1))[:LONG])
    assert process_time() - started < 10.0


def test_private_key_block_keeps_the_line_count_and_paging_cannot_rebuild_it():
    text = "before\n-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(PEM_LINES) + "\n-----END RSA PRIVATE KEY-----\nafter\n"
    out, counts = redact(text)
    assert counts == {"private_key": 1}
    assert out.split("\n") == ["before", "[REDACTED:private_key]", "", "", "", "", "after", ""]
    truncated = "x\n-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(PEM_LINES) + "\n\nprose after\n"
    out, _ = redact(truncated)
    assert out.count("\n") == truncated.count("\n")
    assert not any(p in out for p in PEM_LINES) and "prose after" in out
    inline = 'key: "-----BEGIN PRIVATE KEY-----\\n' + PEM_LINES[0] + '\\n-----END PRIVATE KEY-----\\n"'
    assert PEM_LINES[0] not in redact(inline)[0]


def test_redaction_is_idempotent_and_keeps_lines():
    for text in CORPUS.values():
        once, _ = redact(text)
        assert once.count("\n") == text.count("\n")
        assert redact(once) == (once, {})


def test_disabling_a_family_and_unknown_names():
    text = f"signing key {HEX_KEY}"
    policy = RedactionPolicy.from_config({"disable": ["long_hex"]})
    assert policy.build().redact_text(text) == text
    assert DEFAULT_REDACTOR.redact_text(text) != text
    with pytest.raises(UserError) as e:
        RedactionPolicy.from_config({"disable": ["long_hexx"]})
    assert e.value.param == "redact.disable" and "long_hex" in e.value.options
    with pytest.raises(UserError):
        RedactionPolicy.from_config({"secrets_hashes": "x"})  # typo'd key: refused, not ignored
    with pytest.raises(ValueError):   # a caller's mistake: users' names are checked by the policy (above)
        Redactor(families=("nope",))
    assert Redactor(families=()).policy_fingerprint() != DEFAULT_REDACTOR.policy_fingerprint()
    assert set(FAMILY_NAMES) >= {"private_key", "url_credentials", "sk_key", "github", "slack", "aws",
                                 "telegram", "jwt", "bearer", "key_value", "long_hex"}


def test_config_file_redact_section(env, hashes, monkeypatch):
    (env / "config.toml").write_text(
        '[redact]\ndisable = ["long_hex"]\nsecret_hashes = "keys/secret-hashes.txt"\ndeny = ["private/**"]\n')
    cfg = load_config([str(env)])
    assert cfg.redact.disable == ("long_hex",)
    assert cfg.redact.hash_file() == hashes            # relative to the config file's folder
    assert cfg.redact.deny == ("private/**",)
    other = env / "other.txt"
    monkeypatch.setenv(ENV_SECRET_HASHES, str(other))
    assert cfg.redact.hash_file() == other             # the environment wins
    (env / "config.toml").write_text('[redact]\ndisable = ["hex"]\n')
    with pytest.raises(UserError):
        load_config([str(env)])


# -- the secret-hash file -----------------------------------------------------------------------------

def test_salt_encoding_is_hex_decoded_bytes():
    salt_hex = "00ff10ee20dd30cc"
    expected = hashlib.sha256(bytes([0x00, 0xFF, 0x10, 0xEE, 0x20, 0xDD, 0x30, 0xCC]) + "s3cr3t-välue".encode()).hexdigest()
    assert salted_sha256(bytes.fromhex(salt_hex), "s3cr3t-välue") == expected
    h = parse_hash_file(f"# made by hand\nsalt {salt_hex}\n\n{expected}\tmy_secret\n", Path("f"))
    assert h.digests == {expected: "my_secret"}


def test_hash_file_catches_a_secret_in_any_shape(tmp_path):
    value = "Plain-Old-Value.With:Colons"  # awkward characters on purpose
    word = "lanternquietharborwick"
    p = tmp_path / "h"
    p.write_text(hash_file_text("0123456789abcdef", [("awkward", value), ("word", word)]))
    r = Redactor(hashes=load_hash_file(p))
    shapes = [
        f"{word}", f"the word is {word}.", f'"{word}"', f"`{word}`", f"({word})", f"unseal={word}",
        f"unseal: {word}", f"https://host/{word}/status", f"https://u:{word}@host/", f"**{word}**",
        f"x={word}&y=1", f"[{word}]", f"{{'k': '{word}'}}", f"{value}", f"PASS={value}", f"'{value}',",
    ]
    for text in shapes:
        out, counts = r.redact(text)
        assert word not in out and value not in out, (text, out)
        assert counts, text
    assert r.redact_text(f"# Unseal with {word}\n\nbody {word}\n") == \
        "# Unseal with [REDACTED:word]\n\nbody [REDACTED:word]\n"
    assert r.redact_text("lanternquiet harborwick") == "lanternquiet harborwick"  # whole tokens only


@pytest.mark.parametrize("content,why", [
    (None, "missing"),
    ("", "empty"),
    ("salt 0011223344556677\n", "empty"),
    ("# only a comment\n", "empty"),
    ("salt zz\n" + "a" * 64 + "\tx\n", "not hex"),
    ("salt 0011\n" + "a" * 64 + "\tx\n", "shorter than 8 bytes"),
    ("a" * 64 + "\tx\n", "first line"),
    ("salt 0011223344556677\n" + "a" * 63 + "\tx\n", "line 2"),
    ("salt 0011223344556677\n" + "a" * 64 + "\tbad name!\n", "line 2"),
    ("salt 0011223344556677\nsalt 0011223344556677\n", "second salt"),
])
def test_bad_hash_files_fail_closed(tmp_path, content, why):
    p = tmp_path / "h"
    if content is not None:
        p.write_text(content)
    with pytest.raises(RedactionError) as e:
        load_hash_file(p)
    assert why in e.value.message
    assert e.value.code == "redaction_unavailable"


def test_a_broken_hash_file_stops_indexing_and_serving_and_status_says_why(corpus, hashes, env, tiny_embedder,
                                                                        monkeypatch):
    missing = env / "nope.txt"
    engine = make_engine(corpus, tiny_embedder, secret_hashes=str(missing))
    with pytest.raises(RedactionError):
        engine.refresh()
    st = engine.view().status().to_json()
    assert st["redaction"]["ok"] is False and "missing" in st["redaction"]["error"]
    assert st["warnings"][0].startswith("redaction: ") and str(missing) in st["warnings"][0]
    assert st["documents"] == 0
    engine.close()

    # a working index whose hash file then goes bad: search, read and outline all refuse
    engine = make_engine(corpus, tiny_embedder, secret_hashes=str(hashes))
    engine.refresh()
    assert search(engine.view(), SearchRequest("unseal vault")).to_json()["results"]
    hashes.write_text("salt 00112233445566778899\n")  # malformed: no hashes left
    for call in (lambda: search(engine.view(), SearchRequest("unseal vault")).to_json(),
                 lambda: reader.read(engine.view(), "runbooks/vault/unseal.md"),
                 lambda: reader.outline(engine.view(), "runbooks/vault/unseal.md"),
                 lambda: engine.refresh()):
        with pytest.raises(RedactionError):
            call()
    with pytest.raises(UserError) as e:
        api.dispatch_read(engine, "search", {"query": "unseal"}, lambda view: Freshness())
    assert e.value.to_dict()["code"] == "redaction_unavailable"
    assert "empty" in engine.view().status().to_json()["warnings"][0]
    # the environment variable wins over the (broken) configured file
    good = env / "good.txt"
    good.write_text(hash_file_text("8899aabbccddeeff", [(HASH_ONLY_NAME, HASH_ONLY)]))
    monkeypatch.setenv(ENV_SECRET_HASHES, str(good))
    assert engine.refresh().updated == len(CORPUS)   # new policy fingerprint → everything re-read
    assert engine.view().status().to_json()["redaction"]["ok"] is True
    engine.close()


# -- whole documents kept out -------------------------------------------------------------------------

def test_front_matter_secret_true_excludes_the_file_and_drops_an_old_copy(corpus, env, tiny_embedder):
    engine = make_engine(corpus, tiny_embedder)
    engine.refresh()
    assert search(engine.view(), SearchRequest("restart pgbouncer ini", limit=3)).to_json()["results"][0]["path"] == "memory/plain.md"
    p = corpus / "memory/plain.md"
    p.write_text("---\nsecret: true\n---\n" + p.read_text())
    report = engine.refresh()
    assert report.removed == 1
    assert any("memory/plain.md: not indexed (front matter secret: true)" == w for w in report.warnings)
    assert engine.catalog.document("memory/plain.md") is None
    assert all(r["path"] != "memory/plain.md" for r in search(engine.view(), SearchRequest("restart pgbouncer ini")).to_json()["results"])
    with pytest.raises(UserError):
        reader.read(engine.view(), "memory/plain.md")
    # also when the YAML around it is broken (fail closed)
    write(corpus, "memory/broken-secret.md", "---\nsecret: true\ntitle: [oops\n---\n# x\n\nhidden text\n")
    engine.refresh()
    assert engine.catalog.document("memory/broken-secret.md") is None
    engine.close()
    assert is_secret_document({"secret": "yes"}, "") and not is_secret_document({"secret": False}, "")


def test_path_denylist_excludes_and_removes(corpus, env, tiny_embedder):
    write(corpus, "private/diary.md", "# Diary\n\nsomething personal about the garden\n")
    engine = make_engine(corpus, tiny_embedder)
    engine.refresh()
    assert engine.catalog.document("private/diary.md") is not None
    engine.close()
    engine = make_engine(corpus, tiny_embedder, deny=("private/**",))
    report = engine.refresh()
    assert report.removed == 1
    assert engine.catalog.document("private/diary.md") is None
    assert report.scanned == len(CORPUS)
    engine.close()


# -- a secret in a file's name -----------------------------------------------------------------------

@pytest.mark.parametrize("path,shown,family", [
    (NAMED_FILE, "memory/[REDACTED:github].md", "github"),
    (f"notes/{NAMED_TOKEN}/todo.md", "notes/[REDACTED:github]/todo.md", "github"),             # a folder
    (f"keys/{AWS_ALONE.replace('/', 'x')}.md", "keys/[REDACTED:aws].md", "aws"),               # hidden by `.md`
    ("ops/sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34.txt", "ops/[REDACTED:sk_key].txt", "sk_key"),
])
def test_a_secret_in_a_path_is_found_and_the_path_shown_redacted(path, shown, family):
    assert Redactor().redact_path(path) == (shown, {family: 1})
    warning = f"{path}: skipped, permission denied"   # a message naming the file is redacted alike
    assert Redactor().redact_path(warning)[0] == f"{shown}: skipped, permission denied"


@pytest.mark.parametrize("path", ["journal/2031/2031-05-06.md", "runbooks/postgres/restore.md",
                                  "memory/feedback_password_rotation.md", "hosts/db9.md", "docs/api-key-setup.md",
                                  "commits/4595dcb49c75", "notes/4595dcb49c75bcc316dff27d1648a6d85cfed9da.md",
                                  "src/handleUserAuthenticationCallback2Request.ts"])
def test_ordinary_paths_hold_no_secret(path):
    assert Redactor().redact_path(path) == (path, {})


def test_a_file_named_by_a_secret_is_not_indexed_and_an_older_copy_goes(env, tiny_embedder, caplog, capsys):
    """Indexed while its family was off, the file's name is in the catalog (the probe works); with the
    family on, the next run removes it and scrubs the stores, warns with the name redacted, and no
    file under the data dir, term, answer (search, read, list, status) or log holds the token."""
    caplog.set_level(logging.DEBUG)
    root = write_tree(env / "notes", {NAMED_FILE: "# Runner notes\n\nThe runner registration moved to the new org.\n",
                                      "memory/plain.md": "# Plain lesson\n\nrestart pgbouncer after editing its ini\n"})
    only = {"named_token": NAMED_TOKEN}
    engine = make_engine(root, tiny_embedder, disable=("github",))
    engine.refresh()
    assert engine.catalog.document(NAMED_FILE) is not None
    assert leaks_in_dir(env / "data", only), "positive control: the scan sees a stored path"
    engine.close()

    engine = make_engine(root, tiny_embedder)
    report = engine.refresh()
    assert report.removed == 1 and NAMED_WARNING in report.warnings
    assert engine.catalog.document(NAMED_FILE) is None
    assert leaks_in_dir(env / "data", only) == []
    assert leaks_in_terms(engine, only) == []
    outs = tool_outputs(engine)
    assert leaks_in_text("\n".join(outs), only) == []
    assert NAMED_WARNING in "\n".join(outs)                      # status says which file and why
    with pytest.raises(UserError) as e:   # the name search would show, read back: why it is not there
        reader.read(engine.view(), "memory/[REDACTED:github].md")
    assert "its name holds a secret" in e.value.message and NAMED_TOKEN not in e.value.message
    again = engine.refresh()                                      # every run says it again, and skips it
    assert (again.added, again.removed, again.skipped) == (0, 0, 1) and NAMED_WARNING in again.warnings
    touched = engine.refresh_paths([str(root / NAMED_FILE)])      # the daemon's way: a changed path
    assert touched.added == 0 and NAMED_WARNING in touched.warnings
    assert engine.catalog.document(NAMED_FILE) is None
    logs = "\n".join(r.getMessage() for r in caplog.records)
    captured = capsys.readouterr()
    assert leaks_in_text(logs + captured.out + captured.err, only) == []
    engine.close()


def test_a_link_to_a_file_named_by_a_secret_is_not_indexed_either(env, tiny_embedder):
    """A symlink with an ordinary name records the path it points to (a file the walk does not take
    itself: not Markdown, or in an excluded folder): it is left out too."""
    target = f".trash/{NAMED_TOKEN}.md"
    root = write_tree(env / "notes", {target: "# Runner notes\n\nThe runner registration moved.\n",
                                      "memory/plain.md": "# Plain lesson\n\nrestart pgbouncer after editing its ini\n"})
    (root / "memory" / "runner.md").symlink_to(root / target)
    engine = make_engine(root, tiny_embedder)
    report = engine.refresh()
    assert set(engine.catalog.documents()) == {"memory/plain.md"} and report.skipped == 1
    assert "memory/runner.md: not indexed (the name of the file it links to holds a secret: github); " \
           "rename that file" in report.warnings
    assert leaks_in_dir(env / "data", {"named_token": NAMED_TOKEN}) == []
    engine.close()


@pytest.mark.slow
def test_the_cli_never_prints_or_stores_a_secret_from_a_file_name_or_a_note(tmp_path, tiny_model_dir):
    """The black-box way: index with the real command line, print `list`, `status` and searches (text
    and JSON, which also writes the query log), then grep the whole data dir for every planted value."""
    from tests.support.env import remembrancer_env

    root = write_tree(tmp_path / "notes", {"runbooks/registry.md": CORPUS["runbooks/registry.md"],
                                           NAMED_FILE: "# Runner notes\n\nThe runner registration moved.\n"})
    config = tmp_path / "config.toml"
    config.write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    env = remembrancer_env(data=tmp_path / "data", config=config, socket=tmp_path / "no-daemon.sock",
                           XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    planted = {k: v for k, v in PATTERN_SECRETS.items()
               if k in ("prose_pw", "prose_label_pw", "prose_api_key", "docker_pw", "docker_stdin_pw", "aws_alone",
                        "named_token")}
    printed = []
    for args in (["index", "--root", str(root)], ["list", "--root", str(root)], ["list", "--root", str(root), "--json"],
                 ["status", "--root", str(root)], ["status", "--root", str(root), "--json"],
                 ["search", "--root", str(root), "registry admin password"],
                 ["search", "--root", str(root), "runner registration", "--json"]):
        p = run_cli(*args, env=env, cwd=tmp_path, timeout=300)
        assert p.returncode == 0, (args, p.stderr)
        printed.append(p.stdout + p.stderr)
    out = "\n".join(printed)
    assert leaks_in_text(out, planted) == []
    assert "memory/[REDACTED:github].md" in out and "registry.md" in out
    assert leaks_in_dir(tmp_path / "data", planted) == []
    assert list((tmp_path / "data").rglob("queries.jsonl")), "the query log was written where we look"


# -- `remembrancer secrets hash` ----------------------------------------------------------------------

def _args(**kw):
    return argparse.Namespace(**{"secrets_command": "hash", "name": None, "salt": None, "out": None, **kw})


def test_secrets_hash_prints_a_file_the_redactor_accepts(tmp_path):
    out = io.StringIO()
    stdin = io.StringIO(f"{HASH_ONLY}\nredis_pw\t{PASSWORD}\n\n# comment\n")
    assert secrets_cli.main(_args(name="unseal"), stdin=stdin, stdout=out, stderr=io.StringIO()) == 0
    text = out.getvalue()
    assert HASH_ONLY not in text and PASSWORD not in text
    assert re.match(r"salt [0-9a-f]{32}\n", text)
    p = tmp_path / "h"
    p.write_text(text)
    r = Redactor(families=(), hashes=load_hash_file(p))
    assert r.redact_text(f"a {HASH_ONLY} b {PASSWORD}") == "a [REDACTED:unseal] b [REDACTED:redis_pw]"
    # a random salt each time, unless given
    again = secrets_cli.hash_secrets(HASH_ONLY)
    assert again.split("\n")[0] != text.split("\n")[0]
    fixed = secrets_cli.hash_secrets(HASH_ONLY, name="w", salt_hex="00112233445566778899aabbccddeeff")
    assert fixed == ("salt 00112233445566778899aabbccddeeff\n"
                     f"{salted_sha256(bytes.fromhex('00112233445566778899aabbccddeeff'), HASH_ONLY)}\tw\n")


def test_secrets_hash_out_appends_with_the_files_salt_and_mode_0600(tmp_path):
    p = tmp_path / "keys" / "hashes.txt"
    err = io.StringIO()
    secrets_cli.main(_args(out=str(p), name="one"), stdin=io.StringIO("firstsecretvalue1\n"), stderr=err)
    assert oct(p.stat().st_mode & 0o777) == "0o600"
    salt_line = p.read_text().split("\n")[0]
    secrets_cli.main(_args(out=str(p), name="two"), stdin=io.StringIO("secondsecretvalue2\nfirstsecretvalue1\n"),
                     stderr=err)
    lines = p.read_text().splitlines()
    assert lines[0] == salt_line and len(lines) == 3          # the duplicate was not added twice
    assert "firstsecretvalue1" not in err.getvalue() and "secondsecretvalue2" not in err.getvalue()
    r = Redactor(families=(), hashes=load_hash_file(p))
    assert r.redact_text("firstsecretvalue1 secondsecretvalue2") == "[REDACTED:one] [REDACTED:two]"
    with pytest.raises(UserError):
        secrets_cli.main(_args(out=str(p), salt="ffeeddccbbaa99887766"), stdin=io.StringIO("thirdvalue3\n"))


@pytest.mark.parametrize("stdin,why", [("abc\n", "shorter"), ("two words here\n", "whitespace"), ("", "no values"),
                                       ("bad name!\tsomevalue1\n", "name")])
def test_secrets_hash_refuses_bad_input_without_echoing_it(stdin, why):
    with pytest.raises(UserError) as e:
        secrets_cli.main(_args(), stdin=io.StringIO(stdin), stdout=io.StringIO())
    assert why in str(e.value)
    assert "somevalue1" not in str(e.value) and "two words" not in str(e.value)


def test_secrets_hash_takes_no_values_on_argv():
    ap = argparse.ArgumentParser()
    secrets_cli.add_parser(ap.add_subparsers(dest="command"))
    assert ap.parse_args(["secrets", "hash", "--name", "x"]).name == "x"
    with pytest.raises(SystemExit):
        ap.parse_args(["secrets", "hash", "hunter2hunter2"])


def test_served_strings_are_redacted_every_time_they_are_served(monkeypatch):
    """redact_obj keeps each served string's redacted form (answers repeat paths, breadcrumbs and
    snippets): a second answer holding the same secret is redacted alike, a string too long to keep
    is still redacted, what is kept stays bounded, and another policy gets its own."""
    from remembrancer.indexer import redact as redact_mod

    secret = "the db password=hunter2xyz9 is in the vault"
    r = Redactor()
    first = r.redact_obj({"snippet": secret, "also": [secret]})
    second = r.redact_obj([secret, (secret,)])
    assert "hunter2xyz9" not in json.dumps(first) + json.dumps(second)
    assert first["snippet"] == first["also"][0] == second[0] == second[1][0] == r.redact(secret)[0]
    long = "word " * (redact_mod.SERVED_CHARS // 5) + secret
    assert "hunter2xyz9" not in r.redact_obj({"content": long})["content"]
    monkeypatch.setattr(redact_mod, "SERVED_KEPT", 3)
    for i in range(10):
        assert r.redact_obj(f"token={i}abcdefghijk{i}") == r.redact(f"token={i}abcdefghijk{i}")[0]
    assert len(r._served) <= 3
    other = Redactor(families=tuple(n for n in FAMILY_NAMES if n not in ("key_value", "env_secret")))
    assert other.redact_obj(secret) == secret != r.redact_obj(secret)


# -- key/value table rows, Basic credentials, `admin / X`, "…; the new one is X", markers ----------------

KV_SECRETS = {"redis": "Rd5pQw8Zx2Lm", "admin": "Ad9mZx4Qp7Lw", "smtp": "Sm7tPq3Xz9Kw", "db": "Dp4xQz8Lm2Vw",
              "keystore": "Hk4#pL9qZx2W", "basic": "YWRtaW46SHVudGVyMjAyNiE=", "rotated": "Qm7rT2xV9kLp4Zs8"}
KV_NOTE = f"""# Staging secrets inventory

| name | value |
|---|---|
| REDIS_PASSWORD | {KV_SECRETS["redis"]} |
| admin login | admin / {KV_SECRETS["admin"]} |

| Setting | Value |
|---|---|
| `SMTP_PASS` | {KV_SECRETS["smtp"]} |
| timeout | 30s |
| owner | Priya |
| password policy | 12 characters minimum |

| Variable | Value |
|---|---|
| DB_PASSWORD | {KV_SECRETS["db"]} |

## Basic auth header

and in an nginx config: `proxy_set_header Authorization "Basic {KV_SECRETS["basic"]}";`

- Rotated the admin token; the new one is {KV_SECRETS["rotated"]} for now.
"""


def test_a_key_value_tables_row_named_as_a_secret_loses_its_value():
    out, counts = redact(KV_NOTE)
    assert [v for v in KV_SECRETS.values() if v in out] == []
    assert "| REDIS_PASSWORD | [REDACTED:env_secret] |" in out
    assert "| admin login | admin / [REDACTED:prose_secret] |" in out
    assert "| `SMTP_PASS` | `[REDACTED:env_secret]` |" not in out and "| `SMTP_PASS` | [REDACTED:env_secret] |" in out
    assert "| DB_PASSWORD | [REDACTED:env_secret] |" in out
    # the rows that name no secret, and a secret's row holding prose, keep their values
    for row in ("| timeout | 30s |", "| owner | Priya |", "| password policy | 12 characters minimum |"):
        assert row in out
    assert counts["env_secret"] == 3
    # the same table in a transcript's tool result (a JSON string), under `| secret | value |`
    result = ("> Keystore was tampered with, or password was incorrect\n| secret | value |\n|---|---|\n"
              f"| KEYSTORE_PASSWORD | {KV_SECRETS['keystore']} |\n| SLACK_WEBHOOK | https://hooks.slack.com/services/"
              "T0AAAAAAA/B0BBBBBBB/XyZ123abcDEF456ghiJKL789 |\n")
    out = redact(result)[0]
    assert "| KEYSTORE_PASSWORD | [REDACTED:env_secret] |" in out and "XyZ123abc" not in out


def test_a_key_value_tables_rows_that_are_no_secret_stay():
    text = ("| Setting | Value |\n|---|---|\n| timeout | 30s |\n| owner | Priya |\n"
            "| password policy | 12 characters minimum |\n| max_tokens | 4096 |\n| TOKEN_EXPIRY | 2031-05-06T11:05:00Z |\n"
            "| PASSWORD_FILE | /run/secrets/db_pw |\n| DB_PASSWORD | postgres |\n| REDIS_PASSWORD | (none) |\n"
            "| API_TOKEN | required |\n| auth_token | VARCHAR(64) |\n| GITHUB_TOKEN | secrets.GITHUB_TOKEN |\n"
            "| GITHUB_TOKEN | `${{ secrets.GITHUB_TOKEN }}` |\n| DB_PASSWORD | `$DB_PASSWORD` |\n| password | str |\n"
            "| api_key | SecretStr |\n| password | 1Password |\n| token | see below |\n| secret | db-creds-v2 |\n"
            "| Pass | TestFoo2Bar |\n| password | ******** |\n| GITHUB_TOKEN | GitHub |\n| OPENAI_API_KEY | OpenAI |\n"
            "| DB_PASSWORD | `Optional[str]` |\n| `--password` | The password to use |\n| AUTH_TOKEN | auto-generated |\n"
            "| DB_PASSWORD | 5432 |\n"
            # three columns: not a key/value table (a column's header decides there)
            "\n| name | value | note |\n|---|---|---|\n| DB_PASSWORD | svc_account1 | the service's login |\n")
    assert redact(text) == (text, {})
    # words naming a value, a variable's name naming one: judged as a column's header and as `KEY=value`
    words = ("| name | value |\n|---|---|\n| Wi-Fi key | Hy3#kT9pLm |\n| API key (prod) | Kz8mQ2xLp9Rt4Vw7 |\n"
             "| WIFI_PSK | tangerine-walrus-echo-marble |\n| PGPASSWORD | hunter22 |\n| clientSecret | c1i3nt-s3cr3t |\n")
    out, counts = redact(words)
    assert counts == {"env_secret": 5} and out.count("[REDACTED:env_secret] |") == 5


def test_basic_credentials_with_no_colon_after_the_header_or_no_header():
    nginx = 'proxy_set_header Authorization "Basic YWRtaW46SHVudGVyMjAyNiE=";'
    assert redact(nginx) == ('proxy_set_header Authorization "Basic [REDACTED:bearer]";', {"bearer": 1})
    question = "login fails with Basic YWRtaW46SHVudGVyMjAyNiE= header, admin / Ad9mZx4Qp7Lw"
    assert redact(question)[0] == "login fails with Basic [REDACTED:bearer] header, admin / [REDACTED:prose_secret]"
    assert redact("add_header Authorization 'Token Tk8mQ2xLp9Rt4Vw7';")[0] == \
        "add_header Authorization 'Token [REDACTED:bearer]';"
    for kept in ("Use Basic Authentication with the Authorization header", "the authorization token expires daily",
                 "Basic abcdefgh12345678 is not base64 of a pair", "Authorization basic authentication is off",
                 "Basic auth over TLS only"):
        assert redact(kept) == (kept, {}), kept


def test_an_admin_user_and_a_password_after_a_spaced_slash():
    assert redact("root / Xc5$kQ2mZr")[0] == "root / [REDACTED:prose_secret]"
    assert redact("Administrator / Pq9&eT4gXw63")[0] == "Administrator / [REDACTED:prose_secret]"
    for kept in ("admin / ReadOnly", "admin / see 1Password", "admin / admin", "/srv/admin / Ab3dE6gH9jK2",
                 "admin / user roles", "root / home2dir"):
        assert redact(kept) == (kept, {}), kept


def test_the_new_one_is_across_a_semicolon():
    assert redact("- Rotated the admin token; the new one is Qm7rT2xV9kLp4Zs8 for now.")[0] == \
        "- Rotated the admin token; the new one is [REDACTED:prose_secret] for now."
    for kept in ("Rotated the token; the new one is valid for 90 days", "the password changed; the new one is in 1Password",
                 "We rotated the token; the old one is revoked.", "Token refresh failed; the new one is OAuth2-based",
                 "The secret moved; it is now in Vault. The new one is Qm7rT2xV9kLp4Zs8",
                 "Restarted the worker; the new one is up and healthy.", "Rotated the API key; the new one is i3en.2xlarge"):
        assert redact(kept) == (kept, {}), kept


def test_a_redaction_marker_is_never_redacted_again():
    stored = "- Sentry DSN key: https://[REDACTED:long_hex]@o123.ingest.sentry.io/456"
    assert redact("- Sentry DSN key: https://a1b2c3d4e5f60718293a4b5c6d7e8f90@o123.ingest.sentry.io/456")[0] == stored
    assert redact(stored) == (stored, {})
    assert DEFAULT_REDACTOR.redact_obj({"snippet": stored}) == {"snippet": stored}
    # a hash-listed user keeps the password after it redacted
    assert redact("https://[REDACTED:ops_user]:Sup3rPw9x@h/")[0] == "https://[REDACTED:ops_user]:[REDACTED:url_credentials]@h/"
    contexts = ["https://{m}@host/x", "https://u:{m}@host", "password: {m}", "DB_PASSWORD={m}", "Authorization: Basic {m}",
                "Bearer {m}", "the password is {m}", "admin / {m}", "Cookie: a={m}", "{m}:{m}@host", "scheme://{m}:{m}@h",
                "Basic {m}", "the new one is {m}", "| name | value |\n|---|---|\n| DB_PASSWORD | {m} |"]
    for label in (*FAMILY_NAMES, "query", "redis_password"):
        for c in contexts:
            text = c.format(m=f"[REDACTED:{label}]")
            assert redact(text) == (text, {}), text


def test_the_query_log_redacts_a_question_as_a_document(tmp_path):
    from remembrancer.indexer.redact_policy import RedactorSource
    from remembrancer.indexer.search.querylog import QueryLog

    log = QueryLog(tmp_path / "queries.jsonl", RedactorSource(RedactionPolicy()))
    question = "login fails with Basic YWRtaW46SHVudGVyMjAyNiE= header, admin / Ad9mZx4Qp7Lw"
    log.record("search", {"query": question}, {"results": []}, 3.0, client="cli")
    log.record("search", {"query": "Rotated the admin token; the new one is Qm7rT2xV9kLp4Zs8"}, {"results": []})
    logged = (tmp_path / "queries.jsonl").read_text()
    assert "YWRtaW46SHVudGVyMjAyNiE=" not in logged and "Ad9mZx4Qp7Lw" not in logged and "Qm7rT2xV9kLp4Zs8" not in logged
    first = json.loads(logged.splitlines()[0])
    assert first["query"] == "login fails with Basic [REDACTED:bearer] header, admin / [REDACTED:prose_secret]"


def test_a_key_value_table_never_reaches_the_index_or_an_answer(env, tiny_embedder):
    root = write_tree(env / "notes", {"ops/kv-table.md": KV_NOTE,
                                      "ops/dsn.md": "# DSN\n\n- Sentry DSN key: https://a1b2c3d4e5f60718293a4b5c6d7e8f90"
                                                    "@o123.ingest.sentry.io/456\n"})
    engine = make_engine(root, tiny_embedder)
    engine.refresh()
    fresh = lambda view: Freshness("fresh")  # noqa: E731
    outs = []
    for q in ("redis password staging", "admin login", "smtp pass", "Basic auth header", "rotated admin token",
              "Sentry DSN key"):
        for exact in (False, True):
            out = api.dispatch_read(engine, "search", {"query": q, "limit": 10, "exact": exact}, fresh)
            outs += [json.dumps(out), render.search_text(SearchAnswer.parse(out))]
    for path in ("ops/kv-table.md", "ops/dsn.md"):
        out = api.dispatch_read(engine, "read", {"path": path}, fresh)
        outs += [json.dumps(out), render.read_text(Page.parse(out))]
    joined = "\n".join(outs)
    assert [k for k, v in KV_SECRETS.items() if v in joined] == []
    assert "| REDIS_PASSWORD | [REDACTED:env_secret] |" in joined and "| timeout | 30s |" in joined
    assert "| password policy | 12 characters minimum |" in joined
    assert "https://[REDACTED:long_hex]@o123.ingest.sentry.io/456" in joined
    assert "[REDACTED:[REDACTED:" not in joined
    data_dir = env / "data"
    assert list(data_dir.rglob("catalog.sqlite3")), "the index was written where we look"
    assert leaks_in_dir(data_dir, KV_SECRETS) == []
    assert leaks_in_terms(engine, KV_SECRETS) == []
    engine.close()
