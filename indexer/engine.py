"""The engine: one corpus's catalog + full-text index + vector file, kept in agreement.

Writes follow one data flow: the catalog first (one transaction per document), then
the derived stores. On open, a derived store whose generation differs from the catalog's is
rebuilt from the catalog — never by re-embedding. The engine is a library; the CLI, the daemon
and the tests all drive it the same way.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from remembrancer.indexer.ingest import changes
from remembrancer.indexer.ingest import corpus
from remembrancer.indexer.store.local import fulltext
from remembrancer.indexer import indexes
from remembrancer.indexer.ingest import document as ingest
from remembrancer.indexer.ingest import links
from remembrancer.indexer.ingest import meta
from remembrancer.indexer.ingest import sandbox
from remembrancer.indexer.store import scope
from remembrancer.indexer import terms
from remembrancer.indexer.ingest.chunks import MAX_CHUNK_CHARS
from remembrancer.indexer.config import Config, make_private
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.redact import Redactor  # secrets never reach the index: indexer/redact.py
from remembrancer.indexer.redact_policy import RedactorSource
from remembrancer.indexer.store.base import KeywordIndex, Ledger, Store, VectorIndex
from remembrancer.indexer.store.local.readers import Readers
from remembrancer.indexer.store.local.store import LocalStore

log = logging.getLogger(__name__)

# Bump when what is read from a document changes (links, stale markers, dates, passages): every document is
# read again on the next refresh, and nothing whose text is unchanged is re-embedded.
PARSE_VERSION = 4
EMBED_GROUP = 1024  # new texts gathered across documents before one embedding call (length-sorted batches:
                    # on mm-v2, 256 padded 3.6 % of the tokens, 1024 1.1 %; vectors do not depend on it)
SAVE_EVERY_S = 10.0  # the full-text index is committed at least this often during a long run
RETAG_NAMES_MAX = 200  # changed entity names looked up in the literal index; more: every section is retagged

ProgressFn = Callable[[int, int, str], None]


@dataclass
class IndexReport:
    scanned: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: int = 0    # walked but not indexable as they are now (binary, unreadable, secret: true)
    embedded: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    # Per path, for a scoped view of the run (`scoped`): what was walked, what happened to the
    # changed files, the new texts each one needed embedded, the path each warning is about.
    walked: list[str] = field(default_factory=list, repr=False)
    outcomes: dict[str, str] = field(default_factory=dict, repr=False)
    embedded_for: dict[str, set] = field(default_factory=dict, repr=False)
    warning_paths: list[str | None] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in _PER_PATH}

    def scoped(self, wall: scope.Wall) -> dict:
        """The run as a corpus holding only the scope's files would have reported it."""
        if not wall.prefixes:
            return self.to_dict()
        counts = {k: 0 for k in ("added", "updated", "removed", "skipped")}
        unchanged = 0
        walked = [p for p in self.walked if wall.sees(p)]
        for p in walked:
            o = self.outcomes.get(p, "unchanged")
            if o in counts:
                counts[o] += 1
            elif o == "unchanged":
                unchanged += 1
        counts["removed"] = sum(1 for p, o in self.outcomes.items() if o == "removed" and wall.sees(p))
        shas = set().union(*(s for p, s in self.embedded_for.items() if wall.sees(p)))
        return {"scanned": len(walked), **counts, "unchanged": unchanged, "embedded": len(shas),
                "seconds": self.seconds, "warnings": scope.visible_warnings(wall, self.warnings, self.warning_paths)}


_PER_PATH = ("walked", "outcomes", "embedded_for", "warning_paths")


class Engine:
    def __init__(self, config: Config, *, embedder=None, readonly: bool = False, store: Store | None = None):
        if not config.roots:
            raise UserError("no corpus roots given", hint="pass --root DIR (or set roots = [...] in the config)")
        self.config = config
        self.dir = config.index_dir()
        self.readonly = readonly
        self.layout = meta.Layout(config.layout)
        # Redaction policy, loaded once (reloaded only if the hash file changes). It fails closed at
        # refresh/search/read (RedactionError), not here, so `status` can still say why.
        self.redaction = RedactorSource(config.redact)
        self._embedder = embedder
        self._embedder_error: str | None = None
        self.model_loads = 0
        self._embedder_lock = threading.Lock()
        # Where the index lives (indexer/store/base.py): the local store by default.
        self.store = store or LocalStore(self.dir, ", ".join(str(r.path) for r in config.roots))
        self._catalog = self.store.open_ledger(readonly)
        self._writer_thread = threading.get_ident()
        self._readers = Readers(lambda: self.store.open_ledger(readonly=True))   # request threads' connections
        self.stop_requested = threading.Event()
        self._sandbox = sandbox.Worker("remembrancer-ingest")  # large documents (started on first use)
        self.fulltext: KeywordIndex = self.store.keyword_index(lambda: self.catalog)
        self.vectors: VectorIndex | None = None
        self._entities: tuple = (-1, {}, [])
        self._scope = threading.local()
        self._keyword_indexes = scope.KeywordIndexes()
        self.last_report: IndexReport | None = None
        self._scoped_links: tuple | None = None
        self._lowered_scoped: tuple | None = None   # the last scope's visible rows of _lowered
        self._lowered: tuple[int, list] = (-1, [])
        self._words: tuple[tuple, frozenset[str]] = ((), frozenset())
        self._unplain: tuple[tuple, tuple[frozenset[int], frozenset[str]]] = ((), (frozenset(), frozenset()))
        self._unplain_seen: tuple[int, dict[int, frozenset[str]]] = (0, {})   # (last section id read, id → words)
        self._section_count: tuple[tuple, int] = ((), 0)
        self._counts_cache: tuple[tuple, dict] = ((), {})
        self._matcher_cache: tuple[list | None, meta.EntityMatcher | None] = (None, None)
        self._resolver: links.Resolver | None = None   # the catalog's link targets, kept across targeted runs
        self._open_vectors()
        if not readonly:
            if self.store.kind == "local":   # `remembrancer corpora` lists it; MCP sessions may serve it
                indexes.record(self.dir, [r.path for r in config.roots])
            if self.dir.is_dir():
                make_private(self.dir)  # the index holds the corpus' text: 0700 folders, 0600 files
            self.repair()

    @property
    def catalog(self) -> Ledger:
        """The writer's connection on the writing thread; a read-only one per other thread.

        SQLite in WAL mode gives each reader a consistent snapshot, so a search running while
        a document is being replaced sees the old document or the new one, never half of it.
        """
        if threading.get_ident() == self._writer_thread:
            return self._catalog
        return self._readers.get()

    def claim_writer(self) -> None:
        """Make the calling thread the one that writes (the daemon's ingest thread)."""
        self._writer_thread = threading.get_ident()

    def pool_readers(self) -> None:
        """Request threads share a few read-only connections, given back after each request
        (`release_reader`): the daemon's descriptors stay bounded whatever its clients do."""
        self._readers.pool()

    def release_reader(self) -> None:
        """The calling thread is done reading (its request or client ended): its connection goes
        back to the pool, or is closed (indexer/store/local/readers.py)."""
        if threading.get_ident() != self._writer_thread:
            self._readers.give_back()

    # -- model ----------------------------------------------------------------------------------
    @property
    def embedder(self):
        """The embedding model, loaded on first use (a no-change run never loads it)."""
        if self._embedder is None and self._embedder_error is None:
            with self._embedder_lock:  # request threads may all ask at once: load once
                if self._embedder is None and self._embedder_error is None:
                    from remembrancer.indexer.models.embed import ModelError, load_embedder

                    try:
                        self._embedder = load_embedder(self.config.model)
                        self.model_loads += 1
                    except ModelError as e:
                        self._embedder_error = str(e)
        return self._embedder

    def contract_problem(self) -> str | None:
        """Why the vector leg cannot be used, or None. A stored contract that differs is refused loudly."""
        stored = self.catalog.model_contract()
        emb = self.embedder
        if emb is None:
            return f"embedding model unavailable: {self._embedder_error}"
        if stored is not None and stored != emb.contract.to_dict():
            if self.store.kind != "local":   # a reader of a shared store cannot re-embed it
                return (f"the store was embedded with {stored.get('name')} ({str(stored.get('model_sha256'))[:12]}) "
                        f"but this machine's model is {emb.contract.name} ({emb.contract.model_sha256[:12]}); "
                        "install and configure the store's model here (`model` in the config)")
            roots = " ".join(f"--root {r.path}" for r in self.config.roots)
            return (f"index was embedded with {stored.get('name')} but the configured model is "
                    f"{emb.contract.name} ({emb.contract.model_sha256[:12]}); re-embed with "
                    f"`remembrancer index {roots} --reembed`")
        return None

    def _open_vectors(self) -> None:
        stored = self.catalog.model_contract()
        if stored is not None:
            self.vectors = self.store.vector_index(lambda: self.catalog, int(stored["dim"]))

    # -- consistency ----------------------------------------------------------------------------
    def repair(self) -> list[str]:
        """Rebuild any derived store that does not reflect the catalog's generation (no embedding)."""
        done = []
        gen = self.catalog.generation
        if self.fulltext.generation != gen:
            n = self.fulltext.rebuild(self.catalog.all_chunks(), gen)
            done.append(f"full-text index rebuilt from the catalog ({n} chunks)")
        if self.vectors is not None and self.vectors.generation != gen:
            labels, vecs = self.catalog.passage_vectors()
            self.vectors.rebuild(labels, vecs, gen)
            done.append(f"vector file rebuilt from the catalog ({len(labels)} vectors)")
        for d in done:
            log.info(d)
        return done

    # -- indexing -------------------------------------------------------------------------------
    def refresh(self, progress: ProgressFn | None = None, reembed: bool = False) -> IndexReport:
        """Bring the index up to date with the files: only what changed is parsed and embedded.

        With `[metrics] textfile` configured, Prometheus metrics are written after every run,
        failed ones included (indexer/metrics.py)."""
        return self._measured(self._refresh, progress, reembed)

    def _measured(self, run, *args) -> IndexReport:
        """An index pass (`_released`), with `[metrics] textfile` written after it, failed or not."""
        if not self.config.metrics_textfile or self.readonly:
            return self._released(run, *args)
        from remembrancer.indexer import metrics

        try:
            report = self._released(run, *args)
        except Exception as e:
            metrics.after_ingest(self, None, e)
            raise
        metrics.after_ingest(self, report, None)
        return report

    def _released(self, run, *args):
        """Run an index pass, then close what only indexing needed (the embedder's worker session)."""
        try:
            return run(*args)
        finally:
            release = getattr(self._embedder, "release_workers", None)
            if release is not None:
                release()

    def _refresh(self, progress: ProgressFn | None, reembed: bool) -> IndexReport:
        self._check_writable()
        # A run that failed half-way (disk full, a bug) may have left a derived store without some
        # of the catalog's writes; the next commit would stamp it current. Catch up first (a no-op
        # when the generations agree, which is always the case after a run that completed).
        self.repair()
        t0 = time.monotonic()
        report = IndexReport()
        if getattr(self._catalog, "recovered", None):  # catalog.py moved a damaged catalog aside at open
            report.warnings.append(self._catalog.recovered)
            self._catalog.recovered = None
        redactor = self.redaction.current()  # fail closed: RedactionError if the secret-hash file is unusable
        policy = self._redaction_policy_check(redactor)
        self._layout_check()
        reparse = self._reparse_check()
        if not self.catalog.documents():
            # A first index: nothing stored needs re-reading, so record the parser and policy now. Left
            # for the end, a crash during the first index made every restart re-read and rewrite
            # every document it had already stored.
            self.catalog.set_meta("parse_version", str(PARSE_VERSION))
            self.catalog.set_meta("redaction_policy", redactor.policy_fingerprint())
            reparse, policy = False, None
        if reembed:
            self._drop_vectors()
        walked = corpus.walk(self.config.roots, self.config.excludes, self.config.max_file_bytes)
        walked.files = [f for f in walked.files if not redactor.denied(f.path, f.rel)]  # [redact] deny globs
        report.warnings += walked.warnings
        report.scanned = len(walked.files)
        report.walked = [f.path for f in walked.files]
        self.catalog.record_symlinks({f.path: f.target for f in walked.files if f.target})
        known = self.catalog.documents()
        present = {f.path for f in walked.files}
        failed_prefixes = tuple(f"{r}/" for r in walked.failed_roots)
        single_failed = bool(walked.failed_roots) and len(self.config.roots) == 1
        # A root that cannot be read keeps its documents: an unmounted disk must not empty the index.
        gone = [p for p in known if p not in present and not single_failed and not p.startswith(failed_prefixes)]
        changed = [f for f in walked.files if self._stat_changed(f, known.get(f.path))]
        report.unchanged = len(walked.files) - len(changed)
        report.outcomes.update((f.path, "pending") for f in changed)   # counted nowhere until read
        entities_before = self.catalog.entities()
        self._resolver = None   # a whole run starts from the catalog
        for p in gone:
            self._remove(p)
            report.removed += 1
            report.outcomes[p] = "removed"
        self._ingest(changed, known, report, progress)
        if self._retag_entities(entities_before) or report.removed or report.updated:
            self._resolver = None   # it may name what is gone (an old title, a dropped alias)
        self._resolve_links()
        if not self.stop_requested.is_set() and (changed or gone) and hasattr(self.catalog, "drop_orphan_embeddings"):
            self.catalog.drop_orphan_embeddings()  # a complete run leaves no embedding without a passage
        self._commit_derived()
        if policy and not self.stop_requested.is_set():
            self._redaction_policy_applied(redactor, scrub=policy == "changed")
        if reparse and not self.stop_requested.is_set():
            self.catalog.set_meta("parse_version", str(PARSE_VERSION))
        self.catalog.set_meta("last_indexed_at", str(time.time()))
        self.catalog.set_meta("heads", json.dumps(self.current_heads()))
        # A file not read again (unchanged) keeps its warnings: its invalid front matter is still there.
        fresh = set(report.warnings)
        self._store_run_warnings(report, lambda w, p: p in present and w not in fresh
                                 and report.outcomes.get(p, "unchanged") == "unchanged")
        report.seconds = round(time.monotonic() - t0, 3)
        self.last_report = report
        return report

    def _check_writable(self) -> None:
        if self.readonly:
            raise UserError("index is open read-only", hint="stop the other writer (the daemon) or ask it to reindex")

    def refresh_paths(self, paths, progress: ProgressFn | None = None) -> IndexReport:
        """Bring the index up to date for these changed paths (the daemon's watcher events) and
        for whatever differs between the indexed and the current HEAD of each root (what the git
        hooks announce): the cost follows the change, not the corpus (indexer/ingest/changes.py). What
        only a whole walk can judge — a root itself, a symlink, an unknown old HEAD — and an index
        that must be read again (parser, layout or redaction policy changed) run `refresh()`.

        The new text is searchable when this returns; the vector file is saved later
        (`save_vectors`): the catalog holds every embedding, so a crash before the save costs a
        rebuild of that file at the next start, never an embedding."""
        self._check_writable()
        if self._must_read_all():
            return self.refresh(progress)
        paths = {str(p) for p in paths}
        heads = self.current_heads()
        indexed_heads = json.loads(self.catalog.get_meta("heads") or "{}")
        for r in self.config.roots:
            if heads.get(r.name) != indexed_heads.get(r.name):
                moved = changes.head_changes(r, indexed_heads.get(r.name), heads.get(r.name))
                if moved is None:
                    return self.refresh(progress)
                paths.update(moved)
        touched = changes.resolve(self.config.roots, paths, self.config.excludes, self.config.max_file_bytes)
        if touched.full:
            log.info("full refresh: %s", touched.full)
            return self.refresh(progress)
        return self._measured(self._refresh_touched, touched, heads, progress)

    def _refresh_touched(self, touched: changes.Touched, heads: dict, progress: ProgressFn | None) -> IndexReport:
        self.repair()
        t0 = time.monotonic()
        report = IndexReport()
        redactor = self.redaction.current()   # fail closed, as refresh()
        files = [f for f in touched.files if not redactor.denied(f.path, f.rel)]
        report.warnings += touched.warnings
        report.scanned = len(files)
        known = self.catalog.documents_matching(touched.exact, touched.prefixes)
        present = {f.path for f in files}
        gone = [p for p in known if p not in present]
        changed = [f for f in files if self._stat_changed(f, known.get(f.path))]
        report.unchanged = len(files) - len(changed)
        if gone or changed:
            entities_before = self.catalog.entities()
            titles_before = self.catalog.titles(list(known))
            for p in gone:
                self._remove(p)
                report.removed += 1
            self._ingest(changed, known, report, progress)
            retagged = self._retag_entities(entities_before)
            self._commit_derived(save_vectors=False)   # searchable from here on
            if report.removed or retagged or self.catalog.titles(list(titles_before)) != titles_before:
                self._resolver = None   # it may name what is gone (an old title, a dropped alias)
            if report.added or self._resolver is None:
                self._resolve_links()   # the names a link can point at changed
        self.catalog.set_meta("last_indexed_at", str(time.time()))
        self.catalog.set_meta("heads", json.dumps(heads))
        touched_paths = touched.exact | {f.path for f in touched.files}
        self._store_run_warnings(report, lambda w, p: w.split(":", 1)[0] not in touched_paths
                                 and not w.startswith(tuple(touched.prefixes)))
        report.seconds = round(time.monotonic() - t0, 3)
        return report

    def _store_run_warnings(self, report: IndexReport, keep) -> None:
        """This run's warnings, after the stored ones `keep(warning, path)` says still hold (about a
        file this run did not read again)."""
        report.warning_paths = [self._warning_path(w) for w in report.warnings]
        kept = [(w, p) for w, p in self._stored_warnings() if keep(w, p)]
        self._store_warnings([w for w, _ in kept] + report.warnings, [p for _, p in kept] + report.warning_paths)

    def _store_warnings(self, warnings: list[str], paths: list[str | None]) -> None:
        """The last run's warnings and, beside each, the path it is about (what a scope filters by)."""
        self.catalog.set_meta("last_warnings", json.dumps(warnings[-200:]))
        self.catalog.set_meta("last_warning_paths", json.dumps(paths[-200:]))

    def _stored_warnings(self) -> list[tuple[str, str | None]]:
        warnings = json.loads(self.catalog.get_meta("last_warnings") or "[]")
        paths = json.loads(self.catalog.get_meta("last_warning_paths") or "null")
        if not isinstance(paths, list) or len(paths) != len(warnings):   # an index from before the paths
            paths = [self._warning_path(w) for w in warnings]
        return list(zip(warnings, paths))

    def _must_read_all(self) -> bool:
        """A parser, layout or redaction-policy change since the last run: every document is read again."""
        return (self.catalog.get_meta("parse_version") != str(PARSE_VERSION)
                or self.catalog.get_meta("layout") != json.dumps(self.config.layout)
                or self.catalog.get_meta("redaction_policy") != self.redaction.current().policy_fingerprint())

    def _warning_path(self, warning: str) -> str | None:
        """The corpus path a warning is about, or None for a run-wide one (a scope keeps those)."""
        head = warning.partition(": ")[0]
        if head == warning:
            return None
        if head.lower().endswith(corpus.MARKDOWN_SUFFIXES) or scope.warning_path(warning):
            return head
        return head if any(p.exists() for p in self._disk_paths(head)) else None

    def _disk_paths(self, path: str) -> list[Path]:
        if len(self.config.roots) == 1:
            return [self.config.roots[0].path / path]
        name, _, rel = path.partition("/")
        return [r.path / rel for r in self.config.roots if r.name == name]

    def _stat_changed(self, f: corpus.CorpusFile, known) -> bool:
        """Whether the file must be read (and its blob id compared): its stamp is not the stored
        one (corpus.change_stamp: size, mtime, ctime and inode, never trusted when recent)."""
        return known is None or known[2] != f.size or known[3] != f.stamp or not f.stamp

    def _ingest(self, files, known, report: IndexReport, progress: ProgressFn | None) -> None:
        matcher = self._matcher(self.catalog.entities())
        redactor = self.redaction.current()
        # The fallback date of an undated file, new or edited (a dated filename needs none).
        commit_dates = self._commit_dates([f for f in files if not meta.date_in(f.rel.rsplit("/", 1)[-1])])
        pending: list[ingest.Prepared] = []
        pending_texts = 0
        last_save = time.monotonic()
        for i, f in enumerate(files, 1):
            if self.stop_requested.is_set():
                break  # SIGTERM: what is written is whole; the rest waits for the next run
            if progress:
                progress(i, len(files), f.path)
            old = known.get(f.path)
            try:
                data = ingest.read_file(f, self.config.max_file_bytes)
            except ingest.Skip as e:
                self._unindexable(f.path, old, str(e), report)
                continue
            if old is not None and old[1] == corpus.blob_id(data):
                self.catalog.touch_document(f.path, f.size, f.stamp)
                report.unchanged += 1
                report.outcomes[f.path] = "unchanged"
                continue
            try:
                prepared = self._prepare(f, data, matcher, commit_dates.get(f.path), redactor)
            except sandbox.Stopped:
                break  # SIGTERM mid-document: the child was killed; this document waits for the next run
            except ingest.Skip as e:   # binary now, or `secret: true`
                self._unindexable(f.path, old, str(e), report)
                continue
            report.warnings += prepared.warnings
            if old is None:
                report.added += 1
                report.outcomes[f.path] = "added"
            else:
                report.updated += 1
                report.outcomes[f.path] = "updated"
            pending.append(prepared)
            pending_texts += len(prepared.texts)
            if pending_texts >= EMBED_GROUP:
                self._write(pending, report)
                pending, pending_texts = [], 0
            if time.monotonic() - last_save > SAVE_EVERY_S:
                self._commit_derived(save_vectors=False)   # saved once at the end: each save writes the whole file
                last_save = time.monotonic()
        self._write(pending, report)

    def _unindexable(self, path: str, old, warning: str, report: IndexReport) -> None:
        """A file that cannot be indexed as it is now (binary, unreadable, `secret: true`): its older
        copy goes too — the index serves what the files say, never what one used to say."""
        report.warnings.append(warning)
        if old is not None:
            self._remove(path)
            report.removed += 1
            report.outcomes[path] = "removed"
        else:
            report.skipped += 1
            report.outcomes[path] = "skipped"

    def _prepare(self, f, data: bytes, matcher, fallback_date, redactor) -> ingest.Prepared:
        """ingest.prepare, in a child process under a time budget for a large document
        (indexer/ingest/sandbox.py); past the budget the document is indexed as plain text in parts, and
        past a second budget for that, without its text."""
        args = (f, data, self.layout, matcher, fallback_date, redactor)
        if len(data) < sandbox.LARGE_BYTES:
            return ingest.prepare(*args)
        try:
            return sandbox.prepare_large(self._sandbox, args, stop=self.stop_requested)
        except sandbox.OverBudget:
            return ingest.without_sections(f, data, self.layout, (
                f"{f.path}: indexed without its text: redacting it went over the per-document "
                f"budget ({sandbox.BUDGET_S:.0f} CPU-s, {sandbox.MEMORY_BYTES / 1e9:g} GB), even as plain text; "
                f"split the file to make it searchable"))

    def _commit_dates(self, files) -> dict[str, str]:
        out: dict[str, str] = {}
        by_root: dict = {}
        for f in files:
            by_root.setdefault(f.root, []).append(f)
        for root, fs in by_root.items():
            dates = corpus.last_commit_dates(root, {f.rel for f in fs})
            out.update({f.path: dates[f.rel] for f in fs if f.rel in dates})
        return out

    def _write(self, batch: list[ingest.Prepared], report: IndexReport) -> None:
        """Embed the batch's new texts in one call, then write each document in its own transaction."""
        if not batch:
            return
        wanted: dict[str, str] = {}
        for p in batch:
            wanted.update(p.texts)
        new_vectors: dict[str, np.ndarray] = {}
        emb = self.embedder
        if emb is not None and self.contract_problem() is None:
            missing = sorted(set(wanted) - self.catalog.known_shas(list(wanted)))
            if missing:
                vecs = emb.embed_passages([wanted[s] for s in missing])
                new_vectors = dict(zip(missing, vecs))
                report.embedded += len(missing)
                for p in batch:
                    report.embedded_for[p.doc.path] = set(p.texts) & set(missing)
            if self.catalog.model_contract() is None:
                self.catalog.set_meta("model_contract", json.dumps(emb.contract.to_dict()))
                self._open_vectors()
        elif not any("vectors skipped" in w for w in report.warnings):
            report.warnings.append(f"vectors skipped: {self.contract_problem()}")
        # One resolver, grown by each batch as it is written (not every document read again per
        # batch), and kept for the next targeted run while it still describes the catalog.
        resolver = self._resolver = self._resolver or self._link_resolver()
        for p in batch:
            d = p.doc
            resolver.add_document(d.path, d.rel, d.root, d.title)
            if p.entity is not None:
                resolver.add_entity(p.entity.name, d.path, p.entity.aliases)
        for p in batch:
            self.store.priority.give_way()   # between documents, requests first (indexer/store/priority.py)
            for lk in p.links:
                lk.resolved = resolver.resolve(lk.target, lk.kind, p.doc.path)
            own = {sha: new_vectors[sha] for sha in p.texts if sha in new_vectors}   # not the whole batch's, per document
            removed, added = self.catalog.write_document(p.doc, p.sections, own, p.entity, p.links)
            if self.store.indexes_in_ledger:   # nothing to read back for them
                continue
            self.fulltext.replace_document(p.doc.path, self.catalog.chunks_of(p.doc.path))
            if self.vectors is not None:
                labels, vecs = self.catalog.passage_vectors(added)
                self.vectors.update(removed, list(labels), vecs)

    def _remove(self, path: str) -> None:
        removed = self.catalog.delete_document(path)
        self.fulltext.delete_document(path)
        if self.vectors is not None:
            self.vectors.update(removed, [], np.zeros((0, self.vectors.dim), dtype=np.float32))

    def _retag_entities(self, before: list) -> bool:
        """Entity definitions changed since `before`: recompute the mentions of the sections that
        may name a changed name or alias — found by the literal index, so editing one host record
        does not re-read every section — or of every section after a first index, or when a
        changed name is too short to look up (text only, nothing re-embedded). True if any changed."""
        after = self.catalog.entities()
        if after == before:
            return False
        old = meta.EntityMatcher([meta.Entity(n, p, a) for n, p, a in before])
        new = self._matcher(after)
        names = sorted(n for n in old.by_name.keys() | new.by_name.keys() if old.by_name.get(n) != new.by_name.get(n))
        rows = self.catalog.sections_containing(names) if before and len(names) <= RETAG_NAMES_MAX else None
        sections = self.catalog.sections() if rows is None else self.catalog.sections_by_id([r[0] for r in rows]).values()
        self.catalog.set_entity_mentions({s.id: new.mentions(s.heading + "\n" + s.body) for s in sections})
        return True

    # -- links (indexer/ingest/links.py) ------------------------------------------------------------------
    def _reparse_check(self) -> bool:
        """An index built by an older parser: read every document again (nothing is re-embedded)."""
        if self.catalog.get_meta("parse_version") == str(PARSE_VERSION):
            return False
        self.catalog.read_all_again()
        return True

    def _matcher(self, rows: list) -> meta.EntityMatcher:
        """The entity matcher for these entity rows; the last one is kept (building it compiles a
        pattern of every name, which a one-file update should not pay for)."""
        if self._matcher_cache[0] != rows:
            self._matcher_cache = (rows, meta.EntityMatcher([meta.Entity(n, p, a) for n, p, a in rows]))
        return self._matcher_cache[1]

    def prepare_targeted(self) -> None:
        """Build the link resolver a targeted update writes with, if a full pass dropped it: the
        same one the next edit would build first (from the catalog as it stands; only the writer
        changes it), built while nothing waits — at 20k documents it cost the first edit after
        every rescan ~0.5 s."""
        if self._resolver is None and not self.readonly:
            self._resolver = self._link_resolver()

    def _link_resolver(self) -> links.Resolver:
        rows = list(self.catalog.document_names())
        return links.Resolver(rows, self.catalog.entities(), multi_root=len(self.config.roots) > 1)

    def links_in_scope(self) -> list[dict]:
        """The scope's links, each resolved among the scope's documents and entities only (a link
        to an outside file is unresolved, or finds the in-scope namesake a corpus of only these
        files would find); cached per generation and scope."""
        key = (self.catalog.generation, self.catalog.get_meta("link_targets"), self.scope)
        got = self._scoped_links
        if got is None or got[0] != key:
            resolver = self._link_resolver()   # built from the (scoped) views
            rows = self.catalog.link_rows()
            for lk in rows:
                lk["resolved"] = resolver.resolve(lk["target"], lk["kind"], lk["source"])
            got = self._scoped_links = (key, rows)
        return got[1]

    def _resolve_links(self) -> None:
        """Re-resolve every link when the documents a link can name (paths, titles, entity names)
        changed: a renamed or deleted target updates its backlinks without re-reading the sources."""
        rows = sorted((path, title) for path, _, _, title in self.catalog.document_names())
        key = json.dumps([rows, self.catalog.entities()])
        fp = hashlib.sha256(key.encode()).hexdigest()
        if self.catalog.get_meta("link_targets") == fp:
            return
        resolver = self._link_resolver()
        changes = []
        for lk in self.catalog.link_rows():
            r = resolver.resolve(lk["target"], lk["kind"], lk["source"])
            if r != lk["resolved"]:
                changes.append((r, lk["id"]))
        self.catalog.set_link_resolutions(changes)
        self.catalog.set_meta("link_targets", fp)

    def _commit_derived(self, save_vectors: bool = True) -> None:
        """Commit the full-text index (searchable now) and save the vector file, or only mark the
        in-memory vectors current (searches use them at once; `save_vectors` writes them later)."""
        gen = self.catalog.generation
        self.fulltext.commit(gen)
        if self.vectors is not None:
            if save_vectors and self.vectors.saved_generation != gen:   # a rescan that changed nothing writes nothing
                self.vectors.save(gen)
            else:
                self.vectors.generation = gen   # in memory; the file still holds an older one
        if self.dir.is_dir():
            make_private(self.dir)  # new tantivy segments and vector files

    def vectors_unsaved(self) -> bool:
        return self.vectors is not None and self.vectors.generation != self.vectors.saved_generation

    def save_vectors(self) -> None:
        """Write the vector file if targeted updates left it behind (the daemon calls this when quiet)."""
        if self.vectors_unsaved():
            self.vectors.save(self.vectors.generation)
            make_private(self.dir)

    def _drop_vectors(self) -> None:
        """--reembed: forget the stored contract and every embedding; documents are re-read."""
        self.catalog.drop_embeddings()
        if self.vectors is not None:
            self.store.drop_vector_index()
        self.vectors = None

    # -- redaction policy (indexer/redact.py) -----------------------------------------------------
    def _layout_check(self) -> None:
        """A changed layout (path globs → doc types) changes types and embedded headers: every
        document is read again (passages whose text did not change keep their embeddings)."""
        layout = json.dumps(self.config.layout)
        if self.catalog.get_meta("layout") != layout:
            self.catalog.read_all_again()
            self.catalog.set_meta("layout", layout)

    def _redaction_policy_check(self, redactor: Redactor) -> str | None:
        """None if the stored policy fingerprint is current; else every document is read again
        (unchanged passages keep their embeddings). "first" for an empty catalog, else "changed"."""
        if self.catalog.get_meta("redaction_policy") == redactor.policy_fingerprint():
            return None
        if not self.catalog.documents():
            return "first"
        self.catalog.read_all_again()
        return "changed"

    def _redaction_policy_applied(self, redactor: Redactor, scrub: bool) -> None:
        """Record the policy once a run completed under it. After a change, no pre-change text may
        survive under the index dir: derived stores are rebuilt from the re-redacted catalog and
        SQLite's free pages and WAL are emptied."""
        if scrub:
            gen = self.catalog.generation
            self.fulltext.rebuild(self.catalog.all_chunks(), gen)
            if self.vectors is not None:
                labels, vecs = self.catalog.passage_vectors()
                self.vectors.rebuild(labels, vecs, gen)
        self.catalog.set_meta("redaction_policy", redactor.policy_fingerprint())
        if scrub:
            problem = self.catalog.compact()
            if problem:
                log.warning("catalog not compacted after a redaction-policy change (%s); "
                            "old text may stay in free pages until the next change", problem)

    def lowered_sections(self) -> list[tuple[int, str, str, str]]:
        """(section id, lower-cased heading, lower-cased content, path) of the visible sections in
        document order, cached per generation: the literal leg scans it without asking SQLite to
        lower-case the corpus."""
        gen = self.catalog.generation
        if self._lowered[0] != gen:
            rows = self.catalog.section_texts()
            self._lowered = (gen, [(i, h.lower(), c.lower(), p) for i, h, c, p in rows])
        if not self.scope:
            return self._lowered[1]
        key = (gen, self.scope, tuple(sorted(self.wall.symlinks.items())))
        got = self._lowered_scoped
        if got is None or got[0] != key:
            sees = self.wall.sees
            got = self._lowered_scoped = (key, [row for row in self._lowered[1] if sees(row[3])])
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
        """How many sections the current request may see, cached per generation and scope."""
        key = (self.catalog.generation, self.scope)
        if self._section_count[0] != key:
            self._section_count = (key, self.catalog.section_count())
        return self._section_count[1]

    def corpus_words(self) -> frozenset[str]:
        """Every lower-cased run of letters and digits in the visible sections, cached per
        generation and scope: "does the corpus ever use this word?" in O(1)."""
        key = (self.catalog.generation, self.scope)
        if self._words[0] != key:
            self._words = (key, frozenset(w for _, _, c, _ in self.lowered_sections() for w in terms.WORD_RUN_RE.findall(c)))
        return self._words[1]

    def uses_word(self, word: str) -> bool | None:
        """Whether some visible section's content uses `word` (lower-case) whole, as terms.uses_whole
        says, from the keyword index's term dictionary; the few sections whose tokens are not their
        whole words (_unplain_sections) are answered from their words. None when it cannot say: a
        word the dictionary does not keep whole, an index behind the catalog, the team store (its
        ledger answers from its own postings: pg_store.uses_word)."""
        if (self.store.kind != "local" or not fulltext.is_body_term(word)
                or self.fulltext.generation != self.catalog.generation):
            return None
        outside, words = self._unplain_sections()
        return word in words or self.keyword_index().has_word(word, outside)

    def _unplain_sections(self) -> tuple[frozenset[int], frozenset[str]]:
        """The visible sections whose body tokens may not be their whole words — a letter beyond
        ASCII (fulltext.tokens_are_words), or more than one chunk (a line cut inside a word) — and
        the whole words they use, cached per generation and scope. Only sections new since the
        last call are read (a full scan of 10,000 documents costs ~45 ms; an edit's, nothing)."""
        key = (self.catalog.generation, self.scope)
        if self._unplain[0] != key:
            after, seen = self._unplain_seen
            last, rows = self.catalog.sections_beyond_ascii(after, MAX_CHUNK_CHARS)
            if last < after:   # another catalog (its ids start again): read it whole
                after, seen = 0, {}
                last, rows = self.catalog.sections_beyond_ascii(after, MAX_CHUNK_CHARS)
            new = {i: frozenset(terms.WORD_RUN_RE.findall(c.lower())) for i, c in rows
                   if len(c) > MAX_CHUNK_CHARS or not fulltext.tokens_are_words(c)}
            visible = self.catalog.visible_section_ids([*seen, *new])
            if not self.scope:   # a deleted section is forgotten (a scope does not see them all)
                seen = {i: w for i, w in seen.items() if i in visible}
            seen = {**seen, **new}
            self._unplain_seen = (max(after, last), seen)
            self._unplain = (key, (frozenset(visible), frozenset().union(*(seen[i] for i in visible))))
        return self._unplain[1]

    def entities(self):
        """(EntityMatcher, entity name → path of its record) for the visible records, cached."""
        gen = self.catalog.generation
        if self._entities[0] != gen:
            self._entities = (gen, {}, self.catalog.entities(unscoped=True))
        prefixes = self.scope
        if prefixes not in self._entities[1]:
            rows = [r for r in self._entities[2] if self.wall.sees(r[1])]
            matcher = meta.EntityMatcher([meta.Entity(n, p, a) for n, p, a in rows])
            self._entities[1][prefixes] = (matcher, {n: p for n, p, _ in rows})
        return self._entities[1][prefixes]

    # -- scopes -----------------------------------------------------------------------------------
    @property
    def scope(self) -> tuple[str, ...]:
        """The path prefixes the current request may see (empty: everything)."""
        return getattr(self._scope, "prefixes", ())

    @property
    def wall(self) -> scope.Wall:
        """The current request's scope as a predicate on corpus paths (symlinks judged by target)."""
        return getattr(self._scope, "wall", None) or scope.Wall((), {})

    @contextmanager
    def scoped(self, prefixes):
        """Serve one request as if only the files under `prefixes` existed (indexer/store/scope.py)."""
        prefixes = scope.normalize(prefixes)
        if prefixes:
            scope.check_exists(self.config.roots, prefixes)
        before = (self.scope, self.wall)
        self._scope.prefixes = prefixes
        self._scope.wall = scope.Wall(prefixes, self.catalog.symlink_targets() if prefixes else {})
        try:
            with self.catalog.scoped(prefixes):
                yield
        finally:
            self._scope.prefixes, self._scope.wall = before

    def keyword_index(self):
        """The BM25 index this request searches: the main one, or the scope's own, whose
        statistics are those of the scoped chunks only (indexer/store/scope.py KeywordIndexes)."""
        if not self.scope:
            return self.fulltext
        return self._keyword_indexes.get(self.scope, self.fulltext.generation, self.catalog.chunk_ids_digest,
                                        self.catalog.all_chunks)

    def last_run(self, report: IndexReport | None = None) -> dict | None:
        """The last index run's report as this request's scope sees it."""
        report = report or self.last_report
        return None if report is None else report.scoped(self.wall)

    # -- facts ----------------------------------------------------------------------------------
    def current_heads(self) -> dict[str, str | None]:
        return {r.name: corpus.head_id(corpus.open_repo(r.path)) for r in self.config.roots}

    def _counts(self) -> dict[str, int]:
        """catalog.counts() cached per generation and scope: every answer through the daemon
        carries them (its freshness line), and counting 100k rows five times costs ~30 ms."""
        key = (self.catalog.generation, self.scope)
        cached = self._counts_cache
        if cached[0] != key:
            cached = self._counts_cache = (key, self.catalog.counts())
        return dict(cached[1])

    def _scoped_head(self, root, head: str | None) -> str | None:
        """HEAD as the scope's own history has it: the newest commit that changed a scoped path."""
        if head is None or not self.scope:
            return head
        from remembrancer.indexer.memory import commits

        return commits.scoped_head(root, self.scope, len(self.config.roots) > 1, head)

    def status(self) -> dict:
        """Counts, model, freshness facts and the last run's warnings — what `status` prints."""
        last = self.catalog.get_meta("last_indexed_at")
        indexed_heads = json.loads(self.catalog.get_meta("heads") or "{}")
        current = self.current_heads()
        contract = self.catalog.model_contract()
        out = {
            "index_dir": str(self.dir),
            "store": self.store.describe(),
            "roots": [{"name": r.name, "path": str(r.path),
                       "head_indexed": self._scoped_head(r, indexed_heads.get(r.name)),
                       "head_current": self._scoped_head(r, current.get(r.name))} for r in self.config.roots],
            **self._counts(),
            "generation": self.catalog.generation,
            "fulltext_generation": self.fulltext.generation,
            "vectors_generation": self.vectors.generation if self.vectors is not None else None,
            "model": contract,
            "last_indexed_at": float(last) if last else None,
            "warnings": ([f"redaction: {p}; indexing and serving are stopped" for p in [self.redaction.problem()] if p]
                         + self.warnings()),
            "redaction": self.redaction.status(),  # families, hash file — or why it fails closed
        }
        if self.scope:  # the vectors the scope's passages use (the embeddings table is shared)
            out["vectors"] = self.catalog.vectors_in_use()
            out["scope"] = list(self.scope)
        return out

    def warnings(self, path: str | None = None) -> list[str]:
        """The stored warnings of the index runs, as this engine's scope may see them; with `path`,
        only those about that file (why a run left it out)."""
        pairs = [(w, p) for w, p in self._stored_warnings() if path is None or p == path]
        return scope.visible_warnings(self.wall, [w for w, _ in pairs], [p for _, p in pairs])

    def close(self) -> None:
        self._sandbox.close()
        self._readers.close()
        self._catalog.close()
        release = getattr(self.store, "close", None)   # the local store's writer lock (indexer/writelock.py)
        if release is not None:
            release()
