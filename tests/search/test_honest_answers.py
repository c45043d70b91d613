"""What an answer says about itself stays true and short: a question whose words the filters
leave out is told so, an agent's pasted wall of text is not echoed back whole, and the command
line's usage errors name its own flags."""

from __future__ import annotations

import pytest

from remembrancer.indexer.answers import SearchAnswer
from remembrancer.cli.main import main
from remembrancer.indexer.memory import tools as memory
from remembrancer.indexer.api import do_search
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.requests import MAX_QUERY_CHARS
from remembrancer.indexer import terms
from remembrancer.mcp_server import render
from tests.support.corpus import write, write_tree

DOCS = {
    "hosts/web3.md": "# web3\n\n## Zebra\n\nThe zebra crossing sensor feeds the nginx frontend.\n",
    "journal/2030/2030-01-05.md": "# 2030-01-05\n\n## 10:00 restore test\n\nRestored the database from the "
                                  "backup, took ten minutes.\n",
    "journal/2030/2030-01-06.md": "# 2030-01-06\n\n## 09:00 pgbouncer\n\nMoved the workers to pgbouncer.\n",
    "notes/lessons.md": "# Lessons\n\n## Prepared statements behind a pooler\n\nAfter the pooler switch: ERROR: "
                        "prepared statement \"stmtcache_9f1c2a77\" does not exist.\n",
}


@pytest.fixture
def engine(tmp_path, tiny_engine):
    return tiny_engine(write_tree(tmp_path / "notes", DOCS))


def test_an_answer_resting_on_meaning_alone_is_not_called_a_keyword_match(engine):
    out = do_search(engine.view(), {"query": "players stuck with the bundle after the update", "limit": 5, "explain": True})
    assert not out["no_strong_match"] and any("meaning alone" in n for n in out.get("notes", []))
    assert any(r["scores"]["bm25"] > 0 for r in out["results"])   # "with", "the", "after" matched
    assert {r["provenance"] for r in out["results"]} == {"semantic"}


def test_words_found_only_outside_the_filters_are_said_to_be(engine):
    out = do_search(engine.view(), {"query": "zebra", "type": ["journal"], "limit": 3})
    assert out["results"] and not out["no_strong_match"]
    assert any("only outside them" in n and "type=journal" in n for n in out.get("notes", [])), out.get("notes")
    assert "only outside them" in render.search_text(SearchAnswer.parse(out))
    # the word in the filtered sections, or no filter: nothing to say
    for params in ({"query": "restore test", "type": ["journal"]}, {"query": "zebra"}):
        out = do_search(engine.view(), {**params, "limit": 3})
        assert not any("outside" in n for n in out.get("notes", [])), out.get("notes")


@pytest.mark.parametrize("cut", ['"stmtcache_..."', '"stmtcache_…"', "stmtcache_…"])
def test_a_pasted_string_cut_with_an_ellipsis_is_looked_for_up_to_the_cut(engine, cut):
    """An asker who pastes an error shortens its long part ("stmtcache_..."): the ellipsis is not in
    the notes, the part before it is. Whole, the cut string occurs nowhere and the answer abstained."""
    out = do_search(engine.view(), {"query": f"ERROR: prepared statement {cut} does not exist", "limit": 3})
    assert not out["no_strong_match"], out.get("why_no_strong_match")
    assert out["results"][0]["path"] == "notes/lessons.md"


def test_an_identifier_asked_for_its_counterpart_need_not_occur(tmp_path, tiny_engine):
    """"Is there an equivalent of requests' `response.ok` property?" asks for this library's name for
    it: the notes write `response.is_success`, never `response.ok`, and the question abstained ("not
    in the corpus: response.ok"). Asked about on its own, the identifier must still occur."""
    e = tiny_engine(write_tree(tmp_path / "notes", {
        "docs/compatibility.md": "# Compatibility\n\n## Checking for success\n\nWe provide the "
                                 "`response.is_success` property to check for a 2xx response.\n"}))
    out = do_search(e.view(), {"query": "is there an equivalent of requests' response.ok property?", "limit": 3})
    assert not any("response.ok" in why for why in out.get("why_no_strong_match") or []), out
    alone = do_search(e.view(), {"query": "what does response.ok return?", "limit": 3})
    assert alone["no_strong_match"] and "not in the corpus: response.ok" in alone["why_no_strong_match"][0], alone


def test_a_word_the_notes_write_as_two_occurs(tmp_path, tiny_engine):
    """The notes write "fail over", "roll-back"; the asker writes "failover", "rollback". Written so,
    the word occurs, and its absence is no reason to abstain ("how do I check the failover worked?"
    was withheld for it). Its two parts apart ("the fail … over") are not the word."""
    from remembrancer.indexer.search import answer

    e = tiny_engine(write_tree(tmp_path / "notes", {
        "runbooks/failover.md": "# Fail over db1 to db2\n\n## Rollback\n\nTo roll-back, re-seed db1.\n",
        "notes/misc.md": "# Misc\n\nA fail of the cron job; it is over now. Set up the printer.\n"}))
    view = e.view()
    assert answer._word_occurs(view, "failover") and answer._word_occurs(view, "rollback")
    assert not answer._word_occurs(view, "failsafe") and not answer._word_occurs(view, "printerjam")
    assert not answer._word_occurs(view, "cronover")   # "cron job; it is over": not written as one word split
    assert not answer._word_occurs(view, "setup")      # too short to split ("set up" is there)


def test_only_a_word_the_keyword_index_could_hold_is_looked_for_split(tmp_path, tiny_engine):
    """A word of fulltext.TERM_BYTES letters or more is no word a note writes in two (the keyword
    index drops such a token), and its split forms grow with the square of its length: a pasted
    5,000-letter "word" asked the literal index for some 50 million characters of needles."""
    from remembrancer.indexer.search import answer
    from remembrancer.indexer.store.local.fulltext import TERM_BYTES

    short = ("a" * 19, "b" * (TERM_BYTES - 20))   # together one letter under the limit
    long = ("c" * 20, "d" * (TERM_BYTES - 20))    # together at it
    e = tiny_engine(write_tree(tmp_path / "notes", {"notes/pair.md": f"# Pair\n\n{' '.join(short)} and {'-'.join(long)}\n"}))
    view = e.view()
    assert answer._word_occurs(view, "".join(short))
    assert not answer._word_occurs(view, "".join(long))
    assert not answer._word_occurs(view, "q" * MAX_QUERY_CHARS)   # a word at the question's cap: answered, not found


def test_a_question_is_at_most_max_query_chars(engine):
    with pytest.raises(UserError) as err:
        do_search(engine.view(), {"query": "q" * (MAX_QUERY_CHARS + 1)})
    d = err.value.to_dict()
    assert d["param"] == "query" and d["code"] == "bad_input" and f"the most is {MAX_QUERY_CHARS}" in d["message"]
    assert "distinctive part" in d["hint"]
    for at_the_cap in ("q" * MAX_QUERY_CHARS, " ".join(["restore"] * (MAX_QUERY_CHARS // 8))):
        out = do_search(engine.view(), {"query": at_the_cap, "limit": 3})
        assert out["results"] or out.get("best_weak"), out


def test_an_everyday_word_in_capitals_is_not_a_name():
    """"Is it OK to …" uses no name: an absent all-caps word would otherwise be a missing name
    that raises the semantic bar (a right answer was withheld for it)."""
    assert terms.name_words("Is it OK for me to rewrite the history of a branch?") == []
    assert "ok" not in terms.content_words("is it ok to force-push?")
    assert terms.name_words("what uptime SLA did we promise Brightwell?") == ["SLA", "Brightwell"]


def test_a_log_level_in_capitals_is_not_a_name(tmp_path, tiny_engine):
    """A pasted log line's `ERROR` or `FATAL` is its severity, not what the question is about: as an
    absent name it withheld the runbook that answers ("not in the corpus: ERROR", no results), and
    the Claude Code hook injected nothing for any prompt holding a log line."""
    assert terms.name_words("push-gateway logs ERROR InvalidProviderToken, how do I rotate the APNs key?") == [
        "InvalidProviderToken", "APNs"]
    assert terms.name_words("2026-12-07T10:00:00Z FATAL sync-api: WARN retries exhausted") == []
    assert terms.name_words("what does the Error Budget policy say?") == ["Error", "Budget"]   # a name, capitalised
    e = tiny_engine(write_tree(tmp_path / "notes", {
        "runbooks/rotate-apns-key.md": "# Rotate the APNs key\n\nWhen push-gateway gets InvalidProviderToken from "
                                       "Apple, the APNs key was revoked.\n\n## Steps\n\n1. Make a new key.\n"}))
    for level in ("ERROR", "FATAL", "WARN"):
        out = do_search(e.view(), {"query": f"push-gateway logs {level} InvalidProviderToken, how do I rotate the APNs key?"})
        assert not out["no_strong_match"], (level, [(k, v) for k, v in out.items() if k != "results"])
        assert out["results"][0]["path"] == "runbooks/rotate-apns-key.md"


def test_a_capital_that_begins_a_sentence_is_not_a_name():
    """A user's second sentence is no name: "Colleagues" counted as an absent name, raised the
    semantic bar, and a right answer ranked first was withheld."""
    assert terms.name_words("The notebook just sits spinning, then gives up. Colleagues in my lab don't "
                            "have this problem!  Nobody else does.") == []
    assert terms.name_words("- Jupyter never starts\n- Gateway says 502") == []
    assert terms.name_words("why does Gateway say 502? the Jupyter session never starts") == ["Gateway", "Jupyter"]


def test_a_number_hyphened_to_words_is_english_not_an_identifier_the_notes_lack(tmp_path, tiny_engine):
    """"the 16-GPUs-per-group rule" is an adjective the notes write their own way ("the 16-GPU cap
    per group"): it made an answerable question abstain ("not in the corpus: 16-GPUs-per-group")."""
    e = tiny_engine(write_tree(tmp_path / "notes", {
        "decisions/gpu.md": "# GPU budgets\n\nFrom 1 May the 16-GPU cap per group is replaced by quarterly "
                            "GPU-hour budgets.\n"}))
    out = do_search(e.view(), {"query": "Is GPU use still limited by the 16-GPUs-per-group rule, or a 3-node cap?"})
    assert not any("16-GPUs" in why or "3-node" in why for why in out.get("why_no_strong_match") or []), out
    out = do_search(e.view(), {"query": "what does node-3 run?"})   # a name: the notes lack it
    assert any("node-3" in why for why in out.get("why_no_strong_match") or []), out


def test_a_pasted_wall_of_text_is_not_echoed_back_whole(engine):
    wall = "zz_" + "x" * (MAX_QUERY_CHARS - 3)           # an identifier no note holds: abstains whatever the model
    out = do_search(engine.view(), {"query": wall, "limit": 3})
    assert out["no_strong_match"]
    assert sum(len(r) for r in out["why_no_strong_match"]) < 300, out["why_no_strong_match"]
    assert len(render.search_text(SearchAnswer.parse(out))) < 3_000
    many = " ".join(f"qq_word{i}" for i in range(30))   # thirty absent identifiers: eight listed, the rest counted
    reasons = do_search(engine.view(), {"query": many, "limit": 3})["why_no_strong_match"]
    assert any("and 22 more" in r for r in reasons), reasons


def test_a_latest_term_is_a_term_not_a_log(engine):
    with pytest.raises(UserError) as err:
        memory.latest(engine.view(), ["y" * 301]).to_json()
    assert err.value.to_dict()["param"] == "terms" and "at most 300" in str(err.value)
    assert memory.latest(engine.view(), ["pgbouncer"]).to_json()["results"]


@pytest.fixture
def cli_notes(tmp_path, monkeypatch, tiny_model_dir):
    """A one-note folder, and the CLI run in-process on it with the tiny model (no daemon)."""
    config = tmp_path / "config.toml"
    config.write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    for var, value in (("REMEMBRANCER_DATA_DIR", tmp_path / "data"), ("REMEMBRANCER_CONFIG", config),
                       ("REMEMBRANCER_SOCKET", tmp_path / "no-daemon.sock")):
        monkeypatch.setenv(var, str(value))
    write(tmp_path / "notes", "a.md", "# Pool\n\nThe pool size is 20.\n")
    return tmp_path / "notes"


@pytest.mark.parametrize("args, says", [
    (["--also", "???"], "--also '???' has no word"),
    (["--also", "a", "--also", "b", "--also", "c", "--also", "d"], "--also takes at most 3"),
    (["--exact", "--also", "pool size"], "--also does not apply to --exact"),
])
def test_the_command_line_names_its_own_flags(cli_notes, capsys, args, says):
    """The engine refuses them (the MCP tool's parameters, in backticks); the CLI says its flags."""
    assert main(["search", "pool", *args, "--root", str(cli_notes)]) == 2
    assert says in capsys.readouterr().err


def test_a_quick_index_draws_no_progress_bar(cli_notes, capsys):
    """A run done in under a second showed the bar at its last step only to stop it: a blank line."""
    assert main(["index", "--root", str(cli_notes)]) == 0
    capsys.readouterr()
    write(cli_notes, "a.md", "# Pool\n\nThe pool size is 35 now.\n")   # the search's refresh reads it again
    assert main(["search", "pool size", "--root", str(cli_notes)]) == 0
    assert capsys.readouterr().err == ""


def test_a_term_that_starts_with_a_dash_gets_the_way_to_search_for_it(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["search", "--force-renewal", "--root", str(tmp_path)])
    assert done.value.code == 2
    assert "remembrancer search -- --force-renewal" in capsys.readouterr().err


def test_a_listing_by_filters_says_how_much_it_left_out(engine):
    whole = do_search(engine.view(), {"type": ["journal"], "limit": 50})
    assert len(whole["results"]) == 2 and not whole["truncated"]
    assert "More sections match" not in render.search_text(SearchAnswer.parse(whole))
    out = do_search(engine.view(), {"type": ["journal"], "limit": 1})
    assert out["mode"] == "filters" and len(out["results"]) == 1 and out["truncated"]
    assert "More sections match the filters" in render.search_text(SearchAnswer.parse(out))
