"""Tests for indexer.ingest.markdown: front matter, sections with breadcrumbs, fence repair.

ROBUSTNESS_CASES are the 67 parser cases of the shared evaluation set
(eval/robustness/robustness_cases.jsonl, from hishamkaram/markdown-memory, MIT), copied here so
that the project stands alone. The peer's preamble name "[Overview / Preamble]" is our "";
cases whose structure differs by design say so in `adapted`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remembrancer.indexer.ingest.markdown import (
    PREAMBLE_HEADING,
    UNTITLED_HEADING,
    ParsedDocument,
    Section,
    parse_markdown,
    parse_plain,
    with_front_matter_preamble,
)
from tests.support.markdown import assert_tiling, markdownish
from tests.support.paths import TEST_DATA


def _fixture(name: str) -> str:
    return (TEST_DATA / name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class Case:
    id: str
    markdown: str
    expect: dict[str, Any]
    adapted: str = ""  # why the expectation differs from the peer's


ROBUSTNESS_CASES = [
    Case(
        "skip-h1-to-h4",
        "# Root\n"
        "\n"
        "#### Deep\n"
        "\n"
        "text\n",
        {"heading_paths": ["Root", "Root > Deep"]},
    ),
    Case(
        "stack-pops-ge-levels",
        "# A\n"
        "#### D\n"
        "## B\n"
        "### C\n"
        "###### F\n"
        "### C2\n"
        "# Z\n"
        "## Y\n",
        {"heading_paths": ["A",
                           "A > D",
                           "A > B",
                           "A > B > C",
                           "A > B > C > F",
                           "A > B > C2",
                           "Z",
                           "Z > Y"]},
    ),
    Case(
        "starts-below-h1",
        "### Only\n"
        "\n"
        "## Up\n"
        "\n"
        "#### Down\n",
        {"heading_paths": ["Only", "Up", "Up > Down"]},
    ),
    Case(
        "duplicate-breadcrumbs",
        "# Log\n"
        "## Fixed\n"
        "a\n"
        "### Detail\n"
        "x\n"
        "## Fixed\n"
        "b\n"
        "### Detail\n"
        "y\n"
        "## Fixed\n"
        "c\n",
        {"heading_paths": ["Log",
                           "Log > Fixed",
                           "Log > Fixed > Detail",
                           "Log > Fixed [2]",
                           "Log > Fixed [2] > Detail",
                           "Log > Fixed [3]"]},
    ),
    Case(
        "setext-headings",
        "Title\n"
        "=====\n"
        "\n"
        "body\n"
        "\n"
        "Sub\n"
        "---\n"
        "\n"
        "more\n",
        {"heading_paths": ["Title", "Title > Sub"]},
    ),
    Case(
        "inline-markup-in-title",
        "# The `orbit` **CLI** and [docs](http://x) ![logo](l.png) ##\n",
        {"heading_paths": ["The orbit CLI and docs logo"]},
    ),
    Case(
        "empty-heading",
        "#\n"
        "\n"
        "text\n",
        {"section_count": 1},
    ),
    Case(
        "headings-in-quotes-and-lists",
        "# Real\n"
        "\n"
        "> ## Quoted\n"
        "> text\n"
        "\n"
        "- item\n"
        "\n"
        "  ## In List\n"
        "\n"
        "tail\n",
        {"heading_paths": ["Real"]},
    ),
    Case(
        "seven-hashes",
        "# A\n"
        "\n"
        "####### nope\n",
        {"heading_paths": ["A"]},
    ),
    Case(
        "no-preamble-leading-blank-lines",
        "\n"
        "\n"
        "# Title\n"
        "\n"
        "text\n",
        {"heading_paths": ["Title"]},
    ),
    Case(
        "front-matter-not-setext",
        "---\n"
        "title: From Front Matter\n"
        "tags: [a, b]\n"
        "---\n"
        "\n"
        "## Section\n"
        "\n"
        "body\n",
        {"heading_paths": ["Section"], "title": "From Front Matter"},
        adapted="front matter is not a section (peer: a preamble section)",
    ),
    Case(
        "h1-beats-front-matter-title",
        "---\n"
        "title: FM\n"
        "---\n"
        "# Real Title\n",
        {"title": "Real Title"},
    ),
    Case(
        "unterminated-front-matter",
        "---\n"
        "\n"
        "# Heading\n"
        "\n"
        "text\n",
        {"heading_paths_include": ["Heading"]},
    ),
    Case(
        "leading-thematic-break",
        "---\n"
        "\n"
        "# Project\n"
        "\n"
        "Intro\n"
        "\n"
        "---\n"
        "\n"
        "## Usage\n"
        "\n"
        "run it\n",
        {"heading_paths_suffix": ["Project", "Project > Usage"], "title": "Project"},
    ),
    Case(
        "heading-then-ellipsis",
        "---\n"
        "# Project\n"
        "\n"
        "Wait for it\n"
        "...\n"
        "\n"
        "## Usage\n"
        "\n"
        "run\n",
        {"heading_paths_include": ["Project > Usage"]},
    ),
    Case(
        "prose-with-colon-between-rules",
        "---\n"
        "Note: read this first\n"
        "Some prose follows here\n"
        "---\n"
        "\n"
        "# T\n",
        {"title": "T"},
    ),
    Case(
        "rich-front-matter",
        "---\n"
        "# generated by a tool\n"
        "title: 'Real'\n"
        "tags:\n"
        "  - a\n"
        "  - b\n"
        "summary: |\n"
        "  multi\n"
        "  line\n"
        "\n"
        "nested:\n"
        "  key: value\n"
        "---\n"
        "\n"
        "## Body\n"
        "\n"
        "text\n",
        {"heading_paths": ["Body"], "title": "Real"},
        adapted="front matter is not a section (peer: a preamble section)",
    ),
    Case(
        "front-matter-key-variant-1",
        "---\n"
        "\"title\": Quoted\n"
        "---\n"
        "\n"
        "## Body\n"
        "\n"
        "text\n",
        {"heading_paths": ["Body"]},
        adapted="front matter is not a section (peer: a preamble section)",
    ),
    Case(
        "front-matter-key-variant-2",
        "---\n"
        "'title': Quoted\n"
        "---\n"
        "\n"
        "## Body\n"
        "\n"
        "text\n",
        {"heading_paths": ["Body"]},
        adapted="front matter is not a section (peer: a preamble section)",
    ),
    Case(
        "front-matter-key-variant-3",
        "---\n"
        "page title: Spaced\n"
        "title: Quoted\n"
        "---\n"
        "\n"
        "## Body\n"
        "\n"
        "text\n",
        {"heading_paths": ["Body"]},
        adapted="front matter is not a section (peer: a preamble section)",
    ),
    Case(
        "front-matter-key-variant-4",
        "---\n"
        "title: Quoted\n"
        "---\n"
        "\n"
        "## Body\n"
        "\n"
        "text\n",
        {"heading_paths": ["Body"]},
        adapted="front matter is not a section (peer: a preamble section)",
    ),
    Case(
        "admonition-between-rules",
        "---\n"
        "Note: this is prose, not YAML\n"
        "---\n"
        "\n"
        "# Heading\n"
        "\n"
        "Body\n",
        {"heading_paths_include": ["Note: this is prose, not YAML"], "title": "Heading"},
    ),
    Case(
        "single-key-front-matter",
        "---\n"
        "title: Real\n"
        "---\n"
        "\n"
        "## Body\n"
        "\n"
        "text\n",
        {"heading_paths": ["Body"], "title": "Real"},
        adapted="front matter is not a section (peer: a preamble section)",
    ),
    Case(
        "non-ascii-front-matter-keys",
        "---\n"
        "标题: 指南\n"
        "автор: Иван\n"
        "---\n"
        "\n"
        "# 手册\n"
        "\n"
        "正文。\n",
        {"heading_paths": ["手册"], "title": "手册"},
        adapted="front matter is not a section (peer: a preamble section)",
    ),
    Case(
        "digit-key-not-front-matter",
        "---\n"
        "2024: review\n"
        "---\n"
        "\n"
        "# T\n",
        {"heading_paths_not": ["T"]},
    ),
    Case(
        "empty-file",
        "",
        {"section_count": 0},
    ),
    Case(
        "whitespace-only-1",
        " ",
        {"section_count": 0},
    ),
    Case(
        "whitespace-only-2",
        "\n"
        "\n"
        "\n",
        {"section_count": 0},
    ),
    Case(
        "whitespace-only-3",
        " \t \n"
        "  \n",
        {"section_count": 0},
    ),
    Case(
        "no-headings",
        "just a paragraph\n"
        "\n"
        "and another one\n",
        {"heading_paths": [""]},
    ),
    Case(
        "crlf-line-endings",
        "# Title\r\n"
        "\r\n"
        "body\r\n"
        "\r\n"
        "## Sub\r\n"
        "\r\n"
        "text\r\n",
        {"heading_paths": ["Title", "Title > Sub"]},
    ),
    Case(
        "unclosed-fence-recovers-later-sections",
        "# Doc\n"
        "\n"
        "## Setup\n"
        "\n"
        "```bash\n"
        "export A=1\n"
        "\n"
        "# a shell comment\n"
        "run\n"
        "\n"
        "## Usage\n"
        "\n"
        "use it\n"
        "\n"
        "### Detail\n"
        "\n"
        "more\n",
        {"heading_paths": ["Doc", "Doc > Setup", "Doc > Usage", "Doc > Usage > Detail"]},
    ),
    Case(
        "unclosed-tilde-fence",
        "# T\n"
        "\n"
        "~~~\n"
        "code\n"
        "\n"
        "## After\n"
        "\n"
        "text\n",
        {"heading_paths": ["T", "T > After"]},
    ),
    Case(
        "two-unclosed-fences",
        "# D\n"
        "\n"
        "```\n"
        "a\n"
        "\n"
        "## One\n"
        "\n"
        "~~~\n"
        "b\n"
        "\n"
        "## Two\n"
        "\n"
        "end\n",
        {"heading_paths": ["D", "D > One", "D > Two"]},
    ),
    Case(
        "second-backtick-closes-first",
        "# D\n"
        "\n"
        "```\n"
        "a\n"
        "\n"
        "## One\n"
        "\n"
        "```\n"
        "b\n"
        "\n"
        "## Two\n"
        "\n"
        "end\n",
        {"heading_paths": ["D", "D > Two"]},
    ),
    Case(
        "unclosed-fence-at-eof",
        "# Doc\n"
        "\n"
        "```python\n"
        "print('never closed')\n",
        {"heading_paths": ["Doc"]},
    ),
    Case(
        "unclosed-fence-trailing-blanks",
        "# Doc\n"
        "\n"
        "```\n"
        "code\n"
        "\n"
        "## Next\n"
        "\n"
        "text\n"
        "\n"
        "\n"
        "\n",
        {"heading_paths": ["Doc", "Doc > Next"]},
    ),
    Case(
        "h1-hash-is-comment-in-python-fence",
        "# Doc\n"
        "\n"
        "```python\n"
        "x = 1\n"
        "\n"
        "# Configure logging\n"
        "y = 2\n",
        {"heading_paths": ["Doc"]},
    ),
    Case(
        "h1-after-unclosed-json-fence",
        "## Doc\n"
        "\n"
        "```json\n"
        "{\"a\": 1}\n"
        "\n"
        "# Next Chapter\n"
        "\n"
        "text\n",
        {"heading_paths": ["Doc", "Next Chapter"]},
    ),
    Case(
        "closed-md-fence-at-eof",
        "# Doc\n"
        "\n"
        "```md\n"
        "\n"
        "## Example Heading\n"
        "\n"
        "```\n",
        {"heading_paths": ["Doc"]},
    ),
    Case(
        "closed-md-fence-middle",
        "# Doc\n"
        "\n"
        "```md\n"
        "\n"
        "## Example Heading\n"
        "\n"
        "```\n"
        "\n"
        "## Real\n",
        {"heading_paths": ["Doc", "Doc > Real"]},
    ),
    Case(
        "unclosed-then-later-info-fence",
        "# A\n"
        "\n"
        "```bash\n"
        "ls\n"
        "\n"
        "## B\n"
        "\n"
        "B text\n"
        "\n"
        "```python\n"
        "x = 1\n"
        "```\n"
        "\n"
        "## C\n"
        "\n"
        "more\n",
        {"heading_paths": ["A", "A > B", "A > C"]},
    ),
    Case(
        "bare-fence-parity-limit",
        "# A\n"
        "\n"
        "```bash\n"
        "ls\n"
        "\n"
        "## B\n"
        "\n"
        "B text\n"
        "\n"
        "```\n"
        "x = 1\n"
        "```\n"
        "\n"
        "## C\n"
        "\n"
        "more\n"
        "\n"
        "```\n"
        "y\n"
        "```\n"
        "\n"
        "## D\n"
        "\n"
        "end\n",
        {"heading_paths": ["A", "A > D"]},
    ),
    Case(
        "longer-outer-fence",
        "# Doc\n"
        "\n"
        "````md\n"
        "\n"
        "## Example\n"
        "\n"
        "```python\n"
        "x = 1\n"
        "```\n"
        "\n"
        "````\n"
        "\n"
        "## Real\n",
        {"heading_paths": ["Doc", "Doc > Real"]},
    ),
    Case(
        "tilde-outer-fence",
        "# Doc\n"
        "\n"
        "~~~md\n"
        "\n"
        "## Example\n"
        "\n"
        "```python\n"
        "x = 1\n"
        "```\n"
        "\n"
        "~~~\n"
        "\n"
        "## Real\n",
        {"heading_paths": ["Doc", "Doc > Real"]},
    ),
    Case(
        "hash-comments-in-closed-fences",
        "# Doc\n"
        "\n"
        "```bash\n"
        "make\n"
        "\n"
        "## build everything\n"
        "make all\n"
        "```\n"
        "\n"
        "## Next\n"
        "\n"
        "```yaml\n"
        "a: 1\n"
        "\n"
        "## section comment\n"
        "b: 2\n"
        "```\n"
        "\n"
        "## Last\n",
        {"heading_paths": ["Doc", "Doc > Next", "Doc > Last"]},
    ),
    Case(
        "reject-non-repairing-cut",
        "# Doc\n"
        "\n"
        "```bash\n"
        "make\n"
        "\n"
        "## comment\n"
        "make all\n"
        "```\n"
        "\n"
        "## Middle\n"
        "\n"
        "text\n"
        "\n"
        "```\n"
        "never closed\n"
        "\n"
        "## After\n"
        "\n"
        "end\n",
        {"heading_paths": ["Doc", "Doc > Middle", "Doc > After"]},
    ),
    Case(
        "markdown-sample-with-inner-fence",
        "# Skill Authoring\n"
        "\n"
        "## Writing a Skill\n"
        "\n"
        "Put this in `SKILL.md`:\n"
        "\n"
        "```markdown\n"
        "# My Skill\n"
        "\n"
        "## Usage\n"
        "\n"
        "Run the command:\n"
        "\n"
        "```bash\n"
        "my-skill run\n"
        "```\n"
        "\n"
        "That is all you need.\n"
        "\n"
        "## Publishing\n"
        "\n"
        "Push the folder.\n",
        {"heading_paths": ["Skill Authoring",
                           "Skill Authoring > Writing a Skill",
                           "Skill Authoring > Publishing"]},
    ),
    Case(
        "sample-language-exempt-markdown",
        "# Doc\n"
        "\n"
        "Intro.\n"
        "\n"
        "```markdown\n"
        "\n"
        "## Example\n"
        "\n"
        "body\n"
        "\n"
        "```js\n"
        "x()\n"
        "```\n"
        "\n"
        "Tail.\n",
        {"heading_paths": ["Doc"]},
    ),
    Case(
        "sample-language-exempt-md",
        "# Doc\n"
        "\n"
        "Intro.\n"
        "\n"
        "```md\n"
        "\n"
        "## Example\n"
        "\n"
        "body\n"
        "\n"
        "```js\n"
        "x()\n"
        "```\n"
        "\n"
        "Tail.\n",
        {"heading_paths": ["Doc"]},
    ),
    Case(
        "sample-language-exempt-text",
        "# Doc\n"
        "\n"
        "Intro.\n"
        "\n"
        "```text\n"
        "\n"
        "## Example\n"
        "\n"
        "body\n"
        "\n"
        "```js\n"
        "x()\n"
        "```\n"
        "\n"
        "Tail.\n",
        {"heading_paths": ["Doc"]},
    ),
    Case(
        "sample-language-exempt-bare",
        "# Doc\n"
        "\n"
        "Intro.\n"
        "\n"
        "```\n"
        "\n"
        "## Example\n"
        "\n"
        "body\n"
        "\n"
        "```js\n"
        "x()\n"
        "```\n"
        "\n"
        "Tail.\n",
        {"heading_paths": ["Doc"]},
    ),
    Case(
        "stray-closing-fence",
        "# Data Pipeline\n"
        "\n"
        "## Loading\n"
        "\n"
        "```python\n"
        "import pandas as pd\n"
        "\n"
        "## Load the raw frame\n"
        "\n"
        "frame = pd.read_csv(\"in.csv\")\n"
        "```\n"
        "\n"
        "## Cleaning\n"
        "\n"
        "Drop the nulls.\n"
        "\n"
        "## Output\n"
        "\n"
        "Write it back.\n"
        "\n"
        "```\n",
        {"heading_paths": ["Data Pipeline",
                           "Data Pipeline > Loading",
                           "Data Pipeline > Cleaning",
                           "Data Pipeline > Output"]},
    ),
    Case(
        "stray-fence-after-md-sample",
        "# Doc\n"
        "\n"
        "```md\n"
        "intro\n"
        "\n"
        "## Sample\n"
        "\n"
        "body\n"
        "```\n"
        "\n"
        "## Real Section\n"
        "\n"
        "prose\n"
        "\n"
        "```\n",
        {"heading_paths": ["Doc", "Doc > Real Section"]},
    ),
    Case(
        "literal-suffix-collision",
        "# Log\n"
        "\n"
        "## Fixed\n"
        "\n"
        "a\n"
        "\n"
        "## Fixed [2]\n"
        "\n"
        "b\n"
        "\n"
        "## Fixed\n"
        "\n"
        "c\n",
        {"heading_paths": ["Log", "Log > Fixed", "Log > Fixed [2]", "Log > Fixed [3]"]},
    ),
    Case(
        "many-duplicates-lookalikes",
        "# X\n"
        "\n"
        "# X [3]\n"
        "\n"
        "# X\n"
        "\n"
        "# X\n"
        "\n"
        "# X [2]\n",
        {"unique_path_count": 5},
    ),
    Case(
        "heading-named-like-preamble",
        "intro\n"
        "\n"
        "# [Overview / Preamble]\n"
        "\n"
        "body\n",
        {"heading_paths": ["", "[Overview / Preamble]"]},
        adapted="our preamble is \"\", so the heading does not collide (peer: \" [2]\")",
    ),
    Case(
        "type-parameters-in-titles",
        "# Types\n"
        "\n"
        "## Option<T>\n"
        "\n"
        "a\n"
        "\n"
        "## Option<U>\n"
        "\n"
        "b\n"
        "\n"
        "## The <details> element\n"
        "\n"
        "c\n",
        {"heading_paths": ["Types",
                           "Types > Option<T>",
                           "Types > Option<U>",
                           "Types > The <details> element"]},
    ),
    Case(
        "formatting-html-stripped",
        "# The <b>bold</b> H<sub>2</sub>O <a href=\"x\">link</a><!-- note -->\n",
        {"heading_paths": ["The bold H2O link"]},
    ),
    Case(
        "br-in-heading",
        "# First<br>Second\n"
        "\n"
        "| Flag | Desc |\n"
        "| --- | --- |\n"
        "| `-a` | one<br/>two |\n",
        {"heading_paths": ["First Second"]},
    ),
    Case(
        "html-comment-only-1",
        "## Stub\n"
        "\n"
        "<!-- a > b -->\n",
        {"heading_paths": ["Stub"], "searchable_body_text": ""},
    ),
    Case(
        "html-comment-only-2",
        "## Stub\n"
        "\n"
        "<!--\n"
        "<img src=\"x.png\">\n"
        "-->\n",
        {"heading_paths": ["Stub"], "searchable_body_text": ""},
    ),
    Case(
        "html-comment-only-3",
        "## Stub\n"
        "\n"
        "<!--\n"
        "> Note: this was the old wording.\n"
        "-->\n",
        {"heading_paths": ["Stub"], "searchable_body_text": ""},
    ),
    Case(
        "html-comment-only-4",
        "## Stub\n"
        "\n"
        "<!-- never closed > still hidden\n",
        {"heading_paths": ["Stub"], "searchable_body_text": ""},
    ),
    Case(
        "heading-with-one-huge-line",
        "## Release Notes\n\n" + "word " * 1500 + "\n",
        {"first_heading_path": "Release Notes (Part 1)"},
    ),
    Case(
        "fixture-clean-doc",
        _fixture('clean_doc.md'),
        {"heading_paths": ["",
                           "Orbit Gateway",
                           "Orbit Gateway > Installation",
                           "Orbit Gateway > Installation > From Source",
                           "Orbit Gateway > Configuration",
                           "Orbit Gateway > Configuration > Environment Variables",
                           "Orbit Gateway > Configuration > Command Line Flags",
                           "Orbit Gateway > Operations",
                           "Orbit Gateway > Operations > Health Checks",
                           "Orbit Gateway > Operations > Graceful Shutdown",
                           "Orbit Gateway > License"],
         "title": "Orbit Gateway"},
    ),
    Case(
        "fixture-messy-doc",
        _fixture('messy_doc.md'),
        {"heading_paths_include": ["Messy Service Notes > Deeply Nested Without Parents",
                                   "Messy Service Notes > Back To Level Two",
                                   "Messy Service Notes > Duplicate",
                                   "Messy Service Notes > Duplicate [2]",
                                   "Messy Service Notes > Section After Unclosed Fence",
                                   "Messy Service Notes > Section After Unclosed Fence > Child "
                                   "After Recovery"],
         "heading_paths_exclude_substring": ["this comment must not"],
         "title": "Messy Service Notes"},
    ),
]

# Splitting an oversized section into "(Part n)" pieces is the chunker's job, not the parser's.
CHUNKER_CASES = {"heading-with-one-huge-line"}


def _paths(doc: ParsedDocument) -> list[str]:
    return [section.heading for section in doc.sections]


def _check(doc: ParsedDocument, kind: str, expected: Any) -> None:
    paths = _paths(doc)
    if kind == "heading_paths":
        assert paths == expected
    elif kind == "heading_paths_include":
        assert [p for p in expected if p not in paths] == []
    elif kind == "heading_paths_suffix":
        assert paths[-len(expected):] == expected
    elif kind == "heading_paths_not":
        assert paths != expected
    elif kind == "heading_paths_exclude_substring":
        assert [p for p in paths for s in expected if s in p] == []
    elif kind == "section_count":
        assert len(doc.sections) == expected
    elif kind == "unique_path_count":
        assert len(paths) == len(set(paths)) == expected
    elif kind == "title":
        assert doc.title == expected
    elif kind == "first_heading_path":
        assert paths[0] == expected
    elif kind == "searchable_body_text":
        assert doc.sections[0].body == expected
    else:
        raise AssertionError(f"unknown expectation kind {kind!r}")


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in ROBUSTNESS_CASES])
def test_robustness_case(case: Case) -> None:
    doc = parse_markdown(case.markdown, "case.md")
    if case.id in CHUNKER_CASES:
        # Split parts are the chunker's: every part keeps the section's breadcrumb (our
        # "Release Notes", part 1 of n, for the peer's "Release Notes (Part 1)").
        from remembrancer.indexer.ingest.chunks import split_section

        s = doc.sections[0]
        parts = split_section(s.text, s.start_line)
        assert len(parts) > 1 and parts[0].part == 1
        assert case.expect["first_heading_path"] == f"{s.heading} (Part {parts[0].part})"
        return
    for kind, expected in case.expect.items():
        _check(doc, kind, expected)
    assert_tiling(doc)


def test_all_robustness_cases_are_ported() -> None:
    assert len(ROBUSTNESS_CASES) == 67
    assert len({c.id for c in ROBUSTNESS_CASES}) == 67


def test_one_huge_line_stays_in_its_section_verbatim() -> None:
    """The parser's half of heading-with-one-huge-line: no split, nothing lost."""
    line = "word " * 1500
    doc = parse_markdown("## Release Notes\n\n" + line + "\n")
    assert _paths(doc) == ["Release Notes"]
    assert doc.sections[0].body == line.strip()
    assert doc.sections[0].text == "## Release Notes\n\n" + line + "\n"


# --- the tiling property -------------------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdownish())
def test_sections_tile_the_body_for_any_markdownish_text(text: str) -> None:
    doc = parse_markdown(text, "random.md")
    assert_tiling(doc)
    assert "\r" not in "".join(doc.lines)
    assert all(w.startswith("random.md: ") for w in doc.warnings)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdownish(), st.integers(min_value=1, max_value=60))
def test_plain_parts_tile_the_body_like_sections(text: str, part_chars: int) -> None:
    """The large-document fallback (parse_plain) keeps parse_markdown's tiling guarantee, reads the
    same front matter, and gives every part a unique heading."""
    doc = parse_plain(text, "random.md", part_chars=part_chars)
    assert_tiling(doc)
    assert doc.front_matter == parse_markdown(text, "random.md").front_matter
    assert all(s.heading.startswith("Part ") and s.level == 1 for s in doc.sections)
    assert len({s.heading for s in doc.sections}) == len(doc.sections)


def test_plain_parts_are_cut_at_blank_lines_past_the_size_and_never_hold_headings() -> None:
    text = "---\ntitle: Log\n---\n# One\n" + "word " * 10 + "\n\n## Two\nshort\n\n" + "x" * 30 + "\n"
    doc = parse_plain(text, "log.md", part_chars=40)
    assert doc.title == "Log"
    assert [(s.heading, s.start_line, s.end_line) for s in doc.sections] == [
        ("Part 1 (lines 4-6)", 4, 6), ("Part 2 (lines 7-10)", 7, 10)]
    assert doc.sections[1].body == "## Two\nshort\n\n" + "x" * 30   # a heading is just a line here


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_never_raises_on_arbitrary_text(text: str) -> None:
    assert_tiling(parse_markdown(text))


# --- a normal document ---------------------------------------------------------------------

NORMAL = """\
---
title: Runbook
tags: [ops, db]
---
Intro line.

# Database

Primary is db1.

## Failover
Promote the replica.
<!-- old: promote db3 -->

```bash
# not a heading
pg_ctl promote
```

Sub Title
---------
setext body

## Backups <em>nightly</em>
"""


def test_line_ranges_of_a_normal_document() -> None:
    doc = parse_markdown(NORMAL, "ops/runbook.md")
    assert doc.body_start_line == 5
    assert doc.front_matter == {"title": "Runbook", "tags": ["ops", "db"]}
    assert doc.title == "Database"
    assert doc.warnings == []
    got = [(s.heading, s.title, s.level, s.start_line, s.end_line) for s in doc.sections]
    assert got == [
        ("", "", 0, 5, 6),
        ("Database", "Database", 1, 7, 10),
        ("Database > Failover", "Failover", 2, 11, 19),
        ("Database > Sub Title", "Sub Title", 2, 20, 23),
        ("Database > Backups nightly", "Backups nightly", 2, 24, 24),
    ]
    assert_tiling(doc)


def test_section_text_and_body() -> None:
    doc = parse_markdown(NORMAL, "ops/runbook.md")
    failover = doc.sections[2]
    assert failover.text.startswith("## Failover\nPromote the replica.\n")
    assert failover.text.endswith("pg_ctl promote\n```\n\n")
    # The comment line is gone; the fence, `#` line included, is kept verbatim.
    assert failover.body == (
        "Promote the replica.\n\n\n```bash\n# not a heading\npg_ctl promote\n```"
    )
    setext = doc.sections[3]
    assert setext.body == "setext body"  # both heading lines are left out
    assert doc.sections[0].body == "Intro line."
    assert doc.lines[doc.sections[1].start_line - 1] == "# Database"


def test_html_comments_inside_code_are_kept() -> None:
    doc = parse_markdown("# H\n\n```html\n<!-- start\n```\n\nVisible text.\n")
    assert doc.sections[0].body == "```html\n<!-- start\n```\n\nVisible text."


# --- front matter --------------------------------------------------------------------------


def test_front_matter_is_parsed_into_a_dict() -> None:
    doc = parse_markdown("---\ntitle: T\ndate: 2031-04-01\nhosts:\n  - db1\n---\n# H\n")
    assert doc.front_matter["title"] == "T"
    assert doc.front_matter["hosts"] == ["db1"]
    assert str(doc.front_matter["date"]) == "2031-04-01"
    assert doc.body_start_line == 7
    assert _paths(doc) == ["H"]


def test_front_matter_may_end_with_dots() -> None:
    doc = parse_markdown("---\ntitle: T\n...\nbody\n")
    assert doc.front_matter == {"title": "T"}
    assert doc.body_start_line == 4


def test_invalid_yaml_front_matter_warns_with_the_path_and_keeps_the_body() -> None:
    doc = parse_markdown("---\ntitle: T\ntags: [a, b\n---\n# Heading\n\ntext\n", "notes/a.md")
    assert doc.front_matter == {"title": "T"}   # read leniently; the broken list is left out
    assert doc.body_start_line == 5  # skipped, so it cannot become a setext heading
    assert _paths(doc) == ["Heading"]
    assert len(doc.warnings) == 1
    assert doc.warnings[0].startswith("notes/a.md: invalid YAML front matter at line ")
    assert "read leniently" in doc.warnings[0]
    kept = with_front_matter_preamble(doc)
    assert kept.sections[0].heading == "" and "tags: [a, b" in kept.sections[0].text   # its text stays searchable


def test_front_matter_title_is_the_fallback_title() -> None:
    assert parse_markdown("---\ntitle: From FM\n---\n## Not H1\n").title == "From FM"
    assert parse_markdown("---\ntitle: 42\n---\ntext\n").title == "42"
    assert parse_markdown("## Only H2\n").title == ""


def test_list_between_rules_is_not_front_matter() -> None:
    doc = parse_markdown("---\n- a\n- b\n---\n# T\n")
    assert doc.front_matter == {}
    assert doc.body_start_line == 1


def test_front_matter_only_document_has_no_sections() -> None:
    doc = parse_markdown("---\ntitle: T\n---\n")
    assert doc.sections == []
    assert doc.title == "T"


# --- headings and titles -------------------------------------------------------------------


def test_empty_heading_gets_a_placeholder_title() -> None:
    doc = parse_markdown("# A\n## \ntext\n### <!-- -->\n")
    untitled = UNTITLED_HEADING
    assert _paths(doc) == ["A", f"A > {untitled}", f"A > {untitled} > {untitled}"]
    assert doc.sections[1].title == UNTITLED_HEADING


def test_titles_strip_inline_markup() -> None:
    doc = parse_markdown(
        "# *em* __strong__ ~~x~~ \\# <https://a.b> &amp; `a<b>`\n"
        "# Vec<String> and <kbd>Ctrl</kbd>+<kbd>C</kbd>\n"
        "# A<br/>B<br>C\n"
    )
    assert [s.title for s in doc.sections] == [
        "em strong ~~x~~ # https://a.b & a<b>",
        "Vec<String> and Ctrl+C",
        "A B C",
    ]


def test_headings_inside_closed_fences_are_code() -> None:
    doc = parse_markdown("# A\n\n~~~\n# B\n~~~\n\n````\n```\n## C\n```\n````\n")
    assert _paths(doc) == ["A"]
    assert parse_markdown("# A\n\n~~~\n# B\n~~~\n").warnings == []


def test_preamble_heading_constant() -> None:
    doc = parse_markdown("intro\n# H\n")
    assert doc.sections[0].heading == PREAMBLE_HEADING == ""
    preamble = doc.sections[0]
    assert (preamble.level, preamble.start_line, preamble.end_line) == (0, 1, 1)


def test_breadcrumb_suffixes_are_unique_for_many_duplicates() -> None:
    doc = parse_markdown("# X\n" * 5 + "# X [2]\n")
    assert _paths(doc) == ["X", "X [2]", "X [3]", "X [4]", "X [5]", "X [2] [2]"]
    assert [s.title for s in doc.sections] == ["X"] * 5 + ["X [2]"]


# --- fence repair --------------------------------------------------------------------------


def test_fence_repair_keeps_original_line_numbers_and_warns() -> None:
    text = "# Doc\n\n```bash\nls\n# comment\n\n## Next\n\ntext\n"
    doc = parse_markdown(text, "notes/b.md")
    assert [(s.heading, s.start_line, s.end_line) for s in doc.sections] == [
        ("Doc", 1, 6),
        ("Doc > Next", 7, 9),
    ]
    assert doc.sections[0].text == "# Doc\n\n```bash\nls\n# comment\n\n"
    assert doc.lines == text.splitlines()
    assert doc.warnings == [
        "notes/b.md: code fence opened at line 3 looks unclosed; closed it before line 7"
    ]


def test_unrepairable_unclosed_fence_is_reported() -> None:
    doc = parse_markdown("# Doc\n\n```python\nx = 1\n# comment\n", "c.md")
    assert _paths(doc) == ["Doc"]
    assert doc.warnings == ["c.md: code fence opened at line 3 is never closed"]


def test_fence_repair_inside_front_matter_document() -> None:
    doc = parse_markdown("---\ntitle: T\n---\n# A\n```\nx\n## B\n", "d.md")
    assert [(s.heading, s.start_line) for s in doc.sections] == [("A", 4), ("A > B", 7)]
    assert doc.warnings == [
        "d.md: code fence opened at line 5 looks unclosed; closed it before line 7"
    ]


def test_many_unclosed_fences_finish() -> None:
    text = "".join(f"```bash\nx\n## H{i}\n" for i in range(3000))
    started = time.perf_counter()
    doc = parse_markdown(text, "e.md")
    assert time.perf_counter() - started < 60
    assert_tiling(doc)
    assert len(doc.sections) > 1
    assert "e.md: too many unclosed code fences; stopped repairing them" in doc.warnings


# --- line endings, odd bytes, sizes --------------------------------------------------------


def test_cr_only_input() -> None:
    doc = parse_markdown("# Title\r\rbody\r## Sub\rtext\r")
    assert _paths(doc) == ["Title", "Title > Sub"]
    assert doc.lines == ["# Title", "", "body", "## Sub", "text"]
    assert doc.sections[1].text == "## Sub\ntext\n"


def test_crlf_is_normalised_in_stored_text() -> None:
    doc = parse_markdown("# Title\r\n\r\nbody\r\n")
    assert doc.sections[0].text == "# Title\n\nbody\n"
    assert doc.sections[0].body == "body"


def test_bom_is_stripped() -> None:
    doc = parse_markdown("\ufeff---\ntitle: T\n---\n# Heading\n")
    assert doc.lines[0] == "---"
    assert doc.front_matter == {"title": "T"}
    assert _paths(doc) == ["Heading"]


def test_nul_bytes() -> None:
    doc = parse_markdown("# A\x00B\n\nx\x00y\n\n## C\n\x00\n", "nul.md")
    assert _paths(doc) == ["A\ufffdB", "A\ufffdB > C"]
    assert doc.sections[0].body == "x\x00y"  # bodies stay verbatim
    assert_tiling(doc)


def test_nul_bytes_in_front_matter_are_not_fatal() -> None:
    doc = parse_markdown("---\ntitle: a\x00b\n---\n# H\n", "nul.md")
    assert doc.front_matter == {"title": "a\ufffdb"}   # read leniently, the NUL replaced (no store keeps one)
    assert _paths(doc) == ["H"]
    assert doc.warnings and doc.warnings[0].startswith("nul.md: invalid YAML front matter")


@pytest.mark.parametrize("depth", [30, 100])
def test_deeply_nested_lists_do_not_hide_later_headings(depth: int) -> None:
    nested = "".join("  " * i + "- item\n" for i in range(depth))
    doc = parse_markdown("# Top\n\n" + nested + "\n# After\n\ntext\n", "deep.md")
    assert _paths(doc) == ["Top", "After"]
    assert doc.warnings == []


@pytest.mark.slow
@pytest.mark.parametrize("depth", [200, 3000])
def test_absurdly_nested_lists_are_reported_not_fatal(depth: int) -> None:
    nested = "".join("  " * i + "- item\n" for i in range(depth))
    doc = parse_markdown("# Top\n\n" + nested + "\n# After\n", "deep.md")
    assert doc.sections[0].heading == "Top"
    assert doc.warnings == [
        "deep.md: blocks nested over 256 levels deep; "
        "text after them may not be split into sections"
    ]
    assert_tiling(doc)


@pytest.mark.parametrize("depth", [50, 3000])
def test_deeply_nested_blockquotes(depth: int) -> None:
    doc = parse_markdown("# Top\n\n" + ">" * depth + " x\n\n# After\n")
    assert doc.sections[0].heading == "Top"
    assert_tiling(doc)


def test_deeply_nested_yaml_does_not_raise() -> None:
    doc = parse_markdown("---\nkey: " + "[" * 5000 + "\n---\n# H\n", "deep.md")
    assert doc.front_matter == {}
    assert _paths(doc) == ["H"]


@pytest.mark.slow
def test_one_hundred_thousand_headings_finish() -> None:
    text = "".join(f"{'#' * (i % 6 + 1)} Heading {i % 50}\n" for i in range(100_000))
    started = time.perf_counter()
    doc = parse_markdown(text, "big.md")
    assert time.perf_counter() - started < 60
    assert len(doc.sections) == 100_000
    assert len({s.heading for s in doc.sections}) == 100_000
    assert doc.sections[-1].end_line == 100_000


@pytest.mark.slow
def test_one_hundred_thousand_identical_headings_finish() -> None:
    doc = parse_markdown("## Same\n" * 100_000)
    assert doc.sections[-1].heading == "Same [100000]"


def test_section_is_frozen() -> None:
    section = parse_markdown("# A\n").sections[0]
    assert isinstance(section, Section)
    with pytest.raises(AttributeError):
        section.heading = "B"  # type: ignore[misc]


def test_a_heading_that_opens_a_list_item_is_a_heading(monkeypatch) -> None:
    """An outliner writes a heading as a bullet (Logseq's `- ## Steps`), its lines the bullets under
    it: it is a heading, its section running to the next heading as any other's. A heading later in
    an item, or a `#` in a bullet's text, is not."""
    text = ("- alias:: Agents\n- How the build agents are kept.\n- ## Steps\n\t- Drain the agent.\n\t- Reimage it.\n"
            "- ## Notes\n\t- ### Disk\n\t\t- Keep 200 GB free.\n- Closing bullet, still Notes > Disk.\n"
            "- A bullet with text first\n\n  ## Not a heading of its own\n- Tag #release in a bullet\n")
    doc = parse_markdown(text, "pages/Build agents.md")
    got = [(s.heading, s.level, s.start_line, s.end_line) for s in doc.sections]
    assert got == [("", 0, 1, 2), ("Steps", 2, 3, 5), ("Notes", 2, 6, 6), ("Notes > Disk", 3, 7, 13)]
    assert_tiling(doc)
    from remembrancer.indexer.ingest import markdown

    monkeypatch.setattr(markdown, "OUTLINE_HEADINGS", False)
    assert [s.heading for s in parse_markdown(text, "pages/Build agents.md").sections] == [""]
