"""Notes kept the way an Obsidian vault keeps them: a note's kind is in its tags and its folder
(`tags: [snippet, howto]`, `Tools/Stripe.md`), not in a layout, and any note may list aliases — its
author's synonyms for finding it ("people", "email", "restore"), not the other names of a host or
service. So a how-to is a runbook whatever folder holds it, aliases alone make no record, and an
alias is read as a nickname (followed by its record's name) only when the record declares that name."""

from __future__ import annotations

import pytest

from remembrancer.indexer.api import do_search
from remembrancer.indexer.ingest import meta
from remembrancer.indexer.search import answer
from tests.support.corpus import write_tree

VAULT = {
    "Tools/Postmark.md": "---\ntags: [tool, email]\naliases: [Postmark, email, Mailgun]\nstatus: active\n---\n"
                        "# Postmark\n\nTransactional email since March; Mailgun was closed in April.\n",
    "Snippets/Restore the database.md": "---\ntags: [snippet, howto, database]\naliases: [restore, restore db]\n---\n"
                                        "# Restore the database\n\n## From the nightly dump\n\n1. Download the dump.\n"
                                        "2. Run pg_restore into a local database.\n",
    "Areas/People.md": "---\ntags: [area, people]\naliases: [people, contacts]\n---\n# People\n\n## Margaret Holt\n\n"
                       "Chair of the society; phones rather than email.\n",
    "components/relay.md": "---\nname: sbx-relay\naliases: [relay, lighthouse]\nowners: [Mei]\n---\n# sbx-relay\n\n"
                           "## Facts\n\nStreams flag updates to browsers.\n",
}


@pytest.mark.parametrize("rel, fm, kind", [
    ("Snippets/Deploy.md", {"tags": ["snippet", "howto"], "aliases": ["deploy"]}, "runbook"),
    ("notes/deploy.md", {"tags": ["How-To"]}, "runbook"),
    ("docs/how-to/install.md", {}, None),   # a documentation site's guides: the folder names no kind
    ("Tools/Stripe.md", {"tags": ["payments"], "aliases": ["billing"]}, "service"),
    ("Areas/Servers/web1.md", {}, "host"),
    ("Areas/People.md", {"tags": ["area", "people"], "aliases": ["people"]}, None),   # aliases alone: no record
    ("components/relay.md", {"name": "sbx-relay", "aliases": ["relay"]}, "service"),  # a record says what it is
    ("Projects/Fly migration.md", {"tags": ["project"], "aliases": ["migration"], "status": "done"}, None),
])
def test_a_notes_kind_is_what_its_tags_or_folder_say(rel, fm, kind):
    assert meta.inferred_type(fm, [["Title"]], rel) == kind


@pytest.fixture
def vault(tmp_path, tiny_engine):
    return tiny_engine(write_tree(tmp_path / "vault", VAULT))


def test_a_how_to_kept_as_a_tagged_snippet_is_a_runbook(vault):
    out = do_search(vault.view(), {"query": "how do I restore the database from the nightly dump?", "explain": True})
    snippet = next(r for r in out["results"] if r["path"].startswith("Snippets/"))
    assert snippet["type"] == "runbook"
    assert any("a runbook's procedure, for a how-to question" in why for why in snippet["why"]), snippet["why"]


def test_an_alias_is_a_nickname_only_of_a_record_that_declares_its_name(vault):
    """"lighthouse" is sbx-relay's nickname (`name: sbx-relay`): the dense leg reads its name beside
    it. "email" and "Mailgun" are a vault note's synonyms: "send email" stays as asked (it read "email
    (Postmark)", and a question about Mailgun found Postmark's note)."""
    view = vault.view()
    assert answer._with_entity_names(view, "how much memory do the lighthouse pods get?") == \
        "how much memory do the lighthouse (sbx-relay) pods get?"
    assert answer._with_entity_names(view, "which provider do we send email through?") == \
        "which provider do we send email through?"
    assert answer._with_entity_names(view, "is the Mailgun account still open?") == "is the Mailgun account still open?"


def test_a_product_named_in_mixed_case_is_a_name_not_a_missing_identifier(tmp_path, tiny_engine):
    """The notes say "JS-only": "JavaScript-only" is not a string the corpus lacks outright (final,
    whatever a rephrasing finds); it is an absent name, which a rephrasing that finds the notes lifts."""
    e = tiny_engine(write_tree(tmp_path / "vault", {
        "Snippets/Release.md": "# Release the app\n\n## JS-only change → OTA update\n\nRun `eas update --branch production`.\n"}))
    out = do_search(e.view(), {"query": "How do I push a JavaScript-only fix to phones without a store review?"})
    assert not any(why.startswith("not in the corpus: JavaScript-only") for why in out.get("why_no_strong_match") or []), out
