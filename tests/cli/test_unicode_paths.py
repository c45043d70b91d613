"""A file name in one Unicode spelling, asked for in the other: `café` decomposed on disk (NFD: macOS,
some sync tools) and typed composed (NFC), or the reverse. Both look the same to anyone; `read`,
`neighbors`, `list --path` and `search --path` find the file either way, and answer with the path as
the file system has it. They said "no indexed document", offering a path that looked identical."""

from __future__ import annotations

import json
import unicodedata

from tests.support.cli import sandboxed_cli

NFD = unicodedata.normalize("NFD", "café-notes.md")
NFC_NAME = unicodedata.normalize("NFC", "résumé.md")


def test_a_name_typed_in_the_other_unicode_spelling_finds_the_file(tmp_path, tiny_model_dir):
    run = sandboxed_cli(tmp_path, tiny_model_dir)
    journal = run.notes / "journal"
    (journal / NFD).write_text("# Café notes\n\nThe espresso machine at the crêperie.\n\nSee [[résumé]].\n")
    (journal / NFC_NAME).write_text("# Résumé\n\nThe crêperie owner's résumé.\n")
    root = ["--root", str(run.notes)]
    assert run("index", *root).returncode == 0

    typed = {NFD: unicodedata.normalize("NFC", NFD), NFC_NAME: unicodedata.normalize("NFD", NFC_NAME)}
    for on_disk, asked in typed.items():
        assert asked != on_disk
        read = run("read", f"journal/{asked}", "--json", *root)
        assert read.returncode == 0, read.stderr
        assert json.loads(read.stdout)["path"] == f"journal/{on_disk}"   # the path as the file system has it
        near = run("neighbors", f"journal/{asked}", "--json", *root)
        assert near.returncode == 0, near.stderr

    listed = run("list", "--path", "journal/" + unicodedata.normalize("NFC", "café"), "--json", *root)
    assert listed.returncode == 0, listed.stderr
    assert [d["path"] for d in json.loads(listed.stdout)["documents"]] == [f"journal/{NFD}"]
    found = run("search", "espresso crêperie", "--path", "journal/" + unicodedata.normalize("NFC", "café"),
                "--json", *root)
    assert found.returncode == 0, found.stderr
    assert {r["path"] for r in json.loads(found.stdout)["results"]} == {f"journal/{NFD}"}
