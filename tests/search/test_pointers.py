"""A pointer — a list item of an index that opens with a link, the rest saying what the linked
document holds (Claude Code's `MEMORY.md`: `- [Title](file.md) — hook`) — speaks for the document
it names: a question in the hook's words finds that document, with the index just after it
(answer._credit_pointers). A link an ordinary list item opens in passing is not a pointer."""

from __future__ import annotations

import pytest

from remembrancer.indexer import api
from remembrancer.indexer.ingest import links
from remembrancer.indexer.search import answer
from tests.support.corpus import real_model_engine, write_tree

MEMORY_INDEX = """- [Ana — role and how she works](user_ana.md) — CTO; how she wants status updates written
- [No force-push on shared branches](feedback_force_push.md) — the one git rule Tom cares about
- [Holiday deploy freeze](project_freeze.md) — dates and what may still ship
- [Staging](reference_staging.md) — URLs, the seeded org, how to reset it
"""

NOTES = {
    "memory/MEMORY.md": MEMORY_INDEX,
    "memory/user_ana.md": "---\nname: Ana\ntype: user\n---\nCo-founder; reads Go and Terraform fluently. "
                          "Conclusion in the first line, the evidence after it, never a wall of text. "
                          "Works from Lisbon and reviews pull requests before the ten o'clock standup.\n",
    "memory/feedback_force_push.md": "---\nname: force push\ntype: feedback\n---\nRewriting main broke two "
                                     "open branches in March: use --force-with-lease on your own branches only.\n",
    "memory/project_freeze.md": "---\nname: freeze\ntype: project\n---\nFrom December 21 to January 4 only "
                                "urgent fixes ship, each with a second reviewer.\n",
    "memory/reference_staging.md": "---\nname: staging\ntype: reference\n---\nhttps://staging.example.test; "
                                   "the seeded org is `acme-demo`; `make reset-staging` rebuilds it.\n",
    "log/2033-W40.md": "# 2033-W40\n\n## Tue 2033-10-04\n\n- shipped the relay fix\n"
                       "- [Ana](../memory/user_ana.md) asked for shorter status updates in the weekly thread\n"
                       "- rotated the staging keys\n",
}
QUESTION = "How does Ana want me to write status updates for her?"


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    with real_model_engine(tmp_path_factory.mktemp("pointers"), NOTES) as e:
        yield e


def _first_two(e, query: str) -> list[dict]:
    out = api.do_search(e.view(), {"query": query, "limit": 5, "explain": True})
    return (out["results"] or out["best_weak"])[:2]


@pytest.mark.slow
@pytest.mark.real_model
def test_a_memory_index_hook_finds_the_file_it_points_at(real, monkeypatch):
    """The hook ("how she wants status updates written") is the index's words, not the file's: the
    file it names comes first, the index right after it; switched off, the index wins."""
    first, second = _first_two(real, QUESTION)
    assert (first["path"], first["heading"]) == ("memory/user_ana.md", "")
    assert any("pointed at by a list item of memory/MEMORY.md" in w for w in first["why"])
    assert second["path"] == "memory/MEMORY.md"
    monkeypatch.setattr(answer, "POINTER_CREDIT", False)
    assert _first_two(real, QUESTION)[0]["path"] == "memory/MEMORY.md"


@pytest.mark.slow
@pytest.mark.real_model
def test_a_pointer_outside_the_scope_credits_nothing(real):
    """A scoped request sees only its files: the index may be in scope, the file it names not."""
    with real.view(("memory/MEMORY.md", "log/")) as view:
        out = api.do_search(view, {"query": QUESTION, "limit": 5, "explain": True})
    shown = out["results"] or out["best_weak"]
    assert shown and all(r["path"] in ("memory/MEMORY.md", "log/2033-W40.md") for r in shown)
    assert not any("pointed at" in w for r in shown for w in r.get("why", []))


def test_a_pointer_is_a_list_item_opening_with_a_link_in_an_index():
    assert links.pointer("- [Ana](user_ana.md) — how she wants updates", "memory/MEMORY.md").target == "memory/user_ana.md"
    assert links.pointer("1. [[relay]]: the streaming edge", "index.md").target == "relay"
    assert links.pointer("* see [Ana](user_ana.md)", "memory/MEMORY.md") is None      # the link is not what opens it
    assert links.pointer("[Ana](user_ana.md) — not an item", "memory/MEMORY.md") is None
    assert links.pointer("- [site](https://example.test) — a URL is no document", "x.md") is None
    assert links.is_index(MEMORY_INDEX)
    assert not links.is_index(NOTES["log/2033-W40.md"])   # one item of three opens with a link, in passing
    assert not links.is_index("- [Only one](a.md) — a single pointer\n")
    assert links.is_index("Where things are:\n\n- [Deploy](deploy.md) — shipping\n- [Oncall](oncall.md) — pages\n"
                          "- [Staging](staging.md)\n")


# Claude Code's CLAUDE.md imports other files with `@path`: an import is a link, and a list item
# holding one points at the file it imports, its other words the hook.
CLAUDE_MD = """# Project instructions

See @README for the overview and @package.json for the npm scripts (not notes: no link).

## Conventions

- git workflow @docs/vcs.md
- how we write database migrations @docs/schema-changes.md
- my own shortcuts @~/.claude/mine.md
"""
IMPORTING = {
    "CLAUDE.md": CLAUDE_MD,
    "README.md": "# Signalbox\n\nFeature flags for small teams: a control plane, a relay and SDKs.\n",
    "docs/vcs.md": "# Branches\n\nRebase on main, squash when merging, never force-push a shared branch; "
                   "tags are cut by the release job only.\n",
    "docs/schema-changes.md": "# Schema changes\n\nOne change per pull request, expand then contract, "
                              "`CREATE INDEX CONCURRENTLY` on big tables.\n",
    "notes/ops.md": "# Ops\n\nThe relay restarts nightly at 03:00.\n",
}


def test_a_claude_md_import_is_a_link_and_an_item_holding_one_a_pointer():
    got = [(lk.target, lk.kind) for lk in links.parse_links(CLAUDE_MD, "CLAUDE.md")]
    assert got == [("README", "import"), ("docs/vcs.md", "import"), ("docs/schema-changes.md", "import")]
    assert links.parse_links(CLAUDE_MD, "notes/ops.md") == []   # `@` means an import only where Claude Code reads one
    assert links.parse_links("mail ana@example.com, run `@scope/pkg`\n", "CLAUDE.md") == []
    assert links.parse_links("- old key @docs/[REDACTED:github].md, @docs/\n", "CLAUDE.md") == []   # no path left
    assert [lk.target for lk in links.parse_links("see @docs/vcs.md. And @README, (@a.md)\n", "CLAUDE.md")] == [
        "docs/vcs.md", "README", "a.md"]
    assert links.pointer("- git workflow @docs/vcs.md", "CLAUDE.md").target == "docs/vcs.md"
    assert links.pointer("- two @a.md and @b.md", "CLAUDE.md") is None
    assert links.pointer("- git workflow @docs/vcs.md", "notes/ops.md") is None


@pytest.fixture(scope="module")
def importing(tmp_path_factory):
    with real_model_engine(tmp_path_factory.mktemp("imports"), IMPORTING) as e:
        yield e


@pytest.mark.slow
@pytest.mark.real_model
def test_a_claude_md_import_hook_finds_the_file_it_imports(importing, monkeypatch):
    """"git workflow" is CLAUDE.md's word for docs/vcs.md, which never says it: the imported file
    comes first, CLAUDE.md after it; switched off, CLAUDE.md wins. The import is a link both ways."""
    question = "what is our git workflow?"
    first, second = _first_two(importing, question)
    assert first["path"] == "docs/vcs.md" and second["path"] == "CLAUDE.md", (first, second)
    assert any("pointed at by a list item of CLAUDE.md" in w for w in first["why"])
    monkeypatch.setattr(answer, "POINTER_CREDIT", False)
    assert _first_two(importing, question)[0]["path"] == "CLAUDE.md"
    out = api.do_neighbors(importing.view(), {"path": "docs/vcs.md"})
    assert ("CLAUDE.md", "import") in {(x["source"], x["kind"]) for x in out["inbound"]}, out


# An Obsidian map of content points at long notes: the pointer says which note, the note's own
# sections say which part of it answers.
VAULT = {
    "MOC.md": "# Security — map of content\n\n"
              "- [[Strongroom]] — the secrets vault: unsealing it after a restart, who holds the key shares\n"
              "- [[Tunnelgate]] — the old VPN and when it is retired\n"
              "- [[Lumen]] — the SIEM, which logs it collects\n",
    "Strongroom.md": "# Strongroom\n\nSecrets vault for every service, three nodes in the main region. "
                     "Owned by the platform security team since February.\n\n"
                     "## Overview\n\nApps read secrets through the sidecar; humans use the web console.\n\n"
                     "## Unseal and recovery\n\nAfter a restart the vault stays sealed until three of the five "
                     "key shares are entered. Ines, Marco, Priya, Tom and the CTO's safe hold one share each.\n\n"
                     "## Rotation\n\nDatabase root credentials rotate every 90 days through the rotation job.\n",
    "Tunnelgate.md": "# Tunnelgate\n\nThe VPN concentrator, retired at the end of June.\n",
    "Lumen.md": "# Lumen\n\nThe SIEM: firewall, SSO and endpoint logs, kept 13 months.\n",
}


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    with real_model_engine(tmp_path_factory.mktemp("vault"), VAULT) as e:
        yield e


@pytest.mark.slow
@pytest.mark.real_model
def test_a_pointer_at_a_long_note_credits_the_part_of_it_that_answers(vault):
    """The map's item says the vault note answers; of that note, the section that matches the
    question best takes the credit, not the note's opening."""
    first, second = _first_two(vault, "Who holds the pieces needed to unlock the secrets vault after a restart?")
    assert (first["path"], first["heading"]) == ("Strongroom.md", "Strongroom > Unseal and recovery"), (first, second)
    assert any("pointed at by a list item of MOC.md" in w for w in first["why"]), first
