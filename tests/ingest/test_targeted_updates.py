"""Targeted updates: a change costs the paths it touched, not a walk of the corpus (issue 12).

Through the real daemon on a real socket (watchdog on real files, git hooks run by the git CLI),
and the engine's `refresh_paths` on its own. The daemon's `last_ingest.scanned` says how many
files an update looked at: a targeted one looks at the changed files, a full walk at all of them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remembrancer.hooks.install import install_hooks
from remembrancer.indexer.ingest import meta
from tests.support.corpus import engine_for, git, git_init, write
from tests.support.daemon import DaemonProc, wait_for

N_OTHER = 30   # filler documents: a full walk scans all of them, a targeted update none


def corpus(root: Path) -> Path:
    write(root, "hosts/pg1.md", "---\nhost: pg1\naliases: [pg-primary]\n---\n# pg1\n\nPostgreSQL primary.\n")
    write(root, "runbooks/restore.md", "# Restore pg1\n\nRun quokkarestore on [[pg1]] then check the log.\n")
    for i in range(N_OTHER):
        write(root, f"journal/2030-01-{i + 1:02d}.md", f"# 2030-01-{i + 1:02d}\n\n## 09:00 note {i}\n\nRoutine day {i}.\n")
    return root


def atomic_save(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def found(d: DaemonProc, word: str) -> list[str]:
    return [r["path"] for r in d.search(word, exact=True, limit=5)["results"]]


def settled(d: DaemonProc, pred):
    """Wait until `pred()` holds and the daemon is fresh again; returns its status then."""
    wait_for(pred, timeout=30)
    return d.wait_fresh()


@pytest.fixture
def mem(tmp_path):
    return corpus(tmp_path / "mem")


@pytest.fixture
def daemon(tmp_path, mem, tiny_model_dir):
    d = DaemonProc(tmp_path, [mem], tiny_model_dir).start()   # default rescan: 600 s, never during a test
    yield d
    d.stop()


@pytest.mark.slow
def test_edit_is_applied_from_the_watchers_path_alone(daemon, mem):
    atomic_save(mem / "runbooks/restore.md", "# Restore pg1\n\nRun wombatrestore on [[pg1]] instead.\n")
    st = settled(daemon, lambda: found(daemon, "wombatrestore"))
    assert found(daemon, "wombatrestore") == ["runbooks/restore.md"]
    assert found(daemon, "quokkarestore") == []             # the old text is gone
    assert st["daemon"]["last_ingest"]["updated"] == 1
    assert st["daemon"]["last_ingest"]["scanned"] == 1      # that file, not the corpus
    back = daemon.call("neighbors", path="hosts/pg1.md")    # its link is resolved as before
    assert "runbooks/restore.md" in [b["source"] for b in back["inbound"]]


def test_rename_moves_the_document(daemon, mem):
    os.rename(mem / "runbooks/restore.md", mem / "runbooks/recover.md")
    st = settled(daemon, lambda: found(daemon, "quokkarestore") == ["runbooks/recover.md"])
    paths = [d["path"] for d in daemon.call("list")["documents"]]
    assert "runbooks/recover.md" in paths and "runbooks/restore.md" not in paths
    assert st["daemon"]["last_ingest"]["scanned"] <= 1
    back = daemon.call("neighbors", path="hosts/pg1.md")    # the backlink follows the rename
    assert [b["source"] for b in back["inbound"]] == ["runbooks/recover.md"]


def test_delete_drops_the_document(daemon, mem):
    (mem / "runbooks/restore.md").unlink()
    st = settled(daemon, lambda: "runbooks/restore.md" not in [d["path"] for d in daemon.call("list")["documents"]])
    assert found(daemon, "quokkarestore") == []
    assert st["documents"] == N_OTHER + 1
    assert st["daemon"]["last_ingest"]["removed"] == 1
    assert st["daemon"]["last_ingest"]["scanned"] == 0


@pytest.mark.slow
def test_a_note_replaced_by_a_folder_leaves(daemon, mem):
    """A path that is no longer a regular file is a deletion: the note went on being listed, found
    and called fresh (its path named a folder now, walked for files, but not the note itself)."""
    (mem / "runbooks/restore.md").unlink()
    (mem / "runbooks/restore.md").mkdir()
    st = settled(daemon, lambda: "runbooks/restore.md" not in [d["path"] for d in daemon.call("list")["documents"]])
    assert found(daemon, "quokkarestore") == []
    assert st["documents"] == N_OTHER + 1


def test_engine_refresh_paths_drops_a_note_that_became_a_folder(tmp_path, data_env, tiny_embedder):
    root = corpus(tmp_path / "mem")
    e = engine_for([root], tiny_embedder)
    try:
        e.refresh()
        (root / "runbooks/restore.md").unlink()
        write(root, "runbooks/restore.md/inside.md", "# Inside\n\nA note in the folder.\n")
        report = e.refresh_paths([str(root / "runbooks/restore.md")])
        assert (report.removed, report.added) == (1, 1)
        assert e.catalog.document("runbooks/restore.md") is None
        assert e.catalog.document("runbooks/restore.md/inside.md") is not None
    finally:
        e.close()


@pytest.mark.slow
@pytest.mark.parametrize("repo", [True, False], ids=["git", "plain"])
def test_an_ignore_file_edit_re_judges_its_folder(tmp_path, tiny_model_dir, repo):
    """Writing a .gitignore takes the files it now ignores out of the index, and removing it brings
    them back: no Markdown file changed, yet the corpus did (the ignored note stayed found, fresh).
    In a repository git judges (the top .gitignore: a full walk); in a plain folder the walk reads a
    .gitignore in a subfolder (that folder alone is walked again)."""
    mem = corpus(tmp_path / "mem")
    folder = mem if repo else mem / "journal"
    if repo:
        git_init(mem)
        git(mem, "add", ".")
        git(mem, "commit", "-qm", "notes")
    write(folder, "scratch/s.md", "# Scratch\n\nscratchneedle, untracked.\n")
    with DaemonProc(tmp_path, [mem], tiny_model_dir) as d:
        d.start()
        assert found(d, "scratchneedle")
        (folder / ".gitignore").write_text("scratch/\n")
        settled(d, lambda: found(d, "scratchneedle") == [])
        (folder / ".gitignore").unlink()
        settled(d, lambda: found(d, "scratchneedle"))
        if repo:   # the repository's own ignore list, beside the .gitignore files
            (mem / ".git/info/exclude").write_text("scratch/\n")
            settled(d, lambda: found(d, "scratchneedle") == [])


def test_a_folder_moved_in_is_walked_alone(daemon, mem, tmp_path):
    outside = tmp_path / "elsewhere"
    write(outside, "lessons/one.md", "# One\n\nNever run numbatdrop on a primary.\n")
    write(outside, "lessons/two.md", "# Two\n\nKeep platypuskeep small.\n")
    os.rename(outside / "lessons", mem / "lessons")          # one event: the folder; none for its files
    st = settled(daemon, lambda: found(daemon, "platypuskeep") and found(daemon, "numbatdrop"))
    assert st["daemon"]["last_ingest"]["scanned"] == 2


@pytest.mark.slow
def test_branch_switch_follows_the_head_to_head_diff(tmp_path, tiny_model_dir, monkeypatch):
    repo = corpus(tmp_path / "repo")
    git_init(repo)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "main")
    git(repo, "checkout", "-q", "-b", "other")
    write(repo, "runbooks/restore.md", "# Restore pg1\n\nOn this branch: echidnarestore.\n")
    write(repo, "runbooks/new.md", "# New\n\nOnly here: bilbyonly.\n")
    git(repo, "rm", "-q", "journal/2030-01-01.md")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "other")
    git(repo, "checkout", "-q", "main")
    d = DaemonProc(tmp_path, [repo], tiny_model_dir).start()
    try:
        monkeypatch.setenv("REMEMBRANCER_SOCKET", str(d.sock))   # the hooks git runs reach this daemon
        install_hooks(repo)
        assert found(d, "quokkarestore") == ["runbooks/restore.md"]
        git(repo, "checkout", "-q", "other")                       # post-checkout notifies
        head = git(repo, "rev-parse", "HEAD")
        st = settled(d, lambda: found(d, "bilbyonly") and found(d, "echidnarestore") and not found(d, "quokkarestore"))
        wait_for(lambda: d.call("status")["roots"][0]["head_indexed"] == head)
        st = d.wait_fresh()
        assert st["freshness"]["verdict"] == "fresh"
        assert "journal/2030-01-01.md" not in [x["path"] for x in d.call("list")["documents"]]
        assert st["daemon"]["last_ingest"]["scanned"] <= 3        # the three paths the diff names
        wait_for(lambda: d.call("status")["daemon"]["notifications"] >= 1, timeout=30)   # the hook runs detached
        st = d.wait_fresh()
        assert st["daemon"]["last_ingest"]["scanned"] <= 3        # the notification walked nothing either
    finally:
        d.stop()


@pytest.mark.slow
def test_a_change_the_watcher_missed_is_caught_by_the_rescan(tmp_path, mem, tiny_model_dir):
    """A write through a hard link outside the root changes the file without an inotify event in
    the watched folder (as bind mounts and network file systems do): only the rescan sees it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    os.link(mem / "runbooks/restore.md", outside / "restore-link.md")
    d = DaemonProc(tmp_path, [mem], tiny_model_dir, extra=["--rescan", "3"]).start()
    try:
        with open(outside / "restore-link.md", "a", encoding="utf-8") as f:   # in place, same inode
            f.write("\nAlso: dugongcheck before you start.\n")
        st = settled(d, lambda: found(d, "dugongcheck"))
        assert found(d, "dugongcheck") == ["runbooks/restore.md"]
        assert st["daemon"]["last_ingest"]["scanned"] == N_OTHER + 2   # a full walk found it
    finally:
        d.stop()


def test_engine_refresh_paths_diffs_a_moved_head(tmp_path, data_env, tiny_embedder):
    """Without a watcher, an empty list of paths still brings in what a checkout changed."""
    repo = corpus(tmp_path / "repo")
    git_init(repo)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "main")
    e = engine_for([repo], tiny_embedder)
    try:
        e.refresh()
        git(repo, "checkout", "-q", "-b", "other")
        write(repo, "hosts/pg1.md", "---\nhost: pg1\naliases: [pg-primary, pgmain]\n---\n# pg1\n\nNow wallabyprimary.\n")
        git(repo, "commit", "-qam", "pg1 renamed")
        report = e.refresh_paths([])
        assert report.scanned == 1 and report.updated == 1
        assert e.catalog.document("hosts/pg1.md")["content_hash"] == git(repo, "rev-parse", "HEAD:hosts/pg1.md")
        assert e.view().status().to_json()["roots"][0]["head_indexed"] == git(repo, "rev-parse", "HEAD")
        report = e.refresh_paths([])
        assert (report.scanned, report.updated, report.added, report.removed) == (0, 0, 0, 0)
    finally:
        e.close()


def test_engine_refresh_paths_retags_only_what_names_a_changed_alias(tmp_path, data_env, tiny_embedder):
    root = corpus(tmp_path / "mem")
    write(root, "journal/2030-02-01.md", "# 2030-02-01\n\n## 10:00 failover\n\npgmain was slow today.\n")
    e = engine_for([root], tiny_embedder)
    try:
        e.refresh()
        sid = [s for s in e.catalog.sections("journal/2030-02-01.md") if "pgmain" in s.body][0]
        assert sid.entities == []
        write(root, "hosts/pg1.md", "---\nhost: pg1\naliases: [pg-primary, pgmain]\n---\n# pg1\n\nPostgreSQL primary.\n")
        e.refresh_paths([str(root / "hosts/pg1.md")])
        assert e.catalog.sections_by_id([sid.id])[sid.id].entities == ["pg1"]
        # the same tags as matching every section against every entity
        matcher = meta.EntityMatcher([meta.Entity(n, p, a) for n, p, a in e.catalog.entities()])
        assert {s.id: s.entities for s in e.catalog.sections()} == \
            {s.id: matcher.mentions(s.heading + "\n" + s.body) for s in e.catalog.sections()}
    finally:
        e.close()


def test_a_targeted_update_keeps_each_warning_beside_its_path(tmp_path, data_env, tiny_embedder):
    """The last run's warnings and the path each is about are stored side by side (a scope filters
    warnings by those paths); a targeted update rewrote the warnings alone, so after it the two
    lists no longer matched and a scope fell back to guessing paths from the text."""
    import json

    root = corpus(tmp_path / "mem")
    write(root, "journal/2030-02-01.md", "---\ntitle: [unclosed\n---\n# 2030-02-01\n\nbad front matter.\n")
    e = engine_for([root], tiny_embedder)
    try:
        e.refresh()
        write(root, "hosts/pg9.md", "---\nhost: [pg9\n---\n# pg9\n\nbroken too.\n")
        e.refresh_paths([str(root / "hosts/pg9.md")])
        warnings = json.loads(e.catalog.get_meta("last_warnings"))
        paths = json.loads(e.catalog.get_meta("last_warning_paths"))
        assert len(warnings) == len(paths) >= 2
        assert {"journal/2030-02-01.md", "hosts/pg9.md"} <= set(paths)
    finally:
        e.close()
