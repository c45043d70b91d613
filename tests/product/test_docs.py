"""The README and docs/ are for users: short, true to the CLI, and about the project only.

They are read by people who have this repository and nothing else, so they hold no path of some
machine, no work-log wording, and no link or command that does not exist.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support.paths import PROJECT
README = PROJECT / "README.md"
PAGES = [README, *sorted((PROJECT / "docs").glob("*.md"))]

# Wording that only makes sense to whoever wrote the project, or paths only their machine has.
FORBIDDEN = {
    "a machine path": re.compile(r"(?<![\w.~])/(work|home|root|Users)/\w|(?<![\w.])/tmp/\w|\.\./shared\b"),
    "a work-log round or session": re.compile(r"(?i)\b(round|session) \d+\b|\b(this|last|previous|next) round\b"),
    "an issue number": re.compile(r"(?i)\bissue #?\d+\b"),
    "notes outside the repository": re.compile(r"FIELD[- ]NOTES|DESIGN\.md"),
    "who did the work": re.compile(r"(?i)\bthe lead\b|\b(by|from) (a|the) helper\b|\ba helper's\b|\bhelper-\d+"),
}
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)   # examples inside code are not links of the page


def test_the_readme_is_short():
    assert len(README.read_text().splitlines()) <= 250


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(PROJECT).as_posix())
def test_no_machine_path_or_work_log_wording(page):
    found = [f"{page.name}:{i}: {what}: {m.group(0)!r}"
             for i, line in enumerate(page.read_text().splitlines(), 1)
             for what, pattern in FORBIDDEN.items() for m in [pattern.search(line)] if m]
    assert found == []


def test_the_wording_check_sees_what_it_forbids():
    """The patterns must match the shapes they exist for, or the check above cannot fail."""
    samples = {"a machine path": "see /work/cache/s10/ltr.py", "a work-log round or session": "as Round 6 found",
               "an issue number": "the goal of issue 10", "notes outside the repository": "(FIELD-NOTES)",
               "who did the work": "measured by a helper"}
    for what, text in samples.items():
        assert FORBIDDEN[what].search(text), what
    assert not FORBIDDEN["a machine path"].search("~/.local/share/remembrancer and $XDG_RUNTIME_DIR/x")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(PROJECT).as_posix())
def test_every_relative_link_resolves(page):
    broken = [target for target in LINK.findall(CODE.sub("", page.read_text()))
              if "://" not in target and not target.startswith("mailto:")
              and not (page.parent / target).resolve().exists()]
    assert broken == []


def _subcommands() -> set[str]:
    out = subprocess.run([sys.executable, "-m", "remembrancer", "--help"], capture_output=True, text=True,
                         check=True).stdout
    commands = set(re.findall(r"^    ([a-z][\w-]*)\b", out, re.M))   # argparse lists each under COMMAND
    assert {"index", "search", "mcp"} <= commands, out
    return commands


def test_every_command_the_readme_shows_exists():
    shown = set(re.findall(r"^\s*remembrancer ([a-z][\w-]*)", README.read_text(), re.M))
    shown |= set(re.findall(r"`remembrancer ([a-z][\w-]*)", README.read_text()))
    assert shown, "the README shows no command"
    assert shown - _subcommands() == set()
