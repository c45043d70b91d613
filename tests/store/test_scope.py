"""Scopes are a hard boundary: outside the prefixes nothing exists — no names, counts, tags,
folders or dates leak from any tool, description or error."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import anyio
import pytest

from remembrancer.indexer import api
from remembrancer.indexer.answers import Freshness
from remembrancer.indexer.errors import UserError
from tests.support.cli import run_cli
from tests.support.corpus import engine_for
from tests.support.env import remembrancer_env
from tests.support.paths import EXAMPLES, PROJECT

SCOPE = ["journal/", "runbooks/"]
# Strings that exist only outside the scope (host and lesson and plan files, their front matter).
OUTSIDE = ["hosts/", "memory/", "planning/", "pg-replica", "reports-db", "10.20.1.12", "Connection slots exhausted",
           "2030-01-06", "2030-01-28", "Django behind PgBouncer", "Plan, Q1 2030"]


@pytest.fixture
def engine(tmp_path, monkeypatch, tiny_embedder):
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    root = tmp_path / "notes"
    shutil.copytree(EXAMPLES, root)
    e = engine_for([root], tiny_embedder)
    e.refresh()
    yield e
    e.close()


def leaks(obj, echo: dict | None = None) -> list[str]:
    """Outside-only strings found in `obj`, after removing the caller's own words (`echo`): an
    answer may repeat the question or the path asked for; it must add nothing from outside."""
    text = json.dumps(obj, ensure_ascii=False)
    for v in (echo or {}).values():
        for piece in (v if isinstance(v, list) else [v]):
            if isinstance(piece, str) and piece:
                text = text.replace(json.dumps(piece)[1:-1], "")
                for word in piece.split():
                    text = text.replace(word, "")
    return [s for s in OUTSIDE if s.lower() in text.lower()]


def call(engine, method, **params):
    return api.dispatch_read(engine, method, {**params, "scope": SCOPE}, lambda view: Freshness("fresh"))


def test_every_read_method_sees_only_the_scope(engine):
    asks = [
        ("search", {"query": "replica lag reports-db pg-replica"}),
        ("search", {"query": "django server-side cursors"}),
        ("search", {"query": "", "type": "journal"}),
        ("search", {"query": "too many clients", "exact": True}),
        ("list", {}),
        ("outline", {"path": "runbooks/postgres/restore.md"}),
        ("latest", {"terms": ["PgBouncer"]}),
    ]
    outs = [call(engine, m, **p) for m, p in asks]
    for (m, p), out in zip(asks, outs):
        assert not leaks(out, p), (m, leaks(out, p))
    paths = {d["path"] for d in outs[4]["documents"]}
    assert paths and all(p.startswith(("journal/", "runbooks/")) for p in paths)
    results = outs[0]["results"] + outs[0].get("best_weak", [])
    assert all(r["path"].startswith(("journal/", "runbooks/")) for r in results)
    with engine.view(SCOPE) as view:
        st = view.status().to_json()
    assert st["documents"] == 4 and not leaks(st)


@pytest.mark.parametrize("method,params", [
    ("read", {"path": "hosts/db1.md"}),
    ("read", {"path": "hosts/db"}),
    ("outline", {"path": "memory/pgbouncer-transaction-pooling.md"}),
    ("search", {"query": "x", "tags": ["database"]}),
    ("search", {"query": "x", "type": "host"}),
    ("history", {"entity": "db2"}),
    ("neighbors", {"path": "hosts/db1.md"}),
])
def test_errors_do_not_name_what_is_outside(engine, method, params):
    try:
        out = call(engine, method, **params)
    except UserError as e:
        assert not leaks(e.to_dict(), params), e.to_dict()
        return
    assert not leaks(out, params), leaks(out, params)
    assert not out.get("results") and not out.get("documents")


def test_outside_looks_exactly_like_nonexistent(engine):
    def err(path):
        with pytest.raises(UserError) as ei:
            call(engine, "read", path=path)
        return ei.value.code, ei.value.message.replace(path, "<p>")
    assert err("hosts/db1.md") == err("hosts/never-was.md")


def test_bad_scopes_are_refused(engine):
    for bad in (["../etc"], ["/abs"], [""], [3]):
        with pytest.raises(UserError) as ei:
            api.dispatch_read(engine, "search", {"query": "x", "scope": bad}, lambda view: Freshness())
        assert ei.value.param == "scope"


def test_scope_does_not_stick_to_the_connection(engine):
    call(engine, "list")
    everything = api.dispatch_read(engine, "list", {}, lambda view: Freshness())
    assert any(d["path"].startswith("hosts/") for d in everything["documents"])


@pytest.mark.slow
def test_mcp_with_scope_leaks_nothing(tmp_path, tiny_model_dir):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    root = tmp_path / "notes"
    shutil.copytree(EXAMPLES, root)
    (tmp_path / "config.toml").write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    sock = Path(os.environ.get("TMPDIR", "/tmp")) / f"rmb-scope-{os.getpid()}.sock"
    env = remembrancer_env(data=tmp_path / "data", config=tmp_path / "config.toml", socket=sock, home=tmp_path)
    args = ["-m", "remembrancer", "mcp", "--root", str(root), "--idle-exit", "2"] + [x for s in SCOPE for x in ("--scope", s)]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(PROJECT))

    async def go():
        async with Client(params, read_timeout_seconds=120) as c:
            tools = await c.list_tools()
            outs = [([t.description for t in tools.tools], {})]
            for name, a in (("search", {"query": "replica reports-db django"}), ("list_documents", {}),
                            ("index_status", {}), ("read", {"path": "hosts/db2.md"}),
                            ("search", {"query": "", "tags": ["database"]})):
                r = await c.call_tool(name, a)
                outs.append(([x.text for x in r.content], a))
                outs.append((r.structured_content, a))
            return outs

    outs = anyio.run(go)
    for out, asked in outs:
        assert not leaks(out, asked), (asked, leaks(out, asked), out)
    assert "runbooks/postgres/restore.md" in json.dumps([o for o, _ in outs])


# -- the wall's rules -------------------------------------------------------------------------------

def test_prefixes_match_whole_segments_and_exact_case():
    from remembrancer.indexer.store.scope import contains, normalize

    for spelled in ("journal", "journal/", "./journal", "journal//", " journal/ "):
        assert normalize([spelled]) == ("journal",)
    s = normalize(["journal/"])
    assert contains(s, "journal/2030-02-10.md") and contains(s, "journal/sub/x.md")
    for outside in ("journal-archive/x.md", "JOURNAL/x.md", "Journal/x.md", "journalx.md", "journal.md",
                    "hosts/journal/x.md"):
        assert not contains(s, outside), outside
    for bad in (["../etc"], ["journal/../hosts"], ["/abs"], [""], ["."], ["a\x00b"], ["journal\n"], [3], 7):
        with pytest.raises(UserError) as ei:
            normalize(bad)
        assert ei.value.param == "scope"


def test_a_scope_naming_nothing_is_refused_with_what_it_may_mean(engine):
    for bad, meant in (("Journal/", "journal"), ("jornal", "journal"), ("journal/2099", None)):
        with pytest.raises(UserError) as ei:
            api.dispatch_read(engine, "list", {"scope": [bad]}, lambda view: Freshness())
        assert ei.value.param == "scope" and ei.value.code == "not_found"
        if meant:
            assert meant in (ei.value.options or []), ei.value.to_dict()


def test_mcp_refuses_an_unknown_scope_at_start(tmp_path):
    (tmp_path / "notes" / "journal").mkdir(parents=True)
    env = remembrancer_env(data=tmp_path / "d", config=tmp_path / "none.toml", socket=tmp_path / "s.sock", home=tmp_path)
    r = run_cli("mcp", "--root", str(tmp_path / "notes"), "--scope", "JOURNAL/", env=env, cwd=PROJECT,
                input="", timeout=60)   # stdin at its end at once
    assert r.returncode == 2 and "case-sensitive" in r.stderr and "journal" in r.stderr


def test_a_symlink_is_indexed_under_its_target_and_judged_by_it(tmp_path):
    from remembrancer.indexer.ingest import corpus
    from remembrancer.indexer.config import make_roots
    from tests.support.corpus import write

    root = tmp_path / "c"
    write(root, "hosts/db1.md", "# db1\n")
    write(root, "notes/only-here.md", "# x\n")
    (root / "a-links").mkdir()
    os.symlink("../hosts/db1.md", root / "a-links" / "db1.md")          # sorts before its target
    os.symlink("../notes/only-here.md", root / "a-links" / "other.md")
    (root / "ignored").mkdir()
    walked = corpus.walk(make_roots([root]), ("notes/",), 1 << 20)
    by_path = {f.path: f.target for f in walked.files}
    assert "hosts/db1.md" in by_path and "a-links/db1.md" not in by_path   # the real path wins
    assert by_path["a-links/other.md"] == "notes/only-here.md"             # target not walked: the link, with it


def test_warnings_a_scope_sees():
    from remembrancer.indexer.store.scope import Wall, visible_warnings

    wall = Wall(("journal",), {"journal/link.md": "hosts/db1.md"})
    ws = ["journal/a.md: invalid YAML front matter; ignored", "hosts/b.md: invalid YAML front matter; ignored",
          "vectors skipped: no model", "journal/link.md: x", "JOURNAL/c.md: x", ".: cannot list folder (denied)",
          "journal/my note.md: x", "journal-archive/d.md: x"]
    paths = ["journal/a.md", "hosts/b.md", None, "journal/link.md", "JOURNAL/c.md", ".", "journal/my note.md",
             "journal-archive/d.md"]
    want = [ws[0], ws[2], ws[5], ws[6]]
    assert visible_warnings(wall, ws, paths) == want
    assert visible_warnings(wall, ws, None) == want   # an index that did not record the paths: read from the text


def test_outside_edits_cannot_move_scoped_answers(engine):
    """An edit outside the scope changes nothing a scoped search answers — scores included — and
    costs no rebuild of the scope's keyword index; an edit inside is seen."""
    def scoped(q):
        out = call(engine, "search", query=q, limit=10)
        return [(r["path"], r["heading"], r["score"], r["scores"]) for r in out["results"] + out.get("best_weak", [])]
    queries = ["replica lag", "restore the database from a backup", "pgbouncer transaction pooling"]
    before = [scoped(q) for q in queries]
    builds = engine._cache.keyword_indexes.builds
    root = engine.config.roots[0].path
    host = root / "hosts" / "db1.md"
    host.write_text(host.read_text() + "\n## More\n\nreplica lag restore backup database pooling " * 5)
    engine.refresh()
    assert [scoped(q) for q in queries] == before
    assert engine._cache.keyword_indexes.builds == builds   # the scope's chunks did not change: nothing rebuilt
    (root / "journal" / "zz-new.md").write_text("# zebra\n\nA zebracorn replica lag note.\n")
    engine.refresh()
    hits = {r["path"]: r for r in call(engine, "search", query="zebracorn", limit=10)["results"]}
    assert engine._cache.keyword_indexes.builds == builds + 1
    assert hits["journal/zz-new.md"]["scores"]["bm25"] > 0
    assert all(r["scores"]["bm25"] == 0 for p, r in hits.items() if p != "journal/zz-new.md")


def test_a_vector_search_of_a_subset_computes_the_same_similarities(tmp_path, monkeypatch):
    """A scope's dense leg searches its passages; each similarity must be the one a corpus of only
    those passages computes (exact search, row by row), whatever else the index holds."""
    import numpy as np

    from remembrancer.indexer.store.local import vectors as V

    rng = np.random.default_rng(14)
    X = rng.standard_normal((500, 24)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    big = V.Vectors(tmp_path / "big", 24)
    big.rebuild(np.arange(1, 501), X, 1)
    small = V.Vectors(tmp_path / "small", 24)
    keep = np.arange(1, 501, 3)
    small.rebuild(keep, X[keep - 1], 1)
    for q in X[:20]:
        assert big.search(q, 60, set(keep.tolist())) == small.search(q, 60)
    big.update([1, 4], [901], X[:1])   # kept in step with updates
    assert big.search(X[0], 5, {901, 7})[0] == (901, small.search(X[0], 1)[0][1])
    monkeypatch.setattr(V, "EXACT_BELOW", 100)   # a big index: only the pool's vectors are fetched
    pool = set(keep[2:].tolist())
    assert big.search(X[3], 30, pool) == small.search(X[3], 30, pool)


def test_a_skipped_symlinks_warning_is_judged_by_its_target(tmp_path, monkeypatch, tiny_embedder):
    """A symlink left out as a second path to a file is warned about (one warning a pass); inside a
    scope its target decides whether the scope sees that warning — a corpus of only `journal/`
    holds no link to hosts/db1.md, so neither the warning nor its `read` refusal may show it."""
    from tests.support.corpus import write

    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    root = tmp_path / "c"
    write(root, "hosts/db1.md", "# db1\n\nThe db1 record.\n")
    write(root, "journal/day.md", "# Day\n\nA day.\n")
    os.symlink("../hosts/db1.md", root / "journal" / "host-db1.md")   # inside → outside
    os.symlink("day.md", root / "journal" / "again.md")               # inside → inside
    e = engine_for([root], tiny_embedder)
    try:
        e.refresh()
        said = {"journal/host-db1.md: skipped, a symlink to a file indexed under another path (a file is taken "
                "once, under its first path)",
                "journal/again.md: skipped, a symlink to a file indexed under another path (a file is taken "
                "once, under its first path)"}
        assert set(e.view().status().warnings) == said
        with e.view(("journal",)) as view:
            assert view.status().warnings == ["journal/again.md: skipped, a symlink to a file indexed under "
                                              "another path (a file is taken once, under its first path)"]
        with pytest.raises(UserError) as err:
            api.dispatch_read(e, "read", {"path": "journal/host-db1.md", "scope": ["journal/"]},
                              lambda view: Freshness("fresh"))
        assert err.value.message == "no indexed document 'journal/host-db1.md'", err.value.message
    finally:
        e.close()
