"""Nothing leaks (issue 31): removed text leaves the keyword index's files, echoed values are
redacted whole before they are cut, note text cannot drive the terminal, the query log forgets
values the secret-hash file names. Real tantivy, the tiny model, real CLI and MCP clients."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from remembrancer.cli.secrets_cmd import hash_secrets
from remembrancer.indexer.config import Config, make_roots
from remembrancer.indexer.engine import Engine
from remembrancer.indexer.redact_policy import ENV_SECRET_HASHES, RedactionPolicy
from tests.support import cli
from tests.support.corpus import write
from tests.support.daemon import stop_daemon_at
from tests.support.env import remembrancer_env
from tests.support.paths import PROJECT

PLANTED = "zorblaxquint"   # a word no other note has


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("REMEMBRANCER_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.delenv(ENV_SECRET_HASHES, raising=False)
    return tmp_path


def make_engine(root: Path, embedder, **redact_kw) -> Engine:
    return Engine(Config(roots=make_roots([root]), redact=RedactionPolicy(**redact_kw)), embedder=embedder)


def index_files_with(directory: Path, word: str) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*")
                  if p.is_file() and word.encode() in p.read_bytes())


# -- removed text leaves the keyword index ------------------------------------------------------------

@pytest.mark.parametrize("how", ["deleted", "denied", "secret"])
def test_a_removed_documents_words_leave_the_keyword_index(env, tiny_embedder, how):
    root = env / "notes"
    for i in range(12):   # neighbours in the same (first, bulk) segment, and one in a later small one
        write(root, f"notes/n{i}.md", f"# Note {i}\n\nplain words about host{i} and its backups\n")
    write(root, "private/diary.md", f"# Diary\n\nthe code word is {PLANTED} for the garden\n")
    engine = make_engine(root, tiny_embedder)
    engine.refresh()
    write(root, "notes/late.md", "# Late\n\nwritten after the first index, about lateword\n")
    engine.refresh()
    searcher = engine.core.fulltext.index.searcher()
    assert searcher.doc_freq("body", PLANTED) == 1
    if how == "deleted":
        (root / "private/diary.md").unlink()
    elif how == "secret":
        write(root, "private/diary.md", f"---\nsecret: true\n---\n# Diary\n\nthe code word is {PLANTED}\n")
    else:
        engine.close()
        engine = make_engine(root, tiny_embedder, deny=("private/**",))
    assert engine.refresh().removed == 1
    searcher = engine.core.fulltext.index.searcher()
    assert searcher.doc_freq("body", PLANTED) == 0
    assert searcher.doc_freq("stem", PLANTED) == 0
    assert index_files_with(engine.dir / "fulltext", PLANTED) == []
    # the segment mates are all still there, and found
    assert engine.core.fulltext.num_docs() == engine.catalog.counts()["chunks"]
    assert searcher.doc_freq("body", "host3") == 1 and searcher.doc_freq("body", "lateword") == 1
    assert len(engine.core.fulltext.search("host3 backups", 20)) >= 1
    engine.close()


def test_a_removal_and_an_edit_in_one_commit_keep_every_chunk_once(env, tiny_embedder):
    """The segment mates re-added at the commit include a document edited in the same batch: each
    chunk is in the index once, with its new text (and identifier terms) only."""
    root = env / "notes"
    for i in range(6):
        write(root, f"notes/n{i}.md", f"# Note {i}\n\nplain words about host{i} and maxConnections\n")
    write(root, "private/diary.md", f"# Diary\n\nthe code word is {PLANTED}\n")
    engine = make_engine(root, tiny_embedder)
    engine.refresh()
    (root / "private/diary.md").unlink()
    write(root, "notes/n2.md", "# Note 2\n\nnow about wombatStatus instead\n")
    engine.refresh()
    searcher = engine.core.fulltext.index.searcher()
    ids = searcher.fast_field_values("chunk_id", [a for _, a in searcher.search(
        __import__("tantivy").Query.all_query(), 1000).hits])
    catalog_ids = [r[0] for r in engine.catalog.all_chunks()]
    assert sorted(ids) == sorted(catalog_ids) and len(set(ids)) == len(ids)
    assert searcher.doc_freq("body", PLANTED) == 0 and searcher.doc_freq("body", "host2") == 0
    assert searcher.doc_freq("ident", "wombatstatus") == 1 and searcher.doc_freq("ident", "maxconnections") == 5
    engine.close()


# -- echoed values ------------------------------------------------------------------------------------

TOKEN = "ghp_" + "Zq7Rw2Xk9Lm4Np8Vt3Yb6Hc1Jd5Fg0Ks2Qe7"   # GitHub token shaped (redact.py's `github` family)
HASHED = "Kestrel7Wombat3Quill"   # no secret's shape: known only from the secret-hash file
AWS_ID = "AKIA" + "Q7RW2XK9LM4NP8VT"   # upper case only: lower-cased, no pattern knows it
EVIL_NOTE = "journal/2030/2030-03-04.md"   # a note with terminal control sequences
EVIL = ("Rotate the quokkakeys now\x1b]0;pwned-title\x07 then \x1b]52;c;ZWNobyBwd25lZA==\x07 copy, "
        "\x1b[2J\x1b[H cleared \x1b[31mred\x1b[0m and\rover written \x9b31m c1 \x07bell \x1b\\ done")
RAW_CONTROLS = [c for c in map(chr, [*range(0, 32), *range(127, 160)]) if c not in "\n\t"]


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_model_dir):
    """A small corpus, the tiny model, a query log: a real `remembrancer mcp` over stdio (it
    starts a daemon on demand) and the real CLI."""
    base = tmp_path_factory.mktemp("leaks")
    notes = base / "notes"
    write(notes, "runbooks/restore.md", "# Restore\n\nRestore the database from the nightly backup.\n")
    write(notes, "journal/2030/2030-01-02.md", "# 2030-01-02\n\nBackups checked on db1.\n")
    write(notes, EVIL_NOTE, f"# 2030-03-04 \x1b]0;title\x07\n\n## Keys\n\n{EVIL}\n")
    cfg = base / "config.toml"
    log = base / "queries.jsonl"
    hashes = base / "secret-hashes.txt"
    hashes.write_text(hash_secrets(HASHED))
    cfg.write_text(f'[model]\npath = "{tiny_model_dir}"\n[log]\npath = "{log}"\n'
                   f'[redact]\nsecret_hashes = "{hashes}"\n')
    sockdir = Path(tempfile.mkdtemp(prefix="rmb-leak-", dir="/tmp"))   # AF_UNIX paths must stay short
    env = remembrancer_env(data=base / "data", socket=sockdir / "daemon.sock", config=cfg, home=base)
    w = {"notes": notes, "env": env, "sock": sockdir / "daemon.sock", "log": log, "base": base, "hashes": hashes}
    yield w
    stop_daemon_at(w["sock"])   # the daemon this module's sessions started
    shutil.rmtree(sockdir, ignore_errors=True)


def mcp_calls(world, calls: list[tuple[str, dict]]) -> list:
    p = StdioServerParameters(command=sys.executable,
                              args=["-m", "remembrancer", "mcp", "--idle-exit", "30", "--root", str(world["notes"])],
                              env=world["env"], cwd=str(PROJECT))

    async def main():
        async with Client(p, read_timeout_seconds=120) as c:
            return [await c.call_tool(name, args) for name, args in calls]
    return anyio.run(main)


def run_cli(world, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return cli.run_cli(*args, env={**world["env"], **(env or {})}, cwd=PROJECT)


ECHO_CALLS = [
    ("search", {"query": "backup", "limit": TOKEN}, "limit"),
    ("search", {"query": "backup", "since": TOKEN}, "since"),
    ("search", {"query": "backup", "until": TOKEN}, "until"),
    ("search", {"query": "backup", "type": TOKEN}, "type"),
    ("read", {"path": "runbooks/restore.md", "lines": TOKEN}, "lines"),
    ("latest", {"terms": "backup", "type": [TOKEN]}, "type"),
    ("history", {"entity": "db1", "limit": TOKEN}, "limit"),
    ("search", {"query": "backup", "limit": HASHED}, "limit"),
    ("search", {"query": "backup", "type": HASHED}, "type"),
    ("search", {"query": "backup", "since": HASHED}, "since"),
    ("search", {"query": "backup", "type": AWS_ID}, "type"),
    ("read", {"path": "runbooks/restore.md", "lines": [HASHED, 2]}, "lines"),
    ("search", {"query": "backup", "limit": "x " * 60 + TOKEN}, "limit"),   # long: cut after redaction
]


def pieces(token: str) -> list[str]:
    """Any 8-character piece of the token, in either case."""
    out = {token[i:i + 8] for i in range(len(token) - 7)}
    return sorted(out | {p.lower() for p in out})


@pytest.mark.slow
def test_mcp_errors_never_echo_a_token(world):
    *results, unknown_token, unknown_hashed = mcp_calls(world, [(name, args) for name, args, _ in ECHO_CALLS]
                                                        + [(TOKEN, {}), (HASHED, {})])
    leaks = [(r.content[0].text,) for r in (unknown_token, unknown_hashed)   # the SDK's "Unknown tool: …"
             if not r.is_error or [p for p in pieces(TOKEN) + pieces(HASHED) if p in r.content[0].text]]
    for (name, args, param), r in zip(ECHO_CALLS, results):
        blob = r.content[0].text + json.dumps(r.structured_content)
        assert r.is_error, (name, args)
        assert r.structured_content["error"]["param"] == param, blob
        assert "Traceback" not in blob and "\n" not in r.structured_content["error"]["message"]
        if [p for p in pieces(TOKEN) + pieces(HASHED) + pieces(AWS_ID) if p in blob]:
            leaks.append((name, param, r.structured_content["error"]["message"]))
    assert leaks == []


@pytest.mark.parametrize("args", [
    ("search", "--limit", TOKEN, "backup"), ("search", "--type", TOKEN, "backup"), ("search", "--since", TOKEN, "backup"),
    ("latest", "--until", TOKEN, "backup"), ("read", "runbooks/restore.md", "--lines", TOKEN),
    ("search", "--type", HASHED, "backup"), ("search", "--json", "--until", HASHED, "backup"),
    ("search", "--limit", HASHED, "backup"), ("report", "--since", HASHED), ("report", "--json", "--since", HASHED),
])
def test_cli_errors_never_echo_a_token(world, args):
    r = run_cli(world, *args, *(() if args[0] == "report" else ("--root", str(world["notes"]))))
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("remembrancer") or "usage:" in r.stderr
    assert "Traceback" not in r.stderr
    assert not [p for p in pieces(TOKEN) + pieces(HASHED) if p in r.stdout + r.stderr], r.stdout + r.stderr


# -- the query log --------------------------------------------------------------------------------------

LATER = "Osprey4Lantern9Mistral"   # a value added to the secret-hash file after it was logged


@pytest.mark.slow
def test_the_query_log_cuts_a_long_query_between_tokens(world):
    long_query = "backup " * 70 + TOKEN + " restore"   # the 500-character cut falls inside the token
    (r,) = mcp_calls(world, [("search", {"query": long_query})])
    assert not r.is_error
    logged = world["log"].read_text()
    assert not [p for p in pieces(TOKEN) if p in logged], logged
    last = json.loads(logged.splitlines()[-1])
    assert last["query"].startswith("backup backup") and last["query"].endswith("…") and len(last["query"]) <= 500


@pytest.mark.slow
def test_the_query_log_forgets_values_listed_later_in_the_hash_file(world):
    (r,) = mcp_calls(world, [("search", {"query": f"restore {LATER} db1"})])
    assert not r.is_error
    logged = world["log"].read_text()
    assert LATER in logged   # not a secret yet
    added = cli.run_cli("secrets", "hash", "--out", str(world["hashes"]), env=world["env"], input=LATER + "\n", timeout=60)
    assert added.returncode == 0, added.stderr
    for args in (("report",), ("report", "--json")):
        rep = run_cli(world, *args)
        assert rep.returncode == 0, rep.stderr
        assert "restore" in rep.stdout and LATER not in rep.stdout + rep.stderr
    assert not [p for p in pieces(LATER) if p in world["log"].read_text()]   # the file itself scrubbed

    # a server that logs after the change scrubs the lines it finds too
    world["log"].write_text(world["log"].read_text() + logged.splitlines()[-1] + "\n")   # as an old line
    world["log"].with_name(world["log"].name + ".policy").write_text("old\n")
    assert LATER in world["log"].read_text()
    mcp_calls(world, [("search", {"query": "backup"})])
    assert LATER not in world["log"].read_text()


# -- terminal control sequences in notes ------------------------------------------------------------------



@pytest.fixture(scope="module")
def evil(world):
    """The corpus has the note from the start: an `index` run beside the daemon would race it."""
    assert b"\x1b]52;c;" in (world["notes"] / EVIL_NOTE).read_bytes()
    return world


@pytest.mark.parametrize("args", [
    ("search", "quokkakeys"), ("read", EVIL_NOTE), ("read", EVIL_NOTE, "--heading", "Keys"),
    ("latest", "quokkakeys"), ("outline", EVIL_NOTE),
])
def test_note_text_cannot_drive_the_terminal(evil, args):
    r = run_cli(evil, *args, "--root", str(evil["notes"]))
    out = r.stdout + r.stderr
    assert [c for c in RAW_CONTROLS if c in out] == [], out
    assert r.returncode == 0, out
    if args[0] != "outline":
        assert "\\x1b]52;c;ZWNobyBwd25lZA==\\x07" in r.stdout and "\\x9b31m" in r.stdout, out   # shown, visibly


@pytest.mark.parametrize("args", [("search", "quokkakeys"), ("read", EVIL_NOTE), ("latest", "quokkakeys")])
def test_json_output_keeps_control_characters_escaped(evil, args):
    r = run_cli(evil, *args, "--json", "--root", str(evil["notes"]))
    assert r.returncode == 0, r.stderr
    assert [c for c in RAW_CONTROLS if c in r.stdout] == []
    assert "\\u001b]52;c;ZWNobyBwd25lZA==\\u0007" in r.stdout and "\\u009b31m" in r.stdout
    assert any("\x1b]52;c;ZWNobyBwd25lZA==\x07" in t for t in strings(json.loads(r.stdout)))   # the text, intact


def strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from strings(v)
