"""Memory-native tools on a git fixture corpus (tests/support/memory.py): history, latest, filters
alone, links (neighbors), commits (verify), the query log and `report`, Prometheus metrics, and
`remembrancer eval cases.yaml` end to end.

The fixture is examples/notes plus four more weeks of journal, a service record without a date,
a failover runbook full of links, a lesson and a plan item, committed with the git CLI at fixed
dates; an `app` repository holds the commits the journal cites (one landed, one amended away after
it was cited, one on an unmerged branch).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from remembrancer.indexer.memory import commits as cm
from remembrancer.indexer.ingest import links
from remembrancer.indexer.memory import tools as memory
from remembrancer.indexer import metrics
from remembrancer.indexer.search import querylog
from remembrancer.indexer.config import Config, load_config, make_roots
from remembrancer.indexer.engine import Engine
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.store.filters import Filters
from remembrancer.indexer.search.answer import SearchRequest, search
from tests.support import memory as mf
from tests.support.cli import run_cli
from tests.support.env import remembrancer_env
from tests.support.paths import PROJECT



# -- fixtures ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    """The fixture corpus and app repo, built once (SHAs are the same on every run)."""
    return mf.build(tmp_path_factory.mktemp("memfx"))


@pytest.fixture(scope="module")
def eng(fx, tiny_embedder, tmp_path_factory):
    """An engine over the fixture (tiny model), for the tests that only read."""
    mp = pytest.MonkeyPatch()
    mp.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path_factory.mktemp("memdata")))
    e = Engine(Config(roots=make_roots([fx["notes"]]), verify_repos=[fx["app"]]), embedder=tiny_embedder)
    e.refresh()
    yield e
    e.close()
    mp.undo()


@pytest.fixture
def own(fx, tiny_embedder, tmp_path, monkeypatch):
    """A private copy of the corpus (with its git history) and an engine over it, for tests that edit."""
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    notes = tmp_path / "notes"
    shutil.copytree(fx["notes"], notes, symlinks=True)
    e = Engine(Config(roots=make_roots([notes]), verify_repos=[fx["app"]]), embedder=tiny_embedder)
    e.refresh()
    yield e, notes
    e.close()


def rows_of(out):
    return [(r["date"], r["path"], r["heading"]) for r in out["results"]]


# -- history -----------------------------------------------------------------------------------------

def test_history_by_name_alias_or_ip_is_the_same_entity(eng):
    by_name = memory.history(eng.view(), "db1", limit=100).to_json()
    for other, how in (("pg-primary", "alias"), ("10.20.1.11", "alias"), ("DB1", "name")):
        out = memory.history(eng.view(), other, limit=100).to_json()
        assert out["entity"]["name"] == "db1" and out["entity"]["matched_by"] == how
        assert rows_of(out) == rows_of(by_name)
    assert by_name["entity"]["records"] == ["hosts/db1.md"]
    assert {"pg-primary", "10.20.1.11", "db1.internal"} <= set(by_name["entity"]["aliases"])


def test_history_is_newest_first_by_section_date_not_relevance(eng):
    out = memory.history(eng.view(), "db1", limit=100).to_json()
    dates = [r["date"] for r in out["results"]]
    assert dates == sorted(dates, reverse=True)
    paths = [r["path"] for r in out["results"]]
    # The 2030-02-10 entry names the host only by alias and IP: it is still db1's history.
    assert "journal/2030/2030-02-10.md" in paths
    assert paths.index("journal/2030/2030-02-12.md") < paths.index("journal/2030/2030-02-10.md") \
        < paths.index("journal/2030/2030-01-20.md")
    # A record section dated by its own heading sorts with the evidence of that day.
    old = next(r for r in out["results"] if r["heading"].endswith("Connection slots exhausted (2030-01-20)"))
    assert old["date"] == "2030-01-20" and old["dated_by"] == "heading" and old["record"] is True
    assert out["order"] == "newest first by section date"
    assert "journal/2030/2030-02-17.md" not in paths   # about db2 only


def test_history_puts_the_current_record_above_evidence_of_the_same_day(eng):
    out = memory.history(eng.view(), "db1", limit=100).to_json()
    day = [r for r in out["results"] if r["date"] == "2030-02-03"]
    kinds = [r["record"] for r in day]
    assert kinds == sorted(kinds, reverse=True) and kinds[0] is True and kinds[-1] is False
    heads = [r["heading"].split(" > ")[-1] for r in day if r["record"]]
    assert heads.index("Backups") < heads.index("Backups (obsolete)")   # live before superseded
    assert next(r for r in day if r["heading"].endswith("Backups (obsolete)"))["stale"] is True


def test_undated_record_sections_carry_the_commit_date(eng):
    out = memory.history(eng.view(), "pooler", limit=100).to_json()
    assert out["entity"]["name"] == "pgbouncer"
    rec = [r for r in out["results"] if r["record"]]
    assert rec and {(r["date"], r["dated_by"]) for r in rec} == {("2030-02-12", "commit")}
    same_day = [r for r in out["results"] if r["date"] == "2030-02-12"]
    assert same_day[0]["record"] is True and same_day[-1]["path"] == "journal/2030/2030-02-12.md"
    # older evidence (January journal mentioning PgBouncer) sorts below the current record
    first_jan = next(i for i, r in enumerate(out["results"]) if r["date"] < "2030-02-01")
    assert all(i < first_jan for i, r in enumerate(out["results"]) if r["record"])


def test_an_edited_undated_record_still_gets_its_commit_date(own):
    e, notes = own
    p = notes / "services/pgbouncer.md"
    p.write_text(p.read_text().replace("listens on 6432", "listens on 6432 (and 6433 for admin)"))
    assert e.refresh().updated == 1
    rec = [r for r in memory.history(e.view(), "pgbouncer", limit=100).to_json()["results"] if r["record"]]
    assert rec and all(r["dated_by"] in ("commit", "modified") and r["date"] for r in rec)
    assert {r["date"] for r in rec if r["dated_by"] == "commit"} <= {"2030-02-12"}


def test_history_since_until_and_limit(eng):
    out = memory.history(eng.view(), "db1", since="2030-02-10", until="2030-02-12").to_json()
    assert out["results"] and all("2030-02-10" <= r["date"] <= "2030-02-12" for r in out["results"])
    assert (out["since"], out["until"]) == ("2030-02-10", "2030-02-12")
    small = memory.history(eng.view(), "db1", limit=3).to_json()
    assert len(small["results"]) == 3 and small["truncated"] is True and small["total"] > 3
    empty = memory.history(eng.view(), "db1", since="2031-01-01").to_json()
    assert empty["results"] == [] and "nothing about db1" in empty["message"]
    with pytest.raises(UserError) as ei:
        memory.history(eng.view(), "db1", since="last tuesday").to_json()
    assert ei.value.param == "since"
    with pytest.raises(UserError) as ei:
        memory.history(eng.view(), "db1", limit=0).to_json()
    assert ei.value.param == "limit"


@pytest.mark.parametrize("name, close", [("db3", {"db1", "db2"}), ("pgbounce", {"pgbouncer"}),
                                         ("pg-primry", {"pg-primary"})])
def test_unknown_entity_lists_close_names(eng, name, close):
    with pytest.raises(UserError) as ei:
        memory.history(eng.view(), name).to_json()
    err = ei.value
    assert err.param == "entity" and err.code == "not_found" and close <= set(err.options)
    assert "search or latest" in err.hint


def test_history_rows_carry_verified_commits(eng, fx):
    out = memory.history(eng.view(), "db1", limit=100).to_json()
    by_path = {r["path"]: r for r in out["results"] if r["path"].startswith("journal/2030/2030-02-1")}
    landed = by_path["journal/2030/2030-02-12.md"]["verified_commits"]
    assert [(c["commit"], c["landed"], c["repo"]) for c in landed] == [(fx["shas"]["app_migration"], True, "app")]
    amended = by_path["journal/2030/2030-02-10.md"]["verified_commits"]
    assert [(c["commit"], c["landed"]) for c in amended] == [(fx["shas"]["app_amended_away"], False)]
    assert "verified_commits" not in next(r for r in out["results"] if r["path"] == "hosts/db1.md")


@pytest.fixture(scope="module")
def real_eng(fx, tmp_path_factory):
    """The fixture with the real default model: a topic is matched by meaning too."""
    from remembrancer.indexer.models.embed import load_default_embedder

    mp = pytest.MonkeyPatch()
    mp.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path_factory.mktemp("memreal")))
    e = Engine(Config(roots=make_roots([fx["notes"]]), verify_repos=[fx["app"]]), embedder=load_default_embedder())
    e.refresh()
    yield e
    e.close()
    mp.undo()


@pytest.mark.slow
@pytest.mark.real_model
def test_history_topic_keeps_the_matches_in_date_order(real_eng):
    out = memory.history(real_eng.view(), "db1", topic="migration").to_json()
    assert [r["path"] for r in out["results"]] == ["journal/2030/2030-02-12.md", "journal/2030/2030-02-10.md"]
    assert all("score" in r for r in out["results"]) and out["topic"] == "migration"
    pool = memory.history(real_eng.view(), "pgbouncer", topic="pool size").to_json()
    heads = [r["heading"] for r in pool["results"]]
    assert "PgBouncer > Settings" in heads and "2030-02-12 (Tue) > 15:00 pooler pool raised" in heads
    dates = [r["date"] for r in pool["results"]]
    assert dates == sorted(dates, reverse=True)
    assert heads.index("PgBouncer > Settings") < heads.index("2030-02-12 (Tue) > 15:00 pooler pool raised")
    none = memory.history(real_eng.view(), "db2", topic="kubernetes helm chart upgrade").to_json()
    assert all(r["score"] for r in none["results"])   # whatever is kept is scored; nothing crashes


# -- latest --------------------------------------------------------------------------------------------

def test_latest_needs_all_terms_and_lists_newest_first(eng):
    out = memory.latest(eng.view(), ["0042"]).to_json()
    assert [r["path"] for r in out["results"]] == ["journal/2030/2030-02-12.md", "journal/2030/2030-02-10.md"]
    assert out["relaxed"] is False and "message" not in out
    both = memory.latest(eng.view(), ["0042", "lock timeout"]).to_json()
    assert [r["path"] for r in both["results"]] == ["journal/2030/2030-02-10.md"]
    assert rows_of(memory.latest(eng.view(), '"lock timeout" 0042').to_json()) == rows_of(both)   # one string, shell-split
    assert rows_of(memory.latest(eng.view(), ['"lock timeout"', "0042"]).to_json()) == rows_of(both)  # quotes around a term
    many = memory.latest(eng.view(), "PgBouncer", limit=50).to_json()
    dates = [r["date"] for r in many["results"]]
    assert len(dates) > 4 and dates == sorted(dates, reverse=True)


def test_latest_matches_whole_identifiers_and_any_sha_abbreviation(eng, fx):
    assert memory.latest(eng.view(), "643").to_json()["results"] == []           # 6432 is not 643
    assert memory.latest(eng.view(), "6432").to_json()["results"]
    flag = memory.latest(eng.view(), "--lock-timeout=5s").to_json()
    assert {r["path"] for r in flag["results"]} >= {"journal/2030/2030-02-12.md", "memory/migrations-lock-timeout.md"}
    full = fx["shas"]["app_migration"]
    for term in (full, full[:7], full[:12].upper()):
        assert [r["path"] for r in memory.latest(eng.view(), term).to_json()["results"]] == ["journal/2030/2030-02-12.md"], term
    row = memory.latest(eng.view(), full).to_json()["results"][0]
    assert row["verified_commits"][0]["landed"] is True
    err = memory.latest(eng.view(), "ERROR: canceling statement due to lock timeout").to_json()
    assert {r["path"] for r in err["results"]} == {"journal/2030/2030-02-10.md", "memory/migrations-lock-timeout.md"}


def test_latest_relaxes_and_names_the_dropped_terms(eng):
    out = memory.latest(eng.view(), ["0042", "zzqx-nothing"]).to_json()
    assert out["relaxed"] is True and out["not_in_corpus"] == ["zzqx-nothing"]
    assert out["dropped_terms"] == ["zzqx-nothing"]
    assert "'zzqx-nothing' occurs nowhere in the corpus" in out["message"] and "relaxed" in out["message"]
    assert [r["missing_terms"] for r in out["results"]] == [["zzqx-nothing"], ["zzqx-nothing"]]
    split = memory.latest(eng.view(), ["pgBackRest", "--lock-timeout=5s"]).to_json()
    assert split["relaxed"] and "not_in_corpus" not in split
    assert set(split["dropped_terms"]) == {"pgBackRest", "--lock-timeout=5s"}
    assert all(len(r["matched_terms"]) == 1 for r in split["results"])
    nothing = memory.latest(eng.view(), ["zzqx-nothing"]).to_json()
    assert nothing["results"] == [] and "occurs nowhere in the corpus" in nothing["message"]


def test_latest_filters_and_terms_found_only_outside_them(eng):
    out = memory.latest(eng.view(), "6432", types=["journal"]).to_json()
    assert out["results"] and {r["type"] for r in out["results"]} == {"journal"}
    since = memory.latest(eng.view(), "PgBouncer", since="2030-02-01").to_json()
    assert since["results"] and all(r["date"] >= "2030-02-01" for r in since["results"])
    outside = memory.latest(eng.view(), ["pgBackRest"], types=["lesson"]).to_json()
    assert outside["results"] == [] and outside["only_outside_filters"] == ["pgBackRest"]
    assert "only outside the filters type=lesson" in outside["message"]


@pytest.mark.parametrize("kw, param", [({"terms": []}, "terms"), ({"terms": "   "}, "terms"),
                                       ({"terms": [1, 2]}, "terms"), ({"terms": "x", "types": ["nope"]}, "type"),
                                       ({"terms": "x", "since": "soon"}, "since"), ({"terms": "x", "limit": 500}, "limit")])
def test_latest_bad_input_is_a_structured_error(eng, kw, param):
    with pytest.raises(UserError) as ei:
        memory.latest(eng.view(), **kw).to_json()
    assert ei.value.param == param
    if param == "type":
        assert "journal" in ei.value.options


# -- filters alone ---------------------------------------------------------------------------------------

def test_filters_alone_list_newest_first_without_embedding(eng, tiny_embedder):
    before = tiny_embedder.texts_embedded
    out = search(eng.view(), SearchRequest("", limit=20, filters=Filters(types=["journal"]))).to_json()
    assert tiny_embedder.texts_embedded == before
    dates = [r["date"] for r in out["results"]]
    assert out["mode"] == "filters" and dates == sorted(dates, reverse=True) and dates[0] == "2030-02-17"


def test_an_empty_filtered_result_says_which_filter_emptied_it(eng):
    out = search(eng.view(), SearchRequest("", filters=Filters(types=["journal"], tags=["runbook"]))).to_json()
    assert out["results"] == [] and out["message"].startswith("0 matches for filters: type=journal tags=runbook")
    assert "without tags=runbook:" in out["message"] and "without type=journal:" in out["message"]
    by = {r["filter"]: r for r in out["emptied_by"]}
    assert by["tags=runbook"]["matches_without_it"] > 0 and by["type=journal"]["matches_alone"] > 0
    future = search(eng.view(), SearchRequest("", filters=Filters(types=["journal"], since="2031-01-01"))).to_json()
    assert "since=2031-01-01 matches no section on its own" in future["message"]
    with_query = search(eng.view(), SearchRequest("postgres", filters=Filters(types=["plan"], path="hosts/"))).to_json()
    assert "0 matches for filters" in with_query["message"] and "emptied_by" in with_query
    alone = search(eng.view(), SearchRequest("", filters=Filters(path="nowhere/"))).to_json()
    assert alone["message"].endswith("path=nowhere/ matches no section")


# -- links ---------------------------------------------------------------------------------------------

def test_parse_links_kinds_and_what_is_not_a_link():
    text = "\n".join([
        "See [[db1]], [[hosts/db2|the replica]] and [[db1#Services]] or ![[diagram]].",
        "Markdown: [restore](../runbooks/restore.md#verify \"title\"), [x](<my notes/a b.md>), [y](c%20d.md).",
        "Not links: [web](https://example.com/a.md), [mail](mailto:a@b.md), ![img](pic.png), [[#local]],",
        "[txt](notes.txt), `[[in code]]` and [a](#anchor).",
        "```",
        "[[fenced]] [f](fenced.md)",
        "```",
        "[[after|fence]]",
    ])
    got = [(lk.kind, lk.target, lk.anchor, lk.line, lk.text) for lk in links.parse_links(text, "hosts/x.md")]
    assert got == [
        ("wikilink", "db1", None, 1, ""), ("wikilink", "hosts/db2", None, 1, "the replica"),
        ("wikilink", "db1", "Services", 1, ""), ("wikilink", "diagram", None, 1, ""),
        ("markdown", "runbooks/restore.md", "verify", 2, "restore"), ("markdown", "hosts/my notes/a b.md", None, 2, "x"),
        ("markdown", "hosts/c d.md", None, 2, "y"), ("wikilink", "after", None, 8, "fence"),
    ]


def test_resolver_by_path_stem_title_and_entity_case_insensitive():
    docs = [("hosts/db1.md", "hosts/db1.md", "n", "db1 — PostgreSQL primary"),
            ("runbooks/postgres/restore.md", "runbooks/postgres/restore.md", "n", "Restore PostgreSQL from backup"),
            ("a/restore.md", "a/restore.md", "n", "Other"), ("restore.md", "restore.md", "n", "Top")]
    r = links.Resolver(docs, [("db1", "hosts/db1.md", ["pg-primary"])])
    assert r.resolve("HOSTS/DB1", "wikilink", "x.md") == "hosts/db1.md"
    assert r.resolve("db1.md", "wikilink", "x.md") == "hosts/db1.md"
    assert r.resolve("restore postgresql from BACKUP", "wikilink", "x.md") == "runbooks/postgres/restore.md"
    assert r.resolve("restore", "wikilink", "x.md") == "restore.md"          # shortest path wins a stem tie
    assert r.resolve("postgres/restore", "wikilink", "x.md") == "runbooks/postgres/restore.md"
    assert r.resolve("pg-primary", "wikilink", "x.md") == "hosts/db1.md"      # entity alias
    assert r.resolve("nothing-here", "wikilink", "x.md") is None
    assert r.resolve("hosts/db9.md", "markdown", "x.md") is None


def test_neighbors_outbound_backlinks_and_unresolved(eng):
    fo = memory.neighbors(eng.view(), "runbooks/postgres/failover.md").to_json()
    out = {(x["path"], x["anchor"], x["kind"], x["text"]) for x in fo["outbound"]}
    assert out == {("hosts/db1.md", None, "wikilink", ""), ("hosts/db2.md", None, "wikilink", ""),
                   ("hosts/db2.md", None, "wikilink", "the replica"), ("services/pgbouncer.md", None, "wikilink", ""),
                   ("hosts/db1.md", "Services", "wikilink", ""),
                   ("runbooks/postgres/restore.md", "verify", "markdown", "the restore runbook")}
    assert all(x["anchor_found"] for x in fo["outbound"] if x["anchor"])
    assert [x["target"] for x in fo["unresolved"]] == ["tls-setup"]
    assert fo["counts"] == {"outbound": 6, "inbound": 0, "unresolved": 1}
    db1 = memory.neighbors(eng.view(), "hosts/db1.md").to_json()
    assert {x["source"] for x in db1["inbound"]} == {"hosts/db2.md", "runbooks/postgres/failover.md",
                                                     "services/pgbouncer.md"}
    services = next(x for x in db1["inbound"] if x["anchor"] == "Services")
    assert services["heading"] == "Fail over to the replica > Move the pooler" and services["line"] == 17
    assert [x["path"] for x in db1["outbound"]] == ["runbooks/postgres/restore.md"]
    # stems and titles resolve too: [[2030-q1-plan]] and [[2030-02-10]]
    plan = memory.neighbors(eng.view(), "planning/2030-q1-plan.md").to_json()
    assert "journal/2030/2030-01-27.md" in {x["source"] for x in plan["inbound"]}
    j = memory.neighbors(eng.view(), "journal/2030/2030-02-10.md").to_json()
    assert "memory/migrations-lock-timeout.md" in {x["source"] for x in j["inbound"]}


def test_neighbors_similar_sections_are_unlinked_ones(eng):
    out = memory.neighbors(eng.view(), "hosts/db1.md", limit=5).to_json()
    linked = {"hosts/db1.md"} | {x["path"] for x in out["outbound"]} | {x["source"] for x in out["inbound"]}
    sims = out["similar"]
    assert 0 < len(sims) <= 5 and not {s["path"] for s in sims} & linked
    assert len({s["path"] for s in sims}) == len(sims)             # one section per document
    assert [s["similarity"] for s in sims] == sorted((s["similarity"] for s in sims), reverse=True)
    with pytest.raises(UserError) as ei:
        memory.neighbors(eng.view(), "hosts/db9.md").to_json()
    assert ei.value.param == "path" and "hosts/db1.md" in ei.value.options


def test_renamed_and_deleted_targets_update_their_backlinks(own):
    e, notes = own
    (notes / "hosts/db2.md").rename(notes / "hosts/replica.md")
    e.refresh()
    moved = memory.neighbors(e.view(), "hosts/replica.md").to_json()
    # [[db2]] still resolves (by the record's host name); [[hosts/db2|…]] named the old path
    assert {(x["source"], x["line"]) for x in moved["inbound"]} == {("runbooks/postgres/failover.md", 8)}
    fo = memory.neighbors(e.view(), "runbooks/postgres/failover.md").to_json()
    assert sorted(x["target"] for x in fo["unresolved"]) == ["hosts/db2", "tls-setup"]
    (notes / "runbooks/postgres/restore.md").unlink()
    e.refresh()
    db1 = memory.neighbors(e.view(), "hosts/db1.md").to_json()
    assert db1["outbound"] == [] and [x["target"] for x in db1["unresolved"]] == ["runbooks/postgres/restore.md"]
    (notes / "runbooks/tls-setup.md").write_text("# TLS setup\n\nCertificates for db1 and db2.\n")
    report = e.refresh()
    assert (report.added, report.updated) == (1, 0)      # the failover runbook is not read again
    fo = memory.neighbors(e.view(), "runbooks/postgres/failover.md").to_json()
    assert "tls-setup" not in [x["target"] for x in fo["unresolved"]]
    assert "runbooks/tls-setup.md" in {x["path"] for x in fo["outbound"]}


def test_an_index_built_before_links_is_backfilled_without_embedding(own, tiny_embedder):
    e, _ = own
    e.catalog.db.execute("DELETE FROM links")
    e.catalog.db.execute("DELETE FROM meta WHERE key IN ('parse_version', 'link_targets')")
    before = tiny_embedder.texts_embedded
    report = e.refresh()
    assert report.embedded == 0 and tiny_embedder.texts_embedded == before
    assert memory.neighbors(e.view(), "hosts/db1.md").to_json()["counts"]["inbound"] == 4
    assert e.refresh().updated == 0


# -- commits -------------------------------------------------------------------------------------------

def test_find_shas_skips_what_is_not_a_sha():
    text = ("dates 2030-02-10 and 20300210, words defaced decade, uuid 550e8400-e29b-41d4-a716-446655440000,\n"
            "0x1f3a5b7c9, sha256:" + "ab12" * 16 + ", ok 4f2a9c1 and app@9b8c7d6e and (1d5f2adfe5).")
    got = [(c.sha, c.repo, c.line) for c in cm.find_shas(text, first_line=10)]
    assert got == [("4f2a9c1", None, 11), ("9b8c7d6e", "app", 11), ("1d5f2adfe5", None, 11)]


def test_verify_a_landed_commit(eng, fx):
    out = memory.verify(eng.view(), path="journal/2030/2030-02-12.md").to_json()
    (c,) = out["commits"]
    assert (c["verdict"], c["exists"], c["landed"], c["repo"]) == ("landed", True, True, "app")
    assert c["commit"] == fx["shas"]["app_migration"] and c["cited_as"] == f"app@{fx['shas']['app_migration'][:10]}"
    assert c["date"] == "2030-02-10T15:00:00+00:00" and c["subject"] == "migrations: 0042 add orders.archived_at"
    assert c["files"] == ["migrations/0042_orders_archived_at.py"] and c["default_branch"] == "main"
    assert c["lines"] == [6] and c["heading"] == "2030-02-12 (Tue) > 02:15 migration 0042 finished"
    assert out["summary"] == {"landed": 1}
    assert {r["repo"] for r in out["repos"]} == {"notes", "app"}


def test_verify_an_amended_away_commit_exists_but_did_not_land(eng, fx):
    (c,) = memory.verify(eng.view(), path="journal/2030/2030-02-10.md").to_json()["commits"]
    assert (c["verdict"], c["exists"], c["landed"]) == ("not_landed", True, False)
    assert c["commit"] == fx["shas"]["app_amended_away"] and c["branches"] == []
    assert c["replaced_by"]["commit"] == fx["shas"]["app_migration"]
    assert "probably amended or rebased" in c["reason"]


def test_verify_unmerged_branch_corpus_commit_and_hex_that_is_no_commit(eng, fx):
    out = memory.verify(eng.view(), path="journal/2030/2030-02-17.md").to_json()
    by = {c["sha"]: c for c in out["commits"]}
    tls = by[fx["shas"]["app_tls"][:7]]
    assert (tls["verdict"], tls["exists"], tls["landed"], tls["branches"]) == ("not_landed", True, False, ["feature/tls"])
    own = by[fx["shas"]["notes_failover"][:7]]
    assert (own["verdict"], own["repo"], own["subject"]) == ("landed", "notes", "runbook: failover")
    build = by["5e8d2c7f1a"]
    assert (build["verdict"], build["exists"], build["landed"]) == ("absent", False, None)
    assert build["checked"] == ["notes", "app"]
    blob = memory.verify(eng.view(), text=f"see {fx['shas']['notes_readme_blob']}").to_json()["commits"][0]
    assert (blob["verdict"], blob["object"], blob["exists"]) == ("not_a_commit", "blob", False)


def test_verify_a_section_or_text_and_bad_input(eng, fx):
    one = memory.verify(eng.view(), path="journal/2030/2030-02-10.md", heading="22:40 retry scheduled").to_json()
    assert one["commits"] == [] and "no commit-SHA-shaped token" in one["message"]
    assert one["source"] == {"path": "journal/2030/2030-02-10.md", "heading": "2030-02-10 (Sun) > 22:40 retry scheduled"}
    txt = memory.verify(eng.view(), text=f"fixed in app@{fx['shas']['app_workers'][:8]}\nand nothing else").to_json()
    assert txt["commits"][0]["verdict"] == "landed" and txt["commits"][0]["lines"] == [1]
    for kw, param in (({}, "path"), ({"path": "a.md", "text": "x"}, "path"),
                      ({"path": "journal/2030/2030-02-10.md", "heading": "Nope"}, "heading"),
                      ({"path": "journal/2099.md"}, "path")):
        with pytest.raises(UserError) as ei:
            memory.verify(eng.view(), **kw).to_json()
        assert ei.value.param == param


def test_an_unreadable_repo_makes_the_answer_unknown_never_absent(fx, tiny_embedder, tmp_path, monkeypatch):
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    broken = tmp_path / "broken"
    (broken / ".git").mkdir(parents=True)
    (broken / ".git" / "HEAD").write_text("garbage\n")
    missing = tmp_path / "gone"
    e = Engine(Config(roots=make_roots([fx["notes"]]), verify_repos=[fx["app"], broken, missing]),
               embedder=tiny_embedder)
    try:
        e.refresh()
        out = memory.verify(e.view(), text=f"build 5e8d2c7f1a, fix {fx['shas']['app_migration'][:7]}").to_json()
        by = {c["sha"]: c for c in out["commits"]}
        assert (by["5e8d2c7f1a"]["verdict"], by["5e8d2c7f1a"]["exists"]) == ("unknown", None)
        assert "could not read" in by["5e8d2c7f1a"]["reason"] and "gone" in by["5e8d2c7f1a"]["reason"]
        assert by[fx["shas"]["app_migration"][:7]]["verdict"] == "landed"   # found where it could be read
        readable = {r["repo"]: r["readable"] for r in out["repos"]}
        assert readable == {"notes": True, "app": True, "broken": False, "gone": False}
    finally:
        e.close()


def test_a_repo_that_is_not_configured_or_no_repo_at_all_is_unknown(fx, tiny_embedder, tmp_path, monkeypatch):
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    e = Engine(Config(roots=make_roots([fx["notes"]])), embedder=tiny_embedder)
    try:
        e.refresh()
        (c,) = memory.verify(e.view(), text=f"app@{fx['shas']['app_migration'][:7]}").to_json()["commits"]
        assert c["verdict"] == "unknown" and "[verify] repos" in c["reason"]
    finally:
        e.close()
    plain = tmp_path / "plain"
    shutil.copytree(fx["notes"], plain, ignore=shutil.ignore_patterns(".git"))
    e = Engine(Config(roots=make_roots([plain])), embedder=tiny_embedder)
    try:
        e.refresh()
        (c,) = memory.verify(e.view(), text="see 4f2a9c1").to_json()["commits"]
        assert c["verdict"] == "unknown" and "no git repository" in c["reason"]
    finally:
        e.close()


# -- the query log and `report` ---------------------------------------------------------------------

def _cli(argv, capsys):
    from remembrancer.cli.main import main

    rc = main(argv)
    out = capsys.readouterr().out
    return rc, out


@pytest.fixture
def cli_env(fx, tiny_model_dir, tmp_path, monkeypatch):
    cfg = tmp_path / "config.toml"
    log = tmp_path / "q.jsonl"
    cfg.write_text(f'[model]\npath = "{tiny_model_dir}"\n[verify]\nrepos = ["{fx["app"]}"]\n'
                   f'[log]\npath = "{log}"\n')
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("REMEMBRANCER_CONFIG", str(cfg))
    monkeypatch.setenv("REMEMBRANCER_SOCKET", str(tmp_path / "no-daemon.sock"))
    return {"cfg": cfg, "log": log, "root": str(fx["notes"])}


def test_cli_commands_log_queries_and_report_summarises(cli_env, fx, capsys):
    root = ["--root", cli_env["root"]]
    rc, out = _cli(["history", "pg-primary", *root, "-n", "3"], capsys)
    assert rc == 0 and out.startswith("Index fresh") and "History of db1" in out and "1. 2030-02-14" in out
    rc, out = _cli(["latest", *root, "--", "0042", "--lock-timeout=5s"], capsys)
    assert rc == 0 and "journal/2030/2030-02-12.md" in out
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    rc, out = _cli(["latest", token, *root, "--json"], capsys)
    assert rc == 1 and json.loads(out)["results"] == []
    rc, out = _cli(["verify", "journal/2030/2030-02-10.md", *root], capsys)
    assert rc == 1 and "NOT_LANDED" in out and "probably amended" in out
    rc, out = _cli(["neighbors", "hosts/db1.md", *root, "--json"], capsys)
    assert rc == 0 and json.loads(out)["counts"]["inbound"] == 4
    rc, _ = _cli(["history", "db3", *root], capsys)
    assert rc == 2
    for _ in range(2):
        _cli(["latest", "0042", *root], capsys)
    raw = cli_env["log"].read_text()
    assert token not in raw and "[REDACTED:github]" in raw
    assert oct(cli_env["log"].stat().st_mode & 0o777) == "0o600"
    entries = [json.loads(x) for x in raw.splitlines()]
    assert [e["tool"] for e in entries] == ["history", "latest", "latest", "verify", "neighbors", "history",
                                            "latest", "latest"]
    assert entries[0]["top"] == "runbooks/postgres/failover.md § Fail over to the replica > Move the pooler"
    assert entries[0]["client"] == "cli" and entries[0]["index"] == "fresh" and entries[0]["latency_ms"] > 0
    assert entries[2]["verdict"] == "empty" and entries[5]["verdict"] == "error"
    assert entries[5]["error"]["code"] == "not_found"
    rc, out = _cli(["report", "--log", str(cli_env["log"]), "--json", "--slow-ms", "0"], capsys)
    rep = json.loads(out)
    assert rc == 0 and rep["queries"] == 8 and rep["by_tool"] == {"latest": 4, "history": 2, "verify": 1,
                                                                   "neighbors": 1}
    assert rep["most_asked"][0]["query"] == "0042" and rep["most_asked"][0]["count"] == 2
    assert [a["query"] for a in rep["abstentions"]] == ["[REDACTED:github]"]
    assert len(rep["slow"]) == 8 and rep["errors"][0]["code"] == "not_found"
    rc, out = _cli(["report", "--log", str(cli_env["log"])], capsys)
    assert "most asked:" in out and "abstentions" in out and "slow (≥ 1000 ms)" in out


def test_query_log_is_opt_out(cli_env, capsys):
    cli_env["cfg"].write_text(cli_env["cfg"].read_text().replace("[log]\n", "[log]\nqueries = false\n"))
    rc, _ = _cli(["latest", "0042", "--root", cli_env["root"]], capsys)
    assert rc == 0 and not cli_env["log"].exists()
    assert querylog.QueryLog.for_config(load_config(None)) is None


def test_summarise_counts_abstentions_and_latency():
    e = [{"ts": f"2030-01-0{i}T00:00:00+00:00", "tool": "search", "query": q, "verdict": v, "latency_ms": ms}
         for i, (q, v, ms) in enumerate([("How to restore", "answered", 50), ("how  to restore", "answered", 70),
                                         ("okta sso", "no_strong_match", 2500), ("x", "error", 5)], 1)]
    rep = querylog.summarise(e, slow_ms=1000)
    assert rep["most_asked"][0]["count"] == 2 and rep["abstentions"][0]["query"] == "okta sso"
    assert rep["abstention_rate"] == 0.25 and [s["query"] for s in rep["slow"]] == ["okta sso"]
    assert rep["latency_ms"]["search"]["max"] == 2500
    assert querylog.format_report(querylog.summarise([])) == "no queries logged yet"


# -- metrics -------------------------------------------------------------------------------------------

def test_prometheus_textfile_after_each_ingest_and_failure(fx, tiny_embedder, tmp_path, monkeypatch):
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    notes = tmp_path / "notes"
    shutil.copytree(fx["notes"], notes, symlinks=True)
    prom = tmp_path / "metrics" / "remembrancer.prom"
    e = Engine(Config(roots=make_roots([notes]), metrics_textfile=prom), embedder=tiny_embedder)
    try:
        e.refresh()
        m = metrics.parse(prom.read_text())
        lab = f'{{index="{e.dir.name}"}}'
        rl = f'{{index="{e.dir.name}",root="notes"}}'
        assert m[f"remembrancer_documents{lab}"] == 16 and m[f"remembrancer_chunks{lab}"] > 16
        assert m[f"remembrancer_last_ingest_success{lab}"] == 1 and m[f"remembrancer_ingest_failures_total{lab}"] == 0
        assert m[f"remembrancer_last_ingest_timestamp_seconds{lab}"] > 0
        assert m[f"remembrancer_head_indexed{rl}"] == 1 and m[f"remembrancer_head_lag_commits{rl}"] == 0
        assert "# TYPE remembrancer_ingest_failures_total counter" in prom.read_text()
        mf.write(notes, "journal/2030/2030-02-20.md", "# 2030-02-20\n\n## note\n\nquiet day\n")
        mf.commit(notes, "journal: quiet day", "2030-02-20T18:00:00Z")

        def boom(*a, **k):
            raise RuntimeError("disk full")
        monkeypatch.setattr(e.writer, "_ingest", boom)
        with pytest.raises(RuntimeError):
            e.refresh()
        m = metrics.parse(prom.read_text())
        assert m[f"remembrancer_last_ingest_success{lab}"] == 0 and m[f"remembrancer_ingest_failures_total{lab}"] == 1
        assert m[f"remembrancer_head_indexed{rl}"] == 0 and m[f"remembrancer_head_lag_commits{rl}"] == 1
        assert m[f"remembrancer_head_lag_seconds{rl}"] == 3 * 86400   # 02-17 → 02-20
        monkeypatch.undo()
        monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
        e.refresh()
        m = metrics.parse(prom.read_text())
        assert m[f"remembrancer_documents{lab}"] == 17 and m[f"remembrancer_last_ingest_success{lab}"] == 1
        assert m[f"remembrancer_ingest_failures_total{lab}"] == 1 and m[f"remembrancer_head_indexed{rl}"] == 1
        assert not list(prom.parent.glob(".remembrancer-*"))        # written atomically, no temp left
    finally:
        e.close()


def test_config_tables_for_the_memory_tools(tmp_path, monkeypatch):
    cfg = tmp_path / "c" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text('[log]\nqueries = false\npath = "logs/q.jsonl"\n[verify]\nrepos = ["../app", "/srv/x"]\n'
                   '[metrics]\ntextfile = "/var/lib/node/remembrancer.prom"\n')
    monkeypatch.setenv("REMEMBRANCER_CONFIG", str(cfg))
    c = load_config(None)
    assert c.log_queries is False and c.query_log == cfg.parent / "logs/q.jsonl"
    assert c.verify_repos == [cfg.parent / "../app", Path("/srv/x")]
    assert c.metrics_textfile == Path("/var/lib/node/remembrancer.prom")
    for bad in ('[log]\nqueries = "no"\n', '[verify]\nrepos = "x"\n', '[metrics]\ntextfile = 3\n', 'log = 1\n'):
        cfg.write_text(bad)
        with pytest.raises(UserError):
            load_config(None)


# -- api / daemon protocol -------------------------------------------------------------------------------

def test_api_dispatches_the_memory_methods_with_freshness(eng):
    from remembrancer.wire import METHODS
    from remembrancer.indexer import api

    assert {"history", "latest", "neighbors", "verify"} <= set(METHODS)
    from remembrancer.indexer.answers import Freshness

    fresh = lambda view: Freshness("fresh")  # noqa: E731
    h = api.dispatch_read(eng, "history", {"entity": "db2", "limit": 2}, fresh)
    assert h["index"] == {"verdict": "fresh"} and len(h["results"]) == 2
    lt = api.dispatch_read(eng, "latest", {"terms": ["6432"], "type": "journal"}, fresh)
    assert lt["results"] and lt["index"]["verdict"] == "fresh"
    assert api.dispatch_read(eng, "neighbors", {"path": "hosts/db2.md"}, fresh)["inbound"]
    assert api.dispatch_read(eng, "verify", {"text": "nothing here"}, fresh)["commits"] == []
    with pytest.raises(UserError) as ei:
        api.dispatch_read(eng, "history", {"entity": "db1", "limit": "all"}, fresh)
    assert ei.value.param == "limit"
    with pytest.raises(UserError) as ei:
        api.dispatch_read(eng, "latest", {"terms": {"a": 1}}, fresh)
    assert ei.value.param == "terms"


# -- corpus-owned eval cases, end to end ------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.real_model
def test_eval_yaml_cases_end_to_end(fx, tmp_path):
    cases = tmp_path / "cases.yaml"
    cases.write_text("""cases:
  - q: how do I restore the database from a backup
    expect: [{path: runbooks/postgres/restore.md}]
  - q: how do we fail over to the replica when the primary dies
    expect: [{path: runbooks/postgres/failover.md}]
  - q: what pool size does the pooler use
    expect: [{path: services/pgbouncer.md, heading: PgBouncer > Settings}]
  - q: what is our Kubernetes ingress controller
    answerable: false
""")
    env = remembrancer_env(data=tmp_path / "data", config=tmp_path / "none.toml", socket=tmp_path / "s.sock",
                           home=tmp_path)
    p = run_cli("eval", str(cases), "--root", str(fx["notes"]), "--json", env=env, cwd=PROJECT, timeout=300)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["queries_total"] == 4 and rep["overall"]["n"] == 3
    assert rep["overall"]["top3"] == 1.0, rep["misses"]
    assert rep["abstention"]["unanswerable"] == 1
    text = run_cli("eval", str(cases), "--root", str(fx["notes"]), env=env, cwd=PROJECT, timeout=300)
    assert text.returncode == 0 and "top" in text.stdout.lower()


def test_the_memory_answers_read_back_into_their_records_unchanged(eng):
    """The typed answers are the wire format: each answer's JSON, read into its record and written
    again, is the same text — keys, order and what is left out (tests/search/test_answer_records.py)."""
    from remembrancer.indexer import api
    from remembrancer.indexer.answers import Freshness, HistoryAnswer, LatestAnswer, NeighborsAnswer, VerifyAnswer

    fresh = lambda view: Freshness("fresh")  # noqa: E731
    asks = [(HistoryAnswer, "history", {"entity": "db2"}), (HistoryAnswer, "history", {"entity": "db1", "since": "2030-02-01"}),
            (LatestAnswer, "latest", {"terms": ["6432"]}), (LatestAnswer, "latest", {"terms": ["6432", "zzz-none"]}),
            (NeighborsAnswer, "neighbors", {"path": "hosts/db2.md"}), (VerifyAnswer, "verify", {"text": "see 4f2a9c1e"})]
    for record, method, params in asks:
        out = api.dispatch_read(eng, method, params, fresh)
        assert json.dumps(record.parse(out).to_json()) == json.dumps(out), (method, params)
