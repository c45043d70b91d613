"""The tantivy index (BM25), derived from the catalog: one tantivy document per chunk.

Query text from agents never reaches tantivy's query parser raw: it is reduced to plain words
(and identifier terms built as term queries), so `:`, quotes, `-x`, URLs and brackets can never
raise a syntax error. Filters arrive as a set of allowed section ids and are applied as a
zero-score clause, so they restrict without changing ranking.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

import tantivy

from . import terms
from .catalog import store_fault
from .priority import RequestsFirst

log = logging.getLogger(__name__)

WRITER_HEAP = 64_000_000
HEADING_BOOST = 1.0   # heading ×1 beat ×2 on the dev sets (FIELD-NOTES); the heading also sits in the body
STEM_BOOST = 0.6      # stemmed words find paraphrases; exact words rank first
IDENT_BOOST = 0.5     # a whole-identifier match is strong evidence
WRITE_SLICE = 16      # chunks added between two chances for requests to go first (indexer/priority.py)


def _schema() -> tantivy.Schema:
    b = tantivy.SchemaBuilder()
    b.add_integer_field("chunk_id", stored=True, indexed=True, fast=True)
    b.add_integer_field("section_id", stored=True, indexed=True, fast=True)
    b.add_text_field("path", stored=False, tokenizer_name="raw")
    b.add_text_field("heading", stored=False, tokenizer_name="default")
    b.add_text_field("body", stored=False, tokenizer_name="default")
    b.add_text_field("stem", stored=False, tokenizer_name="en_stem")
    b.add_text_field("ident", stored=False, tokenizer_name="whitespace")
    return b.build()


def idents(heading: str, text: str) -> str:
    """The `ident` field's text: a chunk's identifier terms (camelCase/snake_case split)."""
    return " ".join(terms.identifier_terms(heading + "\n" + text))


class FullText:
    """Open (or rebuild) the index at `directory`; `generation` says which catalog state it holds."""

    def __init__(self, directory: Path, priority: RequestsFirst | None = None):
        self.dir = directory
        self.priority = priority or RequestsFirst()
        self.schema = _schema()
        self.index = self._open()
        self._writer = None
        self._lost = False   # a commit failed: pending writes are gone until a rebuild

    def _open(self) -> tantivy.Index:
        for leftover in (self._building, self._retired):   # a rebuild interrupted by a crash
            shutil.rmtree(leftover, ignore_errors=True)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            return tantivy.Index(self.schema, str(self.dir), reuse=True)
        except Exception as e:  # corrupt or from an older schema: derived data, so start over
            if store_fault(e, self.dir) is not None and (self.dir / "meta.json").exists():
                return self._open_copy(e)   # a full or read-only disk: never wiped for that
            log.warning("full-text index at %s unusable (%s); it will be rebuilt from the catalog", self.dir, e)
            self._wipe()
            return tantivy.Index(self.schema, str(self.dir), reuse=False)

    def _open_copy(self, why: Exception) -> tantivy.Index:
        """The index as it is, from a private copy: tantivy writes a lock file to open an index,
        which a read-only or full disk refuses. Searches answer from what is there; writes to the
        copy are never seen by the next run (its generation is not this folder's)."""
        self._copy = tempfile.TemporaryDirectory(prefix="remembrancer-fulltext-")
        copy = Path(self._copy.name) / "fulltext"
        shutil.copytree(self.dir, copy, ignore=shutil.ignore_patterns("*.lock", ".tmp*"))
        log.info("full-text index at %s cannot be opened in place (%s); searching a copy of it", self.dir, why)
        return tantivy.Index(self.schema, str(copy), reuse=True)

    def _wipe(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True, exist_ok=True)

    @property
    def _building(self) -> Path:
        return self.dir.with_name(self.dir.name + ".building")

    @property
    def _retired(self) -> Path:
        return self.dir.with_name(self.dir.name + ".old")

    @property
    def generation(self) -> int:
        try:
            return int((self.dir / "generation").read_text())
        except (OSError, ValueError):
            return -1

    def _set_generation(self, gen: int, directory: Path | None = None) -> None:
        d = directory or self.dir
        tmp = d / "generation.tmp"
        tmp.write_text(str(gen))
        os.replace(tmp, d / "generation")

    # -- writing ------------------------------------------------------------------------------
    def writer(self):
        if self._writer is None:
            self._writer = self.index.writer(heap_size=WRITER_HEAP, num_threads=1)
        return self._writer

    def replace_document(self, path: str, chunks) -> None:
        """Delete the document's chunks and add the new ones; visible together at the next commit.
        A large document's chunks go in slices, giving way to requests between them."""
        w = self.writer()
        w.delete_documents_by_term("path", path)
        for i, (chunk_id, section_id, cpath, _doc_type, heading, text) in enumerate(chunks):
            if i and i % WRITE_SLICE == 0:
                self.priority.give_way()
            w.add_document(self._doc(chunk_id, section_id, cpath, heading, text))

    def delete_document(self, path: str) -> None:
        self.writer().delete_documents_by_term("path", path)

    def _doc(self, chunk_id, section_id, path, heading, text, ident: str | None = None) -> tantivy.Document:
        if ident is None:
            ident = idents(heading, text)
        return tantivy.Document(chunk_id=int(chunk_id), section_id=int(section_id), path=path,
                                heading=heading.replace(" > ", " "), body=text, stem=text, ident=ident)

    def commit(self, generation: int) -> None:
        """Commit explicitly and check it (a `with` block swallows a failed commit — FIELD-NOTES)."""
        if self._writer is not None:
            try:
                self._writer.commit()
                self._writer.wait_merging_threads()
            except BaseException:
                # A writer whose commit failed is broken and its pending writes are lost (FIELD-NOTES):
                # the index matches no catalog generation any more, now or after a restart, until
                # it is rebuilt — later commits must not stamp it current.
                self._writer = None
                self._lost = True
                (self.dir / "generation").unlink(missing_ok=True)
                raise
            self._writer = None
        if not self._lost:
            self._set_generation(generation)
        self.index.reload()

    def rebuild(self, chunks, generation: int) -> int:
        """Re-add every chunk from the catalog into a fresh index beside the live one, then swap
        it in: searches keep the old index until the new one is whole (an index changes only by
        swaps). The old files are deleted right after the swap (a redaction change relies on it)."""
        self._writer = None
        building = self._building
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        try:
            index = tantivy.Index(self.schema, str(building), reuse=False)
            n = self._fill(index, chunks)
            self._set_generation(generation, building)
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
        retired = self._retired
        shutil.rmtree(retired, ignore_errors=True)
        if self.dir.exists():
            os.rename(self.dir, retired)
        os.rename(building, self.dir)
        self.index = tantivy.Index(self.schema, str(self.dir), reuse=True)
        self._lost = False
        shutil.rmtree(retired, ignore_errors=True)
        return n

    def _fill(self, index: tantivy.Index, chunks, ident_of=None) -> int:
        w = index.writer(heap_size=WRITER_HEAP, num_threads=1)
        n = 0
        for chunk_id, section_id, path, _doc_type, heading, text in chunks:
            ident = ident_of(chunk_id, heading, text) if ident_of else None
            w.add_document(self._doc(chunk_id, section_id, path, heading, text, ident))
            n += 1
        w.commit()   # explicit and checked (FIELD-NOTES: a `with` block swallows a failed commit)
        w.wait_merging_threads()
        return n

    @classmethod
    def in_memory(cls, chunks, ident_of=None) -> FullText:
        """A derived index of `chunks` held in memory, searched like the main one: a scope's own
        BM25 statistics (indexer/scope.py KeywordIndexes). `ident_of(chunk id, heading, text)`
        may answer the identifier terms from a cache (splitting them is most of a build's cost)."""
        self = cls.__new__(cls)
        self.dir, self.schema, self._writer, self._lost = None, _schema(), None, False
        self.index = tantivy.Index(self.schema)
        self._fill(self.index, chunks, ident_of)
        self.index.reload()
        return self

    def num_docs(self) -> int:
        return self.index.searcher().num_docs

    # -- reading ------------------------------------------------------------------------------
    def reload(self) -> None:
        self.index.reload()

    def search(self, text: str, limit: int, allowed_sections: set[int] | None = None) -> dict[int, float]:
        """BM25 over heading, body and identifier terms → best chunk score per section id."""
        query = self.build_query(text)
        if query is None:
            return {}
        if allowed_sections is not None:
            if not allowed_sections:
                return {}
            filt = tantivy.Query.term_set_query(self.schema, "section_id", sorted(allowed_sections))
            query = tantivy.Query.boolean_query([
                (tantivy.Occur.Must, query),
                (tantivy.Occur.Must, tantivy.Query.const_score_query(filt, 0.0)),
            ])
        searcher = self.index.searcher()
        best: dict[int, float] = {}
        for score, addr in searcher.search(query, limit).hits:
            sid = searcher.doc(addr)["section_id"][0]
            if score > best.get(sid, 0.0):
                best[sid] = score
        return best

    def build_query(self, text: str):
        clauses = []
        plain = " ".join(w for w in terms.words(text) if w.isascii() or w.isalnum())
        if plain.strip():
            try:
                clauses.append((tantivy.Occur.Should, self.index.parse_query(
                    plain, ["heading", "body", "stem"],
                    field_boosts={"heading": HEADING_BOOST, "body": 1.0, "stem": STEM_BOOST})))
            except ValueError as e:  # cannot happen with plain words, but never let it reach the user
                log.debug("query parse failed for %r: %s", plain, e)
        for t in dict.fromkeys(terms.identifier_terms(text)):
            q = tantivy.Query.term_query(self.schema, "ident", t)
            clauses.append((tantivy.Occur.Should, tantivy.Query.boost_query(q, IDENT_BOOST)))
        if not clauses:
            return None
        return tantivy.Query.boolean_query(clauses)
