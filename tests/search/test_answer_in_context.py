"""Answer in context (indexer.search.evaluate): does the response an agent receives from the MCP
`search` tool carry a right section's whole text, and at what size in tokens."""

from __future__ import annotations

import json

from remembrancer.indexer.search.evaluate import Case, EvalSession, Label, build_report, in_context
from tests.search.test_evaluate import bench_module, outcome, r
from tests.support.corpus import write

GARDEN = ("# Garden\n\n" + " ".join(["Water the tomato plant when the soil is dry, and the seed in the rain."] * 40)
          + "\n")   # longer than a snippet and than a runner-up carried whole (CARRY_SECTION_TOKENS): a pointer


def test_whole_text_is_compared_on_normalised_whitespace():
    response = "Best match: a.md § Restore — lines 1-4\n\n# Restore\n\nRestore the postgres\n  database   from the dump."
    assert in_context(response, ["# Restore\nRestore the postgres database\nfrom the dump.\n"])
    assert not in_context(response, ["# Restore\n\nRestore the postgres database from the backup dump."])
    assert not in_context(response, ["Water the tomato.", ""])   # an empty section proves nothing
    assert not in_context(response, [])


def test_the_report_has_no_context_figure_when_the_responses_were_not_measured():
    a = Case("a", "q", expect=[Label("a.md", "A")])
    assert "context" not in build_report([outcome(a, [r("a.md", "A")])], limit=5)


def test_the_report_says_where_in_context_parts_from_right_first():
    """Right first but cut to fit, or withheld by an abstention, is not in context; a short right
    section carried whole in a pointer below a wrong first result is. Tokens count every question,
    unanswerable ones too."""
    a, b, c, d = (Case(i, "q", expect=[Label("a.md", "A")]) for i in "abcd")
    u = Case("u", "q", answerable=False)
    outs = [{**outcome(a, [r("a.md", "A")]), "in_context": True, "response_tokens": 100},
            {**outcome(b, [r("a.md", "A")]), "in_context": False, "response_tokens": 900},   # cut
            {**outcome(c, [r("x.md", "X"), r("a.md", "A")]), "in_context": True, "response_tokens": 300},
            {**outcome(d, [r("a.md", "A")], abstained=True), "in_context": False, "response_tokens": 80},
            {**outcome(u, [r("x.md", "X")], abstained=True), "response_tokens": 50}]
    ctx = build_report(outs, limit=5)["context"]
    assert (ctx["in_context"], ctx["answerable"], ctx["rate"]) == (2, 4, 0.5)
    assert ctx["right_first_not_whole"] == ["b", "d"] and ctx["whole_not_right_first"] == ["c"]
    assert (ctx["tokens_p50"], ctx["tokens_p90"]) == (100, 900)


def test_a_labelled_section_counts_only_when_the_rendered_response_holds_it_whole(tmp_path, monkeypatch,
                                                                                    tiny_embedder):
    """Two questions ranked alike: one labels the section the response carries in full (in context),
    the other labels a section the response only points to, the carried one graded 1 (not in
    context: partial answers do not count). An unanswerable question is measured, not judged."""
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("REMEMBRANCER_CONFIG", str(tmp_path / "no-config.toml"))
    corpus = tmp_path / "eval" / "notes"
    write(corpus, "db.md", "# Restore\n\nRestore the postgres database from the backup dump:\n"
                           "stop the server, then restore the dump.\n")
    write(corpus, "garden.md", GARDEN)
    query = "restore the postgres database from a backup"
    rows = [{"id": "carried", "corpus": "notes", "query": query,
             "expect": [{"path": "db.md", "heading": "Restore", "grade": 3}]},
            {"id": "pointed", "corpus": "notes", "query": query,
             "expect": [{"path": "db.md", "heading": "Restore", "grade": 1},
                        {"path": "garden.md", "heading": "Garden", "grade": 3}]},
            {"id": "none", "corpus": "notes", "query": "rust shell script", "answerable": False}]
    queries = write(tmp_path / "eval" / "queries", "notes.jsonl", "\n".join(json.dumps(x) for x in rows))
    meter = bench_module("eval_all").response_meter()   # the MCP tool's text, the default tokenizer
    with EvalSession(str(queries), None, embedder=tiny_embedder) as session:
        report = session.score(5, None, meter)
        first = session.engine.catalog.sections("db.md")[0]
        garden = session.engine.catalog.sections("garden.md")[0]
    ctx = report["context"]
    assert (ctx["in_context"], ctx["answerable"], ctx["missing_ids"]) == (1, 2, ["pointed"])
    assert ctx["rate"] == 0.5
    assert report["rankings"]["carried"][:2] == ["db.md#Restore", "garden.md#Garden"]   # pointed to, not carried
    assert garden.content.strip() and first.content.strip()
    # the size is the rendered text's, in the default tokenizer's tokens (more than its words)
    words = len(first.content.split())
    assert ctx["tokens_p50"] > words and ctx["tokens_p90"] >= ctx["tokens_p50"]
