"""Ranking that generalises: equal inputs give equal rankings, each section is shown once, the
caller's rephrasings (`alternates`), and the failure classes of issue 10 as mechanisms."""

from __future__ import annotations

import pytest

from remembrancer.indexer.api import do_search
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.search.answer import SearchRequest, search
from tests.support.corpus import engine_for, write_tree
from tests.support.ranking import ranked, row

BACKUP_DOCS = {
    "notes/backup.md": "# Backups\n\n## Restore a database\n\nRestore the postgres dump with pg_restore.\n\n"
                       "## Backup schedule\n\nThe dump runs every night from cron.\n",
    "notes/dns.md": "# DNS\n\n## Resolver\n\nThe host uses the local resolver on port 53.\n",
    "notes/git.md": "# Git\n\n## Merge a branch\n\nMerge the release branch after the tests pass.\n",
    "journal/2030/2030-01-05.md": "# 2030-01-05\n\n## 10:00 restore test\n\nRestored the database from the "
                                  "backup, took ten minutes.\n",
}


def corpus(root, files):
    return write_tree(root, files)


def ranking(engine, query, **kw):
    out = search(engine.view(), SearchRequest(query, limit=5, **kw)).to_json()
    return [(r["path"], r["heading"], r["score"]) for r in out.get("results") or out.get("best_weak") or []]


QUESTIONS = ["restore the database", "when does the backup run", "dns port", "merge the branch",
             "what happened on the restore test", "coffee recipe"]


def test_two_fresh_indexes_of_the_same_corpus_rank_alike(tmp_path, monkeypatch, tiny_embedder):
    """Two indexes built from nothing (their own data folders) give identical result lists: the
    vector graph is built on one thread, and equal scores are ordered by section, not by chance."""
    root = corpus(tmp_path / "notes", {**BACKUP_DOCS, **{f"notes/extra{i}.md": f"# Extra {i}\n\n## Part\n\n"
                                                        "the same words in every note: restore the database\n"
                                                        for i in range(12)}})
    lists = []
    for run in ("a", "b"):
        monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / f"data-{run}"))
        e = engine_for([root], tiny_embedder)
        e.refresh()
        try:
            lists.append([ranking(e, q) for q in QUESTIONS])
        finally:
            e.close()
    assert lists[0] == lists[1]
    # The twelve identical notes tie exactly; the tie is broken the same way both times.
    assert len({s for _, _, s in lists[0][0]}) < len(lists[0][0])


def test_one_result_per_section_even_when_a_breadcrumb_repeats(tmp_path, tiny_engine):
    root = corpus(tmp_path / "notes", {
        "notes/restore.md": "# Restore\n\n## Steps\n\nrestore the database from the dump\n\n"
                            "## Steps\n\nrestore the database from the dump, again\n\n"
                            "## Steps (Part 2)\n\nrestore the database: the rest of the steps\n",
        "notes/other.md": "# Other\n\n## Steps\n\nrestore the database from a backup\n",
    })
    out = search(tiny_engine(root).view(), SearchRequest("restore the database", limit=5)).to_json()
    shown = [(r["path"], r["heading"].replace(" (Part 2)", "")) for r in out["results"]]
    assert len(shown) == len(set(shown))
    assert ("notes/restore.md", "Restore > Steps") in shown and ("notes/other.md", "Other > Steps") in shown


def test_alternates_are_validated_with_a_structured_error(tmp_path, tiny_engine):
    e = tiny_engine(corpus(tmp_path / "notes", BACKUP_DOCS))
    for bad, says in ((["a", "b", "c", "d"], "at most 3"), (["ok", ""], "empty"), ("restore", "list of strings"),
                      ([1], "list of strings"), (["x" * 301], "chars"), (["restore", "???"], "no word")):
        with pytest.raises(UserError) as err:
            do_search(e.view(), {"query": "restore", "alternates": bad})
        assert err.value.to_dict()["param"] == "alternates" and says in str(err.value)
    with pytest.raises(UserError):
        do_search(e.view(), {"query": "", "alternates": ["restore"]})


def test_a_rephrasing_nominates_what_the_question_alone_misses_and_says_so(tmp_path, tiny_engine):
    e = tiny_engine(corpus(tmp_path / "notes", BACKUP_DOCS))
    alone = do_search(e.view(), {"query": "merge", "limit": 5})
    assert alone.get("found_by") is None
    out = do_search(e.view(), {"query": "merge", "limit": 5, "alternates": ["dns resolver port"]})
    shown = [r["path"] for r in out["results"] or out["best_weak"]]
    assert "notes/dns.md" in shown                       # only the rephrasing found it
    assert shown[0] == "notes/git.md"                    # the question keeps the most weight
    assert out["found_by"] == "merge"
    # A repeat of the question adds nothing: the same ranking as without it.
    same = do_search(e.view(), {"query": "merge", "limit": 5, "alternates": ["Merge "]})
    assert [r["path"] for r in same["results"]] == [r["path"] for r in alone["results"]]


def test_the_answer_names_the_rephrasing_that_found_the_best_result(tmp_path, tiny_engine):
    e = tiny_engine(corpus(tmp_path / "notes", BACKUP_DOCS))
    out = do_search(e.view(), {"query": "zzz qqq", "limit": 5, "alternates": ["dns resolver port 53"]})
    best = (out["results"] or out["best_weak"])[0]
    assert best["path"] == "notes/dns.md" and out["found_by"] == "dns resolver port 53"


def test_the_vector_graph_is_the_same_every_time_it_is_built(tmp_path):
    """hnswlib's parallel insertion builds a different graph each run (measured: 62 of 5,000
    neighbours differ at 3,000 vectors); the index adds on one thread, so equal vectors give equal
    neighbours."""
    import numpy as np

    from remembrancer.indexer.store.local.vectors import Vectors

    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((3000, 32)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    queries = rng.standard_normal((20, 32)).astype(np.float32)
    found = []
    for run in ("a", "b"):
        v = Vectors(tmp_path / run, 32)
        v.rebuild(np.arange(1, 3001), vecs, generation=1)
        found.append([v.search(q, 150) for q in queries])
    assert found[0] == found[1]


# -- the failure classes, each on a fixture written for it --------------------------------------

RECORDS = {
    "hosts/db1.md": "---\nhost: db1\naliases: [warehouse, db1.internal.example]\nips: [10.20.1.11]\n---\n\n"
                    "# db1\n\n| fact | value |\n|---|---|\n| role | postgres database server |\n"
                    "| disk | 500 GB |\n\n## Services\n\n- postgres on port 5432\n\n## Backups\n\n"
                    "The dump runs every night from cron.\n",
    "hosts/web1.md": "---\nhost: web1\n---\n\n# web1\n\n## Services\n\n- nginx on port 443\n",
    "journal/2030/2030-01-05.md": "# 2030-01-05\n\n## 10:00 disk\n\nThe disk on the database server "
                                  "filled up; the postgres dump had to wait.\n",
}


@pytest.mark.parametrize("query", ["what is 10.20.1.11", "warehouse disk", "db1.internal.example services"])
def test_a_host_named_by_an_alias_or_ip_from_its_front_matter_lands_on_its_record(tmp_path, tiny_engine, query):
    out = search(tiny_engine(corpus(tmp_path / "notes", RECORDS)).view(), SearchRequest(query, limit=5)).to_json()
    assert (out["results"] or out["best_weak"])[0]["path"] == "hosts/db1.md"


PROCEDURES = {
    "hosts/db1.md": "---\nhost: db1\naliases: [warehouse]\n---\n\n# db1\n\n| fact | value |\n|---|---|\n"
                    "| role | postgres primary |\n\n## Replication\n\ndb1 streams to db2; if db1 dies, db2 "
                    "takes over as the primary.\n",
    "hosts/db2.md": "---\nhost: db2\n---\n\n# db2\n\n## Replication\n\ndb2 is the streaming replica of db1.\n",
    "runbooks/failover.md": "# Fail over PostgreSQL from db1 to db2\n\nWhen the primary is gone.\n\n## Steps\n\n"
                            "1. Stop the writers.\n2. Run pg_ctl promote on the replica.\n3. Point the "
                            "pooler at the new primary.\n",
    "runbooks/vacuum.md": "# Vacuum a bloated table\n\n## Steps\n\n1. Check the bloat.\n2. Run vacuum full "
                          "in a quiet hour.\n",
}


def test_a_how_to_question_about_an_entity_gets_the_runbooks_steps_not_the_records_facts(tmp_path, tiny_engine):
    """A host's record holds its facts, a runbook titled with the host ("Fail over PostgreSQL from
    db1 to db2") its procedure, and the record's "Replication" says what happens when db1 dies in
    the question's words. A how-to question credits no record for the name (a record states what the
    thing is, not how to do something with it: its every section credited alike outweighed the
    procedure written elsewhere); the runbook is near enough, so its steps go first
    (`rank._procedure_first`)."""
    engine = tiny_engine(corpus(tmp_path / "notes", PROCEDURES))
    q = "how do I promote the replica when db1 dies?"
    out = search(engine.view(), SearchRequest(q, limit=10)).to_json()
    first, *rest = [(r["path"], r["heading"], r["scores"]["literal"]) for r in out["results"] or out["best_weak"]]
    assert first[:2] == ("runbooks/failover.md", "Fail over PostgreSQL from db1 to db2 > Steps"), [first, *rest]
    assert all(lit < 1.0 for path, _, lit in [first, *rest] if path == "hosts/db1.md"), [first, *rest]
    fact = _literal_by_section(engine, "what happens to the replica when db1 dies?")   # not a how-to: credited
    assert min(v for (path, _), v in fact.items() if path == "hosts/db1.md") >= 1.0, fact


EVENTS = {
    "services/clickhouse.md": "---\nservice: clickhouse\naliases: [ch]\n---\n\n# clickhouse\n\n## Settings\n\n"
                              "parts_to_throw_insert is 3000.\n\n## Ingest\n\nInserts come in batches.\n",
    "journal/2030/2030-05-26.md": "# 2030-05-26\n\n## 14:00 ClickHouse back to defaults\n\nThe part counts are "
                                  "normal again; the settings went back.\n\n## 15:00 ch: merges caught up\n\n"
                                  "Merges are keeping up.\n\n## 16:00 lunch\n\nNothing about the part counts.\n\n"
                                  "## 17:00 clickhouse-exporter upgraded\n\nThe exporter reports part counts.\n",
}


@pytest.mark.parametrize("query, credited", [
    ("Are the ClickHouse part counts back to normal?", True),     # an outcome
    ("what happened to the ClickHouse part counts in May?", True),  # an event
    ("what is parts_to_throw_insert on ClickHouse?", False),      # a fact: the record answers
    ("how do I lower the ClickHouse part counts?", False),        # a how-to: the how-to rule finds the steps
])
def test_an_event_question_credits_the_sections_whose_heading_names_the_entity(tmp_path, tiny_engine,
                                                                            monkeypatch, query, credited):
    """The record's credit made its sections win a question about what happened on the strength of
    the name alone. For an event or an outcome, a section whose heading names the entity — by its
    name or an alias, as a whole word (not `clickhouse-exporter`) — is credited as the record is:
    the journal entry that wrote it down. A fact question credits the record only, a how-to neither."""
    from remembrancer.indexer.search import answer

    lit = _literal_by_section(tiny_engine(corpus(tmp_path / "notes", EVENTS)), query)
    journal = "journal/2030/2030-05-26.md"
    titled = {"2030-05-26 > 14:00 ClickHouse back to defaults", "2030-05-26 > 15:00 ch: merges caught up"}
    assert {h for path, h in lit if path == journal} >= titled | {"2030-05-26 > 16:00 lunch",
                                                                 "2030-05-26 > 17:00 clickhouse-exporter upgraded"}, lit
    record = [v for (path, _), v in lit.items() if path == "services/clickhouse.md"]
    assert record and (min(record) >= 1.0) == (not query.startswith("how do I")), lit   # a how-to credits no record
    got = {h for (path, h), v in lit.items() if path == journal and v >= 1.0}
    assert got == (titled if credited else set()), lit
    assert all(v < 1.0 for (path, h), v in lit.items() if path == journal and h not in titled), lit
    monkeypatch.setattr(answer, "EVENT_CREDIT", False)
    off = _literal_by_section(tiny_engine(corpus(tmp_path / "notes2", EVENTS)), query)
    assert all(v < 1.0 for (path, _), v in off.items() if path == journal), off


def test_a_records_facts_before_its_first_subheading_answer_for_the_record():
    """A record's H1 section holds its facts table: it is a first-class section (no overview rule
    steps it back), and it wins over a near tie in another document and over a subsection of its own
    that it clearly leads (one within `detail_margin` of it is the detail, and goes first)."""

    rows = [row(1, "hosts/db1.md", "db1", doc_type="host", level=1),
            row(2, "hosts/db1.md", "db1 > Services", doc_type="host"),
            row(3, "notes/disks.md", "Disks", level=1), row(4, "notes/disks.md", "Disks > Sizes")]
    assert ranked(rows, {1: 0.80, 2: 0.70, 3: 0.78, 4: 0.10}, "what is the disk size of db1?")[0] == 1
    assert ranked(rows, {1: 0.80, 2: 0.77, 3: 0.78, 4: 0.10}, "what is the disk size of db1?")[0] == 2


def test_is_it_still_so_keeps_the_records_opening_over_a_detail_near_it():
    """"Is vaultwarden still reachable from the public internet?": the record's opening says what
    holds now ("LAN + wg0 only"); its "config" names the service as well and came within
    `detail_margin` — and went first, as the detail of a summary. For "is it still so? did it
    happen?" the detail rule stands aside; for a question about a fact it still applies."""
    rows = [row(1, "services/vaultwarden.md", "vaultwarden", doc_type="service", level=1,
                content="url: https://vault.example.net, LAN + wg0 only."),
            row(2, "services/vaultwarden.md", "vaultwarden > config", doc_type="service",
                content="SIGNUPS_ALLOWED=false, invites only.")]
    assert ranked(rows, {1: 0.80, 2: 0.76}, "is vaultwarden still reachable from the public internet?")[0] == 1
    assert ranked(rows, {1: 0.80, 2: 0.76}, "what is vaultwarden's signup setting?")[0] == 2


def test_a_word_the_notes_write_in_another_inflection_occurs(tmp_path, tiny_engine):
    """"…pruning and the integrity check?" abstained ("not in the corpus: pruning") over notes that
    write "forget + prune": an inflection of a word the notes use is no absent term. Suffixes only:
    "undo" is not "do"."""
    from remembrancer.indexer import terms
    from remembrancer.indexer.search import answer

    e = tiny_engine(corpus(tmp_path / "notes", {"services/restic.md": "# restic\n\n## schedule\n\n"
                                                                    "forget + prune on sundays, check after.\n"}))
    assert answer._word_occurs(e.view(), "pruning") and answer._word_occurs(e.view(), "pruned")
    assert not answer._word_occurs(e.view(), "defragmenting")
    assert "do" not in terms.inflected_from("undo") and terms.inflected_from("pruning") >= {"prune"}


@pytest.mark.parametrize("query", ["did the db1 migration finally happen?", "is db1 still on the old disks?"])
def test_did_it_finally_happen_and_is_it_still_are_settled_by_the_newest_entry(query):

    rows = [row(1, "hosts/db1.md", "db1 > Disks", doc_type="host", date="2030-01-01"),
            row(2, "journal/2030/2030-01-05.md", "2030-01-05 > 10:00 migration started", doc_type="journal",
                date="2030-01-05"),
            row(3, "journal/2030/2030-02-01.md", "2030-02-01 > 09:00 migration done", doc_type="journal",
                date="2030-02-01")]
    from remembrancer.indexer.search.rank import RankingConfig

    # The newest of the near ties goes first (`outcome_tie_margin`, docs/ranking.md, "Memory rules").
    assert ranked(rows, {1: 0.80, 2: 0.78, 3: 0.74}, query)[0] == 3
    assert ranked(rows, {1: 0.80, 2: 0.78, 3: 0.74}, query, cfg=RankingConfig(outcome_tie_margin=0.0))[0] == 1


def test_the_rules_never_overturn_a_clearly_stronger_relevance_signal():
    """With the swing bound the rules decide near ties only: however strong a multiplier is set, a
    journal entry that matches far better stays first for a question about now; one that merely
    ties steps back."""
    from remembrancer.indexer.search.rank import RankingConfig

    rows = [row(1, "journal/2030/2030-01-05.md", "2030-01-05 > 10:00 port", doc_type="journal"),
            row(2, "hosts/db1.md", "db1 > Services", doc_type="host")]
    q = "which port does postgres listen on?"
    strong = RankingConfig(fact_history_factor=0.5)          # rule_swing 0.2, the default
    assert ranked(rows, {1: 0.95, 2: 0.60}, q, cfg=strong) == [1, 2]
    assert ranked(rows, {1: 0.80, 2: 0.75}, q, cfg=strong) == [2, 1]
    assert ranked(rows, {1: 0.95, 2: 0.60}, q, cfg=RankingConfig(fact_history_factor=0.5, rule_swing=0.0)) == [2, 1]


def test_a_known_entity_and_an_everyday_word_the_corpus_lacks_is_no_reason_to_abstain(notes_engine):
    from remembrancer.indexer.search import answer as search_mod

    assert search_mod.terms.is_rare("kubernetes", frozenset({"chart", "helm"}))
    assert not search_mod.terms.is_rare("fetched", frozenset({"fetch"}))
    assert not search_mod.terms.is_rare("compaction", frozenset({"compact"}))
    out = search(notes_engine.view(), SearchRequest("which disk does db1 serve towards the backup?", limit=5)).to_json()
    assert not out["no_strong_match"], out.get("why_no_strong_match")


# -- memory structure: which record answers, and which part of a runbook ------------------------

FAILOVER = {
    **RECORDS,
    "runbooks/postgres/failover.md": "---\ntitle: Fail over db1\nupdated: 2030-02-01\n---\n\n# Fail over db1\n\n"
                                     "Promote the replica when db1 dies.\n\n## Steps\n\n1. Stop writes to db1.\n"
                                     "2. Promote the replica.\n3. Point the clients at the new primary.\n",
}


def _literal_by_section(engine, query):
    out = search(engine.view(), SearchRequest(query, limit=20)).to_json()
    return {(r["path"], r["heading"]): r["scores"]["literal"] for r in out["results"] or out["best_weak"]}


@pytest.mark.parametrize("query", [
    "which port does db1 listen on?",            # a fact about the entity
    "warehouse disk",                             # keywords naming the entity by an alias
    "how do I fail over db1?",                    # a procedure
    "what happened to the db1 disk last week?",   # an event
    "did the db1 failover actually work?",        # an outcome
])
def test_the_named_entitys_record_is_credited_whatever_the_question_asks(tmp_path, tiny_engine, query):
    """The literal leg credits every section of the named entity's own record (its front matter
    defines the name), whatever kind of answer the question wants but a procedure: giving it only
    for a question about the entity's facts helped one dev corpus and was removed (docs/ranking.md).
    Other documents that mention the name get no such credit — but for an event or an outcome, every
    section whose heading names the entity (the runbook "Fail over db1") is about it and is credited
    too. A how-to question credits no record: the runbook's steps come by the how-to rule."""
    lit = _literal_by_section(tiny_engine(corpus(tmp_path / "notes", FAILOVER)), query)
    record = [v for (path, _), v in lit.items() if path == "hosts/db1.md"]
    assert record and (min(record) >= 1.0) == (not query.startswith("how do I")), lit
    titled = query.startswith(("what happened", "did "))
    credited = {"hosts/db1.md"} | ({"runbooks/postgres/failover.md"} if titled else set())
    # (an event's credit goes to the sections headed with the name: not the runbook's front matter)
    runbook = [v for (path, h), v in lit.items() if path == "runbooks/postgres/failover.md" and (h or not titled)]
    assert runbook and (min(runbook) >= 1.0) == titled, lit
    assert all(v < 1.0 for (path, _), v in lit.items() if path not in credited), lit


def test_a_how_to_question_is_answered_by_the_steps_not_the_runbooks_introduction():
    """A runbook's introduction names its topic in the words the question uses; its numbered steps
    are the answer. A how-to question steps up a runbook's section that is a procedure — a numbered
    list of two steps or more, or a numbered step heading (`### 3. Promote`) — so a near tie goes to it."""

    rows = [row(1, "runbooks/failover.md", "Fail over db1", doc_type="runbook", level=1,
                content="Promote the replica when db1 dies."),
            row(2, "runbooks/failover.md", "Fail over db1 > Steps", doc_type="runbook",
                content="1. Stop writes.\n2. Promote the replica.\n"),
            row(3, "runbooks/failover.md", "Fail over db1 > Steps > 2. Promote the replica", doc_type="runbook",
                level=3, content="pg_ctl promote"),
            row(4, "runbooks/failover.md", "Fail over db1 > Notes", doc_type="runbook",
                content="```\n1. not a step\n2. in code\n```"),
            row(5, "planning/db.md", "Plan > Failover", doc_type="plan", content="1. Buy disks.\n2. Test failover.\n")]
    scores = {1: 0.80, 2: 0.75, 3: 0.50, 4: 0.76, 5: 0.10}
    assert ranked(rows, scores, "how do I fail over db1?")[:2] == [2, 1]
    assert ranked(rows, {1: 0.80, 3: 0.75, 2: 0.10, 4: 0.10, 5: 0.10}, "steps to fail over db1")[0] == 3
    # Not a how-to: the introduction keeps a clear lead (a section of its own within `detail_margin`
    # would go first: the detail before its summary).
    assert ranked(rows, {**scores, 2: 0.70, 4: 0.70}, "what does the failover runbook cover?")[0] == 1
    # A numbered list inside code is not a procedure, nor is a numbered list outside a runbook (a
    # plan's items): the runbook's steps go first, not they (×1.3 would lift them to the lead).
    assert ranked(rows, {1: 0.52, 2: 0.10, 3: 0.10, 4: 0.45, 5: 0.10}, "how do I fail over db1?")[0] == 2
    assert ranked(rows, {1: 0.52, 2: 0.10, 3: 0.10, 4: 0.10, 5: 0.50}, "how do I fail over db1?")[0] == 2


SYMPTOM = [row(1, "runbooks/k3s-certs.md", "Rotate the k3s certificates > When to use", doc_type="runbook",
               content="kubectl fails with `x509: certificate has expired`."),
           row(2, "runbooks/k3s-certs.md", "Rotate the k3s certificates > Troubleshooting", doc_type="runbook",
               content="Still x509 errors after the restart: the kubeconfig holds the old client cert."),
           row(3, "runbooks/k3s-certs.md", "Rotate the k3s certificates > Steps", doc_type="runbook",
               content="1. k3s certificate rotate\n2. systemctl restart k3s\n3. Copy the new kubeconfig.\n"),
           row(4, "journal/2030/2030-04-08.md", "2030-04-08 > 09:10 kubectl: certificate expired",
               doc_type="journal", date="2030-04-08", content="kubectl fails with an expired x509 certificate."),
           row(5, "runbooks/vacuum.md", "Vacuum a bloated table > Steps", doc_type="runbook",
               content="1. Check the bloat.\n2. Run vacuum full.\n")]


@pytest.mark.parametrize("scores", [
    {1: 0.90, 2: 0.88, 3: 0.50, 4: 0.80, 5: 0.20},   # the runbook's "When to use" leads: it names the symptom
    {1: 0.76, 2: 0.70, 3: 0.40, 4: 0.90, 5: 0.20},   # the journal entry of that day leads, the runbook near it
])
def test_a_how_to_question_describing_a_symptom_gets_the_runbooks_steps(scores):
    """"kubectl fails with an expired x509 certificate — what's the procedure to fix it?": the
    runbook's "When to use" and "Troubleshooting" and the journal entry of that day describe the
    symptom in the question's words, and match it far better than the steps (which say what to run).
    When a runbook is near the best — as near as the how-to boost could carry a section — the part
    of it the question asks for goes first, however much lower it matched."""
    from remembrancer.indexer.search import rank

    q = "kubectl fails with an expired x509 certificate - what's the procedure to fix it?"
    assert ranked(SYMPTOM, scores, q)[0] == 3
    # Not a how-to question: the rules leave the match as it is.
    assert ranked(SYMPTOM, scores, "kubectl fails with an expired x509 certificate")[0] != 3
    # The how-to boost switched off switches this off too: it is the same rule's reach.
    assert ranked(SYMPTOM, scores, q, cfg=rank.RankingConfig(howto_steps_boost=1.0))[0] != 3
    # A runbook out of reach (another document clearly ahead) is not the answer: nothing moves.
    far = {**scores, 4: max(scores.values()) / 0.7}
    assert ranked(SYMPTOM, far, q)[0] == 4


@pytest.mark.parametrize("query, first", [
    ("A release is misbehaving in production. How do I roll it back?", 4),   # the Rollback part
    ("how do I undo a bad deploy of the game service?", 4),
    ("how do I check that the deploy came out right?", 3),                   # the Verify under Steps
    ("how do I deploy the game service?", 2),                                # the steps
])
def test_a_how_to_question_asking_to_undo_or_check_gets_that_part_of_the_runbook(query, first):
    """A runbook keeps its steps, a Verify part and a Rollback part; the steps match "how do I roll
    it back?" about as well as the part that undoes (every part names the service and the deploy). The
    how-to rule steps up the part the question asks for: undoing or checking, else the steps."""
    rows = [row(1, "runbooks/deploy.md", "Deploy a game service", doc_type="runbook", level=1,
                content="Deploys are manual; how to check and how to roll back."),
            row(2, "runbooks/deploy.md", "Deploy a game service > Steps > 3. Upgrade", doc_type="runbook", level=3,
                content="helm upgrade game-service --atomic"),
            row(3, "runbooks/deploy.md", "Deploy a game service > Steps > Verify", doc_type="runbook", level=3,
                content="- 5xx rate back to the previous level.\n- No new Sentry issue."),
            row(4, "runbooks/deploy.md", "Deploy a game service > Rollback", doc_type="runbook",
                content="helm history game-service, then helm rollback game-service REVISION.")]
    scores = {1: 0.70, 2: 0.80, 3: 0.76, 4: 0.77}
    assert ranked(rows, scores, query)[0] == first
    # The part is read from the question's wording ("roll it back" too), and the rule is the how-to one:
    from remembrancer.indexer.search import rank
    assert ranked(rows, scores, query, cfg=rank.RankingConfig(howto_steps_boost=1.0))[0] == 2
    # The introduction never answers a how-to question, however clear its lead: the part asked for
    # goes first. A section of another document with a clear lead over the runbook stands.
    assert ranked(rows, {**scores, 2: 0.30, 3: 0.30, 4: 0.30}, query)[0] == first
    other = row(5, "journal/2030/2030-01-05.md", "2030-01-05 > 10:00 deploy", doc_type="journal")
    assert ranked([*rows, other], {**scores, 5: 2.0}, query)[0] == 5


def test_steps_asked_for_are_not_the_part_that_undoes_them():
    """A Rollback numbers its steps as the procedure does, and names the same switch: "steps to
    pause payouts" wants the steps, not how to un-pause — the how-to rule steps up the procedure
    only, whichever of the two matches the question a little better."""
    rows = [row(1, "runbooks/pause-payouts.md", "Pause payouts", doc_type="runbook", level=1,
                content="The big red switch for merchant payouts."),
            row(2, "runbooks/pause-payouts.md", "Pause payouts > Steps", doc_type="runbook",
                content="1. Set payouts.paused=true.\n2. Confirm the batch queue drains.\n"),
            row(3, "runbooks/pause-payouts.md", "Pause payouts > Rollback (un-pause)", doc_type="runbook",
                content="1. Set payouts.paused=false.\n2. Watch the first batch go out.\n")]
    scores = {1: 0.70, 2: 0.74, 3: 0.78}
    assert ranked(rows, scores, "steps to stop merchant payouts going out")[0] == 2
    assert ranked(rows, scores, "how do I undo a payout pause?")[0] == 3   # asked for, the Rollback


def test_doing_a_thing_and_checking_it_worked_asks_for_the_procedure():
    """"How do I rotate the key and check it worked?" asks for the rotation, whose last steps are its
    checks: the how-to rule steps up the procedure, not the Verify part alone; "how do I check the
    rotation worked?" still asks for the check."""
    from remembrancer.indexer.search import rank

    rows = [row(1, "runbooks/rotate.md", "Rotate the DB root credential", doc_type="runbook", level=1,
                content="Quarterly, or at once after a leak."),
            row(2, "runbooks/rotate.md", "Rotate the DB root credential > Procedure", doc_type="runbook",
                content="1. vault write -f database/rotate-root/haulbase\n2. Restart the app pool.\n"),
            row(3, "runbooks/rotate.md", "Rotate the DB root credential > Verify", doc_type="runbook",
                content="- The app pool reconnects.\n- An old password is refused.\n")]
    scores = {1: 0.70, 2: 0.74, 3: 0.78}
    both = "How do I manually rotate the DB root credential and check it worked?"
    assert rank.intent(both).howto == "steps"
    assert ranked(rows, scores, both)[0] == 2
    assert rank.intent("how do I check the root credential rotation worked?").howto == "verify"
    assert ranked(rows, {**scores, 2: 0.78, 3: 0.74}, "how do I check the root credential rotation worked?")[0] == 3


def test_the_runbook_step_back_is_gone_and_a_config_naming_it_is_told_so():
    """`fact_runbook_factor` (a runbook ×0.95 for a question about a fact as it stands) came to help
    one memory corpus by one question, and no held-out-style corpus, so it was removed
    (docs/ranking.md, "Removed or rejected"): a runbook and a record in a near tie keep relevance's
    order whatever is asked, and a config that still sets the factor gets the unknown-key error."""
    from remembrancer.indexer.errors import UserError
    from remembrancer.indexer.search import rank

    rows = [row(1, "runbooks/merges.md", "Merges falling behind > Steps > 4. Stopgap", doc_type="runbook"),
            row(2, "services/clickhouse.md", "clickhouse > Server settings", doc_type="service")]
    for query in ("What is parts_to_throw_insert set to on the ClickHouse servers now?",
                  "what did we set parts_to_throw_insert to during the May incident?"):
        assert ranked(rows, {1: 0.80, 2: 0.78}, query)[0] == 1
        assert ranked(rows, {1: 0.78, 2: 0.80}, query)[0] == 2
    with pytest.raises(UserError) as err:
        rank.RankingConfig.from_dict({"fact_runbook_factor": 0.95})
    assert "unknown [ranking] key 'fact_runbook_factor'" in str(err.value)
    assert "stale_factor" in err.value.options


def test_the_plan_step_back_is_gone_and_a_config_naming_it_is_told_so():
    """`intention_factor` (a plan ×0.8 for a question not about the plan) helped one memory corpus
    once the newest account settled outcome questions, so it was removed (docs/ranking.md, "Removed
    or rejected"): a plan and a record in a near tie keep relevance's order, and a config that still
    sets the factor gets the unknown-key error with the settings that exist."""
    from remembrancer.indexer.errors import UserError
    from remembrancer.indexer.search import rank

    rows = [row(1, "planning/q2.md", "Q2 plan > 2. Postgres 17 on db1", doc_type="plan"),
            row(2, "hosts/db1.md", "db1", doc_type="host", level=1)]
    assert ranked(rows, {1: 0.80, 2: 0.78}, "which postgres version does db1 run now?")[0] == 1
    with pytest.raises(UserError) as err:
        rank.RankingConfig.from_dict({"intention_factor": 0.8})
    assert "unknown [ranking] key 'intention_factor'" in str(err.value)
    assert "stale_factor" in err.value.options
