"""The config file edited while the daemon serves: applied by the running daemon, not at its next
start. Its answers never call the old settings fresh; an invalid file is refused as the in-process
path refuses it; a redaction policy it can no longer apply stops serving."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remembrancer.indexer.config import load_config
from remembrancer.indexer.errors import UserError
from remembrancer.wire import DaemonError
from tests.support.daemon import DaemonProc, wait_for

DENIED = "hosts/db1.md"


def save(path: Path, text: str) -> None:
    """An editor's atomic save: the daemon never reads this test's file half-written (a truncate then
    a write, which it waits out unless the writer stalls longer: daemon/server.py CONFIG_QUIET_S)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def error_of(call):
    """The structured error a call gets (None: it was answered)."""
    try:
        call()
    except DaemonError as e:
        return e.error
    return None


@pytest.mark.slow
def test_a_deny_written_into_the_config_file_applies_without_a_restart(tmp_path, notes, tiny_model_dir):
    """`[redact] deny` added while the daemon serves: the files it names leave search, read, list
    and the index. The daemon went on serving them as fresh until it was stopped."""
    with DaemonProc(tmp_path, [notes], tiny_model_dir) as d:
        d.start()
        assert DENIED in [r["path"] for r in d.search("pg-primary", limit=10)["results"]]
        documents = d.call("status")["documents"]
        with (tmp_path / "config.toml").open("a") as config:   # `echo … >> config.toml`
            config.write('[redact]\ndeny = ["hosts/**"]\n')

        def applied() -> bool:
            answer = d.search("pg-primary", limit=10)
            shown = [r["path"] for r in answer["results"]]
            fresh = answer["index"]["verdict"] == "fresh"
            assert not (fresh and DENIED in shown), "a denied file served as fresh"
            return fresh and not any(p.startswith("hosts/") for p in shown)

        wait_for(applied, timeout=30)
        assert error_of(lambda: d.call("read", path=DENIED))["code"] == "not_found"
        assert not [x["path"] for x in d.call("list")["documents"] if x["path"].startswith("hosts/")]
        st = d.wait_fresh()
        assert st["documents"] == documents - 2   # out of the index too, not only out of the answers


@pytest.mark.slow
def test_an_invalid_config_edit_is_refused_then_its_fix_is_applied(tmp_path, notes, tiny_model_dir, monkeypatch):
    """A typo in the file: every request gets the error `remembrancer` gives in-process (status
    still answers, stale, so `stop` works); a secret-hash file that is missing: nothing is served
    (the daemon served on under the old policy); fixed: served again."""
    with DaemonProc(tmp_path, [notes], tiny_model_dir) as d:
        d.start()
        config = tmp_path / "config.toml"
        base = config.read_text()
        save(config, base + '[index]\nexclued = ["private/"]\n')
        monkeypatch.setenv("REMEMBRANCER_CONFIG", str(config))
        with pytest.raises(UserError) as in_process:
            load_config([str(notes)])
        refused = wait_for(lambda: error_of(lambda: d.search("pg-primary")))
        assert refused == in_process.value.to_dict()
        st = d.call("status")
        assert st["freshness"]["verdict"] == "stale" and "exclued" in st["freshness"]["reason"]

        save(config, base + '[redact]\nsecret_hashes = "missing-hashes.txt"\n')
        refused = wait_for(lambda: (lambda e: e if e and e["code"] == "redaction_unavailable" else None)(
            error_of(lambda: d.search("pg-primary"))))
        assert "missing" in refused["message"]
        assert error_of(lambda: d.call("read", path=DENIED))["code"] == "redaction_unavailable"

        save(config, base)
        wait_for(lambda: error_of(lambda: d.search("pg-primary")) is None, timeout=30)
        assert DENIED in [r["path"] for r in d.search("pg-primary", limit=10)["results"]]
        d.wait_fresh()
