"""What one request may read: a ReadView, bound to the request's scope.

Search, the memory tools and `read` take a view, never the engine: the scope a request was given
(path prefixes; empty for everything) is a field of the view, passed down explicitly, and the
catalog connection the view reads through is limited to that scope while the view is entered
(`with engine.view(prefixes) as view:`; an unscoped view may also be read without entering it,
outside any request snapshot). Derived answers — lower-cased sections, the corpus's
words, entity matchers, a scope's own BM25 index — are cached per catalog generation and scope
in one ReadCache the engine's views share."""

from __future__ import annotations

import dataclasses
import json
from contextlib import ExitStack
from typing import Callable, NamedTuple

from remembrancer.indexer import terms
from remembrancer.indexer.answers import IndexStatus, RootHeads
from remembrancer.indexer.ingest import corpus, links, meta
from remembrancer.indexer.ingest.chunks import MAX_CHUNK_CHARS
from remembrancer.indexer.store import scope
from remembrancer.indexer.store.base import KeywordIndex, Ledger, VectorIndex
from remembrancer.indexer.store.local import fulltext

from .core import Core
from .report import IndexReport
from .writer import link_resolver


class Pointer(NamedTuple):
    """A list item naming another document (links.pointer): search credits `target` with its hook."""
    source: str            # the document the item is in
    target: str            # the document it points at
    anchor: str | None     # the heading after '#', if any


class ReadCache:
    """Read-side answers that cost a scan, each kept with the (generation, scope) it holds for."""

    def __init__(self):
        self.keyword_indexes = scope.KeywordIndexes()
        self.entities: tuple = (-1, {}, [])
        self.declared: tuple[int, dict[tuple, bool]] = (-1, {})   # (scope, entity) → does its record declare its name?
        self.scoped_links: tuple | None = None
        self.indexes: tuple[int, dict[str, bool]] = (-1, {})   # document path → is it an index?
        self.lowered_scoped: tuple | None = None   # the last scope's visible rows of `lowered`
        self.lowered: tuple[int, list] = (-1, [])
        self.words: tuple[tuple, frozenset[str]] = ((), frozenset())
        self.unplain: tuple[tuple, tuple[frozenset[int], frozenset[str]]] = ((), (frozenset(), frozenset()))
        self.unplain_seen: tuple[int, dict[int, frozenset[str]]] = (0, {})   # (last section id read, id → words)
        self.section_count: tuple[tuple, int] = ((), 0)
        self.counts: tuple[tuple, dict] = ((), {})
        self.waiting: tuple[tuple, int] = ((), 0)


@dataclasses.dataclass(frozen=True)
class Copy:
    """The reader's file of an indexed document as one request read it (search/reader.py
    read_copy): `read` serves these bytes and a team reader's freshness compares the same ones
    with the indexed text (indexer/team.py)."""
    doc: dict    # its catalog row
    blob: str    # the git blob id of the bytes read: the indexed text when it is doc["content_hash"]


class ReadView:
    """One request's reads of one corpus, as if only the files under `scope` existed."""

    def __init__(self, core: Core, cache: ReadCache, prefixes: tuple[str, ...] = (),
                 last_report: Callable[[], IndexReport | None] = lambda: None):
        self._core = core
        self._cache = cache
        self.scope: tuple[str, ...] = prefixes   # the path prefixes this request may see (empty: everything)
        self.wall = scope.Wall((), {})           # the scope as a predicate on paths (set on entering)
        self._last_report = last_report
        self._stack: ExitStack | None = None
        self.copies: dict[str, Copy] = {}   # path asked → the file this request read of it (reader.read_copy)

    def __enter__(self) -> "ReadView":
        """Limit this thread's catalog connection to the scope; for the team store this is also
        the request's one snapshot (a REPEATABLE READ transaction), scoped or not."""
        if self.scope:
            self.wall = scope.Wall(self.scope, self._core.catalog.symlink_targets())
        self._stack = ExitStack()
        self._stack.enter_context(self._core.catalog.scoped(self.scope))
        return self

    def __exit__(self, *exc) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = None

    # -- the parts a request reads through ----------------------------------------------------------
    @property
    def catalog(self) -> Ledger:
        """This thread's catalog connection, limited to the scope while the view is entered."""
        if self.scope and self._stack is None:
            raise RuntimeError("a scoped view is read inside `with engine.view(prefixes) as view:`")
        return self._core.catalog

    @property
    def config(self):
        return self._core.config

    @property
    def dir(self):
        """The index's folder (a key of the reader's parse cache)."""
        return self._core.dir

    @property
    def store(self):
        return self._core.store

    @property
    def redaction(self):
        return self._core.redaction

    @property
    def vectors(self) -> VectorIndex | None:
        return self._core.vectors

    @property
    def embedder(self):
        return self._core.embedder

    def contract_problem(self) -> str | None:
        return self._core.contract_problem()

    def vectors_waiting(self) -> int:
        """Visible passages without a vector yet (found by keywords only), cached per generation."""
        key = (self.catalog.generation, self.scope)
        if self._cache.waiting[0] != key:
            self._cache.waiting = (key, self.catalog.waiting_count())
        return self._cache.waiting[1]

    def keyword_index(self) -> KeywordIndex:
        """The BM25 index this request searches: the main one, or the scope's own, whose
        statistics are those of the scoped chunks only (indexer/store/scope.py KeywordIndexes)."""
        if not self.scope:
            return self._core.fulltext
        return self._cache.keyword_indexes.get(self.scope, self._core.fulltext.generation,
                                               self.catalog.chunk_ids_digest, self.catalog.all_chunks)

    # -- cached reads -------------------------------------------------------------------------------
    def lowered_sections(self) -> list[tuple[int, str, str, str]]:
        """(section id, lower-cased heading, lower-cased content, path) of the visible sections in
        document order, cached per generation: the literal leg scans it without asking SQLite to
        lower-case the corpus."""
        c = self._cache
        gen = self.catalog.generation
        if c.lowered[0] != gen:
            rows = self.catalog.section_texts()
            c.lowered = (gen, [(i, h.lower(), t.lower(), p) for i, h, t, p in rows])
        if not self.scope:
            return c.lowered[1]
        key = (gen, self.scope, tuple(sorted(self.wall.symlinks.items())))
        got = c.lowered_scoped
        if got is None or got[0] != key:
            sees = self.wall.sees
            got = c.lowered_scoped = (key, [row for row in c.lowered[1] if sees(row[3])])
        return got[1]

    def literal_rows(self, needles: list[str], content_only: bool = False) -> list[tuple[int, str, str, str]]:
        """Rows shaped like lowered_sections() — (section id, lower-cased heading, lower-cased
        content, path), visible, in document order — holding every section that contains any of
        `needles` (lower-cased), and maybe a few that do not: callers test each row. Read from the
        catalog's literal index, so the cost follows the matches; a needle too short for it scans."""
        rows = self.catalog.sections_containing(needles, content_only)
        if rows is None:
            return self.lowered_sections()
        return [(i, h.lower(), c.lower(), p) for i, h, c, p in rows]

    def section_count(self) -> int:
        """How many sections the request may see, cached per generation and scope."""
        c = self._cache
        key = (self.catalog.generation, self.scope)
        if c.section_count[0] != key:
            c.section_count = (key, self.catalog.section_count())
        return c.section_count[1]

    def corpus_words(self) -> frozenset[str]:
        """Every lower-cased run of letters and digits in the visible sections, cached per
        generation and scope: "does the corpus ever use this word?" in O(1)."""
        c = self._cache
        key = (self.catalog.generation, self.scope)
        if c.words[0] != key:
            c.words = (key, frozenset(w for _, _, t, _ in self.lowered_sections() for w in terms.WORD_RUN_RE.findall(t)))
        return c.words[1]

    def uses_word(self, word: str) -> bool | None:
        """Whether some visible section's content uses `word` (lower-case) whole, as terms.uses_whole
        says, from the keyword index's term dictionary; the few sections whose tokens are not their
        whole words (_unplain_sections) are answered from their words. None when it cannot say: a
        word the dictionary does not keep whole, an index behind the catalog, the team store (its
        ledger answers from its own postings: pg_store.uses_word)."""
        if (self.store.kind != "local" or not fulltext.is_body_term(word)
                or self._core.fulltext.generation != self.catalog.generation):
            return None
        outside, words = self._unplain_sections()
        return word in words or self.keyword_index().has_word(word, outside)

    def _unplain_sections(self) -> tuple[frozenset[int], frozenset[str]]:
        """The visible sections whose body tokens may not be their whole words — a letter beyond
        ASCII (fulltext.tokens_are_words), or more than one chunk (a line cut inside a word) — and
        the whole words they use, cached per generation and scope. Only sections new since the
        last call are read (a full scan of 10,000 documents costs ~45 ms; an edit's, nothing)."""
        c = self._cache
        key = (self.catalog.generation, self.scope)
        if c.unplain[0] != key:
            after, seen = c.unplain_seen
            last, rows = self.catalog.sections_beyond_ascii(after, MAX_CHUNK_CHARS)
            if last < after:   # another catalog (its ids start again): read it whole
                after, seen = 0, {}
                last, rows = self.catalog.sections_beyond_ascii(after, MAX_CHUNK_CHARS)
            new = {i: frozenset(terms.WORD_RUN_RE.findall(t.lower())) for i, t in rows
                   if len(t) > MAX_CHUNK_CHARS or not fulltext.tokens_are_words(t)}
            visible = self.catalog.visible_section_ids([*seen, *new])
            if not self.scope:   # a deleted section is forgotten (a scope does not see them all)
                seen = {i: w for i, w in seen.items() if i in visible}
            seen = {**seen, **new}
            c.unplain_seen = (max(after, last), seen)
            c.unplain = (key, (frozenset(visible), frozenset().union(*(seen[i] for i in visible))))
        return c.unplain[1]

    def entities(self):
        """(EntityMatcher, entity name → path of its record) for the visible records, cached."""
        c = self._cache
        gen = self.catalog.generation
        if c.entities[0] != gen:
            c.entities = (gen, {}, self.catalog.entities(unscoped=True))
        if self.scope not in c.entities[1]:
            rows = [r for r in c.entities[2] if self.wall.sees(r[1])]
            matcher = meta.EntityMatcher([meta.Entity(n, p, a) for n, p, a in rows])
            c.entities[1][self.scope] = (matcher, {n: p for n, p, _ in rows})
        return c.entities[1][self.scope]

    def declares_name(self, entity: str) -> bool:
        """Whether an entity's record declares its name (`host:`, `service:`, `name:`) rather than
        being a note titled by its file: only then are its aliases nicknames of the thing
        (answer._with_entity_names). Its front matter is read once per generation."""
        c = self._cache
        gen = self.catalog.generation
        if c.declared[0] != gen:
            c.declared = (gen, {})
        key = (self.scope, entity)
        if key not in c.declared[1]:
            path = self.entities()[1].get(entity)
            doc = self.catalog.document(path) if path else None
            c.declared[1][key] = meta.declared_name(meta.stored_front_matter(doc)) is not None
        return c.declared[1][key]

    def links_in_scope(self) -> list[dict]:
        """The scope's links, each resolved among the scope's documents and entities only (a link
        to an outside file is unresolved, or finds the in-scope namesake a corpus of only these
        files would find); cached per generation and scope."""
        c = self._cache
        key = (self.catalog.generation, self.catalog.get_meta("link_targets"), self.scope)
        got = c.scoped_links
        if got is None or got[0] != key:
            resolver = link_resolver(self.catalog, self.config.roots)   # built from the (scoped) views
            rows = self.catalog.link_rows()
            for lk in rows:
                lk["resolved"] = resolver.resolve(lk["target"], lk["kind"], lk["source"])
            got = c.scoped_links = (key, rows)
        return got[1]

    def outbound_links(self, doc_id: int, path: str) -> list[dict]:
        """A document's links, each resolved as this request's scope sees them."""
        if self.scope:
            return [lk for lk in self.links_in_scope() if lk["source"] == path]
        return self.catalog.link_rows(source_doc_id=doc_id)

    def _is_index(self, path: str) -> bool:
        """Whether the document at `path` is an index (links.is_index), cached per generation."""
        c = self._cache
        gen = self.catalog.generation
        if c.indexes[0] != gen:
            c.indexes = (gen, {})
        known = c.indexes[1]
        if path not in known:
            known[path] = links.is_index("\n".join(s.content or "" for s in self.catalog.sections(path)))
        return known[path]

    def pointers(self, passage_ids) -> dict[int, Pointer]:
        """The passages among `passage_ids` that are pointers — a list item opening with a link to
        another visible document (links.pointer), in a document that is an index (links.is_index) —
        and the document each points at."""
        out: dict[int, Pointer] = {}
        outbound: dict[int, list[dict]] = {}
        found = {pid: (row, link) for pid, row in self.catalog.passage_texts(passage_ids).items()
                 if (link := links.pointer(row[3].partition("\n")[2], row[2])) is not None}   # past its header line
        for pid, ((_, doc_id, path, _), link) in found.items():
            if link.kind != "import" and not self._is_index(path):
                continue   # a link a list item opens with in passing ("- [[pg1]] record: new § Backups")
            if doc_id not in outbound:
                outbound[doc_id] = self.outbound_links(doc_id, path)
            for lk in outbound[doc_id]:
                if lk["kind"] == link.kind and lk["target"] == link.target and lk["resolved"] not in (None, path):
                    out[pid] = Pointer(path, lk["resolved"], link.anchor)
                    break
        return out

    # -- facts --------------------------------------------------------------------------------------
    def last_run(self, report: IndexReport | None = None) -> dict | None:
        """The last index run's report (or `report`) as this request's scope sees it."""
        report = report or self._last_report()
        return None if report is None else report.scoped(self.wall)

    def current_heads(self) -> dict[str, str | None]:
        return self._core.current_heads()

    def scoped_head(self, root, head: str | None) -> str | None:
        """HEAD as the scope's own history has it: the newest commit that changed a scoped path."""
        if head is None or not self.scope:
            return head
        from remembrancer.indexer.memory import commits

        return commits.scoped_head(root, self.scope, len(self.config.roots) > 1, head)

    def _counts(self) -> dict[str, int]:
        """catalog.counts() cached per generation and scope: every answer through the daemon
        carries them (its freshness line), and counting 100k rows five times costs ~30 ms."""
        c = self._cache
        key = (self.catalog.generation, self.scope)
        cached = c.counts
        if cached[0] != key:
            cached = c.counts = (key, self.catalog.counts())
        return dict(cached[1])

    def status(self) -> IndexStatus:
        """Counts, model, freshness facts and the last run's warnings — what `status` prints."""
        core = self._core
        last = self.catalog.get_meta("last_indexed_at")
        indexed_heads = json.loads(self.catalog.get_meta("heads") or "{}")
        current = self.current_heads()
        out = IndexStatus(
            index_dir=str(core.dir),
            store=self.store.describe(),
            roots=[RootHeads(r.name, str(r.path), self.scoped_head(r, indexed_heads.get(r.name)),
                             self.scoped_head(r, current.get(r.name)), corpus.root_unavailable(r.path))
                   for r in self.config.roots],
            **self._counts(),
            generation=self.catalog.generation,
            fulltext_generation=core.fulltext.generation,
            vectors_generation=core.vectors.generation if core.vectors is not None else None,
            model={k: v for k, v in (self.catalog.model_contract() or {}).items() if k != "probe"} or None,
            last_indexed_at=float(last) if last else None,
            warnings=([f"redaction: {p}; indexing and serving are stopped" for p in [self.redaction.problem()] if p]
                      + self.warnings()),
            redaction=self.redaction.status(),  # families, hash file — or why it fails closed
            vectors_waiting=self.vectors_waiting() or None,
        )
        if self.scope:  # the vectors the scope's passages use (the embeddings table is shared)
            out.vectors = self.catalog.vectors_in_use()
            out.scope = list(self.scope)
        return out

    def warnings(self, path: str | None = None) -> list[str]:
        """The stored warnings of the index runs, as this scope may see them; with `path`, only
        those about that file (why a run left it out)."""
        return self._core.stored_warnings.visible(self.catalog, self.wall, path)
