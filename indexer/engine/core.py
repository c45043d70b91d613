"""What the writer and every read share: the store's connections, the model, the derived
indexes and their agreement with the catalog.

Writes follow one data flow: the catalog first (one transaction per document), then the derived
stores. On open, a derived store whose generation differs from the catalog's is rebuilt from the
catalog — never by re-embedding."""

from __future__ import annotations

import logging
import threading

from remembrancer.indexer import indexes
from remembrancer.indexer.config import Config, make_private
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.ingest import corpus, meta
from remembrancer.indexer.redact_policy import RedactorSource  # secrets never reach the index: indexer/redact.py
from remembrancer.indexer.store.base import KeywordIndex, Ledger, Store, VectorIndex
from remembrancer.indexer.store.local.readers import Readers
from remembrancer.indexer.store.local.store import LocalStore

from .report import StoredWarnings

log = logging.getLogger(__name__)


class Core:
    """One corpus's store — catalog, keyword index, vector index — and its embedding model."""

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
        self.stored_warnings = StoredWarnings(config.roots)
        self._embedder = embedder
        self._embedder_error: str | None = None
        self.model_loads = 0
        self._embedder_lock = threading.Lock()
        # Where the index lives (indexer/store/base.py): the local store by default.
        self.store = store or LocalStore(self.dir, ", ".join(str(r.path) for r in config.roots))
        self.writer_catalog = self.store.open_ledger(readonly)
        self._writer_thread = threading.get_ident()
        self._readers = Readers(lambda: self.store.open_ledger(readonly=True))   # request threads' connections
        self.stop_requested = threading.Event()
        self.fulltext: KeywordIndex = self.store.keyword_index(lambda: self.catalog)
        self.vectors: VectorIndex | None = None
        self.open_vectors()
        if not readonly:
            if self.store.kind == "local":   # `remembrancer corpora` lists it; MCP sessions may serve it
                indexes.record(self.dir, [r.path for r in config.roots], config.kind)
            if self.dir.is_dir():
                make_private(self.dir)  # the index holds the corpus' text: 0700 folders, 0600 files

    # -- connections ------------------------------------------------------------------------------
    @property
    def catalog(self) -> Ledger:
        """The writer's connection on the writing thread; a read-only one per other thread.

        SQLite in WAL mode gives each reader a consistent snapshot, so a search running while
        a document is being replaced sees the old document or the new one, never half of it.
        """
        if threading.get_ident() == self._writer_thread:
            return self.writer_catalog
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

    # -- model ------------------------------------------------------------------------------------
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

    @property
    def loaded_embedder(self):
        """The model if it is loaded already, else None (loads nothing)."""
        return self._embedder

    def contract_problem(self) -> str | None:
        """Why the vector leg cannot be used, or None. A stored contract that differs is refused loudly."""
        stored = self.catalog.model_contract()
        emb = self.embedder
        if emb is None:
            return f"embedding model unavailable: {self._embedder_error}"
        from remembrancer.indexer.models.spec import ModelError

        try:
            mine = emb.contract   # a server's is probed on first use, and again when it comes back
        except ModelError as e:
            return f"embedding server unavailable: {e}"
        if not mine.matches(stored):
            if self.store.kind != "local":   # a reader of a shared store cannot re-embed it
                return (f"the store was embedded with {stored.get('name')} ({str(stored.get('model_sha256'))[:12]}) "
                        f"but this machine's model is {mine.describe()}; "
                        "install and configure the store's model here (`model` in the config)")
            roots = " ".join(f"--root {r.path}" for r in self.config.roots)
            return (f"index was embedded with {stored.get('name')} but the configured model is "
                    f"{mine.describe()}; re-embed with "
                    f"`remembrancer index {roots} --reembed`")
        return None

    def open_vectors(self) -> None:
        stored = self.catalog.model_contract()
        if stored is not None:
            self.vectors = self.store.vector_index(lambda: self.catalog, int(stored["dim"]))

    # -- consistency ------------------------------------------------------------------------------
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

    def current_heads(self) -> dict[str, str | None]:
        return {r.name: corpus.head_id(corpus.open_repo(r.path)) for r in self.config.roots}

    def close(self) -> None:
        self._readers.close()
        self.writer_catalog.close()
        release = getattr(self.store, "close", None)   # the local store's writer lock (indexer/writelock.py)
        if release is not None:
            release()
