"""A PostgreSQL restart under load (`pg_ctl restart -m fast`, twice, on a server of this test's
own): pushes keep landing, the real writer process keeps indexing them, and two readers keep
asking. Writer and readers recover by themselves: every pushed commit is indexed in the end (0
lost), every answer is whole (the section found for a marker holds it; a reader's generation
never goes back), and an answer during the restart is a structured `store_unreachable`, never an
internal error."""

from __future__ import annotations

import random
import traceback
import subprocess
import sys
import threading
import time

import pytest

from remembrancer.indexer.config import Config, make_roots
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.team import TeamReader
from tests.cli.test_team_cli import _stop, _world
from tests.support.corpus import git, write
from tests.support.daemon import poll_until
from tests.support.paths import PROJECT

COMMITS = 12


@pytest.mark.slow
def test_writer_and_readers_recover_from_server_restarts_under_load(tmp_path, tiny_model_dir, tiny_embedder, data_env):
    import pgserver
    from pgserver._commands import pg_ctl

    from tests.support.pg import fresh_database

    srv = pgserver.get_server(str(tmp_path / "pg"), cleanup_mode="stop")
    url = fresh_database(srv.get_uri(), "restart")
    w = _world(tmp_path, tiny_model_dir, url)
    writer = subprocess.Popen([sys.executable, "-m", "remembrancer", "serve", "--store", url, "--root",
                               str(w["shared"]), "--pull-every", "1"], env=w["env"], cwd=str(PROJECT),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stop, pushed, lock = threading.Event(), [], threading.Lock()
    seen = {"ok": 0, "unreachable": 0, "other": [], "torn": [], "back": [], "ok_after": [0, 0]}
    restarted = threading.Event()
    try:
        assert poll_until(lambda: _answers(url, tiny_embedder, w, "ledger"), 90, 0.5), "the writer never wrote"

        def push():
            for i in range(COMMITS):
                write(w["origin"], f"notes/n{i}.md", f"# Note {i}\n\nThe marker zq{i}x lives here.\n\n"
                                                     f"## More on {i}\n\nzq{i}x again, with detail.\n")
                git(w["origin"], "add", "-A")
                git(w["origin"], "commit", "-q", "-m", f"note {i}")
                with lock:
                    pushed.append(i)
                time.sleep(0.6)

        def read(k: int):
            reader = TeamReader(url, Config(roots=make_roots([w["shared"]])), embedder=tiny_embedder)
            generation = 0
            try:
                while not stop.is_set():
                    with lock:
                        i = random.choice(pushed) if pushed else 0
                    try:
                        out = reader.call("search", query=f"zq{i}x")
                    except UserError as e:
                        if e.code == "store_unreachable":
                            seen["unreachable"] += 1
                        else:
                            seen["other"].append(f"{e.code}: {e.message}")
                        time.sleep(0.1)
                        continue
                    except Exception as e:   # noqa: BLE001 — an internal error is what this test rules out
                        seen["other"].append(traceback.format_exc())
                        continue
                    seen["ok"] += 1
                    if restarted.is_set():
                        seen["ok_after"][k] += 1
                    gen = out["index"]["generation"]
                    if gen < generation:
                        seen["back"].append((generation, gen))
                    generation = gen
                    for r in out["results"]:
                        if r["path"] == f"notes/n{i}.md" and f"zq{i}x" not in r.get("text", r.get("snippet", "")):
                            seen["torn"].append(r)
            finally:
                reader.close()

        threads = [threading.Thread(target=push)] + [threading.Thread(target=read, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for _ in range(2):
            time.sleep(2.5)
            pg_ctl(["-w", "-m", "fast", "restart"], pgdata=srv.pgdata, user=srv.system_user, timeout=60)
        restarted.set()
        threads[0].join()
        everything = lambda: all(_answers(url, tiny_embedder, w, f"zq{i}x", f"notes/n{i}.md") for i in range(COMMITS))
        assert poll_until(everything, 120, 1.0), "a pushed commit was never indexed"
        time.sleep(1.0)
        stop.set()
        for t in threads[1:]:
            t.join()
        assert writer.poll() is None, "the writer exited"
    finally:
        stop.set()
        _stop(writer)
        # pg_ctl restarted the server under a postmaster pgserver did not start: its cleanup would
        # leave that one running after the test
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=srv.pgdata, user=srv.system_user, timeout=60)
        srv.cleanup()
    err = writer.stderr.read()
    assert "Traceback" not in err and "internal error" not in err, err[-3000:]
    assert "lost the store" in err, err[-3000:]
    assert not seen["other"] and not seen["torn"] and not seen["back"], seen
    assert seen["ok"] > 20 and all(n > 0 for n in seen["ok_after"]), seen
    print(f"restarts under load: {seen['ok']} answers, {seen['unreachable']} store_unreachable, "
          f"{COMMITS} commits all indexed")


def _answers(url: str, embedder, w, query: str, path: str | None = None) -> bool:
    """Whether a new reader's first result for `query` is `path` (or any result without one)."""
    try:
        reader = TeamReader(url, Config(roots=make_roots([w["shared"]])), embedder=embedder)
    except UserError:
        return False
    try:
        results = reader.call("search", query=query)["results"]
    except UserError:
        return False
    finally:
        reader.close()
    return bool(results) and (path is None or results[0]["path"] == path)
