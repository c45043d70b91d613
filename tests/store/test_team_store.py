"""The team store on a real PostgreSQL + pgvector (pgserver): write, read, search like the local
store, migrations, the read-only role, one writer, freshness against the reader's checkout,
redaction before the shared store, scopes."""

from __future__ import annotations

import json
import time

import psycopg
import pytest

from remembrancer.indexer import api
from remembrancer.indexer.answers import Freshness
from remembrancer.indexer.store.postgres import schema as pg_schema
from remembrancer.indexer.search import answer as S
from remembrancer.indexer.config import Config, make_roots
from remembrancer.indexer.engine import Engine
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.store.postgres.store import PgStore
from remembrancer.indexer.team import TeamReader, Writer
from tests.support.cli import run_cli
from tests.support.corpus import assert_untouched, git, git_init, git_snapshot, write
from tests.support.pg import database_url
from tests.support.team import QUERIES, index_once, stats_consistent


def _top(engine, q, **kw):
    with engine.view(kw.pop("scope", ())) as view:
        r = S.search(view, S.SearchRequest(q, **kw)).to_json()
    rows = r["results"] or r.get("best_weak", [])
    assert all(0.0 <= x["score"] <= 1.0 for x in rows), rows   # a shown score is 0–1 in either store
    return [(x["path"], x["heading"], x["score"], x.get("scores")) for x in rows], r["no_strong_match"]


@pytest.mark.slow
def test_the_store_answers_like_the_local_store(notes, data_env, tiny_embedder, pg_url):
    cfg = Config(roots=make_roots([notes]))
    local = Engine(cfg, embedder=tiny_embedder)
    local.refresh()
    writer = Writer(cfg, pg_url, embedder=tiny_embedder)
    writer.pass_once()
    reader = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(pg_url, readonly=True))
    try:
        assert {k: v for k, v in local.catalog.counts().items()} == reader.catalog.counts()
        for q in QUERIES:
            assert _top(local, q) == _top(reader, q), q
        assert _top(local, "postgres", exact=True) == _top(reader, "postgres", exact=True)
        f = S.flt.Filters(types=["runbook"])
        assert _top(local, "restore", filters=f) == _top(reader, "restore", filters=f)
        assert _top(local, "backup", scope=("runbooks/",)) == _top(reader, "backup", scope=("runbooks/",))
        for method, params in [("list", {}), ("outline", {"path": "runbooks/postgres/restore.md"}),
                               ("latest", {"terms": ["postgres"]}), ("neighbors", {"path": "README.md"})]:
            a = api.dispatch_read(local, method, params, lambda view: Freshness())
            b = api.dispatch_read(reader, method, params, lambda view: Freshness())
            assert a == b, method
        stats_consistent(pg_url)
    finally:
        reader.close()
        writer.close()
        local.close()


def test_both_stores_show_the_same_scores_each_between_0_and_1(notes, data_env, tiny_embedder, pg_url):
    """The score an answer shows is the same number from either store, and within 0–1 even where
    rephrasings, the memory rules or an exact search's counts take the ranking's own over 1 (it
    is then shown divided by the best: the order is the ranking's)."""
    from tests.support.team import local_and_store

    def shown(engine, q, **kw):
        with engine.view(()) as view:
            r = S.search(view, S.SearchRequest(q, **kw)).to_json()
        return [(x["path"], x["heading"], x["score"], x.get("scores")) for x in r["results"] or r.get("best_weak", [])]

    cfg = Config(roots=make_roots([notes]))
    with local_and_store(cfg, pg_url, tiny_embedder) as (local, reader):
        asked = [(q, {}) for q in QUERIES] + [
            ("how do I restart postgres", {"alternates": ["postgres restart procedure", "restart the database"]}),
            ("backup", {"exact": True})]
        for q, kw in asked:
            mine, team = shown(local, q, **kw), shown(reader, q, **kw)
            assert mine == team, q
            assert all(0.0 <= score <= 1.0 for _, _, score, _ in team), (q, team)
            assert [x[2] for x in team] == sorted((x[2] for x in team), reverse=True), q
        for q, kw in asked[-2:]:   # both over 1 as ranked: shown with the best at 1
            assert shown(reader, q, **kw)[0][2] == 1.0, q


def test_a_filtered_dense_search_finds_the_pools_nearest_either_way(notes, data_env, tiny_embedder, pg_url,
                                                                      monkeypatch):
    """The dense leg under a filter, read exactly (by runs of section ids) or through the graph
    (the cost model's other choice, forced here): the pool's true nearest, best first, nothing
    from outside it."""
    import numpy as np

    from remembrancer.indexer.store.postgres import store as pg_store

    cfg = Config(roots=make_roots([notes]))
    index_once(cfg, pg_url, tiny_embedder)
    reader = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(pg_url, readonly=True))
    try:
        with reader.view(()) as view:
            cat = reader.catalog
            keep = cat.filtered_section_ids(S.flt.Filters(types=["runbook", "host"]))
            ids, vecs = cat.passage_vectors()
            owner = cat.passages_by_id(ids.tolist())
            pool = np.array([owner[int(i)][0] in keep for i in ids])
            assert 0 < pool.sum() < len(ids)   # a filter that keeps some passages, not all
            for q in ("restore the database", "who owns billing", "disk full on pg1"):
                qv = tiny_embedder.embed_query(q)
                sims = vecs[pool] @ qv / np.linalg.norm(vecs[pool], axis=1) / np.linalg.norm(qv)
                k = 8
                best = ids[pool][np.argsort(-sims, kind="stable")[:k]].tolist()
                got = cat.nearest(qv, k, len(qv), cat.passage_ids_in(keep))
                assert [i for i, _ in got] == best, q
                assert all(a[1] >= b[1] for a, b in zip(got, got[1:]))
                assert cat.nearest_soon(qv, k, len(qv), cat.passage_ids_in(keep))() == got   # on a side connection
                monkeypatch.setattr(pg_store, "GRAPH_COST_PER_EF", 0)
                graph = cat.nearest(qv, k, len(qv), cat.passage_ids_in(keep))
                assert cat.nearest_soon(qv, k, len(qv), cat.passage_ids_in(keep))() == graph
                monkeypatch.undo()
                assert graph and all(owner[i][0] in keep for i, _ in graph), q
    finally:
        reader.close()


def test_the_dense_leg_beside_the_keyword_leg_sees_the_requests_snapshot(notes, data_env, tiny_embedder, pg_url,
                                                                        monkeypatch):
    """A reader's dense leg runs on side connections (a large exact read in two halves at once,
    forced here) that import the request's snapshot: a document the writer deletes meanwhile is
    still there for the whole request, its passages included, and gone in the next; the halves
    merged are the whole read, best first."""
    import numpy as np

    from remembrancer.indexer.store.postgres import store as pg_store

    cfg = Config(roots=make_roots([notes]))
    index_once(cfg, pg_url, tiny_embedder)
    reader = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(pg_url, readonly=True))
    monkeypatch.setattr(pg_store, "SPLIT_POOL", 0)
    qv = tiny_embedder.embed_query("restore the database")
    f = S.flt.Filters(types=["runbook", "host"])
    try:
        with reader.view(()) as view:
            cat = reader.catalog
            keep = cat.filtered_section_ids(f)
            ids, vecs = cat.passage_vectors()
            owner = cat.passages_by_id(ids.tolist())
            pool = np.array([owner[int(i)][0] in keep for i in ids])
            sims = vecs[pool] @ qv / np.linalg.norm(vecs[pool], axis=1) / np.linalg.norm(qv)
            k = int(pool.sum())   # the whole pool, the deleted document's passages among it
            best = ids[pool][np.argsort(-sims, kind="stable")].tolist()
            gone = (notes / "runbooks/postgres/restore.md")
            gone.unlink()
            index_once(cfg, pg_url, tiny_embedder)   # committed while the request is open
            got = cat.nearest_soon(qv, k, len(qv), cat.passage_ids_in(keep))()
            assert [i for i, _ in got] == best
            assert len([s for s in cat._sides if s is not None and s.joined]) == 2
            assert cat.nearest(qv, k, len(qv), cat.passage_ids_in(keep)) == got
        with reader.view(()) as view:
            cat = reader.catalog
            now = cat.nearest_soon(qv, k, len(qv), cat.passage_ids_in(cat.filtered_section_ids(f)))()
            deleted = set(ids.tolist()) - cat.passage_ids()
            assert deleted & set(best)   # the request before saw them …
            assert now and not {i for i, _ in now} & deleted   # … this one does not
    finally:
        reader.close()


def test_runs_of_consecutive_ids():
    from remembrancer.indexer.store.postgres.store import _runs

    assert _runs([1, 2, 3, 7, 9, 10]) == ([1, 7, 9], [3, 7, 10])
    assert _runs([5]) == ([5], [5])


def test_edits_and_deletes_keep_the_store_consistent(notes, data_env, tiny_embedder, pg_url):
    cfg = Config(roots=make_roots([notes]))
    writer = Writer(cfg, pg_url, embedder=tiny_embedder)
    try:
        writer.pass_once()
        gen = writer.engine.catalog.generation
        write(notes, "memory/wombat.md", "# Wombat cache warming\n\nWarm the wombat cache with `make warm`.\n")
        (notes / "README.md").unlink()
        rb = notes / "runbooks" / "postgres" / "restore.md"
        rb.write_text(rb.read_text() + "\n## Zebra step\n\nFeed the zebra before the restore.\n")
        rep = writer.pass_once()
        assert (rep.added, rep.updated, rep.removed) == (1, 1, 1)
        assert writer.engine.catalog.generation == gen + 3
        reader = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(pg_url, readonly=True))
        assert _top(reader, "warm the wombat cache")[0][0][0] == "memory/wombat.md"
        assert _top(reader, "feed the zebra")[0][0][1].endswith("Zebra step")
        assert reader.catalog.document("README.md") is None
        reader.close()
        stats_consistent(pg_url)
        with psycopg.connect(pg_url) as c:   # no orphans: every embedding is used by a passage
            assert c.execute("SELECT count(*) FROM embeddings e WHERE NOT EXISTS"
                             " (SELECT 1 FROM passages p WHERE p.text_sha = e.text_sha)").fetchone()[0] == 0
            assert c.execute("SELECT count(*) FROM passages WHERE embedding IS NULL").fetchone()[0] == 0
            # the first pass built the HNSW index once at its end; later passes keep it
            assert c.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'passages_embedding_hnsw'"
                             ).fetchone()[0].endswith(f"vector({tiny_embedder.contract.dim})) vector_cosine_ops)")
    finally:
        writer.close()


def test_migrations_are_numbered_and_applied_once(pg_url):
    with psycopg.connect(pg_url, autocommit=True) as c:
        assert pg_schema.applied_version(c) == 0
        assert pg_schema.migrate(c) == [m[0] for m in pg_schema.MIGRATIONS]
        assert pg_schema.migrate(c) == []
        rows = c.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
    # numbered by the helpers that wrote them (a number may be skipped), unique, applied in order
    numbers = [m[0] for m in pg_schema.MIGRATIONS]
    assert [r[0] for r in rows] == numbers == sorted(set(numbers)) and numbers[-1] == pg_schema.LATEST
    assert all(r[1] for r in rows)


def test_a_migration_step_cancelled_by_a_deadlock_with_a_reader_is_tried_again(pg_url):
    """A reader polling `status` while the writer migrated deadlocked with migration 7's ALTER
    TABLE … ENABLE ROW LEVEL SECURITY; PostgreSQL cancelled the writer's step and the writer
    exited. Now the step is rolled back and tried again (the deadlock is raised here, on the real
    server's connection, where PostgreSQL would raise it)."""
    with psycopg.connect(pg_url, autocommit=True) as c:
        real, hits = c.execute, []

        def execute(query, *args, **kwargs):
            if isinstance(query, str) and "ENABLE ROW LEVEL SECURITY" in query and not hits:
                hits.append(query)
                real("SELECT 1")   # inside the step's transaction, as the ALTER would be
                raise psycopg.errors.DeadlockDetected("deadlock detected")
            return real(query, *args, **kwargs)

        c.execute = execute
        assert pg_schema.migrate(c) == [m[0] for m in pg_schema.MIGRATIONS]
        assert len(hits) == 1
        c.execute = real
        assert [r[0] for r in c.execute("SELECT version FROM schema_migrations ORDER BY version")] == \
            [m[0] for m in pg_schema.MIGRATIONS]


def test_a_reader_of_an_empty_store_is_told_to_start_the_writer(pg_url):
    with pytest.raises(UserError) as e:
        PgStore(pg_url, readonly=True)
    assert e.value.code == "no_index" and "serve --store" in e.value.hint


def test_a_second_writer_is_refused_with_the_first_ones_name(notes, data_env, tiny_embedder, pg_url):
    cfg = Config(roots=make_roots([notes]))
    first = Writer(cfg, pg_url, embedder=tiny_embedder)
    try:
        with pytest.raises(UserError) as e:
            Writer(cfg, pg_url, embedder=tiny_embedder)
        assert e.value.code == "writer_busy"
        assert "remembrancer-writer" in str(e.value) and "already has a writer" in str(e.value)
    finally:
        first.close()
    Writer(cfg, pg_url, embedder=tiny_embedder).close()   # the lock went with the first writer


def test_the_reader_role_reads_and_cannot_write(notes, data_env, tiny_embedder, pg_url):
    cfg = Config(roots=make_roots([notes]))
    index_once(cfg, pg_url, tiny_embedder)
    from remembrancer.indexer.store.postgres import roles as pg_roles

    pg_roles.grant_reader(pg_url, "alice", [], password="pw", everything=True)
    alice = pg_url.replace("postgres:@", "alice:pw@")
    reader = TeamReader(alice, cfg, embedder=tiny_embedder)
    try:
        out = reader.call("search", query="how do I restart postgres")
        assert out["results"] and out["index"]["store"].startswith("postgresql://alice:***@")
    finally:
        reader.close()
    with psycopg.connect(alice, autocommit=True) as c:
        for sql in ("DELETE FROM documents", "UPDATE meta SET value = '0'", "CREATE TABLE x (a int)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(sql)
    with pytest.raises(UserError):   # and cannot become the writer
        Writer(cfg, alice, embedder=tiny_embedder).pass_once()
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("DROP OWNED BY alice")
        c.execute("DROP ROLE alice")


def test_every_answer_says_what_is_indexed_and_how_the_readers_checkout_compares(tmp_path, data_env, tiny_embedder,
                                                                                  pg_url):
    origin = tmp_path / "origin"
    git_init(origin)
    write(origin, "notes/a.md", "# Alpha\n\nThe alpha service restarts nightly.\n")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "one")
    shared = tmp_path / "shared"
    git(tmp_path, "clone", "-q", str(origin), str(shared))
    mine = tmp_path / "mine"
    git(tmp_path, "clone", "-q", str(origin), str(mine))
    writer = Writer(Config(roots=make_roots([shared])), pg_url, embedder=tiny_embedder)
    try:
        writer.pass_once()
        indexed = git(shared, "rev-parse", "HEAD")
        reader = TeamReader(pg_url, Config(roots=make_roots([mine])), embedder=tiny_embedder)
        out = reader.call("search", query="alpha service")
        assert out["index"]["verdict"] == "fresh"
        for corpus in ("commits", "conversations"):   # never answered from the notes instead
            with pytest.raises(UserError) as err:
                reader.call("search", query="alpha service", corpus=corpus)
            assert err.value.code == "team_reader" and err.value.param == "corpus"
        every = reader.call("search", query="alpha service", corpus="all")
        assert every["results"] == out["results"] and "a team store holds the notes only" in " ".join(every["notes"])
        assert f"indexed {indexed[:7]}" in out["index"]["detail"] and "at the indexed commit" in out["index"]["detail"]
        for i in range(3):   # the reader commits locally: 3 ahead
            write(mine, f"notes/b{i}.md", f"# Beta {i}\n\nBeta note {i}.\n")
            git(mine, "add", "-A")
            git(mine, "commit", "-q", "-m", f"b{i}")
        out = reader.call("search", query="alpha service")
        assert out["index"]["verdict"] == "stale"
        assert "your checkout is 3 commits ahead" in out["index"]["reason"]
        write(origin, "notes/c.md", "# Gamma\n\nGamma arrives upstream.\n")   # upstream moves; the writer pulls
        git(origin, "add", "-A")
        git(origin, "commit", "-q", "-m", "gamma")
        writer.pass_once()
        assert git(shared, "rev-parse", "HEAD") == git(origin, "rev-parse", "HEAD")
        out = reader.call("search", query="gamma arrives")
        assert out["results"][0]["path"] == "notes/c.md"
        assert "commit" in out["index"]["reason"] and "indexed " + git(origin, "rev-parse", "HEAD")[:7] in \
            out["index"]["reason"]
        reader.close()
    finally:
        writer.close()
    reader = TeamReader(pg_url, Config(roots=make_roots([mine])), embedder=tiny_embedder)
    try:
        st = reader.call("status")
        assert st["store"]["kind"] == "postgresql" and not st["freshness"]["writer_running"]
        assert "no writer is running" in st["freshness"]["reason"]
    finally:
        reader.close()


def test_the_writer_indexes_the_commit_it_names_never_its_uncommitted_changes(tmp_path, data_env, tiny_embedder,
                                                                              pg_url):
    """Someone edits the writer's checkout and does not commit, and adds files only that machine
    has: the store keeps the commit it names (readers at that commit read what search showed),
    the changes left out are said (`doctor --store`, the pass's warnings); a reader's `read` of a
    file its checkout lacks says why, and of a file its own uncommitted edit changed is not "fresh"."""
    from remembrancer.indexer.team import store_checks

    origin = tmp_path / "origin"
    git_init(origin)
    write(origin, "docs/adr/0007-kafka.md", "# ADR 0007 Kafka for order events\n\n## Decision\n\n"
                                            "Order events move to Kafka, topic orders.v2, 12 partitions.\n")
    write(origin, "notes/a.md", "# Alpha\n\nThe alpha service restarts nightly.\n")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "one")
    shared, mine = tmp_path / "shared", tmp_path / "mine"
    for clone in (shared, mine):
        git(tmp_path, "clone", "-q", str(origin), str(clone))
    adr = "docs/adr/0007-kafka.md"
    (shared / adr).write_text((shared / adr).read_text().replace("12 partitions", "48 partitions (changed)"))
    for i in range(3):
        write(shared, f"journal/bulk-{i}.md", f"# Bulk note {i}\n\nThe giraffe-bulk-{i} parameter is {i}.\n")
    writer = Writer(Config(roots=make_roots([shared])), pg_url, embedder=tiny_embedder)
    reader = TeamReader(pg_url, Config(roots=make_roots([mine])), embedder=tiny_embedder)
    try:
        rep = writer.pass_once()
        head = git(shared, "rev-parse", "HEAD")
        assert any("4 uncommitted changes" in w and "not indexed" in w for w in rep.warnings), rep.warnings
        assert git(shared, "status", "--porcelain")   # the writer never touches its checkout's changes
        out = reader.call("search", query="how many partitions orders.v2")
        assert out["index"]["verdict"] == "fresh" and f"indexed {head[:7]}" in out["index"]["detail"]
        hit = (out["results"] or out["best_weak"])[0]
        assert out["index"]["documents"] == 2 and hit["path"] == adr and "12 partitions" in hit["content"] and "48" not in hit["content"]
        page = reader.call("read", path=adr, heading="Decision")
        assert "12 partitions" in page["content"] and "48" not in page["content"]   # what search showed
        assert page["index"]["verdict"] == "fresh", page["index"]
        giraffe = reader.call("search", query="giraffe-bulk-1 parameter")
        assert all(not r["path"].startswith("journal/") for r in giraffe["results"] + giraffe.get("best_weak", []))
        checks = {c["check"]: c for c in store_checks(pg_url, [str(mine)])}
        assert checks["writer checkout"]["status"] == "WARN"
        assert "4 uncommitted changes" in checks["writer checkout"]["detail"], checks["writer checkout"]

        write(origin, "runbooks/new.md", "# New runbook\n\nThe zebra procedure, step by step.\n")
        git(origin, "add", "-A")
        git(origin, "commit", "-q", "-m", "new runbook")
        writer.pass_once()   # pulled and indexed; the reader has not pulled
        with pytest.raises(UserError) as err:
            reader.call("read", path="runbooks/new.md")
        assert err.value.code == "not_in_checkout" and "is in the index" in err.value.message, err.value
        assert "the indexed commit is not in it" in err.value.message and "git pull" in err.value.hint
        git(mine, "fetch", "-q")
        with pytest.raises(UserError) as err:
            reader.call("read", path="runbooks/new.md")
        assert "your checkout is 1 commit behind the index" in err.value.message, err.value.message
        git(mine, "pull", "-q")
        assert "zebra procedure" in reader.call("read", path="runbooks/new.md")["content"]

        (mine / "notes/a.md").write_text("# Alpha\n\nThe alpha service restarts weekly now.\n")   # the reader's own edit
        page = reader.call("read", path="notes/a.md")
        assert "weekly" in page["content"] and page["index"]["verdict"] == "stale", page["index"]
        assert "your copy of notes/a.md differs from the indexed text (uncommitted changes in your checkout)" in \
            page["index"]["reason"]
        (mine / "notes/a.md").unlink()
        with pytest.raises(UserError) as err:
            reader.call("read", path="notes/a.md")
        assert err.value.code == "not_in_checkout" and "deleted or moved in your working tree" in err.value.message
    finally:
        reader.close()
        writer.close()


def test_a_read_is_judged_by_its_own_root_and_on_the_bytes_it_served(tmp_path, data_env, tiny_embedder, pg_url,
                                                                      monkeypatch):
    """Two roots, the reader's checkout of one behind the index: its own edit to a file of the other
    root is an uncommitted change of a checkout at the indexed commit, not "another commit"; and
    the freshness of a `read` compares the file that read took, not a second reading of it."""
    from remembrancer.indexer.ingest import corpus
    from remembrancer.indexer.search import reader as reading

    for name in ("alpha", "beta"):
        git_init(tmp_path / "origin" / name)
        write(tmp_path / "origin" / name, "notes/a.md", f"# {name}\n\nThe {name} service restarts nightly.\n")
        git(tmp_path / "origin" / name, "add", "-A")
        git(tmp_path / "origin" / name, "commit", "-q", "-m", "one")
        for side in ("shared", "mine"):
            (tmp_path / side).mkdir(exist_ok=True)
            git(tmp_path, "clone", "-q", str(tmp_path / "origin" / name), str(tmp_path / side / name))
    shared = [tmp_path / "shared" / n for n in ("alpha", "beta")]
    mine = [tmp_path / "mine" / n for n in ("alpha", "beta")]
    write(tmp_path / "origin" / "beta", "notes/b.md", "# B\n\nlater\n")
    git(tmp_path / "origin" / "beta", "add", "-A")
    git(tmp_path / "origin" / "beta", "commit", "-q", "-m", "two")
    writer = Writer(Config(roots=make_roots(shared)), pg_url, embedder=tiny_embedder)
    reader = TeamReader(pg_url, Config(roots=make_roots(mine)), embedder=tiny_embedder)
    try:
        writer.pass_once()   # beta pulled to "two"; the reader's beta is still at "one"
        path = next(d["path"] for d in reader.call("list")["documents"] if d["path"].startswith("alpha"))
        (mine[0] / "notes/a.md").write_text("# alpha\n\nThe alpha service restarts weekly now.\n")
        reads = []
        real = corpus.read_regular_file
        counted = lambda *a, **k: (reads.append(a[1]), real(*a, **k))[1]   # noqa: E731
        monkeypatch.setattr(corpus, "read_regular_file", counted)
        monkeypatch.setattr(reading, "read_regular_file", counted)
        page = reader.call("read", path=path)
        assert "weekly" in page["content"] and page["index"]["verdict"] == "stale", page["index"]
        reason = page["index"]["reason"]
        assert "the indexed commit is not in it" in reason, reason   # beta's line: not fetched
        assert f"your copy of {path} differs from the indexed text (uncommitted changes in your checkout)" in reason
        assert reads == [path], reads   # read once: served and compared
    finally:
        reader.close()
        writer.close()


def test_a_writer_whose_indexed_tree_is_gone_makes_it_again_and_never_empties_the_store(tmp_path, data_env,
                                                                                        tiny_embedder, pg_url,
                                                                                        monkeypatch):
    """The writer's tree deleted (its data dir cleaned): the writer makes it again. Until it can
    (git refuses), the pass is refused, rather than indexing no tree and removing every document
    of the root. Through it all the checkout's repository is not written to."""
    import shutil

    from remembrancer.indexer import committed

    shared = tmp_path / "shared"   # no upstream: the writer has nothing to pull (a fetch writes FETCH_HEAD)
    git_init(shared)
    write(shared, "notes/a.md", "# Alpha\n\nThe alpha service restarts nightly.\n")
    git(shared, "add", "-A")
    git(shared, "commit", "-q", "-m", "one")
    writer = Writer(Config(roots=make_roots([shared])), pg_url, embedder=tiny_embedder)
    try:
        before = git_snapshot(shared)
        writer.pass_once()
        tree = writer.trees.trees[0].tree
        assert (tree / "notes/a.md").is_file()
        assert_untouched(shared, before)
        shutil.rmtree(tree)
        real = committed.git
        monkeypatch.setattr(committed, "git", lambda cwd, *args: real(cwd, *(
            ("init", "--no-such-option") if args[:1] == ("init",) else args)))
        with pytest.raises(UserError) as err:
            writer.pass_once()
        assert err.value.code == "writer_tree" and "cannot make the indexed tree" in err.value.message
        assert writer.engine.catalog.counts()["documents"] == 1
        monkeypatch.setattr(committed, "git", real)
        rep = writer.pass_once()
        assert (rep.added, rep.removed) == (0, 0) and (tree / "notes/a.md").is_file()
        assert writer.engine.catalog.counts()["documents"] == 1
        assert_untouched(shared, before)
    finally:
        writer.close()


def test_secrets_never_reach_the_shared_store(tmp_path, data_env, tiny_embedder, pg_url):
    root = tmp_path / "notes"
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    write(root, "ops/keys.md", f"# Keys\n\nThe deploy key is {key} for the bucket.\n")
    write(root, "ops/ok.md", "# Fine\n\nNothing secret here.\n")
    w = Writer(Config(roots=make_roots([root])), pg_url, embedder=tiny_embedder)
    try:
        w.pass_once()
    finally:
        w.close()
    with psycopg.connect(pg_url) as c:
        dump = json.dumps([c.execute(f"SELECT * FROM {t}").fetchall() for t in
                           ("documents", "sections", "chunks", "passages", "postings", "field_stats", "links",
                            "entities", "meta")], default=str)
        assert c.execute("SELECT count(*) FROM documents").fetchone()[0] == 2
    assert key not in dump and key.lower() not in dump


def test_a_broken_redaction_policy_writes_nothing(tmp_path, data_env, tiny_embedder, pg_url):
    from remembrancer.indexer.redact_policy import RedactionPolicy

    root = tmp_path / "notes"
    write(root, "a.md", "# A\n\ntext\n")
    cfg = Config(roots=make_roots([root]), redact=RedactionPolicy(secret_hashes=str(tmp_path / "missing-hashes.txt")))
    w = Writer(cfg, pg_url, embedder=tiny_embedder)
    try:
        with pytest.raises(UserError):
            w.pass_once()
    finally:
        w.close()
    with psycopg.connect(pg_url) as c:
        assert c.execute("SELECT count(*) FROM documents").fetchone()[0] == 0


def test_a_reader_with_another_model_is_refused_the_vector_leg(notes, data_env, tiny_embedder, pg_url):
    cfg = Config(roots=make_roots([notes]))
    index_once(cfg, pg_url, tiny_embedder)
    with psycopg.connect(pg_url, autocommit=True) as c:   # the store says another model embedded it
        c.execute("UPDATE meta SET value = replace(value, %s, 'f00d') WHERE key = 'model_contract'",
                  (tiny_embedder.contract.model_sha256[:8],))
    reader = TeamReader(pg_url, cfg, embedder=tiny_embedder)
    try:
        out = reader.call("search", query="how do I restart postgres")
        assert any("keyword search only" in n and "this machine's model" in n for n in out["notes"])
        assert all(r["scores"]["dense"] == 0 for r in out["results"])
    finally:
        reader.close()


def test_a_scoped_reader_sees_only_its_prefixes(notes, data_env, tiny_embedder, pg_url):
    cfg = Config(roots=make_roots([notes]))
    index_once(cfg, pg_url, tiny_embedder)
    reader = TeamReader(pg_url, cfg, embedder=tiny_embedder)
    try:
        out = reader.call("search", query="postgres backup restore", scope=["journal/"])
        assert out["results"] and all(r["path"].startswith("journal/") for r in out["results"])
        listed = reader.call("list", scope=["journal/"])["documents"]
        assert listed and all(d["path"].startswith("journal/") for d in listed)
        st = reader.call("status", scope=["journal/"])
        assert st["documents"] == len(listed)
        with pytest.raises(UserError):
            reader.call("read", path="runbooks/postgres/restore.md", scope=["journal/"])
    finally:
        reader.close()


def test_a_wrong_url_is_a_clear_error(tmp_path):
    with pytest.raises(UserError) as e:
        PgStore("mysql://x", readonly=True)
    assert e.value.param == "store"
    with pytest.raises(UserError) as e:
        PgStore(database_url(f"postgresql://nobody@/x?host={tmp_path}", "nothing"), readonly=True)
    assert e.value.code == "store_unreachable"


def test_without_the_team_extra_the_cli_says_what_to_install(tmp_path):
    """No psycopg (the `team` extra not installed): `--store` is a structured error naming the
    extra, for the reader and the writer alike, never an internal error."""
    import subprocess
    import sys

    blocked = "import sys; sys.modules['psycopg'] = None; from remembrancer.cli.main import main; sys.exit(main(sys.argv[1:]))"
    url = f"postgresql://nobody@/x?host={tmp_path}"
    for args in (["search", "restore", "--store", url, "--root", str(tmp_path)],
                 ["serve", "--store", url, "--root", str(tmp_path)]):
        r = subprocess.run([sys.executable, "-c", blocked, *args], capture_output=True, text=True, timeout=60,
                           env={**__import__("os").environ, "REMEMBRANCER_DATA_DIR": str(tmp_path / "data")})
        assert r.returncode not in (0, 70), (args, r.stderr)
        assert "remembrancer[team]" in r.stderr and "internal error" not in r.stderr, (args, r.stderr)


def test_a_reader_whose_connection_died_connects_again(notes, data_env, tiny_embedder, pg_url):
    cfg = Config(roots=make_roots([notes]))
    index_once(cfg, pg_url, tiny_embedder)
    reader = TeamReader(pg_url, cfg, embedder=tiny_embedder)
    try:
        assert reader.call("search", query="restart postgres")["results"]
        with psycopg.connect(pg_url, autocommit=True) as c:   # the server drops every reader session
            n = c.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                          " WHERE application_name = 'remembrancer-reader'").fetchone()[0]
        assert n >= 1
        time.sleep(0.5)   # the server's goodbye reaches the reader's sockets
        # the next request notices the ended connection before using it, connects again and is
        # answered (it was refused with `store_unreachable` though the server was up)
        assert reader.call("search", query="restart postgres")["results"]
        assert reader.call("search", query="restart postgres")["results"]
    finally:
        reader.close()


@pytest.mark.slow
def test_kill_9_of_the_writer_mid_ingest_leaves_the_store_consistent(tmp_path, data_env, tiny_model_dir, pg_url):
    """The writer (a real `remembrancer index --store` process) is killed with SIGKILL at several
    points of a long first pass; after each kill the store is consistent, and the pass that
    finally completes holds exactly what a local index of the same files holds."""
    import os
    import random
    import signal
    import subprocess
    import sys
    import time

    root = tmp_path / "notes"
    for d in range(120):
        write(root, f"n/doc{d:03d}.md", f"# Doc {d}\n\n" + "".join(
            f"## Part {s}\n\nHost app{d}-{s} keeps ledger {d * 10 + s} in sync with wombat{s}.\n\n" for s in range(6)))
    (tmp_path / "config.toml").write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    env = {**os.environ, "REMEMBRANCER_CONFIG": str(tmp_path / "config.toml"),
           "REMEMBRANCER_SOCKET": str(tmp_path / "none.sock")}
    rng = random.Random(9)
    kills = 0

    def generation(url: str) -> int:
        try:
            with psycopg.connect(url) as c:
                row = c.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        except psycopg.Error:   # not created yet by the first writer
            return 0
        return int(row[0]) if row else 0
    for _ in range(6):
        p = subprocess.Popen([sys.executable, "-m", "remembrancer", "index", "--store", pg_url, "--root", str(root)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # kill it after a random number of its document transactions: mid-pass whatever the speed
        target = generation(pg_url) + rng.randint(1, 15)
        deadline = time.monotonic() + 120
        while p.poll() is None and generation(pg_url) < target and time.monotonic() < deadline:
            time.sleep(0.02)
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            kills += 1
        p.wait()
        st = PgStore(pg_url, readonly=False)
        led = st.open_ledger(readonly=True)
        assert led.consistency_problems() == []
        led.close()
    deferred = {name for name, _, _ in pg_schema.DEFERRED_INDEXES} | {"passages_embedding_hnsw"}

    def first_load_state():
        with psycopg.connect(pg_url) as c:
            flag = c.execute("SELECT EXISTS (SELECT 1 FROM meta WHERE key = %s)", (pg_schema.FIRST_LOAD,)).fetchone()[0]
            names = {r[0] for r in c.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")}
        return flag, deferred & names
    assert first_load_state() == (True, set())   # every restart carried on the first load, without them
    done = run_cli("index", "--store", pg_url, "--root", str(root), env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert first_load_state() == (False, deferred)   # built at the end of the pass that completed
    assert kills == 6   # every round was killed mid-pass (each stops after at most 15 of 120 documents)
    from remembrancer.indexer.models.embed import load_embedder_from_dir

    cfg = Config(roots=make_roots([root]))
    local = Engine(cfg, embedder=load_embedder_from_dir(tiny_model_dir))
    local.refresh()
    reader = Engine(cfg, readonly=True, embedder=local.core.embedder, store=PgStore(pg_url, readonly=True))
    try:
        assert reader.catalog.counts() == local.catalog.counts()
        assert reader.catalog.consistency_problems() == []
        # (keyword scores: the tiny random model's vectors tie on these templated notes)
        def by_section(engine):   # ids are each store's own: key by path and heading, every match
            hits = engine.core.fulltext.search("which host keeps ledger 345 in sync", 5000)
            rows = engine.catalog.sections_by_id(list(hits))
            return {(rows[k].path, rows[k].heading): round(v, 3) for k, v in hits.items()}
        assert by_section(local) == by_section(reader) and len(by_section(local)) == 720
    finally:
        reader.close()
        local.close()


@pytest.mark.slow
def test_the_writer_lock_is_per_database(notes, data_env, tiny_embedder, pg_server, pg_url):
    from tests.support.pg import fresh_database

    other = fresh_database(pg_server.get_uri())
    cfg = Config(roots=make_roots([notes]))
    a = Writer(cfg, pg_url, embedder=tiny_embedder)
    try:
        a.pass_once()
        b = Writer(cfg, other, embedder=tiny_embedder)   # another store on the same server: its own writer
        b.close()
        reader = TeamReader(pg_url, cfg, embedder=tiny_embedder)
        assert reader.engine.catalog.writer_running()
        reader.close()
    finally:
        a.close()
    reader = TeamReader(pg_url, cfg, embedder=tiny_embedder)
    try:
        assert not reader.engine.catalog.writer_running()
    finally:
        reader.close()
