"""The write path: files → typed records → the store, only what changed, with the run's report.

One thread writes (the daemon's ingest thread, or the CLI's): `refresh` walks every root,
`refresh_paths` follows the paths a watcher or a git hook names. Each document is written in its
own transaction, the catalog first, then the derived indexes (indexer/engine/core.py)."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from typing import Callable

import numpy as np

from remembrancer.indexer.config import CODE, COMMITS, CONVERSATIONS, NOTES, make_private
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.ingest import changes, code, commit_log, conversation, corpus, links, meta, sandbox
from remembrancer.indexer.ingest import document as ingest
from remembrancer.indexer.models.spec import ModelError
from remembrancer.indexer.redact import Redactor
from remembrancer.indexer.store.base import Ledger

from .core import Core
from .report import UNFINISHED_PASS, Behind, IndexReport

log = logging.getLogger(__name__)

# Bump when what is read from a document changes (links, stale markers, dates, passages): every document is
# read again on the next refresh, and nothing whose text is unchanged is re-embedded.
# 18: a heading that opens a list item (an outliner's `- ## Steps`) is a heading; 17: a front matter YAML
# refuses is read leniently (a Claude Code description holding ": "), and one not read at all is the
# preamble's text; 16: a how-to folder names no kind; 15: a note's kind from its tags or folder (`tags: [howto]`, `Tools/`), and aliases alone make no record;
# 14: a heading or a daily note's name that is a day in figures (`14.05.2031`, `2031/05/14`, `05/14/2031`)
# dates it; 13: a CLAUDE.md import ends where a word would; 12: a daily note named by its day in words
# (`14 May 2031.md`) is a day; 11: a CLAUDE.md's `@path` imports are links, and a list item holding
# one a pointer; 10: a heading that is a day in words ("Tuesday 6 May", "14 May 2031") dates its
# sections, placed in its year by the headings above, the path or the document's date; 9: a daily
# note (a file named by its day, `2024_01_05.md` too) is a journal day, titled by its day when it
# has no title of its own, its sections' headers beginning with it; 8: a document titled a plan or
# a roadmap is a plan; 7: a superseded document is stale (meta.document_is_stale), passages carry
# the description
PARSE_VERSION = 18
# Deleted documents the keyword index may keep, as a share of all it holds, before it is rebuilt
# (tantivy counts them in BM25's document frequencies; a search engine's merge policy would purge
# them from about a fifth on).
KEYWORD_DEAD_SHARE = 0.2
# Deleted vectors the vector graph may hold, as a share of all it holds, before it is made again from
# the catalog's vectors (nothing is embedded again). hnswlib only marks a deleted item: an editor that
# saves as you type re-embeds the paragraph at every save, and a daemon's graph grew without bound.
# An edit's new vectors take deleted ones' slots (store/local/vectors.py): what stays deleted is what
# notes removed and large documents left; past a third the file would hold 1.5× its live vectors.
VECTOR_DEAD_SHARE = 1 / 3
# Space deleted rows hold in the catalog, as a share, before it is compacted (Catalog.dead_share,
# Catalog.compact): SQLite and its FTS5 literal index reuse little of it, and an edited catalog grew
# past twice a fresh one's size. A compaction writes the file again (~0.1 s per 10 MB).
CATALOG_DEAD_SHARE = 0.3
EMBED_GROUP = 1024  # new texts gathered across documents before one embedding call (length-sorted batches:
                    # on mm-v2, 256 padded 3.6 % of the tokens, 1024 1.1 %; vectors do not depend on it)
SAVE_EVERY_S = 10.0  # the full-text index is committed at least this often during a long run
RETAG_NAMES_MAX = 200  # changed entity names looked up in the literal index; more: every section is retagged
WAITING_BATCH = 256  # passages embedded per call when filling those left without a vector

ProgressFn = Callable[[int, int, str], None]


def _vectors_said(report: IndexReport) -> bool:
    """Whether the run's warnings already say why passages go without vectors (one line a run)."""
    return any(w.startswith(("vectors skipped", "vectors waiting")) for w in report.warnings)


def _indexable(files, redactor: Redactor) -> tuple[list, list[tuple[object, str]]]:
    """(the files a pass indexes, the files whose path holds a secret with the warning about each).
    A file a `[redact] deny` glob names is neither. A token in a file or folder name would be stored
    as the document's path and title, and listed and served with it: such a file is not indexed, and
    its warning names it redacted (indexer/redact.py). A whole pass, a targeted one and the re-check
    (Writer.behind) all judge the files here, so they agree on which are the corpus."""
    kept, named = [], []
    for f in files:
        if redactor.denied(f.path, f.rel):
            continue
        shown, counts = redactor.redact_path(f.path)
        target = getattr(f, "target", None)   # a symlink: the catalog records the path it points to
        linked = {} if counts or not target else redactor.redact_path(target)[1]
        if counts:
            named.append((f, f"{shown}: not indexed (its name holds a secret: {', '.join(sorted(counts))}); "
                             f"rename the file"))
        elif linked:
            named.append((f, f"{shown}: not indexed (the name of the file it links to holds a secret: "
                             f"{', '.join(sorted(linked))}); rename that file"))
        else:
            kept.append(f)
    return kept, named


def _skip_secret_names(named, known, report: IndexReport) -> None:
    """Count and warn about the files _indexable left out for their names; an older copy (indexed before its name
    was recognised) is not among the files present, so the run removes it with the gone ones."""
    for f, warning in named:
        report.warnings.append(warning)
        if f.path not in known:
            report.skipped += 1
            report.outcomes[f.path] = "skipped"


def link_resolver(catalog: Ledger, roots) -> links.Resolver:
    """A resolver of link targets among the documents and entities this catalog connection sees."""
    return links.Resolver(list(catalog.document_names()), catalog.entities(), multi_root=len(roots) > 1)


class Writer:
    """The one writer of a corpus's index."""

    def __init__(self, core: Core):
        self.core = core
        self.last_report: IndexReport | None = None
        self._sandbox = sandbox.Worker("remembrancer-ingest")  # large documents (started on first use)
        self._matcher_cache: tuple[list | None, meta.EntityMatcher | None] = (None, None)
        self._resolver: links.Resolver | None = None   # the catalog's link targets, kept across targeted runs
        self._down: str | None = None   # the embedding server failed during this run (text only from then on)
        # Known to leave no passage without a vector: a targeted run (each file change) need not
        # count them (an anti-join over every passage, ~0.5 µs each) until one is written without.
        self._none_waiting = False
        self._purged = False   # a document's old text was purged (Prepared.purge): compact the catalog once settled

    @property
    def catalog(self) -> Ledger:
        return self.core.catalog

    def refresh(self, progress: ProgressFn | None = None, reembed: bool = False) -> IndexReport:
        """Bring the index up to date with the files: only what changed is parsed and embedded.

        With `[metrics] textfile` configured, Prometheus metrics are written after every run,
        failed ones included (indexer/metrics.py)."""
        return self._measured(self._refresh, progress, reembed)

    def _measured(self, run, *args) -> IndexReport:
        """An index pass (`_released`), with `[metrics] textfile` written after it, failed or not."""
        if not self.core.config.metrics_textfile or self.core.readonly:
            return self._released(run, *args)
        from remembrancer.indexer import metrics

        try:
            report = self._released(run, *args)
        except Exception as e:
            metrics.after_ingest(self.core, None, e)
            raise
        metrics.after_ingest(self.core, report, None)
        return report

    def _released(self, run, *args):
        """Run an index pass, then close what only indexing needed (the embedder's worker session)."""
        try:
            return run(*args)
        finally:
            release = getattr(self.core.loaded_embedder, "release_workers", None)
            if release is not None:
                release()

    def _refresh(self, progress: ProgressFn | None, reembed: bool) -> IndexReport:
        self._check_writable()
        self._start_run()
        # A run that failed half-way (disk full, a bug) may have left a derived store without some
        # of the catalog's writes; the next commit would stamp it current. Catch up first (a no-op
        # when the generations agree, which is always the case after a run that completed).
        self.core.repair()
        t0 = time.monotonic()
        report = IndexReport()
        if getattr(self.core.writer_catalog, "recovered", None):  # catalog.py moved a damaged catalog aside at open
            report.warnings.append(self.core.writer_catalog.recovered)
            self.core.writer_catalog.recovered = None
        redactor = self.core.redaction.current()  # fail closed: RedactionError if the secret-hash file is unusable
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
        walked = self._walk()
        walked.files, named = _indexable(walked.files, redactor)
        # Said before the first write, cleared when the pass has ended: a pass killed, crashed or stopped
        # half-way leaves it, and no answer judged from the catalog calls that index fresh (behind()).
        self.catalog.set_meta(UNFINISHED_PASS, json.dumps({"started_at": time.time(), "files": len(walked.files)}))
        report.warnings += [redactor.redact_path(w)[0] for w in walked.warnings]
        report.scanned = len(walked.files) + len(named)
        report.walked = [f.path for f in walked.files] + [f.path for f, _ in named]
        self.catalog.record_symlinks({**walked.skipped_links, **{f.path: f.target for f in walked.files if f.target}})
        known = self.catalog.documents()
        _skip_secret_names(named, known, report)
        present = {f.path for f in walked.files}
        gone = self._gone(known, present, walked)
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
        if not self.core.stop_requested.is_set() and (changed or gone) and hasattr(self.catalog, "drop_orphan_embeddings"):
            self.catalog.drop_orphan_embeddings()  # a complete run leaves no embedding without a passage
        self._fill_waiting(report)
        if reembed:
            self._vectors_from_catalog()
        self._commit_derived()
        if policy and not self.core.stop_requested.is_set():
            self._redaction_policy_applied(redactor, scrub=policy == "changed")
        if reparse and not self.core.stop_requested.is_set():
            self.catalog.set_meta("parse_version", str(PARSE_VERSION))
        if not self.core.stop_requested.is_set():
            # Only a pass that read every file says so: one stopped half-way (SIGTERM) leaves the HEAD
            # and time of the last whole pass, and its mark, so the next start finishes the work
            # instead of taking the HEAD it never read for indexed (refresh_paths, behind).
            self.catalog.set_meta("last_indexed_at", str(time.time()))
            self.catalog.set_meta("heads", json.dumps(self.core.current_heads()))
            self.catalog.set_meta(UNFINISHED_PASS, "")
        # A file not read again (unchanged) keeps its warnings: its invalid front matter is still there.
        fresh = set(report.warnings)
        self._store_run_warnings(report, lambda w, p: p in present and w not in fresh
                                 and report.outcomes.get(p, "unchanged") == "unchanged")
        report.seconds = round(time.monotonic() - t0, 3)
        self.last_report = report
        return report

    def behind(self, wall=None) -> Behind:
        """What an index pass would do now, judged without writing: the files not in the index, changed
        or gone (a file whose stamp differs is read and its blob id compared, as a pass does), a
        whole pass that started and never finished, a HEAD not indexed. A file the last pass skipped
        (binary, unreadable, `secret: true`: a stored warning names it) and not touched since is not
        counted: no pass would index it. `wall`: a scoped view's — this thread's catalog then holds
        only the scope's documents, so only the scope's files are compared with it."""
        redactor = self.core.redaction.current()
        walked = self._walk()
        files, _ = _indexable([f for f in walked.files if wall is None or wall.sees(f.path)], redactor)
        known = self.catalog.documents()
        last = self.catalog.get_meta("last_indexed_at")
        last_ns = int(float(last) * 1e9) if last else None
        warned = {p for _, p in self.core.stored_warnings.read(self.catalog) if p}
        out = Behind(files=len(files), unfinished=self.unfinished_pass(),
                     never=last_ns is None, reread=bool(known) and self._must_read_all())
        for f in files:
            old = known.get(f.path)
            if old is None:
                skipped = f.path in warned and last_ns is not None and f.mtime_ns <= last_ns
                out.new += not skipped
            elif self._stat_changed(f, old):
                try:
                    data = commit_log.render(f) if f.root.kind == COMMITS else \
                        ingest.read_file(f, self.core.config.max_file_bytes)
                except ingest.Skip:   # a pass would remove it
                    out.changed += 1
                    continue
                out.changed += old[1] != corpus.blob_id(data)
        out.gone = len(self._gone(known, {f.path for f in files}, walked))
        if self.core.config.kind != COMMITS:
            indexed = json.loads(self.catalog.get_meta("heads") or "{}")
            out.moved = [name for name, head in self.core.current_heads().items()
                         if head is not None and indexed.get(name) != head]
        return out

    def unfinished_pass(self) -> bool:
        """Whether the last whole pass started and did not end (killed, crashed, stopped): refresh()
        marks it before its first write and clears it at its end."""
        return bool(self.catalog.get_meta(UNFINISHED_PASS))

    def _gone(self, known, present: set[str], walked: corpus.WalkResult) -> list[str]:
        """The indexed documents no longer among the files. A root that cannot be read keeps its
        documents: an unmounted disk must not empty the index."""
        if walked.failed_roots and len(self.core.config.roots) == 1:
            return []
        failed = tuple(f"{r}/" for r in walked.failed_roots)
        return [p for p in known if p not in present and not p.startswith(failed)]

    def _walk(self) -> corpus.WalkResult:
        """Every file of the roots — or, in a commits corpus, every commit reachable from HEAD."""
        cfg = self.core.config
        if cfg.kind == COMMITS:
            return commit_log.walk(cfg.roots)
        return corpus.walk(cfg.roots, cfg.excludes, cfg.max_file_bytes)

    def _check_writable(self) -> None:
        if self.core.readonly:
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
        if self._must_read_all() or self.unfinished_pass():   # a whole pass never ended: it is finished first
            return self.refresh(progress)
        paths = {str(p) for p in paths}
        heads = self.core.current_heads()
        indexed_heads = json.loads(self.catalog.get_meta("heads") or "{}")
        if self.core.config.kind == COMMITS:   # no files: the commits each moved HEAD gained
            return self._refresh_commits(heads, indexed_heads, progress)
        for r in self.core.config.roots:
            if heads.get(r.name) != indexed_heads.get(r.name):
                moved = changes.head_changes(r, indexed_heads.get(r.name), heads.get(r.name))
                if moved is None:
                    return self.refresh(progress)
                paths.update(moved)
        touched = changes.resolve(self.core.config.roots, paths, self.core.config.excludes, self.core.config.max_file_bytes)
        if touched.full:
            log.info("full refresh: %s", self.core.redaction.current().redact_path(touched.full)[0])
            return self.refresh(progress)
        return self._measured(self._refresh_touched, touched, heads, progress)

    def _refresh_commits(self, heads: dict, indexed: dict, progress: ProgressFn | None) -> IndexReport:
        """A commits corpus's targeted update: the commits between each root's indexed and current
        HEAD (commit_log.between); a history that was rewritten asks for the whole walk."""
        touched = changes.Touched()
        multi = len(self.core.config.roots) > 1
        for r in self.core.config.roots:
            if heads.get(r.name) != indexed.get(r.name):
                gained = commit_log.between(r, indexed.get(r.name), heads.get(r.name), multi)
                if gained is None:
                    return self.refresh(progress)
                touched.files += gained
        touched.exact = {f.path for f in touched.files}
        return self._measured(self._refresh_touched, touched, heads, progress)

    def _refresh_touched(self, touched: changes.Touched, heads: dict, progress: ProgressFn | None) -> IndexReport:
        self._start_run()
        self.core.repair()
        t0 = time.monotonic()
        report = IndexReport()
        redactor = self.core.redaction.current()   # fail closed, as refresh()
        files, named = _indexable(touched.files, redactor)
        report.warnings += [redactor.redact_path(w)[0] for w in touched.warnings]
        report.scanned = len(files) + len(named)
        known = self.catalog.documents_matching(touched.exact, touched.prefixes)
        _skip_secret_names(named, known, report)
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
        if not self._none_waiting and self._fill_waiting(report):
            self._commit_derived(save_vectors=False)
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
        stored = self.core.stored_warnings
        report.warning_paths = [stored.path_of(w) for w in report.warnings]
        kept = [(w, p) for w, p in stored.read(self.catalog) if keep(w, p)]
        stored.write(self.catalog, [w for w, _ in kept] + report.warnings, [p for _, p in kept] + report.warning_paths)

    def _must_read_all(self) -> bool:
        """A parser, layout or redaction-policy change since the last run: every document is read again."""
        return (self.catalog.get_meta("parse_version") != str(PARSE_VERSION)
                or self.catalog.get_meta("layout") != json.dumps(self.core.config.layout)
                or self.catalog.get_meta("redaction_policy") != self.core.redaction.current().policy_fingerprint())

    def _stat_changed(self, f: corpus.CorpusFile, known) -> bool:
        """Whether the file must be read (and its blob id compared): its stamp is not the stored
        one (corpus.change_stamp: size, mtime, ctime and inode, never trusted when recent)."""
        return known is None or known[2] != f.size or known[3] != f.stamp or not f.stamp

    def _ingest(self, files, known, report: IndexReport, progress: ProgressFn | None) -> None:
        if progress is not None and hasattr(progress, "report"):   # a reporter that also counts passages
            progress.report = report
        matcher = self._matcher(self.catalog.entities())
        redactor = self.core.redaction.current()
        # The fallback date of an undated file, new or edited (a dated filename needs none).
        commit_dates = self._commit_dates([f for f in files if f.root.kind in (NOTES, CODE)
                                           and not meta.date_in(f.rel.rsplit("/", 1)[-1])])
        pending: list[ingest.Prepared] = []
        pending_texts = 0
        last_save = time.monotonic()
        for i, f in enumerate(files, 1):
            if self.core.stop_requested.is_set():
                break  # SIGTERM: what is written is whole; the rest waits for the next run
            if progress:
                progress(i, len(files), f.path)
            old = known.get(f.path)
            try:
                data = commit_log.render(f) if f.root.kind == COMMITS else \
                    ingest.read_file(f, self.core.config.max_file_bytes)
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
                self._commit_derived(save_vectors=False, settled=False)   # saved once at the end: each save writes the whole file
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
        if f.root.kind == CONVERSATIONS and f.rel.lower().endswith(".jsonl"):
            return self._prepare_conversation(f, data, redactor)
        if f.root.kind == COMMITS:   # a message is small: no sandbox
            return commit_log.prepare(f, data, redactor)
        if f.root.kind == CODE:   # tree-sitter's parse is bounded by the size cap; no Markdown to parse
            return code.prepare(f, data, redactor, fallback_date)
        args = (f, data, self.core.layout, matcher, fallback_date, redactor)
        if len(data) < sandbox.LARGE_BYTES:
            return ingest.prepare(*args)
        try:
            return sandbox.prepare_large(self._sandbox, args, stop=self.core.stop_requested)
        except sandbox.OverBudget:
            return ingest.without_sections(f, data, self.core.layout, (
                f"{f.path}: indexed without its text: redacting it went over the per-document "
                f"budget ({sandbox.BUDGET_S:.0f} CPU-s, {sandbox.MEMORY_BYTES / 1e9:g} GB), even as plain text; "
                f"split the file to make it searchable"))

    def _prepare_conversation(self, f, data: bytes, redactor) -> ingest.Prepared:
        """A transcript's rows (ingest/conversation.py) — of its new tail only when it grew; a
        large read in the sandbox under its budget, as a large note is (redaction is what can be
        slow), and past it without its text."""
        stored = self._stored_session(f.path)
        tail = (stored or {}).get("tail") or {}
        try:
            if len(data) - tail.get("offset", 0) < sandbox.LARGE_BYTES:
                try:
                    return conversation.prepare(f, data, redactor, stored, whole_limit=sandbox.LARGE_BYTES)
                except conversation.ReadWhole as whole:   # a secret the tail gave away is in earlier exchanges
                    args = (f, data, redactor, None, whole.keep)
            else:
                args = (f, data, redactor, stored)
            return self._sandbox.call("prepare_conversation", args, stop=self.core.stop_requested)
        except sandbox.OverBudget:
            bare = ingest.without_sections(f, data, self.core.layout, (
                f"{f.path}: indexed without its text: reading the transcript went over the per-document "
                f"budget ({sandbox.BUDGET_S:.0f} CPU-s, {sandbox.MEMORY_BYTES / 1e9:g} GB)"))
            bare.purge = stored is not None   # its stored text may hold a value the new tail gave away
            return bare

    def _stored_session(self, path: str) -> dict | None:
        """The session facts stored for a transcript, when its stored sections are the ones its
        tail was read against (else None: the file is read whole)."""
        doc = self.catalog.document(path)
        if doc is None:
            return None
        try:
            stored = json.loads(doc["front_matter"] or "{}")
        except (TypeError, ValueError):
            return None
        tail = stored.get("tail") if isinstance(stored, dict) else None
        if not isinstance(tail, dict) or self.catalog.section_total(path) != tail.get("keep", -1) + 1:
            return None
        return stored

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
        emb = self.core.embedder
        if emb is not None and self._vectors_problem() is None:
            missing = sorted(set(wanted) - self.catalog.known_shas(list(wanted)))
            if missing:
                try:
                    vecs = emb.embed_passages([wanted[s] for s in missing])
                except ModelError as e:   # the server failed or changed: the documents are written without vectors, they wait
                    self._server_down(str(e), report)
                    self._none_waiting = False
                    missing = []
                else:
                    new_vectors = dict(zip(missing, vecs))
                report.embedded += len(missing)
                for p in batch:
                    report.embedded_for[p.doc.path] = set(p.texts) & set(missing)
            if new_vectors and self.catalog.model_contract() is None:
                self._record_contract(emb)
        else:
            self._none_waiting = False
            if not _vectors_said(report):
                report.warnings.append(f"vectors skipped: {self._vectors_problem()}")
        # One resolver, grown by each batch as it is written (not every document read again per
        # batch), and kept for the next targeted run while it still describes the catalog.
        resolver = self._resolver = self._resolver or link_resolver(self.catalog, self.core.config.roots)
        for p in batch:
            d = p.doc
            resolver.add_document(d.path, d.rel, d.root, d.title)
            if p.entity is not None:
                resolver.add_entity(p.entity.name, d.path, p.entity.aliases)
        for p in batch:
            self.core.store.priority.give_way()   # between documents, requests first (indexer/store/priority.py)
            for lk in p.links:
                lk.resolved = resolver.resolve(lk.target, lk.kind, p.doc.path)
            own = {sha: new_vectors[sha] for sha in p.texts if sha in new_vectors}   # not the whole batch's, per document
            if p.purge:   # its stored text held a secret: the index files lose its old words, not only its rows
                self._purged = True
                if not self.core.store.indexes_in_ledger:
                    self.core.fulltext.delete_document(p.doc.path)
            grown = None if p.keep_sections is None else \
                self.catalog.append_sections(p.doc, p.keep_sections, p.sections, own)
            if grown is None and p.keep_sections is not None:   # _stored_session checked it: a bug
                raise RuntimeError(f"{p.doc.path}: the stored sections changed under a transcript's tail")
            if grown is not None:
                removed, added, gone = grown
            else:
                removed, added = self.catalog.write_document(p.doc, p.sections, own, p.entity, p.links)
            if self.core.store.indexes_in_ledger:   # nothing to read back for them
                continue
            if grown is not None:
                self.core.fulltext.replace_sections(p.doc.path, gone, self.catalog.chunks_from(p.doc.path,
                                                                                             p.keep_sections))
            else:
                self.core.fulltext.replace_document(p.doc.path, self.catalog.chunks_of(p.doc.path))
            if self.core.vectors is not None:
                labels, vecs = self.catalog.passage_vectors(added)
                self.core.vectors.update(removed, list(labels), vecs)

    def _start_run(self) -> None:
        """A run embeds with the model as it is now: a server's contract is probed again."""
        self._down = None
        recheck = getattr(self.core.loaded_embedder, "recheck", None)
        if recheck is not None:
            recheck()

    def _vectors_problem(self) -> str | None:
        """Why this run embeds nothing more: the model's problem, or its server failing earlier in the run."""
        return self._down or self.core.contract_problem()

    def _server_down(self, reason: str, report: IndexReport) -> None:
        """The embedding server failed after its retries: the rest of the run writes text only."""
        self._down = f"embedding server unavailable: {reason}"
        report.warnings.append(f"vectors waiting: {reason}; the new passages are found by keywords until "
                               "the server answers (the next index run or daemon rescan embeds them)")

    def _record_contract(self, emb) -> None:
        self.catalog.set_meta("model_contract", json.dumps(emb.contract.to_dict()))
        self.core.open_vectors()

    def _fill_waiting(self, report: IndexReport) -> bool:
        """Passages stored without a vector (written while the model or its server was unavailable)
        get one now, if it can be had; True when some did. `report.waiting` says how many still wait."""
        waiting = self.catalog.waiting_count()
        emb = self.core.embedder
        problem = self._vectors_problem() if waiting else None
        if not waiting or emb is None or problem is not None:
            report.waiting = waiting
            self._none_waiting = not waiting
            if waiting and not _vectors_said(report):
                report.warnings.append(f"vectors waiting: {waiting} passage texts are found by keywords only: {problem}")
            return False
        filled = 0
        while not self.core.stop_requested.is_set():
            texts = self.catalog.waiting_passages(WAITING_BATCH)
            if not texts:
                break
            try:
                vecs = emb.embed_passages([t for _, t in texts])
            except ModelError as e:
                self._server_down(str(e), report)
                break
            if self.catalog.model_contract() is None:
                self._record_contract(emb)
            ids = self.catalog.fill_embeddings(dict(zip((sha for sha, _ in texts), vecs)))
            if self.core.vectors is not None and not self.core.store.indexes_in_ledger:
                labels, stored = self.catalog.passage_vectors(ids)
                self.core.vectors.update([], list(labels), stored)
            filled += len(texts)
        report.embedded += filled
        report.waiting = self.catalog.waiting_count() if filled else waiting
        self._none_waiting = report.waiting == 0
        if filled:
            log.info("embedded %d waiting passage texts (%d still wait)", filled, report.waiting)
        return filled > 0

    def _remove(self, path: str) -> None:
        removed = self.catalog.delete_document(path)
        self.core.fulltext.delete_document(path)
        if self.core.vectors is not None:
            self.core.vectors.update(removed, [], np.zeros((0, self.core.vectors.dim), dtype=np.float32))

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
        if self._resolver is None and not self.core.readonly:
            self._resolver = link_resolver(self.catalog, self.core.config.roots)

    def _resolve_links(self) -> None:
        """Re-resolve every link when the documents a link can name (paths, titles, entity names)
        changed: a renamed or deleted target updates its backlinks without re-reading the sources."""
        rows = sorted((path, title) for path, _, _, title in self.catalog.document_names())
        key = json.dumps([rows, self.catalog.entities()])
        fp = hashlib.sha256(key.encode()).hexdigest()
        if self.catalog.get_meta("link_targets") == fp:
            return
        resolver = link_resolver(self.catalog, self.core.config.roots)
        changes = []
        for lk in self.catalog.link_rows():
            r = resolver.resolve(lk["target"], lk["kind"], lk["source"])
            if r != lk["resolved"]:
                changes.append((r, lk["id"]))
        self.catalog.set_link_resolutions(changes)
        self.catalog.set_meta("link_targets", fp)

    def _commit_derived(self, save_vectors: bool = True, settled: bool = True) -> None:
        """Commit the full-text index (searchable now) and save the vector file, or only mark the
        in-memory vectors current (searches use them at once; `save_vectors` writes them later).
        `settled`: the run's writes are all in (not a commit along a long run, which a rebuild at
        every one would make quadratic: each would re-add what the run had not reached yet)."""
        gen = self.catalog.generation
        self.core.fulltext.commit(gen)
        if settled and self.core.fulltext.dead_share() > KEYWORD_DEAD_SHARE:
            # Edited documents' old chunks, counted in BM25's statistics until a merge: past this
            # share the index is made again from the catalog, and scores are a first index's.
            self.core.fulltext.rebuild(self.catalog.all_chunks(), gen)
        if settled and self.core.vectors is not None and self.core.vectors.dead_share() > VECTOR_DEAD_SHARE:
            labels, vecs = self.catalog.passage_vectors()
            self.core.vectors.rebuild(labels, vecs, gen)   # saved: a settled commit
        if settled and (self._purged or self.catalog.dead_share() > CATALOG_DEAD_SHARE):
            # a purged document's old text stays in SQLite's free pages, its literal index and the WAL
            # until the catalog is written again
            problem = self.catalog.compact()
            if problem:
                log.warning("catalog not compacted (%s); it is tried again after the next change", problem)
            self._purged = bool(problem) and self._purged
        if self.core.vectors is not None:
            if save_vectors and self.core.vectors.saved_generation != gen:   # a rescan that changed nothing writes nothing
                self.core.vectors.save(gen)
            else:
                self.core.vectors.generation = gen   # in memory; the file still holds an older one
        if self.core.dir.is_dir():
            make_private(self.core.dir)  # new tantivy segments and vector files

    def vectors_unsaved(self) -> bool:
        return self.core.vectors is not None and self.core.vectors.generation != self.core.vectors.saved_generation

    def save_vectors(self) -> None:
        """Write the vector file if targeted updates left it behind (the daemon calls this when quiet)."""
        if self.vectors_unsaved():
            self.core.vectors.save(self.core.vectors.generation)
            make_private(self.core.dir)

    def _vectors_from_catalog(self) -> None:
        """After a re-embed, the vector index is built from the catalog's new vectors: a passage
        whose text did not change keeps its id through the rewrite (catalog.write_document), so
        the per-document updates never gave the new index its vector."""
        if self.core.vectors is not None and not self.core.store.indexes_in_ledger:
            labels, vecs = self.catalog.passage_vectors()
            self.core.vectors.rebuild(labels, vecs, self.catalog.generation)

    def _drop_vectors(self) -> None:
        """--reembed: forget the stored contract and every embedding; documents are re-read."""
        self.catalog.drop_embeddings()
        if self.core.vectors is not None:
            self.core.store.drop_vector_index()
        self.core.vectors = None

    # -- redaction policy (indexer/redact.py) -----------------------------------------------------
    def _layout_check(self) -> None:
        """A changed layout (path globs → doc types) changes types and embedded headers: every
        document is read again (passages whose text did not change keep their embeddings)."""
        layout = json.dumps(self.core.config.layout)
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
            self.core.fulltext.rebuild(self.catalog.all_chunks(), gen)
            if self.core.vectors is not None:
                labels, vecs = self.catalog.passage_vectors()
                self.core.vectors.rebuild(labels, vecs, gen)
        self.catalog.set_meta("redaction_policy", redactor.policy_fingerprint())
        if scrub:
            problem = self.catalog.compact()
            if problem:
                log.warning("catalog not compacted after a redaction-policy change (%s); "
                            "old text may stay in free pages until the next change", problem)

    def close(self) -> None:
        self._sandbox.close()
