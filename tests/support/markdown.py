"""The parser's tiling property and the Markdown-ish text that fuzzes it: the parser's own tests
and the hardening tests check the same property on the same kind of input."""

from __future__ import annotations

from hypothesis import strategies as st

from remembrancer.indexer.ingest.markdown import ParsedDocument


def assert_tiling(doc: ParsedDocument) -> None:
    """Sections tile [body_start_line, len(lines)], minus a whitespace-only preamble."""
    sections, lines = doc.sections, doc.lines
    body = lines[doc.body_start_line - 1 :]
    if all(not line.strip() for line in body):
        assert sections == []
        return
    assert sections, "a non-blank body has sections"
    expected_start = doc.body_start_line
    if sections[0].level > 0:  # no preamble section: it was blank
        preamble = lines[doc.body_start_line - 1 : sections[0].start_line - 1]
        assert all(not line.strip() for line in preamble)
        expected_start = sections[0].start_line
    for section in sections:
        assert section.start_line == expected_start
        assert section.start_line <= section.end_line
        assert section.text == "".join(
            line + "\n" for line in lines[section.start_line - 1 : section.end_line]
        )
        expected_start = section.end_line + 1
    assert sections[-1].end_line == len(lines)
    assert [s.level == 0 for s in sections].count(True) <= 1
    assert len({s.heading for s in sections}) == len(sections)


_LINE = st.one_of(
    st.sampled_from(
        [
            "", " ", "\t", "# H", "## Sub", "### Deep", "#### x", "####### seven", "#",
            "  ## indented", "    # code", "Title", "=====", "---", "...", "***", "- item",
            "  - nested", "> ## quoted", "> text", "```", "```bash", "```python", "```md",
            "````", "~~~", "~~~json", "# a comment", "key: value", "title: Doc",
            "<!-- c -->", "<!--", "-->", "text with `code`", "Option<T>", "é ü 漢字 🙂",
            "\x00", "\ufeff", "\u2028", "\x0c",
        ]
    ),
    st.text(max_size=12),
)


_NEWLINE = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def markdownish(draw: st.DrawFn) -> str:
    lines = draw(st.lists(_LINE, max_size=30))
    return "".join(line + draw(_NEWLINE) for line in lines) + draw(st.sampled_from(["", "x"]))
