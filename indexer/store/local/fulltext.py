"""The tantivy index (BM25), derived from the catalog: one tantivy document per chunk.

Query text from agents never reaches tantivy's query parser raw: it is reduced to plain words
(and identifier terms built as term queries), so `:`, quotes, `-x`, URLs and brackets can never
raise a syntax error. Filters arrive as a set of allowed section ids and are applied as a
zero-score clause, so they restrict without changing ranking.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import tantivy

from remembrancer.indexer import terms
from remembrancer.indexer.store.common import HEADING_BOOST, IDENT_BOOST, STEM_BOOST
from remembrancer.indexer.store.local.catalog import store_fault
from remembrancer.indexer.store.priority import RequestsFirst

log = logging.getLogger(__name__)

WRITER_HEAP = 64_000_000
WRITE_SLICE = 16      # chunks added between two chances for requests to go first (indexer/store/priority.py)
TERM_BYTES = 40       # the `default` tokenizer drops a token of this many bytes or more (RemoveLongFilter)


def _schema() -> tantivy.Schema:
    b = tantivy.SchemaBuilder()
    b.add_integer_field("chunk_id", stored=True, indexed=True, fast=True)
    b.add_integer_field("section_id", stored=True, indexed=True, fast=True)
    b.add_text_field("path", stored=False, tokenizer_name="raw")
    b.add_text_field("heading", stored=False, tokenizer_name="default")
    b.add_text_field("body", stored=False, tokenizer_name="default")
    b.add_text_field("stem", stored=False, tokenizer_name="en_stem")
    # stored: a purge (FullText.delete_document) re-adds a segment's chunks without splitting
    # their identifiers again (most of the cost of adding a chunk)
    b.add_text_field("ident", stored=True, tokenizer_name="whitespace")
    return b.build()


def idents(heading: str, text: str) -> str:
    """The `ident` field's text: a chunk's identifier terms (camelCase/snake_case split)."""
    return " ".join(terms.identifier_terms(heading + "\n" + text))


@lru_cache(maxsize=1)
def _body_analyzer() -> tantivy.TextAnalyzer:
    """The `default` tokenizer of the heading and body fields, rebuilt to ask it about text."""
    return (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.remove_long(TERM_BYTES))
            .filter(tantivy.Filter.lowercase()).build())


def is_body_term(word: str) -> bool:
    """Whether a whole word (ASCII letters and digits, lower-case) is kept whole in the body
    field's term dictionary: tokens of TERM_BYTES or more are dropped."""
    return len(word) < TERM_BYTES and terms.WORD_RUN_RE.fullmatch(word) is not None


@lru_cache(maxsize=None)
def _separates(c: str) -> bool:
    """Whether the body tokenizer splits at `c` and lower() makes no ASCII letter or digit of it:
    asked of the tokenizer itself (its idea of a letter is Rust's, not Python's), once per character."""
    try:
        split = _body_analyzer().analyze(f"a{c}b") == ["a", "b"]
    except ValueError:   # a lone surrogate (no catalog text holds one): no answer, so not
        return False
    return split and not terms.WORD_RUN_RE.search(c.lower())


_BEYOND_ASCII_RE = re.compile(r"[^\x00-\x7f]")


def tokens_are_words(text: str) -> bool:
    """Whether the body field's tokens of `text` are exactly its whole words (the runs of
    terms.WORD_RUN_RE in text.lower()) shorter than TERM_BYTES: true unless a character beyond
    ASCII joins letters into a token ("café" holds the whole word "caf", not the token)."""
    return text.isascii() or all(map(_separates, set(_BEYOND_ASCII_RE.findall(text))))


class FullText:
    """Open (or rebuild) the index at `directory`; `generation` says which catalog state it holds.

    `chunks_by_ids(ids)` gives catalog rows (as `replace_document` takes them) by chunk id: a
    removed document's segments are rewritten from them (`delete_document`)."""

    def __init__(self, directory: Path, priority: RequestsFirst | None = None, chunks_by_ids=None):
        self.dir = directory
        self.priority = priority or RequestsFirst()
        self.chunks_by_ids = chunks_by_ids
        self.schema = _schema()
        self.index = self._open()
        self._writer = None
        self._lost = False   # a commit failed: pending writes are gone until a rebuild
        # chunk ids re-added at the next commit (their segments purged), those segments' ords (in
        # the searcher of the last commit), their identifier terms as stored, paths written since
        self._rewrite: set[int] = set()
        self._rewritten_segments: set[int] = set()
        self._kept_idents: dict[int, str] = {}
        self._replaced: set[str] = set()

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
        self._replaced.add(path)
        for i, (chunk_id, section_id, cpath, _doc_type, heading, text) in enumerate(chunks):
            if i and i % WRITE_SLICE == 0:
                self.priority.give_way()
            w.add_document(self._doc(chunk_id, section_id, cpath, heading, text))

    def replace_sections(self, path: str, removed_sections: list[int], chunks) -> None:
        """Delete these sections' chunks and add `chunks` (a transcript's new tail: the rest of the
        document stays as it is); visible together at the next commit."""
        w = self.writer()
        if removed_sections:
            w.delete_documents_by_query(tantivy.Query.term_set_query(self.schema, "section_id", removed_sections))
        self._replaced.add(path)
        for i, (chunk_id, section_id, cpath, _doc_type, heading, text) in enumerate(chunks):
            if i and i % WRITE_SLICE == 0:
                self.priority.give_way()
            w.add_document(self._doc(chunk_id, section_id, cpath, heading, text))

    def delete_document(self, path: str) -> None:
        """Delete a removed (deleted, denied, `secret: true`) document so that no trace of its
        words stays on disk: tantivy keeps a deleted document's terms, counted in doc_freq, until
        its segment is merged away, and tantivy-py cannot merge. So the other chunks of the
        segments holding it are re-added at the commit, the old segments end with no live
        document, and tantivy drops them and their files. The cost follows the segments touched
        (a small segment of recent edits is cheap; the first bulk segment is a rewrite)."""
        if self.chunks_by_ids is not None:
            self._rewrite |= self._segment_mates(path)
        self.writer().delete_documents_by_term("path", path)

    def _segment_mates(self, path: str) -> set[int]:
        """Chunk ids of the live documents in the segments that hold `path` and are not already
        being rewritten at this commit (a branch switch removing 500 files reads each segment once)."""
        searcher = self.index.searcher()
        n = searcher.doc_freq("path", path)
        if not n:
            return set()
        own = searcher.search(tantivy.Query.term_query(self.schema, "path", path), n).hits
        segments = {addr.segment_ord for _, addr in own} - self._rewritten_segments
        if not segments:
            return set()
        self._rewritten_segments |= segments
        addrs = [addr for _, addr in searcher.search(tantivy.Query.all_query(), searcher.num_docs).hits
                 if addr.segment_ord in segments]
        ids = searcher.fast_field_values("chunk_id", addrs)
        for chunk_id, addr in zip(ids, addrs):
            self._kept_idents[chunk_id] = searcher.doc(addr).get_first("ident") or ""
        return set(ids)   # `path`'s own too: deleted, and not in the catalog to be added again

    def _rewrite_segment_mates(self, w) -> None:
        """Delete the removed documents' segment mates by chunk id and add them again from the
        catalog as it is now (a mate written again in this batch is deleted with its fresh copy
        and added once: deletes apply to what was added before them); their stored identifier
        terms are reused unless their document was written since the last commit."""
        ids, kept, replaced = sorted(self._rewrite), self._kept_idents, self._replaced
        self._forget_rewrite()
        if not ids:
            return
        w.delete_documents_by_query(tantivy.Query.term_set_query(self.schema, "chunk_id", ids))
        for i, (chunk_id, section_id, cpath, _doc_type, heading, text) in enumerate(self.chunks_by_ids(ids)):
            if i and i % WRITE_SLICE == 0:
                self.priority.give_way()
            ident = None if cpath in replaced else kept.get(chunk_id)
            w.add_document(self._doc(chunk_id, section_id, cpath, heading, text, ident))

    def _forget_rewrite(self) -> None:
        self._rewrite, self._rewritten_segments, self._kept_idents, self._replaced = set(), set(), {}, set()

    def _doc(self, chunk_id, section_id, path, heading, text, ident: str | None = None) -> tantivy.Document:
        if ident is None:
            ident = idents(heading, text)
        words = terms.keyword_text(text)
        return tantivy.Document(chunk_id=int(chunk_id), section_id=int(section_id), path=path,
                                heading=terms.keyword_text(heading.replace(" > ", " ")), body=words, stem=words,
                                ident=ident)

    def dead_share(self) -> float:
        """The share of the index's documents that are deleted ones (an edited document's old
        chunks), from tantivy's meta.json: its segments' `max_doc` and deletes. Until a merge
        tantivy counts them in BM25's statistics, and tantivy-py cannot ask for one."""
        try:
            segments = json.loads((self.dir / "meta.json").read_text())["segments"]
            total = sum(int(s["max_doc"]) for s in segments)
            dead = sum(int((s.get("deletes") or {}).get("num_deleted_docs", 0)) for s in segments)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return 0.0
        return dead / total if total else 0.0

    def commit(self, generation: int) -> None:
        """Commit explicitly and check it (a `with` block swallows a failed commit)."""
        if self._writer is not None:
            try:
                self._rewrite_segment_mates(self._writer)
                self._writer.commit()
                self._writer.garbage_collect_files()   # segments left with no live document: files gone now
                self._writer.wait_merging_threads()
            except BaseException:
                # A writer whose commit failed is broken and its pending writes are lost:
                # the index matches no catalog generation any more, now or after a restart, until
                # it is rebuilt — later commits must not stamp it current.
                self._writer = None
                self._forget_rewrite()
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
        self._forget_rewrite()
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
        w.commit()   # explicit and checked (a `with` block swallows a failed commit)
        w.wait_merging_threads()
        return n

    @classmethod
    def in_memory(cls, chunks, ident_of=None) -> FullText:
        """A derived index of `chunks` held in memory, searched like the main one: a scope's own
        BM25 statistics (indexer/store/scope.py KeywordIndexes). `ident_of(chunk id, heading, text)`
        may answer the identifier terms from a cache (splitting them is most of a build's cost)."""
        self = cls.__new__(cls)
        self.dir, self.schema, self._writer, self._lost = None, _schema(), None, False
        self.chunks_by_ids = None
        self._forget_rewrite()
        self.index = tantivy.Index(self.schema)
        self._fill(self.index, chunks, ident_of)
        self.index.reload()
        return self

    def num_docs(self) -> int:
        return self.index.searcher().num_docs

    # -- reading ------------------------------------------------------------------------------
    def reload(self) -> None:
        self.index.reload()

    def has_word(self, word: str, outside: frozenset[int] = frozenset()) -> bool:
        """Whether a live chunk, other than those of the `outside` sections, has the token `word`
        in its body: an exact term-dictionary lookup (a deleted chunk's terms stay in the
        dictionary until its segment is merged: a search skips it)."""
        searcher = self.index.searcher()
        if not searcher.doc_freq("body", word):
            return False
        query = tantivy.Query.term_query(self.schema, "body", word)
        if outside:
            query = tantivy.Query.boolean_query([
                (tantivy.Occur.Must, query),
                (tantivy.Occur.MustNot, tantivy.Query.term_set_query(self.schema, "section_id", sorted(outside))),
            ])
        return bool(searcher.search(query, 1).hits)

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
        plain = terms.keyword_text(" ".join(w for w in terms.words(text) if w.isascii() or w.isalnum()))
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
