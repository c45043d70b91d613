"""Chunking (oversized sections, fences, huge lines) and metadata rules (layout, dates, entities)."""

from __future__ import annotations

import datetime as dt

from remembrancer.indexer.ingest import chunks
from remembrancer.indexer.ingest import meta
from remembrancer.indexer.config import DEFAULT_LAYOUT, ENTITY_TYPES
from remembrancer.indexer.ingest.markdown import parse_markdown


def test_small_section_is_one_chunk():
    c = chunks.split_section("## A\n\ntext", 10)
    assert c == [chunks.Chunk(1, 1, 10, 12, "## A\n\ntext")]


def test_oversized_section_splits_at_paragraphs_not_inside_fences():
    fence = "```bash\n" + "\n".join(f"# step {i}\necho {i}" for i in range(40)) + "\n```"
    paras = ["para %d " % i + "word " * 60 for i in range(12)]
    text = "## Big\n\n" + "\n\n".join(paras[:6] + [fence] + paras[6:])
    parts = chunks.split_section(text, 1, max_chars=1200)
    assert len(parts) > 2
    assert "\n".join(p.text for p in parts) == text
    assert all(p.nparts == len(parts) for p in parts)
    assert [p.part for p in parts] == list(range(1, len(parts) + 1))
    fence_parts = [p for p in parts if "```bash" in p.text]
    assert len(fence_parts) == 1 and fence_parts[0].text.count("```") == 2


def test_one_huge_line_is_cut_and_reassembles_verbatim():
    # robustness case `heading-with-one-huge-line`: a 7.5k-char single line must be split,
    # every part keeps the section breadcrumb, and the parts reassemble verbatim.
    line = " ".join(f"change{i}" for i in range(1000))
    text = "# Release Notes\n" + line
    doc = parse_markdown(text)
    s = doc.sections[0]
    assert s.heading == "Release Notes"
    parts = chunks.split_section(s.text, s.start_line)
    assert len(parts) >= 2
    assert parts[0].part == 1
    assert all(len(p.text) <= chunks.MAX_CHUNK_CHARS for p in parts)
    joined = parts[0].text
    for prev, p in zip(parts, parts[1:]):
        joined += ("" if p.start_line == prev.end_line else "\n") + p.text
    assert joined == s.text


def test_passages_are_blocks_items_and_rows():
    body = ("Intro paragraph.\n\n- item one\n  continued\n- item two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
            "```sh\necho hi\n\necho there\n```\n\n" + "long " * 400)
    ps = chunks.passages(body)
    assert ps[:3] == ["Intro paragraph.", "- item one\n  continued", "- item two"]
    assert "| a | b |\n| 1 | 2 |" in ps and "|---|---|" not in "".join(ps) and "```sh\necho hi\n\necho there\n```" in ps
    assert all(len(p) <= chunks.MAX_PASSAGE_CHARS for p in ps)
    assert len([p for p in ps if p.startswith("long")]) == 2


def test_passages_drop_html_layout_tags_but_keep_placeholders_and_code():
    body = ('<dl>\n\n<dt class="option-term" id="opt-dry-run"><a href="#opt"><code>--dry-run</code></a></dt>\n'
            '<dd class="option-desc"><p>Don&rsquo;t actually write the manifest</p>\n</dd>\n\n'
            "Set `scrape_interval: <duration>` on an `Option<T>`; a &lt;b&gt; tag.\n\n"
            "```html\n<p>kept in code</p>\n```")
    ps = chunks.passages(body)
    assert "--dry-run\nDon\u2019t actually write the manifest\n" in ps
    assert "Set `scrape_interval: <duration>` on an `Option<T>`; a <b> tag." in ps
    assert "```html\n<p>kept in code</p>\n```" in ps
    assert chunks.readable("no markup here") == "no markup here"


def test_context_header():
    assert chunks.context_header("runbook", "Restore", "Restore > Verify") == "[runbook] Restore > Verify"
    assert chunks.context_header("doc", "a.md", "") == "[doc] a.md"


def test_default_layout():
    layout = meta.Layout(DEFAULT_LAYOUT)
    assert layout.type_of("journal/2031/2031-04-02.md") == "journal"
    assert layout.type_of("hosts/pg1.md") == "host"
    assert layout.type_of("hosts/old/pg0.md") == "doc"
    assert layout.type_of("runbooks/postgres/restore.md") == "runbook"
    assert layout.type_of("memory/lesson.md") == "lesson"
    assert layout.type_of("planning/q2.md") == "plan"
    assert layout.type_of("README.md") == "doc"
    assert layout.type_of("docs/deep/x.md") == "doc"


def test_configured_layout_first_match_wins():
    layout = meta.Layout((("notes/daily/**", "journal"), ("notes/**", "lesson"), ("*", "doc")))
    assert layout.type_of("notes/daily/2030-01-01.md") == "journal"
    assert layout.type_of("notes/x.md") == "lesson"
    assert layout.type_of("x.md") == "doc"


def test_dates():
    assert meta.document_date("journal/2031/2031-04-02.md", {"updated": "2031-05-01"}) == "2031-04-02"
    assert meta.document_date("hosts/pg1.md", {"updated": dt.date(2031, 5, 1)}) == "2031-05-01"
    assert meta.document_date("hosts/pg1.md", {"created": "2031-01-01T10:00:00Z"}) == "2031-01-01"
    assert meta.document_date("hosts/pg1.md", {"date": "2031-02-30"}) is None
    assert meta.document_date("x.md", {}) is None
    assert meta.heading_dates(["Log", "2030-01-16 session 1", "09:00 thing"]) == "2030-01-16"


def test_stale_markers():
    assert meta.section_is_stale("Backups (obsolete)", "text")
    assert meta.section_is_stale("Backups", "(superseded 2030-02-03: see § Backups)\n\nold")
    assert meta.section_is_stale("Backups", "**Deprecated:** use the other one")
    assert not meta.section_is_stale("Backups", "This replaced the superseded setup.")
    assert meta.section_is_stale("Older method: pg_basebackup", "Until June we rebuilt with a base backup.")
    assert meta.section_is_stale("Legacy setup", "text")
    assert not meta.section_is_stale("Dropping events_old", "text")
    assert not meta.section_is_stale("How old backups expire", "text")
    assert meta.document_is_stale({"status": "Superseded"})


def test_entities_and_mentions():
    e = meta.entity_from("host", "hosts/db1.md", {"host": "db1", "aliases": ["pg-primary"], "ips": ["10.20.1.11"]},
                         ENTITY_TYPES)
    assert e.name == "db1" and set(e.aliases) == {"pg-primary", "10.20.1.11"}
    assert meta.entity_from("journal", "journal/x.md", {"host": "db1"}, ENTITY_TYPES) is None
    m = meta.EntityMatcher([e, meta.Entity("db2", "hosts/db2.md", ["reports-db"])])
    assert m.mentions("ssh to pg-primary then 10.20.1.11 and reports-db") == ["db1", "db2"]
    assert m.mentions("db10 and 10.20.1.111 and xdb1") == []
    assert m.mentions("DB1 is down.") == ["db1"]


def test_tags():
    assert meta.tags_of({"tags": ["Postgres", "#ops"]}) == ["ops", "postgres"]
    assert meta.tags_of({"tags": "a, b c"}) == ["a", "b", "c"]
    assert meta.tags_of({"tags": 5}) == []


def test_a_section_ending_in_thousands_of_blank_lines_is_split_without_recursion():
    """Found by bench_robustness's mutated files: the trailing-LF case recursed once per LF
    (RecursionError on a 1.7 KB note ending in ~1,600 newlines)."""
    text = "## Note\n\nbody\n" + "\n" * 5000
    parts = chunks.split_section(text, 10)
    assert "\n".join(p.text for p in parts) == text
    assert (parts[0].start_line, parts[-1].end_line) == (10, 12)   # trailing LFs end the last line
    assert parts[-1].text.endswith("body\n" + "\n" * 5000)
