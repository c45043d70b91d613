"""`read`, `outline` and `list` say how fresh the index is, as search does — on the socket, the CLI
and the MCP tools — and right after a daemon starts they answer after its catch-up pass: a file
that exists is never "not indexed" because the pass has not reached it yet."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from remembrancer.indexer.answers import Freshness
from remembrancer.indexer.api import dispatch_read
from remembrancer.indexer.errors import UserError
from remembrancer.wire import DaemonError
from tests.support.corpus import write
from tests.support.daemon import DaemonProc, mcp_calls, stdio_mcp, wait_for

FRESHNESS_LINE = re.compile(r"^Index (fresh|catching up: .+|STALE: .+)")
NEW = "zz/quokka.md"


def _many(root, n: int, version: int) -> None:
    """`n` notes; a new `version` changes every one, so the next catch-up pass reads them all again."""
    for i in range(n):
        write(root, f"d{i:03}.md", f"# Doc {i} v{version}\n\n" + "\n\n".join(
            f"Paragraph {j} of document {i}, version {version}, is about topic{i % 13} and item{j}."
            for j in range(10)))


def _restarted_behind(tmp_path, model_dir) -> tuple[DaemonProc, object]:
    """A corpus indexed by a daemon that then stopped; meanwhile every note changed and a new one
    (NEW, last in the walk) was written: the next start's catch-up pass has all of them to read."""
    root = tmp_path / "notes"
    _many(root, 150, 1)
    d = DaemonProc(tmp_path, [root], model_dir).start()
    d.stop()
    _many(root, 150, 2)
    write(root, NEW, "# Quokka\n\nThe quokkagate procedure is to reboot four times.\n")
    return d, root


def test_reads_right_after_a_daemon_start_wait_for_its_catch_up_pass(tmp_path, tiny_model_dir):
    d, root = _restarted_behind(tmp_path, tiny_model_dir)
    d.start(wait=False)
    try:
        wait_for(lambda: d.sock.exists() and d.ping(), timeout=30, step=0.02)
        page = d.call("read", path=NEW)          # the first request: the pass is still under way
        assert "quokkagate" in page["content"]
        assert page["index"]["verdict"] in ("fresh", "catching_up")
        listing = d.call("list", limit=500)
        assert NEW in [x["path"] for x in listing["documents"]]
        assert listing["index"]["documents"] == listing["total"] == 151
        outline = d.call("outline", path=NEW)
        assert outline["sections"] and outline["index"]["verdict"]
    finally:
        d.stop()


def test_a_not_found_from_an_index_behind_says_so(notes_engine):
    """Past the wait (a pass longer than it, changes still queued, the read-only fallback), a
    document the index does not hold is not simply "not found": the error carries the verdict,
    and its message says the index is behind."""
    behind = Freshness(verdict="catching_up", documents=9, sections=40, queued_changes=2, seconds_behind=0.4)
    for method, params in (("read", {"path": "quokka.md"}), ("outline", {"path": "quokka.md"})):
        with pytest.raises(UserError) as e:
            dispatch_read(notes_engine, method, params, lambda view: behind)
        err = e.value.to_dict()
        assert err["code"] == "not_found" and err["index"]["verdict"] == "catching_up", err
        assert "Index catching up: 2 changes queued" in err["message"] and "not be indexed yet" in err["message"]
    fresh = Freshness(verdict="fresh", documents=9, sections=40, detail="at the on-disk state")
    with pytest.raises(UserError) as e:
        dispatch_read(notes_engine, "read", {"path": "quokka.md"}, lambda view: fresh)
    err = e.value.to_dict()
    assert err["index"]["verdict"] == "fresh" and err["message"] == "no indexed document 'quokka.md'", err


def test_read_outline_and_list_carry_the_verdict_on_the_socket_and_the_cli(tmp_path, notes, tiny_model_dir):
    with DaemonProc(tmp_path, [notes], tiny_model_dir).start() as d:
        for method, params in (("read", {"path": "hosts/db1.md"}), ("outline", {"path": "hosts/db1.md"}),
                               ("list", {})):
            out = d.call(method, **params)
            assert out["index"]["verdict"] == "fresh" and out["index"]["documents"] >= 9, (method, out)
        with pytest.raises(DaemonError) as e:
            d.call("read", path="no/such-note.md")
        assert e.value.error["code"] == "not_found" and e.value.error["index"]["verdict"] == "fresh"

        def cli(*args):
            return subprocess.run([sys.executable, "-m", "remembrancer", *args, "--root", str(notes)],
                                  env=d.env, capture_output=True, text=True, timeout=60)
        for args in (("read", "hosts/db1.md"), ("outline", "hosts/db1.md"), ("list",)):
            r = cli(*args, "--json")
            assert r.returncode == 0, r.stderr
            assert json.loads(r.stdout)["index"]["verdict"] == "fresh", args
            r = cli(*args)
            assert r.returncode == 0, r.stderr
            # read prints the text verbatim on stdout, its verdict on stderr; the others open with it
            head = r.stderr.splitlines()[0] if args[0] == "read" else r.stdout.splitlines()[0]
            assert FRESHNESS_LINE.match(head), (args, r.stdout, r.stderr)
            if args[0] == "read":
                assert r.stdout.splitlines()[0] == (notes / "hosts/db1.md").read_text().splitlines()[0]


@pytest.mark.slow
def test_an_mcp_session_started_behind_reads_and_lists_the_new_file_with_a_verdict(tmp_path, tiny_model_dir):
    """The first calls of an MCP session that starts the daemon: read and list_documents answer
    after the catch-up pass, and say how fresh they are in the text and the structured content."""
    root = tmp_path / "notes"
    _many(root, 150, 1)
    server, sock = stdio_mcp(tmp_path, tiny_model_dir, "--root", str(root))
    mcp_calls(server, sock, [("index_status", {})])   # indexed; its daemon stopped after
    _many(root, 150, 2)
    write(root, NEW, "# Quokka\n\nThe quokkagate procedure is to reboot four times.\n")
    tools, (read, listing, outline) = mcp_calls(server, sock, [
        ("read", {"path": NEW}), ("list_documents", {"path": "zz/"}), ("read", {"path": NEW, "outline": True})])
    for r in (read, listing, outline):
        assert not r.is_error, r.content[0].text
        assert r.structured_content["index"]["verdict"] in ("fresh", "catching_up")
        assert FRESHNESS_LINE.match(r.content[0].text.splitlines()[0]), r.content[0].text
    assert "quokkagate" in read.structured_content["content"]
    assert [x["path"] for x in listing.structured_content["documents"]] == [NEW]
    for name in ("read", "list_documents"):   # a declared output schema must allow the verdict
        schema = tools[name].output_schema or {}
        assert "index" in (schema.get("properties") or {}) or schema.get("additionalProperties", True) is not False
