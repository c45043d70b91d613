"""What the notes say in their front matter, and in their own shape, reaches search: front-matter
values are the text of the document's preamble (a component's owners, a Claude Code memory file's
`description`), a file no layout rule names is typed by its shape (a dated log is a journal, front
matter naming aliases makes an entity record), and a document's summary yields to the detail inside it
that answers (rank._detail_before_summary)."""

from __future__ import annotations

import json

import pytest

from remembrancer.indexer import api
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.ingest import chunks, meta
from remembrancer.indexer.ingest.markdown import front_matter_text, parse_markdown, with_front_matter_preamble
from remembrancer.indexer.search import rank
from tests.support.corpus import write_tree
from tests.support.ranking import ranked, row

RELAY = """---
name: sbx-relay
aliases: [relay, lighthouse]
owners:
  - Zofia Quertyn (interim owner)
repo: signalbox/relay — cmd/relay
---

# sbx-relay

Keeps SDKs up to date over a stream.

## Facts

| key | value |
|---|---|
| memory limit | 512 MiB per pod |
"""

FREEZE = """---
name: Holiday deploy freeze
description: The freeze runs from the twenty-first of December to the fourth of January; only urgent fixes ship
type: project
---
Why it moved: the SDK release needed the week before.
"""

LOG = """# 2033-W44 (Oct 31 – Nov 6)

## Mon 2033-10-31

### 08:20 — rollout fired an hour early

The scheduler pinned the offset.

## Tue 2033-11-01

### 17:10 — scheduler fix crashes on staging

No tzdata in the image.

## Wed 2033-11-02

### 15:00 — US clock change check

All fine.
"""


def _keyword(e, query: str) -> list[tuple[str, str]]:
    """The keyword leg's sections for `query`, best first (the tiny test model's vectors are random,
    so the dense leg says nothing here)."""
    view = e.view()
    scores = view.keyword_index().search(query, 20, None)
    rows = view.catalog.section_heads_by_id(list(scores))
    return [(rows[sid].path, rows[sid].heading) for sid in sorted(scores, key=lambda i: (-scores[i], i))]


def _literal(e, query: str) -> dict[tuple[str, str], float]:
    out = api.do_search(e.view(), {"query": query, "limit": 20})
    return {(r["path"], r["heading"]): r["scores"]["literal"] for r in out["results"] or out["best_weak"]}


def test_front_matter_values_are_the_preamble_section_found_by_search_and_read_back(tmp_path, tiny_engine):
    """A component's owner lives only in its front matter: the keyword leg finds it there, the
    result is the document's preamble (heading ""), and `read` of that heading shows those lines."""
    e = tiny_engine(write_tree(tmp_path / "notes", {"components/relay.md": RELAY, "notes/other.md": "# Other\n\nNothing here.\n"}))
    assert _keyword(e, "Quertyn") == [("components/relay.md", "")]
    exact = api.do_search(e.view(), {"query": "Zofia Quertyn", "exact": True})["results"]
    assert [(r["path"], r["heading"]) for r in exact] == [("components/relay.md", "")]
    page = api.do_read(e.view(), {"path": "components/relay.md", "heading": ""})
    assert "owners:" in page["content"] and "Zofia Quertyn" in page["content"] and page["lines"] == [1, 8]
    # the preamble holds the front matter's lines only: the title section and its facts stay apart
    parsed = parse_markdown(RELAY)
    assert [s.heading for s in parsed.sections] == ["sbx-relay", "sbx-relay > Facts"]   # CommonMark's sections
    kept = with_front_matter_preamble(parsed).sections
    assert [(s.heading, s.start_line, s.end_line) for s in kept] == [("", 1, 8), ("sbx-relay", 9, 12),
                                                                     ("sbx-relay > Facts", 13, 17)]
    # a preamble with text of its own keeps it, after the front matter's lines
    memory = with_front_matter_preamble(parse_markdown(FREEZE)).sections
    assert len(memory) == 1 and memory[0].text.startswith("---\nname:") and memory[0].body.startswith("Why it moved")


def test_a_claude_code_memory_files_description_is_searchable(tmp_path, tiny_engine):
    """Claude Code's memory topic files keep their summary in `description:`; the body need not
    repeat it. A question in the description's words finds the file."""
    e = tiny_engine(write_tree(tmp_path / "notes", {"memory/project_freeze.md": FREEZE,
                                                    "memory/other.md": "---\nname: Other\ndescription: unrelated\n---\nText.\n"}))
    assert _keyword(e, "twenty-first December")[0] == ("memory/project_freeze.md", "")
    # and it is embedded: the preamble's first passage is its header with what the front matter says
    fm = parse_markdown(FREEZE).front_matter
    first = chunks.text_sha(f"{chunks.context_header('lesson', 'project_freeze.md', '')}\n{front_matter_text(fm)}")
    firsts = {r[0] for r in e.catalog.db.execute("SELECT text_sha FROM passages WHERE ord = 0")}
    assert first in firsts
    # and every other passage of the note carries the description in its context header
    header = chunks.context_header("lesson", "project_freeze.md", "")
    later = [t for (t,) in e.catalog.db.execute(
        "SELECT p.text FROM passages p JOIN sections s ON s.id = p.section_id JOIN documents d ON d.id = s.doc_id"
        " WHERE d.rel = 'memory/project_freeze.md' AND p.ord > 0")]
    assert later == [f"{header} — {fm['description']}\nWhy it moved: the SDK release needed the week before."]


def test_front_matter_text_renders_every_value_and_leaves_out_the_index_switches():
    said = front_matter_text({"name": "x", "aliases": ["a", "b"], "owners": [{"name": "Ann", "since": 2033}],
                              "limits": {"memory": "512Mi"}, "empty": None, "secret": False, "tags": []})
    assert said.splitlines() == ["name: x", "aliases: a, b", "owners.name: Ann", "owners.since: 2033",
                                 "limits.memory: 512Mi"]
    assert front_matter_text({}) == ""


def test_a_file_no_layout_rule_names_is_typed_by_its_shape(tmp_path, tiny_engine):
    """A dated log in a folder the layout does not know is a journal; front matter that gives the
    thing's other names makes an entity record, so a nickname finds it as a host's alias does. A
    file the layout names keeps its type whatever its shape."""
    e = tiny_engine(write_tree(tmp_path / "notes", {
        "log/2033-W44.md": LOG, "components/relay.md": RELAY, "runbooks/log.md": LOG,
        "notes/plain.md": "# Plain\n\n## 2033-10-31 release\n\nOne dated heading is not a log.\n"}))
    typed = {rel: api.do_read(e.view(), {"path": rel, "max_chars": 100})["type"]
             for rel in ("log/2033-W44.md", "components/relay.md", "runbooks/log.md", "notes/plain.md")}
    assert typed == {"log/2033-W44.md": "journal", "components/relay.md": "service",
                     "runbooks/log.md": "runbook", "notes/plain.md": "doc"}
    # the nickname names its record: the literal leg credits the record's sections, and only them
    credited = {key for key, v in _literal(e, "what is the lighthouse memory limit?").items() if v >= 1.0}
    assert credited and {path for path, _ in credited} == {"components/relay.md"}


def test_a_daily_note_is_a_journal_day(tmp_path, tiny_engine):
    """A file named by its day alone (Obsidian's `2024-01-05.md`, Logseq's `2024_01_05.md`) is one
    day of a log kept a file a day: a journal, dated that day, so the journal rules read it (a
    question about now puts the record above the day that changed it). A file whose name holds a date
    and more (`2024-01-05-release-notes.md`) is a dated document, not a day."""
    e = tiny_engine(write_tree(tmp_path / "vault", {
        "daily/2024-01-05.md": "## Standup\n\nThe billing database moved to port 6432 today.\n",
        "journals/2024_01_09.md": "- billing database: vacuum done\n",
        "posts/2024-01-05-release-notes.md": "# Release notes\n\nBilling v2.\n",
        "services/billing-db.md": "---\nservice: billing-db\naliases: [billing database]\n---\n\n# billing-db\n\n"
                                  "## Facts\n\nThe billing database listens on port 6432.\n"}))
    typed = {rel: (r["type"], r.get("date")) for rel in ("daily/2024-01-05.md", "journals/2024_01_09.md",
                                                           "posts/2024-01-05-release-notes.md")
             for r in [api.do_read(e.view(), {"path": rel, "max_chars": 100})]}
    assert typed == {"daily/2024-01-05.md": ("journal", "2024-01-05"), "journals/2024_01_09.md": ("journal", "2024-01-09"),
                     "posts/2024-01-05-release-notes.md": ("doc", "2024-01-05")}, typed
    out = api.do_search(e.view(), {"query": "which port does the billing database listen on?", "explain": True})
    day = next(r for r in out["results"] if r["path"] == "daily/2024-01-05.md")
    assert any("type journal" in why for why in day["why"]), day


def test_inferred_type_needs_a_log_not_one_date():
    chains = [["Plain"], ["Plain", "2033-10-31 release"]]
    assert meta.inferred_type({}, chains) is None
    log = [["2033-W44"], ["2033-W44", "Mon 2033-10-31"], ["2033-W44", "Mon 2033-10-31", "08:20 — x"],
           ["2033-W44", "Tue 2033-11-01"], ["2033-W44", "Tue 2033-11-01", "17:10 — y"]]
    assert meta.inferred_type({}, log) == "journal"
    assert meta.inferred_type({"name": "sbx-relay", "aliases": ["lighthouse"]}, []) == "service"
    assert meta.inferred_type({"aliases": ["lighthouse"]}, []) is None   # aliases alone: any note's synonyms
    assert meta.inferred_type({"aliases": []}, []) is None
    assert meta.inferred_type({}, [["Standup"]], "daily/2024-01-05.md") == "journal"
    assert meta.inferred_type({}, [["Standup"]], "journals/2024_01_05.md") == "journal"
    assert meta.inferred_type({}, [["Notes"]], "posts/2024-01-05-release-notes.md") is None
    assert meta.inferred_type({}, [], "daily/2024-02-30.md") is None   # no such day


def test_the_detail_answers_before_the_summary_that_encloses_it():
    """A document's preamble or introduction names what all of it is about, so it matches a
    question about any part nearly as well as the part that answers: when the best section encloses
    another candidate within `detail_margin`, the enclosed one goes first — down the breadcrumb —
    and a clear lead, a section of another document, or a sibling keeps its place."""
    rows = [row(1, "memory/ines.md", "", level=0),
            row(2, "memory/ines.md", "Working with Ines", level=1),
            row(3, "memory/ines.md", "Working with Ines > Before touching production"),
            row(4, "memory/other.md", "Other > Before touching production"),
            row(5, "memory/ines.md", "Working with Ines > Small commits")]
    q = "what does Ines want before DDL?"
    assert ranked(rows, {1: 1.00, 2: 0.95, 3: 0.93, 4: 0.99, 5: 0.10}, q)[0] == 3
    assert ranked(rows, {1: 1.00, 2: 0.95, 3: 0.70, 4: 0.50, 5: 0.10}, q)[0] == 2     # the intro is the detail left
    assert ranked(rows, {1: 1.00, 2: 0.50, 3: 0.70, 4: 0.99, 5: 0.10}, q)[0] == 1     # no detail near it
    assert ranked(rows, {1: 0.10, 2: 0.10, 3: 1.00, 4: 0.10, 5: 0.98}, q)[0] == 3     # siblings keep their order
    off = rank.RankingConfig(detail_margin=0.0)
    assert ranked(rows, {1: 1.00, 2: 0.95, 3: 0.93, 4: 0.99, 5: 0.10}, q, off)[0] == 1


def test_a_secret_in_front_matter_reaches_no_preamble_passage_or_answer(tmp_path, tiny_engine, monkeypatch):
    """Front matter is now text the index keeps and embeds: a token written as a value (a key of its
    own, inside a list, inside a description) is redacted before the preamble is made, so neither
    its lines, its embedded passage, a keyword search nor a read holds it."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    note = (f"---\nname: deploy bot\napi_token: {token}\nowners: [ops, {token}]\n"
            f"description: the bot logs in with {token} on every run\n---\n# Deploy bot\n\nRuns deploys.\n")
    from remembrancer.indexer.engine.writer import Writer

    embedded: list[str] = []   # every text the writer hands the model (a spy on the real path)
    real = Writer._prepare

    def spy(self, *args, **kwargs):
        prepared = real(self, *args, **kwargs)
        embedded.extend(prepared.texts.values())
        return prepared

    monkeypatch.setattr(Writer, "_prepare", spy)
    e = tiny_engine(write_tree(tmp_path / "notes", {"components/bot.md": note}))
    assert any("owners:" in t for t in embedded) and not any(token in t for t in embedded)
    view = e.view()
    rows = [s for s in view.catalog.sections("components/bot.md")]
    assert rows and rows[0].heading == "" and all(token not in (s.content or "") + (s.body or "") for s in rows)
    said = front_matter_text(with_front_matter_preamble(parse_markdown(note)).front_matter)
    assert token in said   # unredacted, the rendering would carry it: the redaction before it is what keeps it out
    page = api.do_read(view, {"path": "components/bot.md", "heading": ""})
    assert token not in page["content"] and "owners:" in page["content"]
    assert not api.do_search(view, {"query": token, "exact": True})["results"]
    assert token not in str(api.do_search(view, {"query": "deploy bot token", "limit": 5}))


def test_a_missed_heading_names_the_preamble_among_the_valid_ones(tmp_path, tiny_engine):
    """The preamble's heading is "": in the list of valid headings it is shown as `""`, not as nothing."""
    import pytest

    from remembrancer.indexer.errors import UserError

    e = tiny_engine(write_tree(tmp_path / "notes", {"memory/project_freeze.md": FREEZE}))
    with pytest.raises(UserError) as err:
        api.do_read(e.view(), {"path": "memory/project_freeze.md", "heading": "Schedule"})
    assert err.value.options == [""] and 'valid: ""' in str(err.value)


def test_a_long_description_is_cut_at_a_word_in_the_context_header():
    from remembrancer.indexer.ingest import document

    said = document._context_description({"description": "word " * 200})
    assert len(said) <= document.DESCRIPTION_CONTEXT_CHARS + 2 and said.endswith("word …")
    assert document._context_description({"description": ["not", "a", "string"]}) == ""


def test_a_front_matter_only_note_shows_its_lines_as_the_snippet(tmp_path, tiny_engine):
    """A note that is all front matter has a preamble with no body: its snippet is its lines, not
    an empty string."""
    e = tiny_engine(write_tree(tmp_path / "notes", {"memory/freeze.md": "---\nname: freeze\ndescription: "
                                                    "no deploys from December 21 to January 4\n---\n"}))
    out = api.do_search(e.view(), {"query": "deploys December", "limit": 3})
    first = (out["results"] or out["best_weak"])[0]
    assert first["heading"] == "" and "no deploys from December 21" in first["snippet"]


TURNSTILE = """alias:: model serving gateway, [[Front door, EU]]
tags:: service, #[[platform]]
owners:: [[Hattie Brennan]]
title:: Turnstile

- Routes every model endpoint to its Triton model
\t- `/v1/eta` goes to eta-ftt
"""


def test_a_logseq_pages_properties_are_its_front_matter(tmp_path, tiny_engine):
    """Logseq keeps a page's metadata as `key:: value` lines at its top, not YAML: they are read as
    front matter — `alias::` and `tags::` as lists (a `[[link]]` is its page's name, its own commas
    kept), the tags type the page, the aliases name its record, and every value is the preamble's
    text as YAML's is. A line that only holds `::` (`std::vector`) is text; `secret:: true` keeps the
    page out of the index as `secret: true` does."""
    parsed = parse_markdown(TURNSTILE)
    assert parsed.front_matter == {"alias": ["model serving gateway", "Front door, EU"],
                                   "tags": ["service", "platform"], "owners": "Hattie Brennan", "title": "Turnstile"}
    assert parsed.body_start_line == 5 and parsed.title == "Turnstile"
    assert [(s.heading, s.start_line, s.end_line) for s in with_front_matter_preamble(parsed).sections] == [("", 1, 7)]
    assert parse_markdown("std::vector<int> v;\n\n# Vectors\n").front_matter == {}
    assert parse_markdown("Note:: read twice\n\nText.\n").front_matter == {"note": "read twice"}

    e = tiny_engine(write_tree(tmp_path / "graph", {
        "pages/Turnstile.md": TURNSTILE,
        "pages/Shelf.md": "alias:: model registry\n\n- keeps every model version\n",
        "pages/Vault token.md": "secret:: true\n\n- the deploy token lives here\n",
        "pages/Other.md": "- nothing about gateways\n"}))
    view = e.view()
    assert api.do_read(view, {"path": "pages/Turnstile.md", "max_chars": 100})["type"] == "service"
    assert _keyword(e, "Brennan") == [("pages/Turnstile.md", "")]
    # the alias names the record: the literal leg credits the record's sections, and only them
    credited = {key for key, v in _literal(e, "which models sit behind the front door, EU?").items() if v >= 1.0}
    assert credited == {("pages/Turnstile.md", "")}
    assert "pages/Vault token.md" not in {r["path"] for r in
                                          api.do_search(view, {"query": "deploy token", "limit": 10})["results"]}
    with pytest.raises(UserError):
        api.do_read(view, {"path": "pages/Vault token.md"})


def test_page_properties_past_the_front_matter_cap_are_text_and_said(tmp_path):
    """A run of `key:: value` lines as large as no page's metadata is (a generated file) is not
    metadata: it is indexed as text, with a warning, as oversized YAML front matter is."""
    from remembrancer.indexer.ingest.markdown import FRONT_MATTER_MAX_BYTES

    lines = "".join(f"k{i}:: {'v' * 60}\n" for i in range(FRONT_MATTER_MAX_BYTES // 60 + 10))
    parsed = parse_markdown(lines + "\n# After\n\nBody.\n", path="big.md")
    assert parsed.front_matter == {} and parsed.body_start_line == 1
    assert any("page properties" in w and "indexed as text" in w for w in parsed.warnings)
    assert parsed.sections[0].heading == "" and parsed.sections[0].text.startswith("k0:: ")


def test_a_page_property_line_is_read_in_linear_time():
    """A property whose value is a long run of blanks before a last word (`k:: x` + spaces + `y`)
    was read by a lazy pattern that rescanned the run from each of its positions."""
    from remembrancer.indexer.ingest.markdown import _read_page_properties
    from tests.support.adversarial import SUPERLINEAR, growth_of

    assert _read_page_properties(["k:: x" + " \t" * 10 + "y"], "p.md", [])[0] == {"k": "x" + " \t" * 10 + "y"}
    g = growth_of(lambda line: _read_page_properties([line], "p.md", []),
                  lambda n: "k:: x" + " \t" * n + "y", small=500, repeats=3)
    assert g <= SUPERLINEAR, g


def test_a_front_matter_key_line_is_read_in_linear_time():
    """A front-matter line of a word, a long run of blanks and no colon was tried as a key by a
    lazy pattern that rescanned the run from each of its positions; keys with blanks still read."""
    from remembrancer.indexer.ingest.markdown import _looks_like_yaml
    from tests.support.adversarial import SUPERLINEAR, growth_of

    assert _looks_like_yaml(["owner: ana", "two words :  x", "k:"]) and not _looks_like_yaml(["a" + " " * 50 + "b"])
    g = growth_of(lambda line: _looks_like_yaml([line]), lambda n: "a" + " \t" * n + "b", small=500, repeats=3)
    assert g <= SUPERLINEAR, g


# Claude Code writes a memory topic file's description unquoted, `: ` and all: not YAML.
ROLLBACKS = ("---\nname: Rollbacks\ndescription: Rollback rule: use helm rollback, never kubectl delete\n"
             "type: feedback\n---\n\nDo it with the previous revision number, then watch the pods.\n")


def test_a_memory_files_front_matter_that_yaml_refuses_is_read_leniently_and_found(tmp_path, tiny_engine):
    """`description: Rollback rule: use …` is invalid YAML ("mapping values are not allowed
    here"); the front matter is still read — name, description and type — the warning says how,
    and the description's words find the note (keyword, exact) and head its passages."""
    e = tiny_engine(write_tree(tmp_path / "notes", {"memory/rollbacks.md": ROLLBACKS,
                                                    "other.md": "# Other\n\nThe coffee machine is on floor 2.\n"}))
    view = e.view()
    doc = e.catalog.document("memory/rollbacks.md")
    assert meta.stored_front_matter(doc) == {"name": "Rollbacks", "type": "feedback",
                                             "description": "Rollback rule: use helm rollback, never kubectl delete"}
    said = json.loads(e.catalog.get_meta("last_warnings") or "[]")
    assert any("invalid YAML front matter at line 3" in w and "read leniently" in w for w in said), said
    assert _keyword(e, "helm rollback")[0] == ("memory/rollbacks.md", "")
    exact = api.do_search(view, {"query": "helm rollback", "exact": True})["results"]
    assert [(r["path"], r["heading"]) for r in exact] == [("memory/rollbacks.md", "")]
    header = chunks.context_header("lesson", "rollbacks.md", "")
    later = [t for (t,) in e.catalog.db.execute(
        "SELECT p.text FROM passages p JOIN sections s ON s.id = p.section_id JOIN documents d ON d.id = s.doc_id"
        " WHERE d.rel = 'memory/rollbacks.md' AND p.ord > 0")]
    assert later and all(t.startswith(f"{header} — Rollback rule: use helm rollback") for t in later), later


def test_a_front_matter_nothing_can_read_keeps_its_lines_searchable(tmp_path, tiny_engine):
    """No key read from it (every value broken structure): not metadata, but its lines are the
    preamble's text, so what it says is still found and read back."""
    broken = "---\nowners: [Wilhelmina Oxtoby, ops\nrunbook: *restore\n---\n# Restore\n\nRun the restore job.\n"
    parsed = parse_markdown(broken, "runbooks/restore.md")
    assert parsed.front_matter == {} and "not read as metadata" in parsed.warnings[0]
    e = tiny_engine(write_tree(tmp_path / "notes", {"runbooks/restore.md": broken}))
    exact = api.do_search(e.view(), {"query": "Wilhelmina Oxtoby", "exact": True})["results"]
    assert [(r["path"], r["heading"]) for r in exact] == [("runbooks/restore.md", "")]
    page = api.do_read(e.view(), {"path": "runbooks/restore.md", "heading": ""})
    assert "Wilhelmina Oxtoby" in page["content"] and page["lines"][0] == 1
    from remembrancer.indexer.ingest.markdown import FRONT_MATTER_MAX_BYTES
    from tests.support.adversarial import billion_laughs, huge_front_matter

    for text in (billion_laughs(), huge_front_matter(2 * FRONT_MATTER_MAX_BYTES)):   # refused, and still text
        first = with_front_matter_preamble(parse_markdown(text)).sections[0]
        assert (first.heading, first.start_line) == ("", 1) and "\n---\n" in first.text


def test_lenient_front_matter_keeps_lists_and_quoted_values_and_never_reads_secret_from_it():
    text = ("---\nname: 'Deploys'\ndescription: Deploy rule: tag first\n  then push\ntags:\n  - ops\n  - deploy\n"
            "aliases: [ship, release]\nsecret: false # not a real switch here\n---\nbody\n")
    fm = parse_markdown(text).front_matter
    assert fm == {"name": "Deploys", "description": "Deploy rule: tag first then push", "tags": ["ops", "deploy"],
                  "aliases": ["ship", "release"]}
    from remembrancer.indexer.redact import is_secret_document

    hidden = "---\nsecret: true # keep out\ndescription: Vault rule: never paste tokens\n---\nbody\n"
    parsed = parse_markdown(hidden)
    assert "secret" not in parsed.front_matter and parsed.front_matter["description"].startswith("Vault rule")
    assert is_secret_document(parsed.front_matter, hidden)   # still fails closed, from the lines


def test_a_claude_code_memory_file_with_a_colon_in_its_description_is_found_by_the_cli(tmp_path, tiny_model_dir):
    """The real command line: `index` warns that it read the front matter leniently, and
    `search --exact` finds the description's words in the note."""
    from tests.support.cli import run_cli
    from tests.support.env import remembrancer_env

    notes = write_tree(tmp_path / "notes", {"memory/rollbacks.md": ROLLBACKS,
                                            "other.md": "# Other\n\nThe coffee machine is on floor 2.\n"})
    (tmp_path / "config.toml").write_text(f'[model]\npath = "{tiny_model_dir}"\n')
    env = remembrancer_env(data=tmp_path / "data", config=tmp_path / "config.toml", socket=tmp_path / "no.sock")
    r = run_cli("index", "--root", str(notes), env=env)
    assert r.returncode == 0 and "read leniently" in r.stdout + r.stderr, r.stdout + r.stderr
    r = run_cli("search", "helm rollback", "--exact", "--root", str(notes), "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert [x["path"] for x in json.loads(r.stdout)["results"]] == ["memory/rollbacks.md"]
