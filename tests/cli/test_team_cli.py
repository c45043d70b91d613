"""Team memory end to end with the real CLI and the real MCP client over stdio: `serve --store`
writes a git checkout into a real PostgreSQL, a second writer is refused, readers (`search`,
`status`, `mcp --store`) answer from the store with their own checkout's freshness."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.support.cli import run_cli
from tests.support.corpus import git, git_init, write
from tests.support.daemon import poll_until, stop_process
from tests.support.env import remembrancer_env
from tests.support.paths import PROJECT



def _world(tmp: Path, tiny_model_dir, url: str) -> dict:
    origin = tmp / "origin"
    git_init(origin)
    write(origin, "runbooks/restart.md", "# Restart the ledger service\n\nRun `systemctl restart ledger` on app1.\n")
    write(origin, "journal/2030-01-02.md", "# 2030-01-02\n\nThe ledger service crashed at noon.\n")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "first")
    for name in ("shared", "mine"):
        git(tmp, "clone", "-q", str(origin), str(tmp / name))
    (tmp / "config.toml").write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    env = remembrancer_env(data=tmp / "data", config=tmp / "config.toml", socket=tmp / "no-daemon.sock")
    env.pop("REMEMBRANCER_STORE", None)
    return {"origin": origin, "shared": tmp / "shared", "mine": tmp / "mine", "env": env, "url": url}


def _cli(world, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return run_cli(*args, env=world["env"], cwd=PROJECT, timeout=timeout)


def _wait(cond, timeout: float = 60):
    return poll_until(cond, timeout, step=0.3)


@pytest.mark.slow
def test_writer_readers_and_mcp_over_a_real_postgres(tmp_path, tiny_model_dir, pg_url):
    w = _world(tmp_path, tiny_model_dir, pg_url)
    writer = subprocess.Popen([sys.executable, "-m", "remembrancer", "serve", "--store", pg_url, "--root",
                               str(w["shared"]), "--pull-every", "3600"], env=w["env"], cwd=str(PROJECT),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def indexed() -> bool:
            r = _cli(w, "status", "--store", pg_url, "--root", str(w["mine"]), "--json")
            return r.returncode == 0 and json.loads(r.stdout)["documents"] == 2
        assert _wait(indexed), writer.stderr.read() if writer.poll() is not None else "writer still running"

        second = _cli(w, "index", "--store", pg_url, "--root", str(w["shared"]))
        assert second.returncode == 2 and "already has a writer" in second.stderr, second.stderr

        r = _cli(w, "search", "how do I restart the ledger", "--store", pg_url, "--root", str(w["mine"]), "--json")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["results"][0]["path"] == "runbooks/restart.md"
        head = git(w["shared"], "rev-parse", "HEAD")
        assert out["index"]["verdict"] == "fresh" and f"indexed {head[:7]}" in out["index"]["detail"]

        # Upstream moves; SIGHUP makes the writer pull and index now.
        write(w["origin"], "runbooks/rotate.md", "# Rotate the wombat keys\n\nRotate them every quarter.\n")
        git(w["origin"], "add", "-A")
        git(w["origin"], "commit", "-q", "-m", "rotate")
        writer.send_signal(signal.SIGHUP)

        def has_rotate() -> bool:
            r = _cli(w, "search", "rotate the wombat keys", "--store", pg_url, "--root", str(w["mine"]), "--json")
            return r.returncode == 0 and json.loads(r.stdout)["results"][0]["path"] == "runbooks/rotate.md"
        assert _wait(has_rotate)
        r = _cli(w, "search", "rotate the wombat keys", "--store", pg_url, "--root", str(w["mine"]))
        assert "the indexed commit is not in it (git fetch" in r.stdout.splitlines()[0], r.stdout
        git(w["mine"], "fetch", "-q")   # now the reader's clone knows the indexed commit
        r = _cli(w, "search", "rotate the wombat keys", "--store", pg_url, "--root", str(w["mine"]))
        assert "your checkout is 1 commit behind the index" in r.stdout.splitlines()[0], r.stdout

        st = _cli(w, "status", "--store", pg_url, "--root", str(w["mine"]))
        assert st.returncode == 0 and "store: postgresql://" in st.stdout and "3 documents" in st.stdout, st.stdout
        doc = _cli(w, "doctor", "--store", pg_url, "--root", str(w["mine"]), "--json")
        checks = {c["check"]: c for c in json.loads(doc.stdout)}
        assert checks["store"]["status"] == "OK" and checks["store writer"]["status"] == "OK"
        assert checks["store model"]["status"] == "OK" and checks["store readers"]["status"] == "OK"

        params = StdioServerParameters(command=sys.executable, cwd=str(PROJECT), env=w["env"],
                                       args=["-m", "remembrancer", "mcp", "--store", pg_url, "--root", str(w["mine"])])

        async def go():
            async with Client(params, read_timeout_seconds=120) as c:
                res = await c.call_tool("search", {"query": "what happened to the ledger service"})
                status = await c.call_tool("index_status", {})
                return res, status
        res, status = anyio.run(go)
        assert not res.is_error
        text = res.content[0].text
        assert text.startswith("Index STALE: indexed ") and "behind the index" in text.splitlines()[0], text[:300]
        assert res.structured_content["results"][0]["path"].startswith(("journal/", "runbooks/"))
        assert not status.is_error
    finally:
        _stop(writer)
    assert writer.returncode == 0, writer.stderr.read()


def test_a_reader_without_a_store_index_gets_a_clear_error(tmp_path, tiny_model_dir, pg_url):
    w = _world(tmp_path, tiny_model_dir, pg_url)
    r = _cli(w, "search", "anything", "--store", pg_url, "--root", str(w["mine"]))
    assert r.returncode == 3 and "holds no index yet" in r.stderr and "Traceback" not in r.stderr
    r = _cli(w, "search", "anything", "--store", "mysql://nope", "--root", str(w["mine"]))
    assert r.returncode == 2 and "postgresql://" in r.stderr


@pytest.mark.slow
def test_a_push_and_notify_reach_the_writer_at_once_and_a_granted_role_reads_its_scope(tmp_path, tiny_model_dir,
                                                                                        pg_url):
    """A real writer process pulling from a real bare remote on a one-hour timer: a push then
    `remembrancer notify --store URL` (PostgreSQL NOTIFY; the writer LISTENs) is searchable without
    the timer, and so is a push announced by the git hook module configured with the store.
    `team grant-reader` makes a login that the CLI then serves only its prefixes."""
    w = _world(tmp_path, tiny_model_dir, pg_url)
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(w["origin"]), str(remote))
    for name in ("shared", "mine"):
        git(w[name], "remote", "set-url", "origin", str(remote))
        git(w[name], "fetch", "-q")
        git(w[name], "branch", "-q", "--set-upstream-to", "origin/" + git(w[name], "branch", "--show-current"))
    log = open(tmp_path / "writer.log", "w")
    writer = subprocess.Popen([sys.executable, "-m", "remembrancer", "--debug", "serve", "--store", pg_url, "--root",
                               str(w["shared"]), "--pull-every", "3600"], env=w["env"], cwd=str(PROJECT),
                              stdout=log, stderr=log, text=True)

    def writer_log() -> str:
        return (tmp_path / "writer.log").read_text()[-3000:]

    def top(query: str, url: str = pg_url) -> str | None:
        r = _cli(w, "search", query, "--store", url, "--root", str(w["mine"]), "--json")
        results = json.loads(r.stdout).get("results") if r.returncode == 0 else None
        return results[0]["path"] if results else None

    def push(path: str, text: str) -> None:
        write(w["mine"], path, text)
        git(w["mine"], "add", "-A")
        git(w["mine"], "commit", "-q", "-m", path)
        git(w["mine"], "push", "-q", "origin", "HEAD")
    try:
        assert _wait(lambda: top("restart the ledger") == "runbooks/restart.md", 240), writer_log()
        push("runbooks/rotate.md", "# Rotate the wombat keys\n\nRotate them every quarter.\n")
        time.sleep(2)
        assert top("rotate the wombat keys") != "runbooks/rotate.md"   # the timer would take an hour
        r = _cli(w, "notify", "--store", pg_url, "--event", "post-push")
        assert r.returncode == 0, r.stderr
        assert _wait(lambda: top("rotate the wombat keys") == "runbooks/rotate.md", 240), writer_log()

        push("journal/2030-01-03.md", "# 2030-01-03\n\nThe quokka migration finished.\n")
        hook = subprocess.run([sys.executable, "-P", "-m", "remembrancer.hooks.notify", "--root", str(w["mine"]),
                               "--event", "post-commit"], env={**w["env"], "REMEMBRANCER_STORE": pg_url},
                              capture_output=True, text=True, timeout=60)
        assert hook.returncode == 0 and hook.stdout == "" and hook.stderr == ""
        assert _wait(lambda: top("quokka migration") == "journal/2030-01-03.md", 240), writer_log()

        # a scoped login made by the CLI: only runbooks/ exists for it
        role = f"runbooks_{os.getpid()}"
        g = run_cli("team", "grant-reader", role, "--scope", "runbooks/", "--password-stdin", "--store", pg_url,
                    "--json", env=w["env"], cwd=PROJECT, input="s3cret\n")
        assert g.returncode == 0, g.stderr
        assert json.loads(g.stdout)["scope"] == ["runbooks"]
        mine = pg_url.replace("postgres:@", f"{role}:s3cret@")
        listed = _cli(w, "list", "--store", mine, "--root", str(w["mine"]), "--json")
        assert listed.returncode == 0, listed.stderr
        assert sorted(d["path"] for d in json.loads(listed.stdout)["documents"]) == ["runbooks/restart.md",
                                                                                     "runbooks/rotate.md"]
        assert top("quokka migration", mine) != "journal/2030-01-03.md"
        readers = _cli(w, "team", "readers", "--store", pg_url)
        assert readers.returncode == 0 and f"{role}: reads runbooks" in readers.stdout
        assert _cli(w, "team", "revoke-reader", role, "--store", pg_url).returncode == 0
        gone = _cli(w, "list", "--store", mine, "--root", str(w["mine"]), "--json")
        assert gone.returncode == 2 and "may not read the store" in json.loads(gone.stdout)["error"]["message"]
    finally:
        _stop(writer)
        log.close()


def _stop(writer: subprocess.Popen) -> None:
    """SIGTERM, as the service manager stops the writer; killed if it has not exited in 30 s."""
    stop_process(writer, grace=30)


def _with_password(url: str, password: str) -> str:
    """The URL with a password in its query (the server trusts local logins: it is only carried)."""
    return url + ("&" if "?" in url else "?") + f"password={password}"


@pytest.mark.slow
def test_a_password_in_the_store_url_is_never_shown_and_its_user_is_warned(tmp_path, tiny_model_dir, pg_url):
    w = _world(tmp_path, tiny_model_dir, pg_url)
    assert _cli(w, "index", "--store", pg_url, "--root", str(w["shared"])).returncode == 0
    secret = "Zq8-store-password-7Kx"
    url = _with_password(pg_url, secret)
    shown = []
    for args in (("status", "--json"), ("status",), ("search", "ledger", "--json"), ("doctor", "--json")):
        r = _cli(w, *args, "--store", url, "--root", str(w["mine"]))
        assert r.returncode in (0, 2), r.stderr
        assert "other users of this machine see" in r.stderr and "~/.pgpass" in r.stderr
        shown.append(r.stdout + r.stderr)
    env = {**w["env"], "REMEMBRANCER_STORE": url}   # from the environment: not on the command line, no warning
    r = run_cli("status", "--json", "--root", str(w["mine"]), env=env, cwd=PROJECT)
    assert r.returncode == 0 and "other users" not in r.stderr
    assert json.loads(r.stdout)["store"]["url"].endswith("password=***")
    shown.append(r.stdout)
    params = StdioServerParameters(command=sys.executable, cwd=str(PROJECT), env=w["env"],
                                   args=["-m", "remembrancer", "mcp", "--store", url, "--root", str(w["mine"])])

    async def go():
        async with Client(params, read_timeout_seconds=120) as c:
            return await c.call_tool("index_status", {}), await c.call_tool("search", {"query": "ledger"})
    for res in anyio.run(go):
        assert not res.is_error
        shown.append(res.content[0].text + json.dumps(res.structured_content))
    assert all(secret not in s for s in shown), [s for s in shown if secret in s][0][:500]


@pytest.mark.slow
def test_a_reader_started_while_the_store_is_unreachable_answers_once_it_is_there(tmp_path, tiny_model_dir, pg_server):
    """The MCP reader starts before its database exists (as when the server is down or not yet
    provisioned): its calls say so, and once the store is there, the next call answers from it."""
    import psycopg

    from tests.support.pg import database_url

    base = pg_server.get_uri()
    name = f"late{os.getpid()}"
    url = database_url(base, name)
    w = _world(tmp_path, tiny_model_dir, url)
    params = StdioServerParameters(command=sys.executable, cwd=str(PROJECT), env=w["env"],
                                   args=["-m", "remembrancer", "mcp", "--store", url, "--root", str(w["mine"])])

    async def go():
        async with Client(params, read_timeout_seconds=120) as c:
            before = await c.call_tool("search", {"query": "ledger service"})
            with psycopg.connect(base, autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE {name}")
            assert _cli(w, "index", "--store", url, "--root", str(w["shared"])).returncode == 0
            return before, await c.call_tool("search", {"query": "ledger service"})
    try:
        before, after = anyio.run(go)
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    assert before.is_error and "cannot connect to the store" in before.content[0].text
    assert not after.is_error, after.content[0].text
    assert after.structured_content["results"][0]["path"] in ("journal/2030-01-02.md", "runbooks/restart.md")


@pytest.mark.slow
def test_the_writer_outlives_the_server_dropping_its_connections(tmp_path, tiny_model_dir, pg_url):
    """What a server restart does to a client — every connection ended by the administrator
    (AdminShutdown) — and the writer process connects again, takes its lock again and indexes the
    next push."""
    import psycopg

    w = _world(tmp_path, tiny_model_dir, pg_url)
    writer = subprocess.Popen([sys.executable, "-m", "remembrancer", "serve", "--store", pg_url, "--root",
                               str(w["shared"]), "--pull-every", "3600"], env=w["env"], cwd=str(PROJECT),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def found(query: str, path: str) -> bool:
            r = _cli(w, "search", query, "--store", pg_url, "--root", str(w["mine"]), "--json")
            return r.returncode == 0 and json.loads(r.stdout)["results"][0]["path"] == path
        assert _wait(lambda: found("restart the ledger", "runbooks/restart.md"))
        with psycopg.connect(pg_url, autocommit=True) as admin:
            ended = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name"
                                  " LIKE 'remembrancer-writer%%' AND datname = current_database()").fetchone()[0]
        assert ended >= 2   # the writer's ledger and its NOTIFY listener
        write(w["origin"], "runbooks/rotate.md", "# Rotate the wombat keys\n\nRotate them every quarter.\n")
        git(w["origin"], "add", "-A")
        git(w["origin"], "commit", "-q", "-m", "rotate")

        def indexed_after_notify() -> bool:
            _cli(w, "notify", "--store", pg_url, "--event", "post-receive")
            return found("rotate the wombat keys", "runbooks/rotate.md")
        assert _wait(indexed_after_notify, 90), "the writer did not index the push after losing its connections"
        assert writer.poll() is None, writer.stderr.read()
        doc = _cli(w, "doctor", "--store", pg_url, "--root", str(w["mine"]), "--json")
        assert {c["check"]: c for c in json.loads(doc.stdout)}["store writer"]["status"] == "OK"
    finally:
        _stop(writer)
    err = writer.stderr.read()
    assert "lost the store" in err and "connected to the store" in err and "Traceback" not in err, err[-2000:]


def test_readers_see_the_writer_again_as_soon_as_the_server_is_back(tmp_path, tiny_model_dir, tiny_embedder, pg_url):
    """The server ends the idle writer's sessions (what a restart does) while its next pass is an
    hour away: it notices at once, connects again and takes its lock again, so readers never say
    "no writer is running" about a writer that is there."""
    import psycopg

    from remembrancer.indexer.config import Config, make_roots
    from remembrancer.indexer.store.postgres.store import PgStore
    from remembrancer.indexer.team import TeamReader

    w = _world(tmp_path, tiny_model_dir, pg_url)
    writer = subprocess.Popen([sys.executable, "-m", "remembrancer", "serve", "--store", pg_url, "--root",
                               str(w["shared"]), "--pull-every", "3600"], env=w["env"], cwd=str(PROJECT),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def lock_pid() -> int | None:
        """The pid of the writer's session holding the store's lock, once a first pass is done."""
        try:
            led = PgStore(pg_url, readonly=True).open_ledger(readonly=True)
        except Exception:   # noqa: BLE001 — not there yet
            return None
        try:
            holder = led.writer_lock_holder()
            done = led.get_meta("last_indexed_at") is not None
            return holder.pid if holder is not None and holder.owns_store and done else None
        finally:
            led.close()
    try:
        old = _wait(lock_pid, 90)
        assert old, "the writer never finished its first pass"
        with psycopg.connect(pg_url, autocommit=True) as admin:
            ended = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name"
                                  " LIKE 'remembrancer-writer%%' AND datname = current_database()").fetchone()[0]
        assert ended >= 2   # its ledger (holding the lock) and its NOTIFY listener
        # the lock taken again by a new session: not the old one seen on its way out, and (the deadline
        # being generous but far below the hour to the next pass) because the writer noticed at once
        assert poll_until(lambda: lock_pid() not in (None, old), 120, 0.1), \
            "readers were told no writer is running until the writer's next pass"
        reader = TeamReader(pg_url, Config(roots=make_roots([w["mine"]])), embedder=tiny_embedder)
        try:
            out = reader.call("search", query="restart the ledger service")
        finally:
            reader.close()
        assert out["index"]["writer_running"] and "no writer is running" not in out["index"]["detail"], out["index"]
        assert out["index"]["verdict"] == "fresh", out["index"]
        assert writer.poll() is None
    finally:
        _stop(writer)
    err = writer.stderr.read()
    assert "lost the store" in err and "connected to the store" in err and "Traceback" not in err, err[-2000:]


@pytest.mark.slow
def test_a_teammates_checkout_named_otherwise_reads_and_reports_like_the_writers(tmp_path, tiny_model_dir, pg_url):
    """The writer's checkout is `shared/`, the teammate's `mine/`: the store names the root
    `shared`, and the teammate's read, outline, status and freshness still find their files."""
    w = _world(tmp_path, tiny_model_dir, pg_url)
    assert _cli(w, "index", "--store", pg_url, "--root", str(w["shared"])).returncode == 0
    mine = ("--store", pg_url, "--root", str(w["mine"]))
    r = _cli(w, "read", "runbooks/restart.md", *mine)
    assert r.returncode == 0 and "systemctl restart ledger" in r.stdout, r.stderr
    r = _cli(w, "outline", "runbooks/restart.md", *mine)
    assert r.returncode == 0 and "Restart the ledger service" in r.stdout, r.stderr
    st = json.loads(_cli(w, "status", "--json", *mine).stdout)
    head = git(w["mine"], "rev-parse", "HEAD")
    assert st["roots"][0]["head_indexed"] == head and st["roots"][0]["path"] == str(w["mine"])
    out = json.loads(_cli(w, "search", "ledger", "--json", *mine).stdout)
    assert f"indexed {head[:7]}" in out["index"]["detail"]


def test_a_reader_without_a_checkout_says_so_in_read_and_status(tmp_path, tiny_model_dir, pg_url):
    """Without --root a reader knows the writer's roots by name only: `read` says it has no
    checkout (not that the file "resolves outside its root"), and `status` says the same instead
    of showing a made-up path."""
    w = _world(tmp_path, tiny_model_dir, pg_url)
    assert _cli(w, "index", "--store", pg_url, "--root", str(w["shared"])).returncode == 0
    for cmd in ("read", "outline"):
        r = _cli(w, cmd, "runbooks/restart.md", "--store", pg_url)
        assert r.returncode == 2 and "no checkout of the shared notes" in r.stderr and "--root CHECKOUT" in r.stderr, r.stderr
        assert "outside its root" not in r.stderr
    r = _cli(w, "status", "--store", pg_url)
    assert r.returncode == 0 and "root shared: no checkout here (pass --root CHECKOUT" in r.stdout, r.stdout
    assert "/nonexistent" not in r.stdout
    mine = _cli(w, "status", "--store", pg_url, "--root", str(w["mine"]))
    assert f"root shared: {w['mine']}" in mine.stdout, mine.stdout


def test_a_reader_without_root_never_takes_the_configured_personal_notes_for_the_team_checkout(tmp_path, tiny_model_dir,
                                                                                              pg_url):
    """`roots = [personal notes]` in the config (the usual single-user set-up) and `--store URL`
    alone: the personal folder is not the team's checkout. `read` of a path both have says the
    reader has no checkout instead of serving the personal file's section, and `status` shows no
    personal folder, HEAD or "not a git checkout" against the team's index."""
    w = _world(tmp_path, tiny_model_dir, pg_url)
    assert _cli(w, "index", "--store", pg_url, "--root", str(w["shared"])).returncode == 0
    personal = tmp_path / "notes"
    git_init(personal)
    write(personal, "runbooks/restart.md", "# Restart the ledger service\n\n## Secrets\n\nPERSONAL-ONLY text.\n")
    git(personal, "add", "-A")
    git(personal, "commit", "-q", "-m", "mine")
    (tmp_path / "config.toml").write_text(f'roots = ["{personal}"]\n[model]\npath = "{tiny_model_dir}"\n')
    r = _cli(w, "read", "runbooks/restart.md", "--store", pg_url)
    assert r.returncode == 2 and "no checkout of the shared notes" in r.stderr and "--root CHECKOUT" in r.stderr, r.stderr
    assert "PERSONAL-ONLY" not in r.stdout + r.stderr
    r = _cli(w, "read", "runbooks/restart.md", "--heading", "Secrets", "--store", pg_url)
    assert r.returncode == 2 and "PERSONAL-ONLY" not in r.stdout + r.stderr, r.stdout + r.stderr
    st = _cli(w, "status", "--store", pg_url)
    assert st.returncode == 0 and "root shared: no checkout here (pass --root CHECKOUT" in st.stdout, st.stdout
    assert str(personal) not in st.stdout and "NOT indexed" not in st.stdout and "not a git checkout" not in st.stdout
    out = json.loads(_cli(w, "search", "ledger", "--json", "--store", pg_url).stdout)
    assert "your checkout" not in out["index"]["detail"] and "not a git checkout" not in out["index"]["detail"]
    mine = _cli(w, "read", "runbooks/restart.md", "--store", pg_url, "--root", str(w["mine"]))
    assert mine.returncode == 0 and "systemctl restart ledger" in mine.stdout, mine.stderr   # --root still reads


@pytest.mark.slow
def test_a_writer_that_cannot_fetch_is_seen_by_every_reader_doctor_and_the_metrics(tmp_path, tiny_model_dir, pg_url):
    w = _world(tmp_path, tiny_model_dir, pg_url)
    metrics = tmp_path / "metrics.prom"
    (tmp_path / "config.toml").write_text((tmp_path / "config.toml").read_text() + f'[metrics]\ntextfile = "{metrics}"\n')
    assert _cli(w, "index", "--store", pg_url, "--root", str(w["shared"])).returncode == 0
    mine = ("--store", pg_url, "--root", str(w["mine"]))
    assert "writer could not fetch" not in _cli(w, "search", "ledger", *mine).stdout
    # The remote goes away (moved, a revoked token): the writer's fetch fails, carrying a credential.
    git(w["shared"], "remote", "set-url", "origin", "https://deploy:ghp_Zx9aB3cD4eF5gH6iJ7kL8mN9oP0qR1sT2uV3w@127.0.0.1:9/notes.git")
    r = _cli(w, "index", "--store", pg_url, "--root", str(w["shared"]))
    assert r.returncode == 0 and "git fetch failed" in r.stderr and "ghp_Zx9a" not in r.stderr + r.stdout
    out = json.loads(_cli(w, "search", "ledger", "--json", *mine).stdout)
    assert out["index"]["verdict"] == "stale" and "the writer could not fetch since" in out["index"]["reason"]
    checks = {c["check"]: c for c in json.loads(_cli(w, "doctor", "--json", *mine).stdout)}
    assert checks["writer fetch"]["status"] == "FAIL" and "git fetch failed" in checks["writer fetch"]["detail"]
    # a reader's doctor speaks of the store, not of a local daemon, service or git hooks it does not use
    assert not {"daemon", "service", "inotify"} & set(checks) and not any(k.startswith("hooks") for k in checks)
    text = metrics.read_text()
    assert "remembrancer_writer_fetch_ok" in text and 'remembrancer_writer_fetch_ok{index=' in text
    assert [l for l in text.splitlines() if l.startswith("remembrancer_writer_fetch_ok{")][0].endswith(" 0")
    shown = json.dumps(out) + json.dumps(checks) + text
    assert "ghp_Zx9aB3cD4eF5gH6iJ7kL8mN9oP0qR1sT2uV3w" not in shown
    git(w["shared"], "remote", "set-url", "origin", str(w["origin"]))   # fixed: the next pass clears it
    assert _cli(w, "index", "--store", pg_url, "--root", str(w["shared"])).returncode == 0
    out = json.loads(_cli(w, "search", "ledger", "--json", *mine).stdout)
    assert "could not fetch" not in json.dumps(out["index"])
    checks = {c["check"]: c for c in json.loads(_cli(w, "doctor", "--json", *mine).stdout)}
    assert checks["writer fetch"]["status"] == "OK"


@pytest.mark.slow
def test_a_teammate_without_a_database_login_reads_the_store_over_http_with_a_token(tmp_path, tiny_model_dir, pg_url):
    """`serve-http --store URL`: the store's reader answers token holders over streamable HTTP as
    it answers an MCP session over stdio; a scoped token only its prefixes."""
    import socket as socketlib

    import httpx2

    from tests.mcp.test_mcp_http import _initialize, over_http

    w = _world(tmp_path, tiny_model_dir, pg_url)
    assert _cli(w, "index", "--store", pg_url, "--root", str(w["shared"])).returncode == 0
    tokens = {}
    for name, extra in (("all", ()), ("rb", ("--scope", "runbooks/"))):
        r = _cli(w, "team", "token", "create", name, *extra, "--json")
        assert r.returncode == 0, r.stderr
        tokens[name] = json.loads(r.stdout)["token"]
    with socketlib.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "remembrancer", "serve-http", "--store", pg_url, "--root",
                               str(w["mine"]), "--port", str(port)], env=w["env"], cwd=str(PROJECT),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        def refuses_strangers() -> bool:
            try:
                return _initialize(url, {}).status_code == 401
            except httpx2.HTTPError:   # not listening yet
                return False
        assert _wait(refuses_strangers, 60)
        params = StdioServerParameters(command=sys.executable, cwd=str(PROJECT), env=w["env"],
                                       args=["-m", "remembrancer", "mcp", "--store", pg_url, "--root", str(w["mine"])])

        async def every_tool(c):
            return [await c.call_tool(name, args) for name, args in STORE_CALLS]

        async def stdio():
            async with Client(params, read_timeout_seconds=120) as c:
                return await every_tool(c)
        want = anyio.run(stdio)
        got = over_http(url, tokens["all"], every_tool)
        differ = [(c, a, b) for c, a, b in zip(STORE_CALLS, _answers(got), _answers(want)) if a != b]
        assert not differ, differ[:2]   # every tool: the same answers over HTTP as over stdio
        errors = [(c, _answers([r])) for c, r in zip(STORE_CALLS, got) if r.is_error]
        # the errors are the two calls that must fail (no host/service records; a missing file), alike
        assert [c[0] for c, _ in errors] == ["history", "read"] and "not_found" in errors[0][1][0][1], errors
        strip = lambda r: [(x["path"], x["heading"], x["score"]) for x in r.structured_content["results"]]
        assert strip(got[0]) and got[0].structured_content["index"]["verdict"] == want[0].structured_content["index"]["verdict"]
        # one description for every token, made before any request: never "the index cannot be read:
        # no valid bearer token" (a store's reader was asked its facts through the token check)
        tools = over_http(url, tokens["rb"], lambda c: c.list_tools()).tools
        assert tools and not any("the index cannot be read" in (t.description or "") for t in tools)
        scoped = over_http(url, tokens["rb"], lambda c: c.call_tool("search", {"query": "ledger service"}))
        assert {x["path"] for x in scoped.structured_content["results"]} == {"runbooks/restart.md"}
        # many agents at once cost the database a bounded number of connections: each call borrows
        # one of the reader's pooled connections (before, every worker thread kept its own: 81
        # connections for 64 clients)
        errors, most = _crowd(url, tokens["all"], pg_url, clients=24)
        assert not errors and 0 < most <= 10, (errors[:3], most)
    finally:
        _stop(server)


STORE_CALLS = [("search", {"query": "ledger service"}),
               ("search", {"query": "what happened at noon", "type": ["journal"]}),
               ("read", {"path": "runbooks/restart.md"}),
               ("read", {"path": "runbooks/restart.md", "outline": True}),
               ("list_documents", {}),
               ("index_status", {}),
               ("latest", {"terms": ["ledger"]}),
               ("history", {"entity": "ledger"}),
               ("neighbors", {"path": "runbooks/restart.md"}),
               ("verify", {"path": "runbooks/restart.md"}),
               ("read", {"path": "runbooks/missing.md"})]


def _answers(results) -> list:
    """Each answer as a client sees it, less what differs between two calls (timings)."""
    out = []
    for r in results:
        body = dict(r.structured_content or {})
        body.pop("took_ms", None)
        text = "".join(getattr(c, "text", "") for c in r.content) if not body else ""
        out.append((r.is_error, re.sub(r"\b\d+ (s|min|h) ago", "… ago", json.dumps(body, sort_keys=True)), text))
    return out


def _crowd(url: str, token: str, pg_url: str, clients: int) -> tuple[list, int]:
    """`clients` HTTP sessions at once, two searches each; (their errors, the most connections the
    store's database had meanwhile, sampled every 20 ms)."""
    import threading

    import psycopg

    from tests.mcp.test_mcp_http import over_http

    errors, most, done = [], [0], threading.Event()

    def sample():
        with psycopg.connect(pg_url, autocommit=True) as c:
            while not done.wait(0.02):
                n = c.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                              " AND pid <> pg_backend_pid()").fetchone()[0]
                most[0] = max(most[0], n)

    async def ask(c):
        for q in ("ledger service", "what happened at noon"):
            r = await c.call_tool("search", {"query": q})
            if r.is_error:
                errors.append(r)

    def one():
        try:
            over_http(url, token, ask)
        except BaseException as e:   # noqa: BLE001 — counted, as a client would see it
            errors.append(e)
    sampler = threading.Thread(target=sample)
    sampler.start()
    threads = [threading.Thread(target=one) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    sampler.join()
    return errors, most[0]
