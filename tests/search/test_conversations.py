"""Conversations as a corpus of their own: indexed incrementally, searched with their own
statistics, read around an exchange, kept apart from notes in an answer over both — with the
real engine (tantivy, hnswlib, the tiny ONNX model) on transcripts in the real line format."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from remembrancer.indexer import api
from remembrancer.indexer.answers import Freshness, SearchAnswer
from remembrancer.indexer.config import CONVERSATIONS, Config, make_roots
from remembrancer.indexer.engine import Engine
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.redact_policy import RedactionPolicy
from remembrancer.indexer.search import rank
from tests.support.ranking import ranked, row
from tests.support.transcripts import Session

FRESH = lambda view: Freshness(verdict="fresh")  # noqa: E731


@pytest.fixture
def projects(tmp_path):
    return tmp_path / "projects"


@pytest.fixture
def talks(projects, engine_of):
    """Opens an engine over the conversations folder; the folder is filled by each test."""
    return lambda: engine_of(Config(conversations=make_roots([projects], kind=CONVERSATIONS)).conversation_config())


def _session(projects) -> Session:
    s = Session(projects, branch="feat/retries")
    s.title("Upload retries")
    s.prompt("Why does the uploader retry forever when the bucket is gone?")
    s.tool("Bash", {"command": "pytest -q"}, "Exit code 1\nE   BucketGone: uploads-eu-west", is_error=True)
    s.says("The retry loop has no cap; a missing bucket raises BucketGone every time. We decided on 5 retries.")
    s.prompt("Also make the thumbnails square.")
    s.says("Thumbnails are cropped square now, 256 by 256.")
    return s


def _search(engine, query, **params):
    return SearchAnswer.parse(api.dispatch_read(engine, "search", {"query": query, **params}, FRESH))


def test_a_result_names_its_session_prompt_time_and_branch(projects, talks):
    s = _session(projects)
    e = talks()
    e.refresh()
    out = _search(e, "BucketGone retry cap")
    best = out.results[0]
    assert best.path == s.rel and best.type == "conversation"
    assert best.session_id == s.session_id and best.uuid == s.uuids[0] and best.branch == "feat/retries"
    assert best.timestamp.startswith("2026-03-02T09:00") and best.date == "2026-03-02"
    assert "We decided on 5 retries" in best.content and "Thumbnails" not in best.content


def test_a_growing_transcript_is_read_again_and_only_its_new_text_is_embedded(projects, talks):
    s = _session(projects)
    e = talks()
    first = e.refresh()
    assert first.added == 1
    before = {x.id: x.content for x in e.catalog.sections(s.rel)}
    s.prompt("Did the nightly export finish?")
    s.says("Yes: the nightly export finished at 02:14 with 1,204 rows.")
    again = e.refresh()
    assert again.updated == 1
    # only the new exchange's passages were embedded: the old ones kept their vectors
    assert 0 < again.embedded <= 3, again.embedded   # the new exchange's header and its two blocks
    assert len(before) == 2 and len(e.catalog.sections(s.rel)) == 3
    # (the tiny test model's vectors are random: the keyword leg is what finds the new words)
    found = [r for r in _search(e, "nightly export rows").shown if r.scores.bm25 > 0]
    assert [r.uuid for r in found] == [s.uuids[-2]]


def test_a_rewritten_or_truncated_transcript_is_read_whole_again(projects, talks):
    s = _session(projects)
    e = talks()
    e.refresh()
    lines = s.path.read_text().splitlines()
    s.path.write_text("\n".join(lines[:5]) + "\n")     # truncated to the first exchange
    e.refresh()
    assert [x.heading for x in e.catalog.sections(s.rel)] == [
        "Why does the uploader retry forever when the bucket is gone?"]
    assert not any("square" in r.content for r in _search(e, "thumbnails square").shown if r.content)


def test_a_compaction_summary_ranks_below_the_exchange_it_restates(projects, talks):
    s = Session(projects)
    p = s.prompt("Switch the job queue from Redis to Postgres with SKIP LOCKED.")
    s.says("Done: the job queue now runs on Postgres using SKIP LOCKED; Redis is gone.")
    s.compact("The job queue was switched from Redis to Postgres using SKIP LOCKED; Redis is gone.")
    s.prompt("Now write the changelog entry.")
    s.says("Changelog entry written.")
    e = talks()
    e.refresh()
    out = _search(e, "job queue Postgres SKIP LOCKED Redis", explain=True)
    order = [r.heading for r in out.shown]
    assert order.index("Compaction summary") > order.index(
        "Switch the job queue from Redis to Postgres with SKIP LOCKED.")
    assert out.shown[0].uuid == p


def test_a_recap_the_prompt_asked_for_ranks_below_the_exchange_it_restates():
    """"What's still open?" is answered by restating every thread, its dates and states with it: the
    exchange where a thing was done answers a question about it, the recap only where it does not
    (stepped back as a compaction summary is, ×0.85)."""
    rows = [row(1, "p/a.jsonl", "Switch the job queue from Redis to Postgres with SKIP LOCKED.",
                doc_type="conversation", date="2026-03-02"),
            row(2, "p/b.jsonl", "whats still open from the last few weeks", doc_type="conversation",
                date="2026-03-20"),
            row(3, "p/b.jsonl", "Compaction summary", doc_type="conversation", date="2026-03-20")]
    cfg = rank.RankingConfig.conversations()
    query = "which queue did the jobs move to?"
    assert ranked(rows, {1: 0.80, 2: 0.90, 3: 0.70}, query, cfg) == [1, 2, 3]
    assert ranked(rows, {1: 0.80, 2: 0.90, 3: 0.70}, query, dataclasses.replace(cfg, compaction_factor=1.0)) == [2, 1, 3]
    # a recap far ahead still answers: the step back decides near ties only
    assert ranked(rows, {1: 0.50, 2: 0.90, 3: 0.70}, query, cfg)[0] == 2


@pytest.mark.parametrize("prompt, recap", [
    ("whats still open from the last few weeks", True),
    ("status. what's still open before the report goes out (pipeline, callbook)", True),
    ("Can you sum up where we are with the migration?", True),
    ("what's left to do before v0.3?", True),
    ("summarize today's session", True),
    ("what is the status of the nightly build?", False),
    ("fix the status code the handler returns", False),
    ("why is port 8080 still open on the box?", False),
    ("is anything still open on the release checklist?", True),
    ("left-pad the ids", False),
])
def test_a_recap_prompt_is_read_from_its_wording(prompt, recap):
    assert bool(rank.RECAP_PROMPT_RE.search(prompt)) is recap


def test_read_by_uuid_gives_the_exchange_and_around_gives_its_neighbours(projects, talks):
    s = _session(projects)
    e = talks()
    e.refresh()
    answer = s.uuids[3]   # a line inside the first exchange (its assistant text)
    page = api.dispatch_read(e, "read", {"path": s.rel, "uuid": answer}, FRESH)
    assert "We decided on 5 retries" in page["content"] and "Thumbnails" not in page["content"]
    both = api.dispatch_read(e, "read", {"path": s.rel, "uuid": answer, "around": 1}, FRESH)
    assert "We decided on 5 retries" in both["content"] and "Thumbnails" in both["content"]
    by_lines = api.dispatch_read(e, "read", {"path": s.rel, "lines": both["lines"]}, FRESH)
    assert by_lines["content"] == both["content"]
    with pytest.raises(UserError) as err:
        api.dispatch_read(e, "read", {"path": s.rel, "uuid": "no-such-uuid"}, FRESH)
    assert err.value.param == "uuid" and err.value.code == "not_found"


def test_no_planted_secret_reaches_an_index_file_or_an_answer(projects, talks, data_env):
    s = Session(projects)
    s.prompt("Print the compose config.")
    s.tool("Bash", {"command": "docker compose config"},
           "DATABASE_URL: postgresql://plot:Hx9vQ2mLp7RtZ4@db:5432/plot\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    s.says("Here it is; the database password is printed above, rotate it.")
    e = talks()
    e.refresh()
    e.close()
    e = talks()
    out = api.dispatch_read(e, "search", {"query": "database password compose config"}, FRESH)
    page = api.dispatch_read(e, "read", {"path": s.rel, "uuid": s.uuids[0]}, FRESH)
    blob = json.dumps([out, page]).encode()
    for path in (data_env / "data").rglob("*"):
        if path.is_file():
            blob += path.read_bytes()
    for secret in (b"Hx9vQ2mLp7RtZ4", b"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"):
        assert secret not in blob


def test_a_secret_in_a_tool_input_the_text_leaves_out_is_redacted_where_it_is_repeated(projects, talks, data_env):
    """A Write's file text is not in the exchange's text, but a secret it gives away by its context
    (`NAME=value` in an `.env`) is redacted where the session repeats the value alone; a credential in
    an MCP tool's JSON "value", a password in a Task prompt and a cookie in `curl -v` output too."""
    key, vault, task, cookie = ("mK7qP2zX9vL4wR8tN3bJ6hF1", "Gr33nT34!Kettle#77", "Cl0udBurst#2031",
                                "s%3Aq8Zr4WmX2pLk9TnV.Yb7Hc3Jd5Kf1Lg8Mh2Nj")
    s = Session(projects)
    s.prompt("Set up the marmosetrelay service config.")
    s.tool("Write", {"file_path": "/home/dev/code/app/.env", "content": f"MARMOSET_API_KEY={key}\nDEBUG=0\n"},
           "File created successfully")
    s.tool("TodoWrite", {"todos": [{"content": f"rotate key {key}", "status": "pending"}]}, "ok")
    s.tool("mcp__vault__put_secret", {"path": "kv/marmoset", "value": vault}, "stored")
    s.tool("Task", {"description": "check relay", "prompt": f"Log in with password {task} and check the relay"}, "ok")
    s.tool("Bash", {"command": "curl -v https://app.example.com/login"},
           f"< HTTP/1.1 302 Found\n< Set-Cookie: connect.sid={cookie}; Path=/; HttpOnly")
    s.says("The marmosetrelay service config is in place.")
    e = talks()
    e.refresh()
    e.close()
    e = talks()
    out = api.dispatch_read(e, "search", {"query": "marmosetrelay service config rotate key relay"}, FRESH)
    page = api.dispatch_read(e, "read", {"path": s.rel, "uuid": s.uuids[0]}, FRESH)
    served = json.dumps([out, page])
    assert "[REDACTED:repeated_secret]" in served or "[REDACTED:key_value]" in served
    assert "connect.sid=[REDACTED:cookie]; Path=/; HttpOnly" in served and "rotate key [REDACTED:" in served
    blob = served.encode()
    for path in (data_env / "data").rglob("*"):
        if path.is_file():
            blob += path.read_bytes()
    for secret in (key, vault, task, cookie, "Kettle", "Cl0udBurst", "q8Zr4WmX2pLk9TnV"):
        assert secret.encode() not in blob, secret
    # a later exchange, read by the transcript's tail, repeats the Write's value alone
    s.prompt("Thanks. Now the README.")
    s.says("README updated.")
    e.refresh()
    s.prompt("Which key did you write?")
    s.tool("Bash", {"command": "cut -d= -f2 .env | head -1"}, key)
    e.refresh()
    assert "tail" in json.dumps(e.catalog.document(s.rel)["front_matter"])
    stored = "".join(x.content for x in e.catalog.sections(s.rel))
    assert key not in stored and "[REDACTED:repeated_secret]" in e.catalog.sections(s.rel)[-1].content


def test_each_corpus_answers_with_its_own_statistics_and_all_keeps_them_apart(projects, talks, notes_engine):
    _session(projects)
    e = talks()
    e.refresh()

    def reader(engine):
        return lambda m, p: api.dispatch_read(engine, m, p, FRESH)
    both = SearchAnswer.parse(api.read_across("search", {"query": "restore the database from backup", "corpus": "all"},
                                              reader(notes_engine), reader(e)))
    corpora = [r.corpus for r in both.shown]
    assert set(corpora) <= {"notes", "conversations"} and "notes" in corpora
    assert both.index is not None and both.conversations_index is not None
    only = SearchAnswer.parse(api.read_across("search", {"query": "BucketGone", "corpus": "conversations"},
                                              reader(notes_engine), reader(e)))
    assert only.results and all(r.type == "conversation" for r in only.results)
    with pytest.raises(UserError) as err:
        api.read_across("search", {"query": "x", "corpus": "conversations"}, reader(notes_engine), None)
    assert err.value.param == "corpus" and "--conversations" in err.value.hint
    with pytest.raises(UserError) as err:
        api.read_across("search", {"query": "x", "corpus": "everything"}, reader(notes_engine), reader(e))
    assert err.value.options == ["notes", "conversations", "commits", "code", "all"]
    with pytest.raises(UserError):
        api.read_across("history", {"entity": "db1", "corpus": "all"}, reader(notes_engine), reader(e))
    # a notes-only answer is what it was: no corpus field, no conversation index
    plain = api.read_across("search", {"query": "restore the database from backup"}, reader(notes_engine), reader(e))
    assert plain == api.dispatch_read(notes_engine, "search", {"query": "restore the database from backup"}, FRESH) \
        | {"took_ms": plain["took_ms"]}


def test_a_transcript_read_by_its_tail_indexes_as_a_whole_read_would(projects, talks, tmp_path, monkeypatch):
    s = Session(projects)
    s.prompt("Deploy with the token ghp_abcdefghijklmnopqrstuvwxyz0123456789")
    s.says("Deployed.")
    s.raw("{torn")
    e = talks()
    e.refresh()
    settled = []
    for k in range(3):
        s.says(f"One more thing about step {k}.")          # the last exchange grows …
        s.prompt(f"Question {k}: what about the cache?")    # … and a new one starts
        s.tool("Bash", {"command": f"redis-cli info {k}"}, f"used_memory:{k}M")
        report = e.refresh()
        assert report.updated == 1
        settled.append(e.catalog.sections(s.rel)[0].id)
    rows = e.catalog.sections(s.rel)
    assert settled == [rows[0].id] * 3   # read by its tail: a settled exchange's row is never rewritten
    doc = e.catalog.document(s.rel)
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "whole"))
    whole = talks()
    whole.refresh()
    again = whole.catalog.sections(s.rel)
    assert [(r.heading, r.start_line, r.end_line, r.content) for r in rows] == \
        [(r.heading, r.start_line, r.end_line, r.content) for r in again]
    fresh_doc = whole.catalog.document(s.rel)
    for key in ("title", "warnings", "line_count", "content_hash", "date"):
        assert doc[key] == fresh_doc[key], key
    grown, read_whole = json.loads(doc["front_matter"]), json.loads(fresh_doc["front_matter"])
    for fm in (grown, read_whole):   # the secrets' hashes are salted per index: their number must agree
        fm["tail"]["seen"] = len(fm["tail"]["seen"])
        del fm["tail"]["salt"]
    assert grown == read_whole and grown["tail"]["seen"] == 1
    assert "line 4 is not valid JSON" in doc["warnings"] and "secret(s) redacted" in doc["warnings"]


def test_a_secret_found_in_an_earlier_exchange_is_redacted_where_a_later_one_repeats_it(projects, talks):
    s = Session(projects)
    s.prompt("Here is the dev token: POSTMARK_SERVER_TOKEN=b7e3c1d4-9a2f-4e6b-8c15-3f0a7d9e2b61")
    s.tool("Bash", {"command": "printf 'X=%s' 'b7e3c1d4-9a2f-4e6b-8c15-3f0a7d9e2b61' >> .env"}, "")
    s.says("Stored in .env.")
    s.prompt("Thanks. Now the README.")
    s.says("README updated.")
    e = talks()
    e.refresh()   # the token's exchange is settled now: the next read starts after it
    s.prompt("Which token did I give you?")
    s.tool("Bash", {"command": "cut -d= -f2 .env"}, "b7e3c1d4-9a2f-4e6b-8c15-3f0a7d9e2b61")   # the value alone
    s.says("The one in .env.")
    e.refresh()
    stored = "".join(x.content for x in e.catalog.sections(s.rel)) + e.catalog.document(s.rel)["front_matter"]
    assert "b7e3c1d4-9a2f-4e6b-8c15-3f0a7d9e2b61" not in stored
    assert "[REDACTED:repeated_secret]" in e.catalog.sections(s.rel)[-1].content


def test_a_shape_known_by_its_place_on_a_line_is_found_on_a_tool_outputs_first_line(projects, talks):
    """An exchange shows a tool's output after a mark (`[output] `, `[error] `, `[command output] `),
    on the output's first line, and the results of one message a line apart, each with its own mark.
    A `.pgpass` line, a `requirepass` line or a table of passwords is known by where it stands on its
    lines: it is redacted there as in a note, in what is stored and what `read` serves, and the marks
    stay. An ordinary output beside them is kept as it is."""
    secrets = ["Qa6PgpassPw-91kQ", "Rd7sPw-Xq2mK9", "Rp4Lw-8nZq2Tx", "Bk9Qz-3mW7pL", "Tb6Wq-2mZx9"]
    s = Session(projects)
    s.prompt("why can't the reporting job log in to the orders database? check the pgpass file")
    s.tool("Bash", {"command": "cat ~/.pgpass"}, f"db-orders-1:5432:orders:orders_app:{secrets[0]}")
    s.tool("Bash", {"command": "redis-cli -h cache1 ping; grep requirepass /etc/redis/redis.conf"},
           f"requirepass {secrets[1]}\nNOAUTH Authentication required.", is_error=True)
    one, two = "toolu_" + "1" * 24, "toolu_" + "2" * 24   # two calls answered in one message
    s._assistant({"type": "tool_use", "id": one, "name": "Bash", "input": {"command": "date"}})
    s._assistant({"type": "tool_use", "id": two, "name": "Bash", "input": {"command": "cat /root/.pgpass"}})
    s._line("user", {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": one, "content": "Tue 03 Mar 2026 10:30:00 UTC"},
        {"type": "tool_result", "tool_use_id": two, "content": f"replica.internal:5432:*:repl:{secrets[2]}"}]})
    s._line("user", {"role": "user", "content": "<local-command-stdout>backup.internal:5432:*:backup:"
                     f"{secrets[3]}</local-command-stdout>"})
    s.tool("Bash", {"command": "cat docs/accounts.md"}, f"| user | password |\n|---|---|\n| app | {secrets[4]} |")
    s.says("The pgpass entry targets db-orders-1, but the job connects to db-orders-2, so libpq finds no password.")
    e = talks()
    e.refresh()
    stored = e.catalog.sections(s.rel)[0].content
    page = json.dumps(api.dispatch_read(e, "read", {"path": s.rel, "uuid": s.uuids[0]}, FRESH))
    served = json.dumps(api.dispatch_read(e, "search", {"query": "why can't the reporting job log in, pgpass"}, FRESH))
    for text in (stored, page, served):
        assert [v for v in secrets if v in text] == []
    assert "[output] db-orders-1:5432:orders:orders_app:[REDACTED:env_secret]" in stored
    assert "[error] requirepass [REDACTED:env_secret]\nNOAUTH Authentication required." in stored
    assert "[output] Tue 03 Mar 2026 10:30:00 UTC\n[output] replica.internal:5432:*:repl:[REDACTED:env_secret]" in stored
    assert "[command output] backup.internal:5432:*:backup:[REDACTED:env_secret]" in stored
    assert "[output] | user | password |" in stored and "| app | [REDACTED:env_secret] |" in stored


def _keyword_sections(engine, word: str) -> list[int]:
    """The sections whose chunks the keyword index finds by this word of their body."""
    import tantivy

    fx = engine.core.fulltext
    searcher = fx.index.searcher()
    hits = searcher.search(tantivy.Query.term_query(fx.schema, "body", word), 100).hits
    return sorted(searcher.doc(addr).get_first("section_id") for _, addr in hits)


def _data_bytes(data_dir) -> bytes:
    return b"".join(p.read_bytes() for p in data_dir.rglob("*") if p.is_file())


def _keyword_terms(engine) -> set[str]:
    """Every term the keyword index holds, a deleted document's too until its segment is gone (the
    term dictionary is compressed on disk: its bytes need not hold a term whole)."""
    searcher = engine.core.fulltext.index.searcher()
    return {t for field in ("heading", "body", "stem", "ident") for t, _ in searcher.terms_with_prefix(field, "")}


def test_a_value_a_later_exchange_gives_away_as_a_secret_leaves_the_earlier_exchanges(projects, talks, data_env,
                                                                                     tmp_path, monkeypatch):
    """The other way round: an exchange shows a value bare (a tool prints it, the answer repeats it);
    a later one, read by the transcript's tail, gives it away by its context (`export
    PARTNER_API_KEY=…`). A session is redacted as one text, so the earlier exchange loses it too — in
    the catalog, the keyword index, an exact search and every file under the data dir — the exchange
    before it, which does not hold it, is not rewritten, and the index is the one a whole read makes."""
    value = "Wq4Zt8Lm2Xp7Rk9Vn3"
    other = Session(projects)   # the index holds more than this session: its old words are not rebuilt away
    for k in range(30):
        other.prompt(f"Question {k} about the nightly export?")
        other.says(f"The nightly export step {k} finished.")
    s = Session(projects)
    opened = s.prompt("What does the partner client send as its header?")
    s.says("An X-Partner header, read from config/partner.yml by the quokkaloader.")
    s.prompt("the partner api keeps answering 401, can you check what key the client sends")
    s.tool("Bash", {"command": "grep -rn partner config/"}, f"config/partner.yml:3:  header_value: {value}")
    s.says(f"The client sends {value} in the X-Partner header.")
    s.prompt("unrelated: bump the eslint version")
    s.tool("Bash", {"command": "npm i -D eslint@9.14.0"}, "added 3 packages")
    s.says("eslint bumped.")
    e = talks()
    e.refresh()
    first = e.catalog.sections(s.rel)
    assert value in first[1].content and value.lower() in _keyword_terms(e)   # nothing said yet that it is a secret
    s.prompt("ok, rotate it: the portal gave us a new key")
    s.tool("Bash", {"command": f"export PARTNER_API_KEY={value} && ./scripts/check-partner.sh"},
           "old key revoked; new key active")
    s.says("Rotated the partner key.")
    assert e.refresh().updated == 1
    rows = e.catalog.sections(s.rel)
    doc = e.catalog.document(s.rel)
    assert value not in json.dumps([[r.content for r in rows], doc["front_matter"], doc["warnings"]])
    assert "header_value: [REDACTED:" in rows[1].content and "The client sends [REDACTED:" in rows[1].content
    assert rows[0].id == first[0].id and rows[1].id != first[1].id   # rewritten from the first exchange holding it
    assert not api.dispatch_read(e, "search", {"query": value, "exact": True}, FRESH)["results"]
    served = json.dumps(api.dispatch_read(e, "search", {"query": "partner api 401 which key does the client send"},
                                          FRESH))
    assert "The client sends [REDACTED:" in served and value not in served
    blob = _data_bytes(data_env / "data")   # the catalog's free pages and WAL, the keyword index's old segments
    assert value.encode() not in blob and value.lower().encode() not in blob
    assert not [t for t in _keyword_terms(e) if value.lower() in t]
    # the keyword index still holds every exchange of it: the one kept, the ones written again
    assert _keyword_sections(e, "quokkaloader") == [rows[0].id] and _keyword_sections(e, "eslint") == [rows[2].id]
    # what a whole read of the same file makes
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "whole"))
    whole = talks()
    whole.refresh()
    again, fresh_doc = whole.catalog.sections(s.rel), whole.catalog.document(s.rel)
    assert [(r.heading, r.start_line, r.end_line, r.content) for r in rows] == \
        [(r.heading, r.start_line, r.end_line, r.content) for r in again]
    assert doc["warnings"] == fresh_doc["warnings"]
    grown, read_whole = json.loads(doc["front_matter"]), json.loads(fresh_doc["front_matter"])
    for fm in (grown, read_whole):   # salted per index: their number must agree
        fm["tail"]["seen"] = len(fm["tail"]["seen"])
        del fm["tail"]["salt"]
    assert grown == read_whole


def test_a_large_transcript_whose_tail_gives_a_value_away_is_read_whole_in_the_sandbox(projects, talks, monkeypatch):
    """A transcript of 256 KB or more is read whole where large documents are read (a child process
    under a CPU budget), also when a small tail asks for it: the tail's read in-process hands it on."""
    from remembrancer.indexer.ingest import conversation, sandbox

    value = "Xc3Vb8Nm1Qw6Er9Ty2"
    s = Session(projects)
    s.prompt("what does the partner client send?")
    s.tool("Bash", {"command": "grep -rn partner config/"}, f"config/partner.yml:3:  header_value: {value}")
    s.says(f"It sends {value}.")
    for k in range(40):   # a long session: the file is past the size read in a child
        s.prompt(f"step {k}: run the export")
        s.tool("Bash", {"command": "./export.sh"}, "\n".join(f"row {k}-{i} exported" for i in range(400)))
        s.says("Exported.")
    assert s.path.stat().st_size >= sandbox.LARGE_BYTES
    e = talks()
    e.refresh()
    handed = []
    real = conversation.prepare

    def watched(*a, **k):
        try:
            return real(*a, **k)
        except conversation.ReadWhole as whole:
            handed.append(whole.keep)
            raise
    monkeypatch.setattr(conversation, "prepare", watched)
    s.prompt("ok, rotate it")
    s.tool("Bash", {"command": f"export PARTNER_API_KEY={value} && ./scripts/check-partner.sh"}, "ok")
    s.says("Rotated.")
    e.refresh()
    rows = e.catalog.sections(s.rel)
    assert handed == [0] and len(rows) == 42
    assert value not in json.dumps([[r.content for r in rows], e.catalog.document(s.rel)["front_matter"]])
    assert not api.dispatch_read(e, "search", {"query": value, "exact": True}, FRESH)["results"]


def test_a_first_exchange_read_again_by_the_tail_gives_the_session_its_redacted_heading(projects, talks):
    """A session of one exchange is read again from that exchange when it grows: its heading, the
    session's title when it has none, is the one read now — a value its prompt shows bare and a
    later line of the same exchange gives away is not kept in the title."""
    value = "Jm5Rt8Wq2Zx7Kp4Vn9"
    s = Session(projects)
    s.prompt(f"is {value} still the partner key we send?")
    s.says("Let me check.")
    e = talks()
    e.refresh()
    assert value in e.catalog.document(s.rel)["title"]   # nothing said yet that it is a secret
    s.tool("Bash", {"command": f"export PARTNER_API_KEY={value} && ./scripts/check-partner.sh"}, "ok")
    s.says("Yes, it is.")
    e.refresh()
    doc = e.catalog.document(s.rel)
    assert value not in json.dumps([doc["title"], doc["front_matter"], [x.content for x in e.catalog.sections(s.rel)]])
    assert doc["title"].startswith("is [REDACTED:")
    listed = json.dumps(api.dispatch_read(e, "list", {}, FRESH))
    assert value not in listed


def test_a_new_secret_only_the_tail_holds_keeps_the_append_to_the_tail(projects, talks, monkeypatch):
    """A new secret the earlier exchanges do not hold costs no more than any append: the earlier
    exchanges are not read again (their bytes are looked at for the value, and do not hold it)."""
    from remembrancer.indexer.ingest import conversation

    s = _session(projects)
    e = talks()
    e.refresh()
    ids = [x.id for x in e.catalog.sections(s.rel)]
    parsed = []
    real = conversation.transcripts.parse
    monkeypatch.setattr(conversation.transcripts, "parse", lambda text, *a, **k: parsed.append(k.get("first_line", 1))
                        or real(text, *a, **k))
    s.prompt("Set the partner key for the staging run.")
    s.tool("Bash", {"command": "export PARTNER_API_KEY=Hy6Tn2Qc9Wm4Rz7Kb5 && ./check.sh"}, "ok")
    s.says("Set.")
    e.refresh()
    rows = e.catalog.sections(s.rel)
    assert [r.id for r in rows[:1]] == ids[:1] and len(rows) == 3
    assert "Hy6Tn2Qc9Wm4Rz7Kb5" not in rows[-1].content
    assert parsed and 1 not in parsed   # the tail only: the file's beginning was not parsed again


def test_a_rewritten_beginning_or_another_redaction_policy_reads_the_transcript_whole(projects, talks, monkeypatch,
                                                                                      tiny_embedder):
    from remembrancer.indexer.ingest import conversation

    s = _session(projects)
    e = talks()
    e.refresh()
    tails = []   # whether each read could start at the stored tail
    real = conversation._usable_tail
    monkeypatch.setattr(conversation, "_usable_tail", lambda *a: (lambda t: tails.append(t is not None) or t)(real(*a)))
    text = s.path.read_text()
    s.path.write_text(text.replace("Why does the uploader", "Why does the old uploader"))   # history rewritten
    e.refresh()
    rows = e.catalog.sections(s.rel)
    assert rows[0].heading.startswith("Why does the old uploader")
    s.says("An appended line.")
    e.refresh()
    assert e.catalog.sections(s.rel)[-1].content.endswith("An appended line.\n")
    assert tails == [False, True]   # the rewritten beginning no longer matched its hash; the append did
    e.close()
    cfg = Config(conversations=make_roots([projects], kind=CONVERSATIONS)).conversation_config()
    cfg.redact = RedactionPolicy(disable=("url_credentials",))   # another policy
    other = Engine(cfg, embedder=tiny_embedder)
    s.says("Another appended line.")
    other.refresh()
    other.close()
    assert tails[2:] == [False]   # read whole under the policy it is now read with


def test_an_exchange_lists_the_commits_it_made_and_quotes_with_whether_they_landed(projects, talks, tmp_path):
    from tests.support.corpus import git, git_init

    import os
    import subprocess

    def commit(message: str, when: str) -> None:
        """A commit at a fixed time: its hash is the same on every run (a hash prefix of digits alone
        is not SHA-like, so a random one made this test fail about one run in 65)."""
        subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, check=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
                            "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when})

    repo = tmp_path / "app"
    git_init(repo)
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "-A")
    commit("Start", "2026-03-01T12:00:00+00:00")
    s = Session(projects, cwd=str(repo), start="2026-03-02T09:00:00")
    s.prompt("Cap the upload retries and commit it.")
    s.says("Done.")
    s.prompt("Now something else entirely: the thumbnails.")
    s.says("Thumbnails done.")
    # a commit made while the first exchange ran (between its prompt and the next one), on main
    (repo / "a.txt").write_text("two\n")
    git(repo, "add", "-A")
    commit("Cap upload retries", "2026-03-02T09:00:20+00:00")   # the first prompt is at 09:00:14, the next at 09:00:35
    made = git(repo, "rev-parse", "HEAD")
    start = git(repo, "rev-parse", "HEAD~1")
    from remembrancer.indexer.memory.commits import is_sha_like
    assert is_sha_like(start[:9]), start   # the quote below is a hash to check
    s.prompt(f"Is {start[:9]} the first commit?")   # a quoted hash, checked too
    s.says(f"Yes, {start[:9]} is the first commit.")
    e = talks()
    e.refresh()
    out = _search(e, "cap upload retries commit")
    first = next(r for r in out.shown if r.uuid == s.uuids[0])
    assert first.content is not None
    assert [(c.commit, c.landed, c.cited_as) for c in first.commits or []] == [
        (made, True, "committed during the exchange")]
    quoted = _search(e, f"is {start[:9]} the first commit", limit=1).shown[0]
    assert quoted.commits and quoted.commits[0].commit == start and quoted.commits[0].landed is True
    from remembrancer.mcp_server.render import search_text
    assert "Cap upload retries" in search_text(out) and "landed on main" in search_text(out)
    # a commit made later is seen by the next search (what a search remembers of the history is per branch tip)
    (repo / "a.txt").write_text("three\n")
    git(repo, "add", "-A")
    later = "2026-03-02T09:00:45+00:00"   # inside the second exchange (09:00:35 to 09:00:56)
    subprocess.run(["git", "commit", "-q", "-m", "Square thumbnails"], cwd=repo, check=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
                        "GIT_AUTHOR_DATE": later, "GIT_COMMITTER_DATE": later})
    thumbs = _search(e, "thumbnails something else entirely", limit=1).shown[0]
    assert thumbs.uuid == s.uuids[2] and [c.subject for c in thumbs.commits or []] == ["Square thumbnails"]


def test_claude_code_memory_files_are_served_with_the_notes(projects, talks, notes_engine):
    s = _session(projects)
    memory = s.path.parent / "memory"
    memory.mkdir()
    (memory / "MEMORY.md").write_text("# Project memory\n\n- [Deploys](deploys.md): how we ship\n")
    (memory / "deploys.md").write_text("---\nname: deploys\ndescription: how we ship\n---\n\n# Deploys\n\n"
                                       "We ship with the quokkaflow pipeline every Tuesday after standup.\n")
    e = talks()
    e.refresh()

    def reader(engine):
        return lambda m, p: api.dispatch_read(engine, m, p, FRESH)
    found = SearchAnswer.parse(api.read_across("search", {"query": "quokkaflow pipeline Tuesday"},
                                               reader(notes_engine), reader(e)))
    hit = next(r for r in found.results if r.corpus == "memory")
    assert hit.path.endswith("memory/deploys.md") and hit.type == "memory" and "quokkaflow" in (hit.content or "")
    talk = SearchAnswer.parse(api.read_across("search", {"query": "quokkaflow pipeline Tuesday", "corpus": "conversations"},
                                              reader(notes_engine), reader(e)))
    assert all(r.type in ("conversation", "subagent") for r in talk.shown)
    page = api.read_across("read", {"path": hit.path, "heading": "Deploys"}, reader(notes_engine), reader(e))
    assert "quokkaflow" in page["content"]
    with pytest.raises(UserError) as err:   # a path in neither: the notes' own answer
        api.read_across("read", {"path": "nowhere.md"}, reader(notes_engine), reader(e))
    assert err.value.code == "not_found"
    assert {r.corpus for r in found.results} <= {"notes", "memory"} and found.conversations_index is not None


def test_latest_lists_the_exchanges_holding_the_terms_newest_first(projects, talks, notes_engine):
    s = _session(projects)
    later = Session(projects, start="2026-03-05T10:00:00")
    later.prompt("BucketGone again on the staging uploader?")
    later.says("Yes, the staging bucket was deleted too.")
    e = talks()
    e.refresh()

    def reader(engine):
        return lambda m, p: api.dispatch_read(engine, m, p, FRESH)
    out = api.read_across("latest", {"terms": ["BucketGone"], "corpus": "conversations"},
                          reader(notes_engine), reader(e))
    assert [r["path"] for r in out["results"]] == [later.rel, s.rel]
    with pytest.raises(UserError) as err:
        api.read_across("history", {"entity": "db1", "corpus": "conversations"}, reader(notes_engine), reader(e))
    assert err.value.param == "corpus"


def test_hostile_transcripts_are_warnings_never_failures(projects, talks):
    """Bad input in a conversations folder: each file is indexed as far as it can be, or left out
    with a warning naming it; the other files are indexed and searchable."""
    good = _session(projects)
    folder = good.path.parent
    (folder / "binary.jsonl").write_bytes(b"\x00\x01\x02" * 1000)
    (folder / "nested.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    (folder / "badutf8.jsonl").write_bytes(good.path.read_bytes().replace(b"Thumbnails", b"Thumb\xffnails"))
    huge = Session(projects)
    huge.prompt("Print the whole log.")
    huge.tool("Bash", {"command": "cat big.log"}, "x" * 3_000_000 + "\nERROR: disk quota exceeded")
    huge.says("The log ends with a disk quota error.")
    (folder / "empty.jsonl").write_text("")
    (folder / "not-json.jsonl").write_text("hello\nworld\n")
    e = talks()
    report = e.refresh()
    warnings = "\n".join(report.warnings)
    # read line by line: NUL bytes spoil their line, never the file (it is not taken for a binary one)
    assert "binary.jsonl: line 1 is not valid JSON" in warnings and "looks binary" not in warnings
    assert "nested.jsonl: line 1 is not valid JSON" in warnings and "not-json.jsonl: line 1" in warnings
    assert re.search(r"badutf8\.jsonl: line \d+ holds invalid UTF-8", warnings), warnings
    paths = set(e.catalog.document_paths())
    assert {good.rel, huge.rel, f"{folder.name}/empty.jsonl", f"{folder.name}/binary.jsonl"} <= paths
    assert not e.catalog.sections(f"{folder.name}/binary.jsonl")   # listed, with no exchange
    quota = [x for x in e.catalog.sections(huge.rel) if "disk quota exceeded" in x.content]
    assert quota and len(quota[0].content) < 10_000   # the output trimmed, its last line kept
    assert good.rel in [r.path for r in _search(e, "BucketGone retry cap").results]
