"""Code served live: a real `serve --code` daemon on a real socket indexes the source folder from
the start and watches it (a saved function is searchable moments later); a real `remembrancer mcp
--code DIR` answers `search` with `corpus: "code"` and `read` on a source path over stdio."""

from __future__ import annotations


import pytest

from tests.support.corpus import write, write_tree
from tests.support.daemon import DaemonProc, mcp_calls, stdio_mcp, wait_for

LIMITER = '''class TokenBucket:
    def take(self, n=1):
        return refillTokens(self, n)


def refillTokens(bucket, n):
    return bucket.tokens >= n
'''


@pytest.fixture
def world(tmp_path):
    notes = write_tree(tmp_path / "notes", {"gateway.md": "# Gateway\n\nThe gateway limits requests.\n"})
    src = write_tree(tmp_path / "src", {"limiter.py": LIMITER})
    return notes, src


@pytest.mark.slow
def test_a_saved_function_is_searchable_moments_later(tmp_path, world, tiny_model_dir):
    notes, src = world
    with DaemonProc(tmp_path, [notes], tiny_model_dir, extra=("--code", str(src))) as d:   # stopped, and its log checked for a traceback, on the way out
        d.start()
        def search(q):
            return d.call("search", roots=[str(notes)], code=[str(src)], query=q, exact=True, corpus="code")
        first = search("refillTokens")
        assert first["results"][0]["heading"] == "refillTokens" and first["index"]["verdict"] == "fresh"
        st = d.call("status")
        assert (f"code:{src.resolve()}",) in {tuple(c["roots"]) for c in st["corpora"]}
        write(src, "quota.py", "def loadZebracornQuota(key):\n    return 0\n")
        out = wait_for(lambda: (lambda o: o if o.get("results") else None)(search("loadZebracornQuota")), 15)
        assert out["results"][0]["heading"] == "loadZebracornQuota" and out["results"][0]["path"] == "quota.py"
        notes_only = d.call("search", roots=[str(notes)], code=[str(src)], query="loadZebracornQuota", exact=True)
        assert not notes_only.get("results")   # code is searched only when asked


@pytest.mark.slow
def test_mcp_search_and_read_over_code(tmp_path, world, tiny_model_dir):
    notes, src = world
    server, sock = stdio_mcp(tmp_path, tiny_model_dir, "--root", str(notes), "--code", str(src))
    tools, (hit, page) = mcp_calls(server, sock, [
        ("search", {"query": "TokenBucket.take", "corpus": "code"}),
        ("read", {"path": "limiter.py", "heading": "TokenBucket > take"})])
    tool = tools["search"]
    assert "code" in tool.input_schema["properties"]["corpus"]["enum"]
    assert 'Also searchable: the source code of src — corpus="code"' in tool.description
    sc = hit.structured_content   # the tiny model's meaning is noise: the answer may abstain; its order holds
    best = (sc.get("results") or sc["best_weak"])[0]
    assert (best["path"], best["heading"], best["type"]) == ("limiter.py", "TokenBucket > take", "code")
    assert "return refillTokens(self, n)" in page.structured_content["content"]
