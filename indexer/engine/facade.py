"""The engine: one corpus's index, kept in agreement with its files, as a small facade.

Three parts sit behind it: the core (connections, model, derived indexes and their agreement —
core.py), the writer (the ingest path — writer.py) and read views (what one request may read,
bound to its scope — view.py). The CLI, the daemon, the team store's writer and the tests all
drive it the same way."""

from __future__ import annotations

from remembrancer.indexer.config import Config
from remembrancer.indexer.store import scope
from remembrancer.indexer.store.base import Ledger, Store

from .core import Core
from .report import Behind, IndexReport
from .view import ReadCache, ReadView
from .writer import ProgressFn, Writer


class Engine:
    def __init__(self, config: Config, *, embedder=None, readonly: bool = False, store: Store | None = None):
        self.core = Core(config, embedder=embedder, readonly=readonly, store=store)
        self.writer = Writer(self.core)
        self._cache = ReadCache()
        self.config = config
        self.dir = self.core.dir
        self.store = self.core.store
        self.redaction = self.core.redaction
        self.stop_requested = self.core.stop_requested   # set: an index pass stops at its next file
        if not readonly:
            self.core.repair()

    # -- reading ----------------------------------------------------------------------------------
    def view(self, prefixes=()) -> ReadView:
        """What one request may read: everything, or only the files under `prefixes`
        (indexer/store/scope.py). A scoped view is used inside `with engine.view(p) as view:`."""
        prefixes = scope.normalize(prefixes)
        if prefixes:
            scope.check_exists(self.config.roots, prefixes)
        return ReadView(self.core, self._cache, prefixes, lambda: self.writer.last_report)

    @property
    def catalog(self) -> Ledger:
        """This thread's catalog connection, unscoped (the writer's on the writing thread)."""
        return self.core.catalog

    def contract_problem(self) -> str | None:
        """Why the vector leg cannot be used, or None."""
        return self.core.contract_problem()

    @property
    def model_loads(self) -> int:
        return self.core.model_loads

    # -- writing ----------------------------------------------------------------------------------
    def refresh(self, progress: ProgressFn | None = None, reembed: bool = False) -> IndexReport:
        """Bring the index up to date with the files (indexer/engine/writer.py)."""
        return self.writer.refresh(progress, reembed)

    def behind(self, wall=None) -> Behind:
        """How far the index is behind the files, judged without writing (Writer.behind); `wall`: a
        scoped view's, whose catalog holds only the scope's documents."""
        return self.writer.behind(wall)

    def unfinished_pass(self) -> bool:
        """Whether the last whole index pass started and did not finish (killed, crashed, stopped)."""
        return self.writer.unfinished_pass()

    def refresh_paths(self, paths, progress: ProgressFn | None = None) -> IndexReport:
        """Bring the index up to date for these changed paths and what moved between HEADs."""
        return self.writer.refresh_paths(paths, progress)

    def prepare_targeted(self) -> None:
        self.writer.prepare_targeted()

    def vectors_unsaved(self) -> bool:
        return self.writer.vectors_unsaved()

    def save_vectors(self) -> None:
        self.writer.save_vectors()

    def repair(self) -> list[str]:
        """Rebuild any derived index behind the catalog's generation (no embedding)."""
        return self.core.repair()

    # -- threads and lifetime ---------------------------------------------------------------------
    def claim_writer(self) -> None:
        self.core.claim_writer()

    def pool_readers(self) -> None:
        self.core.pool_readers()

    def release_reader(self) -> None:
        self.core.release_reader()

    def close(self) -> None:
        self.writer.close()
        self.core.close()
