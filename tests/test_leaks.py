"""Nothing leaks (issue 31): removed text leaves the keyword index's files, echoed values are
redacted whole before they are cut, note text cannot drive the terminal, the query log forgets
values the secret-hash file names. Real tantivy, the tiny model, real CLI and MCP clients."""

from __future__ import annotations

from pathlib import Path

import pytest

from remembrancer.indexer.config import Config, make_roots
from remembrancer.indexer.engine import Engine
from remembrancer.indexer.redact import ENV_SECRET_HASHES, RedactionPolicy
from tests.corpus_helpers import write

PLANTED = "zorblaxquint"   # a word no other note has


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("REMEMBRANCER_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.delenv(ENV_SECRET_HASHES, raising=False)
    return tmp_path


def make_engine(root: Path, embedder, **redact_kw) -> Engine:
    return Engine(Config(roots=make_roots([root]), redact=RedactionPolicy(**redact_kw)), embedder=embedder)


def index_files_with(directory: Path, word: str) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*")
                  if p.is_file() and word.encode() in p.read_bytes())


# -- removed text leaves the keyword index ------------------------------------------------------------

@pytest.mark.parametrize("how", ["deleted", "denied", "secret"])
def test_a_removed_documents_words_leave_the_keyword_index(env, tiny_embedder, how):
    root = env / "notes"
    for i in range(12):   # neighbours in the same (first, bulk) segment, and one in a later small one
        write(root, f"notes/n{i}.md", f"# Note {i}\n\nplain words about host{i} and its backups\n")
    write(root, "private/diary.md", f"# Diary\n\nthe code word is {PLANTED} for the garden\n")
    engine = make_engine(root, tiny_embedder)
    engine.refresh()
    write(root, "notes/late.md", "# Late\n\nwritten after the first index, about lateword\n")
    engine.refresh()
    searcher = engine.fulltext.index.searcher()
    assert searcher.doc_freq("body", PLANTED) == 1
    if how == "deleted":
        (root / "private/diary.md").unlink()
    elif how == "secret":
        write(root, "private/diary.md", f"---\nsecret: true\n---\n# Diary\n\nthe code word is {PLANTED}\n")
    else:
        engine.close()
        engine = make_engine(root, tiny_embedder, deny=("private/**",))
    assert engine.refresh().removed == 1
    searcher = engine.fulltext.index.searcher()
    assert searcher.doc_freq("body", PLANTED) == 0
    assert searcher.doc_freq("stem", PLANTED) == 0
    assert index_files_with(engine.dir / "fulltext", PLANTED) == []
    # the segment mates are all still there, and found
    assert engine.fulltext.num_docs() == engine.catalog.counts()["chunks"]
    assert searcher.doc_freq("body", "host3") == 1 and searcher.doc_freq("body", "lateword") == 1
    assert len(engine.fulltext.search("host3 backups", 20)) >= 1
    engine.close()
