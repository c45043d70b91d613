"""The daemon with its embedding model behind an HTTP server (tests/support/model_server.py, a
separate process implementing the OpenAI embeddings API over the tiny model): a server that is
down never blocks the daemon, searches answer by keywords saying why, and the passages indexed
meanwhile get their vectors by themselves once the server is back."""

from __future__ import annotations

import time

import pytest

from tests.support.corpus import write
from tests.support.daemon import DaemonProc, wait_for
from tests.support.model_server import ModelServer


@pytest.mark.slow
def test_a_server_down_at_start_costs_the_daemon_nothing_and_its_vectors_follow_when_it_returns(
        tmp_path, notes, tiny_model_dir):
    probe = ModelServer("--model", str(tiny_model_dir), "--name", "tiny").start()
    port = probe.port
    probe.stop()   # down: nothing listens there
    d = DaemonProc(tmp_path, [notes], tiny_model_dir)
    (tmp_path / "config.toml").write_text(f'[model]\nurl = "http://127.0.0.1:{port}/v1"\nname = "tiny"\ntimeout = 2\n')
    d.start(wait=False)
    try:
        st = wait_for(lambda: (lambda s: s if s and s["daemon"]["last_ingest"] and not s["daemon"]["ingesting"]
                               else None)(d.ping()), 30)
        # The text is indexed; the index is not all it should be until the vectors follow, and says why.
        assert st["vectors_waiting"] > 0 and st["freshness"]["verdict"] == "stale"
        assert "embedding server unavailable" in st["freshness"]["reason"]
        t0 = time.monotonic()
        out = d.search("restore the database from a backup", limit=2)
        assert time.monotonic() - t0 < 3
        assert out["results"] and any(n.startswith("keyword search only: embedding server unavailable")
                                      for n in out["notes"]), out
        write(notes, "runbooks/new.md", "# New\n\n## Kettle\n\nBoil the kettle before the tea.\n")
        wait_for(lambda: d.search("kettle tea", limit=1)["results"], 20)   # indexed as text meanwhile
        with ModelServer("--model", str(tiny_model_dir), "--name", "tiny", port=port):
            seen = []   # every status until the vectors are there: never "fresh" while some wait

            def filled():
                st = d.call("status")
                seen.append((st["freshness"]["verdict"], st.get("vectors_waiting")))
                # The pass that fills them commits before it ends: "catching up" until it has ended.
                return st if not st.get("vectors_waiting") and st["freshness"]["verdict"] != "catching_up" else None
            st = wait_for(filled, 60)
            assert not [s for s in seen if s[1] and s[0] == "fresh"], seen
            assert st["model"]["name"] == "tiny" and "probe" not in st["model"]
            assert st["freshness"]["verdict"] == "fresh", st["freshness"]
            out = d.search("kettle tea", limit=1, explain=True)
            assert out["results"][0]["scores"]["dense"] > 0 and not out.get("notes"), out
    finally:
        d.stop()
    assert "Traceback" not in d.log.read_text()
