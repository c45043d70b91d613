"""One contract, two stores: the local store (SQLite + tantivy + hnswlib) and the team store
(PostgreSQL + pgvector, a real server from pgserver) must answer the same writes with the same reads.

Each test writes typed records (indexer/store/records.py) through the store's own ledger and
checks what the engine, search and the memory tools rely on: replace, delete, filters, literal and
word lookups, links and entities, the keyword and vector indexes, and scope walls.
"""

from __future__ import annotations

import numpy as np
import pytest

from remembrancer.indexer.ingest.chunks import Chunk
from remembrancer.indexer.store import base
from remembrancer.indexer.store.filters import Filters
from remembrancer.indexer.store.local.store import LocalStore
from remembrancer.indexer.store.records import DocumentRecord, EntityRecord, LinkRecord, SectionRecord

DIM = 4


@pytest.fixture(params=["local", "postgres"])
def store(request, tmp_path):
    """A writable store of each kind, empty."""
    if request.param == "local":
        s = LocalStore(tmp_path / "idx", "notes")
        yield s
        s.close()
    else:
        from remembrancer.indexer.store.postgres.store import PgStore

        yield PgStore(request.getfixturevalue("pg_url"), readonly=False)   # no connection of its own: its ledgers hold them


@pytest.fixture
def ledger(store):
    led = store.open_ledger(readonly=False)
    yield led
    led.close()


def doc(path: str, doc_type: str = "runbook", *, tags=(), date="2030-01-02") -> DocumentRecord:
    rel = path.split("/", 1)[1]
    return DocumentRecord(path=path, root="notes", rel=rel, content_hash=f"h-{path}", size=10, mtime_ns=1,
                          doc_type=doc_type, date=date, title=rel, front_matter={"tags": list(tags)},
                          tags=list(tags), warnings=[], stale=False, line_count=3)


def section(heading: str, body: str, *, entities=(), date="2030-01-02") -> SectionRecord:
    text = f"# {heading}\n{body}\n"
    sha = f"sha-{heading}-{body}"[:60]
    return SectionRecord(heading=heading, title=heading, level=1, start_line=1, end_line=2, date=date,
                         stale=False, content=text, body=body, entities=list(entities),
                         chunks=[Chunk(1, 1, 1, 2, text)], passages=[(sha, f"[runbook] {heading}\n{body}")])


def vectors_for(sections: list[SectionRecord], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for s in sections:
        for sha, _ in s.passages:
            v = rng.normal(size=DIM).astype(np.float32)
            out[sha] = v / np.linalg.norm(v)
    return out


def write(ledger, d: DocumentRecord, sections: list[SectionRecord], seed: int = 0, entity=None, links=None):
    return ledger.write_document(d, sections, vectors_for(sections, seed), entity, links or [])


def test_both_stores_keep_the_interface(store, ledger):
    assert isinstance(store, base.Store)
    assert isinstance(ledger, base.Ledger)
    assert isinstance(store.keyword_index(lambda: ledger), base.KeywordIndex)
    assert isinstance(store.vector_index(lambda: ledger, DIM), base.VectorIndex)


def test_a_written_document_reads_back_field_for_field(ledger):
    removed, added = write(ledger, doc("notes/runbooks/restore.md", tags=["db"]),
                           [section("Restore", "pg_restore the nightly dump"), section("Verify", "count the rows")])
    assert removed == [] and len(added) == 2
    row = ledger.document("notes/runbooks/restore.md")
    assert (row["doc_type"], row["date"], row["title"], row["line_count"]) == ("runbook", "2030-01-02",
                                                                             "runbooks/restore.md", 3)
    assert ledger.document_paths() == ["notes/runbooks/restore.md"]
    assert [s.heading for s in ledger.sections("notes/runbooks/restore.md")] == ["Restore", "Verify"]
    assert ledger.known_tags() == {"db"}
    assert ledger.section_count() == 2
    assert ledger.counts()["documents"] == 1


def test_a_rewrite_replaces_and_a_delete_removes_everything(ledger):
    write(ledger, doc("notes/a.md"), [section("Old", "old words here")])
    removed, added = write(ledger, doc("notes/a.md"), [section("New", "new words here")], seed=1)
    assert len(removed) == 1 and len(added) == 1
    assert [s.heading for s in ledger.sections("notes/a.md")] == ["New"]
    assert ledger.sections_containing(["old words"]) == []
    gone = ledger.delete_document("notes/a.md")
    assert gone == added
    assert ledger.document("notes/a.md") is None and ledger.section_count() == 0
    assert ledger.vectors_in_use() == 0


def test_a_grown_document_keeps_its_first_sections_and_replaces_the_rest(store, ledger):
    """A transcript that grew (ingest/conversation.py): the kept sections keep their ids, and the
    keyword postings of the replaced ones are gone while the new ones are found."""
    first = [section("One", "alpha words"), section("Two", "bravo words")]
    write(ledger, doc("notes/t.jsonl", "conversation"), first)
    kept_id = ledger.sections("notes/t.jsonl")[0].id
    grown = [section("Two", "bravo words and charlie"), section("Three", "delta words")]
    removed, added, gone = ledger.append_sections(doc("notes/t.jsonl", "conversation"), 1, grown,
                                                  vectors_for(grown, 1))
    rows = ledger.sections("notes/t.jsonl")
    assert [r.heading for r in rows] == ["One", "Two", "Three"] and rows[0].id == kept_id
    assert len(removed) == 1 and len(added) == 2 and len(gone) == 1 and gone[0] not in [r.id for r in rows]
    assert ledger.section_total("notes/t.jsonl") == 3
    assert [c[1] for c in ledger.chunks_from("notes/t.jsonl", 1)] == [r.id for r in rows[1:]]
    keywords = store.keyword_index(lambda: ledger)
    if not store.indexes_in_ledger:
        keywords.rebuild(ledger.all_chunks(), ledger.generation)
    assert list(keywords.search("charlie", 5)) == [rows[1].id]
    assert list(keywords.search("alpha", 5)) == [kept_id]
    assert ledger.sections_containing(["bravo words and charlie"])
    assert ledger.append_sections(doc("notes/t.jsonl", "conversation"), 7, grown, {}) is None   # not that many
    assert ledger.append_sections(doc("notes/none.jsonl", "conversation"), 0, grown, {}) is None


def test_filters_select_the_same_sections(ledger):
    write(ledger, doc("notes/runbooks/r.md", "runbook", tags=["db"]), [section("R", "restore steps", date="2030-01-05")])
    write(ledger, doc("notes/journal/j.md", "journal", date="2030-02-01"),
          [section("J", "what we saw", date="2030-02-01")], seed=1)
    by = {s.heading: s.id for p in ledger.document_paths() for s in ledger.sections(p)}
    assert ledger.filtered_section_ids(Filters(types=["journal"])) == {by["J"]}
    assert ledger.filtered_section_ids(Filters(path="notes/runbooks/")) == {by["R"]}
    assert ledger.filtered_section_ids(Filters(tags=["db"])) == {by["R"]}
    assert ledger.filtered_section_ids(Filters(since="2030-01-10")) == {by["J"]}
    assert ledger.count_sections(Filters(until="2030-01-10")) == 1
    assert ledger.newest_sections(Filters(), 1) == [by["J"]]


def test_literal_and_word_lookups(ledger):
    write(ledger, doc("notes/a.md"), [section("Timeouts", "set --lock-timeout to 5s on db1")])
    assert ledger.uses_word("kubernetes") is False
    assert ledger.uses_word("db1") is True
    hits = ledger.sections_containing(["--lock-timeout"])
    assert hits and hits[0][1] == "Timeouts"
    counts = ledger.literal_counts("--lock-timeout", True)   # the caller lower-cases the needle
    assert [c for _, _, c in counts] == [1]


def test_links_and_entities_are_kept(ledger):
    write(ledger, doc("notes/hosts/db1.md", "host"), [section("db1", "the primary database")],
          entity=EntityRecord("db1", ["pg-primary"]))
    write(ledger, doc("notes/runbooks/r.md"), [section("R", "see db1", entities=["db1"])], seed=1,
          links=[LinkRecord("db1", "wikilink", 2, text="the host", resolved="notes/hosts/db1.md")])
    assert ledger.entities() == [("db1", "notes/hosts/db1.md", ["pg-primary"])]
    links = ledger.link_rows(resolved_to="notes/hosts/db1.md")
    assert [(lk["target"], lk["kind"], lk["line"]) for lk in links] == [("db1", "wikilink", 2)]


def test_keyword_and_vector_indexes_find_what_was_written(store, ledger):
    sections = [section("Restore", "pg_restore the nightly dump"), section("Kafka", "rebalance the consumers")]
    write(ledger, doc("notes/a.md"), sections)
    keywords = store.keyword_index(lambda: ledger)
    if not store.indexes_in_ledger:   # the local store's indexes are derived from the ledger
        keywords.rebuild(ledger.all_chunks(), ledger.generation)
    by = {s.heading: s.id for s in ledger.sections("notes/a.md")}
    assert list(keywords.search("rebalance consumers", 5)) == [by["Kafka"]]
    vectors = store.vector_index(lambda: ledger, DIM)
    if not store.indexes_in_ledger:
        labels, vecs = ledger.passage_vectors()
        vectors.rebuild(labels, vecs, ledger.generation)
    query = vectors_for(sections, 0)[sections[1].passages[0][0]]
    best = vectors.search(query, 1)
    assert ledger.passages_by_id([best[0][0]])[best[0][0]][0] == by["Kafka"]


def test_a_passages_text_and_document_are_read_back_by_id(store, ledger):
    """Search reads the text of its best passages (answer._credit_pointers: is it an index's
    pointer?): each passage id gives its section, its document and the text that was embedded."""
    sections = [section("Restore", "pg_restore the nightly dump"), section("Kafka", "rebalance the consumers")]
    write(ledger, doc("notes/a.md"), sections)
    by = {s.heading: s.id for s in ledger.sections("notes/a.md")}
    labels, _ = ledger.passage_vectors()
    got = ledger.passage_texts([int(x) for x in labels])
    assert sorted((sid, path, text) for sid, _, path, text in got.values()) == [
        (by["Restore"], "notes/a.md", "[runbook] Restore\npg_restore the nightly dump"),
        (by["Kafka"], "notes/a.md", "[runbook] Kafka\nrebalance the consumers")]
    assert len({doc_id for _, doc_id, _, _ in got.values()}) == 1
    assert ledger.passage_texts([]) == {}


def test_passages_written_without_vectors_wait_and_are_filled_later(store, ledger):
    """The model (or its server) was unavailable: the text is stored, its passages wait; filled,
    they are found by the vector index like any other, and nothing waits any more."""
    sections = [section("Restore", "pg_restore the nightly dump"), section("Kafka", "rebalance the consumers")]
    ledger.write_document(doc("notes/a.md"), sections, {}, None, [])
    assert ledger.waiting_count() == 2
    check = getattr(ledger, "consistency_problems", lambda: [])   # the team store's check of a crash's leftovers
    assert check() == []   # waiting is not damage
    waiting = ledger.waiting_passages(1)
    assert waiting == [min((sha, text) for s in sections for sha, text in s.passages)]
    vecs = vectors_for(sections, 0)
    generation = ledger.generation
    ids = ledger.fill_embeddings({sha: vecs[sha] for s in sections for sha, _ in s.passages})
    assert len(ids) == 2 and ledger.waiting_count() == 0 and ledger.waiting_passages(5) == []
    assert ledger.generation > generation   # derived indexes know they are behind
    assert check() == []
    vectors = store.vector_index(lambda: ledger, DIM)
    if not store.indexes_in_ledger:
        labels, stored = ledger.passage_vectors()
        vectors.rebuild(labels, stored, ledger.generation)
    by = {s.heading: s.id for s in ledger.sections("notes/a.md")}
    best = vectors.search(vecs[sections[1].passages[0][0]], 1)
    assert ledger.passages_by_id([best[0][0]])[best[0][0]][0] == by["Kafka"]


def test_a_scope_is_a_wall(store, ledger):
    """Locally a scope is a wall of views over one ledger; in the team store it is a reader's role
    (row-level security, tests/store/test_team_roles.py), so the writer's ledger refuses one."""
    write(ledger, doc("notes/journal/j.md", "journal"), [section("J", "inside the wall")])
    write(ledger, doc("notes/private/p.md"), [section("P", "outside the wall")], seed=1)
    if store.indexes_in_ledger:
        from remembrancer.indexer.errors import UserError

        with pytest.raises(UserError, match="readers of the team store"):
            with ledger.scoped(("notes/journal",)):
                pass
        return
    with ledger.scoped(("notes/journal",)):
        assert ledger.document_paths() == ["notes/journal/j.md"]
        assert ledger.document("notes/private/p.md") is None
        assert ledger.section_count() == 1
        assert ledger.sections_containing(["outside the wall"]) == []
    assert ledger.section_count() == 2
