"""Judging, aggregation and query-file loading of indexer.search.evaluate — no engine is built here."""

from __future__ import annotations

import json

import pytest

from remembrancer.indexer.errors import UserError
from remembrancer.indexer.search.evaluate import (
    Case, Label, aggregate, build_report, corpus_dir, first_rank, format_report, heading_key, is_hit,
    judge, load_cases, percentile, primary_labels, quotes_query, recall_labels,
)
from tests.support.paths import PROJECT


def r(path: str, heading: str = "") -> dict:
    return {"path": path, "heading": heading}


# -- judging -------------------------------------------------------------------------------------

def test_strict_hit_needs_same_path_and_breadcrumb():
    lab = Label("a.md", "Guide > Install")
    assert is_hit(r("a.md", "Guide > Install"), lab)
    assert not is_hit(r("b.md", "Guide > Install"), lab)
    assert not is_hit(r("a.md", "Guide"), lab)
    assert not is_hit(r("a.md", "Guide > Install > Linux"), lab)


def test_heading_compare_ignores_case_and_whitespace():
    assert is_hit(r("a.md", "guide >  INSTALL"), Label("a.md", "Guide > Install"))


@pytest.mark.parametrize("got,want", [
    ("Guide > Install (Part 2)", "Guide > Install"),
    ("Guide > Install", "Guide > Install (part 3)"),
    ("Guide > Install (Part 2/3)", "Guide > Install (Part 1)"),
])
def test_split_suffix_is_ignored_on_either_side(got, want):
    assert is_hit(r("a.md", got), Label("a.md", want))


def test_only_a_part_suffix_is_dropped_not_other_parentheses():
    # memory-dev breadcrumbs carry real parentheses: "2031-04-02 (Wed)", "(session 1)"
    assert heading_key("2031-04-02 (Wed)") == "2031-04-02 (wed)"
    assert not is_hit(r("j.md", "2031-04-16 (Wed) > 2031-04-16"),
                      Label("j.md", "2031-04-16 (Wed) > 2031-04-16 (session 1)"))
    assert heading_key("cargo-tree(1) > OPTIONS") == "cargo-tree(1) > options"


def test_duplicate_breadcrumb_suffix_still_distinguishes_sections():
    assert not is_hit(r("a.md", "Notes [2]"), Label("a.md", "Notes"))


def test_null_heading_accepts_any_section_of_the_file():
    lab = Label("a.md", None)
    assert is_hit(r("a.md", ""), lab)
    assert is_hit(r("a.md", "Anything > Deep"), lab)
    assert not is_hit(r("b.md", "Anything"), lab)


def test_empty_heading_is_the_preamble_only():
    lab = Label("a.md", "")
    assert is_hit(r("a.md", ""), lab)
    assert is_hit({"path": "a.md", "heading": None}, lab)
    assert not is_hit(r("a.md", "Title"), lab)
    assert not is_hit(r("a.md", "Title"), lab, lenient=True)


def test_lenient_accepts_descendants_only():
    lab = Label("a.md", "Changelog > 2.1.0")
    assert is_hit(r("a.md", "Changelog > 2.1.0 > Added"), lab, lenient=True)
    assert is_hit(r("a.md", "changelog > 2.1.0 > added (Part 2)"), lab, lenient=True)
    assert not is_hit(r("a.md", "Changelog > 2.1.0 > Added"), lab)
    assert not is_hit(r("a.md", "Changelog > 2.1.01"), lab, lenient=True)  # a sibling, not a child
    assert not is_hit(r("a.md", "Changelog"), lab, lenient=True)           # an ancestor
    assert not is_hit(r("b.md", "Changelog > 2.1.0 > Added"), lab, lenient=True)


def test_primary_labels_are_grade_3_else_the_best_grade():
    mixed = [Label("a.md", "A", 3), Label("b.md", "B", 2), Label("c.md", "C", 1)]
    assert primary_labels(mixed) == [mixed[0]]
    only_1 = [Label("a.md", None, 1), Label("b.md", None, 1)]  # qmd rows are all grade 1
    assert primary_labels(only_1) == only_1
    assert primary_labels([]) == []


def test_recall_labels_are_grade_2_and_up_deduplicated():
    labels = [Label("a.md", "A", 3), Label("a.md", "a", 2), Label("b.md", "B", 2), Label("c.md", "C", 1)]
    assert [(x.path, x.heading) for x in recall_labels(labels)] == [("a.md", "A"), ("b.md", "B")]
    assert recall_labels([Label("a.md", None, 1)]) == [Label("a.md", None, 1)]


def test_first_rank_is_one_based_and_none_when_absent():
    labels = [Label("b.md", "B")]
    results = [r("a.md", "A"), r("b.md", "B > C"), r("b.md", "B")]
    assert first_rank(results, labels) == 3
    assert first_rank(results, labels, lenient=True) == 2
    assert first_rank([], labels) is None


def test_judge_one_case():
    case = Case("q1", "question", expect=[Label("a.md", "A", 3), Label("b.md", "B", 2), Label("c.md", "C", 2)])
    results = [r("b.md", "B"), r("a.md", "A > x"), r("x.md"), r("y.md"), r("z.md"), r("a.md", "A")]
    j = judge(case, results)
    assert j["rank"] == 6 and j["rank_lenient"] == 2
    assert j["rank_any"] == 1   # b.md#B is graded 2: equally correct, first
    assert j["recall"] == pytest.approx(1 / 3)  # only b.md#B is in the top 5
    # a grade-1 (partial) label is not an equally correct answer
    partial = Case("q2", "question", expect=[Label("a.md", "A", 3), Label("x.md", None, 1)])
    assert judge(partial, results[2:])["rank_any"] == 4


# -- aggregation ---------------------------------------------------------------------------------

def test_aggregate_topk_mrr_recall():
    judged = [
        {"rank": 1, "rank_lenient": 1, "rank_any": 1, "recall": 1.0},
        {"rank": 3, "rank_lenient": 2, "rank_any": 1, "recall": 0.5},
        {"rank": None, "rank_lenient": 4, "rank_any": 2, "recall": 0.0},
        {"rank": None, "rank_lenient": None, "rank_any": None, "recall": 0.0},
    ]
    m = aggregate(judged)
    assert m["n"] == 4
    assert (m["top1"], m["top3"], m["top5"]) == (0.25, 0.5, 0.5)
    assert m["mrr"] == pytest.approx((1 + 1 / 3) / 4, abs=1e-4)
    assert (m["top1_lenient"], m["top3_lenient"], m["top5_lenient"]) == (0.25, 0.5, 0.75)
    assert m["mrr_lenient"] == pytest.approx((1 + 1 / 2 + 1 / 4) / 4, abs=1e-4)
    assert m["recall5"] == 0.375
    assert m["top1_any"] == 0.5
    assert aggregate([])["top1"] == 0.0


def test_percentile_is_nearest_rank():
    vals = [float(v) for v in range(1, 101)]
    assert percentile(vals, 50) == 50.0
    assert percentile(vals, 95) == 95.0
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) == 0.0


def test_quotes_query_normalises_and_ignores_short_queries():
    doc = "Rule:\n  Pawls get the   LIGHT oil,\nnever the thick bearing grease."
    assert quotes_query("pawls get the light oil, never the thick bearing grease?", doc)
    assert not quotes_query("pawls get the heavy oil", doc)
    assert not quotes_query("light oil", doc)  # too short to be a copied sentence


def outcome(case: Case, results: list[dict], abstained: bool = False, ms: float = 10.0,
            self_quote: bool = False) -> dict:
    o = {"case": case, "abstained": abstained, "ms": ms, "top": results[:3], "self_quote": self_quote}
    if case.answerable:
        o["judged"] = judge(case, results)
    return o


def test_build_report_strata_abstention_and_misses():
    a1 = Case("a1", "q one", "para", expect=[Label("a.md", "A")])
    a2 = Case("a2", "q two", "para", expect=[Label("b.md", "B")])
    a3 = Case("a3", "q three", "ident", expect=[Label("c.md", None, 1)])
    u1 = Case("u1", "no answer", "none", answerable=False)
    u2 = Case("u2", "no answer either", "none", answerable=False)
    outs = [
        outcome(a1, [r("a.md", "A")], ms=5.0, self_quote=True),
        outcome(a2, [r("x.md", "X"), r("b.md", "B")], abstained=True, ms=20.0),  # scored on best_weak
        outcome(a3, [r("c.md", "Any")], ms=30.0),
        outcome(u1, [r("x.md", "X")], abstained=True, ms=1.0),
        outcome(u2, [r("y.md", "Y")], abstained=False, ms=2.0),
    ]
    rep = build_report(outs, limit=5)
    json.dumps(rep)  # must be JSON-serialisable
    assert rep["overall"]["n"] == 3
    assert rep["overall"]["top1"] == pytest.approx(2 / 3, abs=1e-4)
    assert list(rep["strata"]) == ["para", "ident"]  # unanswerable rows are not a retrieval stratum
    assert rep["strata"]["para"]["top1"] == 0.5 and rep["strata"]["para"]["top3"] == 1.0
    ab = rep["abstention"]
    assert (ab["unanswerable"], ab["abstained"], ab["missed_ids"]) == (2, 1, ["u2"])
    assert (ab["answerable"], ab["false_abstentions"], ab["false_ids"]) == (3, 1, ["a2"])
    assert rep["self_quote"]["ids"] == ["a1"]
    assert rep["grade_fallback"]["ids"] == ["a3"]
    assert rep["latency_ms"]["p50"] == 5.0 and rep["latency_ms"]["max"] == 30.0
    misses = {m["id"]: m for m in rep["misses"]}
    assert set(misses) == {"a2", "u2"}
    assert misses["a2"]["rank"] == 2 and misses["a2"]["abstained"]
    assert misses["a2"]["expected"] == ["b.md#B"] and misses["a2"]["got"] == ["x.md#X", "b.md#B"]
    assert misses["u2"]["kind"] == "should_abstain"

    text = format_report(rep, misses=True)
    assert "overall" in text and "  para" in text and "R@5" in text
    assert "1/2 unanswerable abstained" in text and "1/3 answerable" in text
    assert "a2 [rank 2, abstained] q two" in text and "u2 [should abstain]" in text
    assert "a2 [" not in format_report(rep, misses=False)


# -- query files ---------------------------------------------------------------------------------

def write(tmp_path, name: str, text: str):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_load_jsonl_rows(tmp_path):
    rows = [
        {"id": "x:1", "corpus": "corpora/c", "stratum": "para", "query": " q? ", "answerable": True,
         "expect": [{"path": "a.md", "heading": "A", "grade": 3}, {"path": "b.md", "heading": None, "grade": 1}]},
        {"id": "x:2", "query": "nothing", "answerable": False, "expect": []},
    ]
    p = write(tmp_path, "q.jsonl", "\n".join(json.dumps(x) for x in rows) + "\n\n")
    cases = load_cases(p)
    assert [c.id for c in cases] == ["x:1", "x:2"]
    assert cases[0].query == "q?" and cases[0].stratum == "para" and cases[0].corpus == "corpora/c"
    assert cases[0].expect == [Label("a.md", "A", 3), Label("b.md", None, 1)]
    assert not cases[1].answerable and cases[1].stratum == "default"


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not found"):
        load_cases(tmp_path / "nope.jsonl")


def test_invalid_json_names_the_line(tmp_path):
    p = write(tmp_path, "q.jsonl", '{"query": "ok", "expect": [{"path": "a.md"}]}\n{"query": \n')
    with pytest.raises(UserError, match=r"q\.jsonl:2: invalid JSON"):
        load_cases(p)


@pytest.mark.parametrize("row,msg", [
    ({"id": "a", "expect": [{"path": "a.md"}]}, "no query"),
    ({"query": "  ", "expect": [{"path": "a.md"}]}, "no query"),
    ({"query": "q", "expect": []}, "no labels"),
    ({"query": "q", "expect": [{"heading": "A"}]}, "needs a \"path\""),
    ({"query": "q", "expect": "a.md"}, "must be a list"),
    (["not", "an", "object"], "expected an object"),
])
def test_bad_rows_are_user_errors(tmp_path, row, msg):
    p = write(tmp_path, "q.jsonl", json.dumps(row) + "\n")
    with pytest.raises(UserError, match=msg) as e:
        load_cases(p)
    assert "q.jsonl:1" in e.value.message


def test_empty_file_and_duplicate_ids(tmp_path):
    with pytest.raises(UserError, match="no queries"):
        load_cases(write(tmp_path, "e.jsonl", "\n"))
    row = json.dumps({"id": "same", "query": "q", "expect": [{"path": "a.md"}]})
    with pytest.raises(UserError, match="duplicate id"):
        load_cases(write(tmp_path, "d.jsonl", row + "\n" + row + "\n"))


def test_yaml_case_file(tmp_path):
    p = write(tmp_path, "regress.yaml", """
cases:
  - q: where is the backup runbook?
    expect:
      - path: runbooks/backup.md
        heading: Backup > Restore
  - q: anything about pg1
    stratum: entity
    expect:
      - {path: hosts/pg1.md}
      - {path: hosts/pg1.md, heading: "", grade: 2}
  - q: the airport parking policy
    answerable: false
""")
    cases = load_cases(p)
    assert [c.id for c in cases] == ["regress:1", "regress:2", "regress:3"]
    assert cases[0].query == "where is the backup runbook?"
    assert cases[0].expect == [Label("runbooks/backup.md", "Backup > Restore", 3)]
    assert cases[1].stratum == "entity"
    assert cases[1].expect == [Label("hosts/pg1.md", None, 3), Label("hosts/pg1.md", "", 2)]
    assert cases[2].answerable is False and cases[2].expect == []


@pytest.mark.parametrize("text,msg", [
    ("cases: [q: a\n", "invalid YAML"),
    ("- q: a\n", "list under 'cases'"),
    ("cases:\n  - expect: [{path: a.md}]\n", "no query"),
])
def test_bad_yaml_is_a_user_error(tmp_path, text, msg):
    with pytest.raises(UserError, match=msg):
        load_cases(write(tmp_path, "c.yml", text))


def test_corpus_resolves_next_to_the_queries_folder(tmp_path):
    (tmp_path / "corpora" / "c").mkdir(parents=True)
    (tmp_path / "queries").mkdir()
    qfile = tmp_path / "queries" / "q.jsonl"
    cases = [Case("1", "q", expect=[Label("a.md", None)], corpus="corpora/c")]
    assert corpus_dir(cases, qfile) == (tmp_path / "corpora" / "c").resolve()
    assert corpus_dir([Case("1", "q", expect=[Label("a.md", None)])], qfile) is None
    with pytest.raises(UserError, match="not found"):
        corpus_dir([Case("1", "q", corpus="corpora/missing")], qfile)
    with pytest.raises(UserError, match="several corpora"):
        corpus_dir([Case("1", "q", corpus="corpora/c"), Case("2", "q", corpus="corpora/d")], qfile)


def test_yaml_corpus_resolves_from_its_own_folder(tmp_path):
    (tmp_path / "notes").mkdir()
    p = write(tmp_path, "eval.yaml", "corpus: notes\ncases:\n  - q: a question\n    expect: [{path: a.md}]\n")
    cases = load_cases(p)
    assert cases[0].corpus == "notes"
    assert corpus_dir(cases, p) == (tmp_path / "notes").resolve()


def test_the_report_gives_cpu_time_beside_wall_time():
    """Wall time on a shared machine measures the neighbours too: the report carries the searches'
    CPU time as well, and the text says both."""
    a = Case("a", "q", expect=[Label("a.md", "A")])
    outs = [{**outcome(a, [r("a.md", "A")], ms=ms), "cpu_ms": cpu} for ms, cpu in ((40.0, 9.0), (10.0, 8.0), (90.0, 30.0))]
    lat = build_report(outs, limit=5)["latency_ms"]
    assert (lat["p50"], lat["p95"], lat["cpu_p50"], lat["cpu_p95"]) == (40.0, 90.0, 9.0, 30.0)
    assert "CPU p50 9.0, p95 30.0 ms" in format_report(build_report(outs, limit=5))
    assert "cpu_p95" not in build_report([outcome(a, [r("a.md", "A")])], limit=5)["latency_ms"]


def test_the_eval_bench_keeps_legs_apart_for_every_value_of_any_search_constant(monkeypatch):
    """bench/eval_all.py reuses each question's legs across configurations that share its search
    constants. A constant added to the legs for an experiment, then swept, must get legs of its own
    for each value (once it was keyed on a hand-kept list, and every value was scored alike)."""
    from remembrancer.indexer.search import answer as search

    eval_all = bench_module("eval_all")
    before = eval_all.leg_settings()
    monkeypatch.setattr(search, "AN_EXPERIMENT_IN_THE_LEGS", 1, raising=False)
    one = eval_all.leg_settings()
    monkeypatch.setattr(search, "AN_EXPERIMENT_IN_THE_LEGS", 2)
    two = eval_all.leg_settings()
    monkeypatch.setattr(search, "W_DENSE", search.W_DENSE + 0.1)
    assert len({before, one, two, eval_all.leg_settings()}) == 4


def test_the_eval_bench_hands_back_a_cached_phrasing_whole(monkeypatch):
    """The leg cache hands each configuration a copy of a question's phrasing the rules can change.
    A field added to the phrasing for an experiment must come back as it was computed: once the copy
    was rebuilt from a hand-kept list of fields, the new one came back with its default and a sweep
    scored every value alike."""
    import importlib.util
    from typing import NamedTuple

    from remembrancer.indexer.search import answer as search

    spec = importlib.util.spec_from_file_location(
        "eval_all_under_test", PROJECT / "bench" / "eval_all.py")
    eval_all = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(eval_all)

    class Widened(NamedTuple):   # the phrasing with one more field, as an experiment adds one
        text: str
        cands: dict
        probes_found: set
        an_experiment: bool = False

    monkeypatch.setattr(search, "Phrasing", Widened)
    computed = Widened("q", {7: search.Candidate(7, bm25=1.5, why=["a rule"])}, {"kf4"}, True)
    cache = eval_all.LegCache()
    cache.phrasing = lambda *args: computed
    shared = type("Shared", (), {"allowed": None})()
    it = search.rank.intent("q")
    for _ in range(2):   # the first call computes, the second is served from the cache
        got = cache._cached_phrasing(object(), "q", None, shared, it)
        assert got == computed and got.an_experiment is True
        got.cands[7].why.append("changed by a configuration")   # a copy: the cache is untouched
    assert computed.cands[7].why == ["a rule"]
    # it stands in for the search's own function: the same parameters (once it fell behind one)
    import inspect
    assert list(inspect.signature(cache._cached_phrasing).parameters) == \
        list(inspect.signature(search._phrasing).parameters)


def bench_module(name: str):
    """A script of bench/ as a module (bench/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"{name}_under_test", PROJECT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_label_preferences_count_one_per_question_and_pair_of_kinds():
    """bench/label_preferences.py: which kind of note a set grades 3 over which it grades 2 (the
    counts docs/ranking.md quotes) — a host's and a service's record are one kind."""
    from remembrancer.indexer.config import DEFAULT_LAYOUT
    from remembrancer.indexer.ingest.meta import Layout

    cases = [
        Case("r1", "q", stratum="recency", expect=[Label("hosts/db1.md", "db1", 3),
                                                   Label("journal/2030/2030-01-01.md", "x", 2)]),
        Case("r2", "q", stratum="recency", expect=[Label("journal/2030/2030-01-02.md", "y", 3),
                                                   Label("hosts/db1.md", None, 2), Label("services/k.md", None, 2)]),
        Case("s1", "q", stratum="state", expect=[Label("journal/2030/2030-01-02.md", "y", 3),
                                                 Label("journal/2030/2030-01-03.md", "z", 2)]),   # one kind: no pair
        Case("u1", "q", stratum="unanswerable", answerable=False),
    ]
    prefs = bench_module("label_preferences").preferences(cases, Layout(DEFAULT_LAYOUT))
    assert prefs["all"] == {("record", "journal"): 1, ("journal", "record"): 1}
    assert prefs["recency"] == prefs["all"] and "state" not in prefs


def test_the_eval_bench_gives_each_stratum_by_the_sets_primary_figure():
    """A memory set is read right-first (any label graded 2 or 3), a docs set strict: the strata
    bench/eval_all.py prints follow the same figure, so "no stratum below the plain hybrid" is
    judged on what the set is scored by (strict strata on a memory set hid right answers)."""
    eval_all = bench_module("eval_all")
    a = Case("a", "q", stratum="recency", expect=[Label("a.md", "A"), Label("b.md", "B", grade=2)])
    report = build_report([outcome(a, [r("b.md", "B")])], limit=5)
    assert eval_all.summarise("memory-dev", report)["strata"]["recency"]["primary"] == 1.0
    assert eval_all.summarise("docs-dev", report)["strata"]["recency"]["primary"] == 0.0
