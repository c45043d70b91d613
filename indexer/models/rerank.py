"""An optional cross-encoder that re-reads the best few candidates against the question.

Two kinds, one interface (``score(query, texts) -> list[float]``, higher is more relevant):
- a local ONNX cross-encoder folder the user exported (``model.onnx`` + ``tokenizer.json``, e.g.
  ms-marco-MiniLM-L-6-v2 or bge-reranker-base): the pair is tokenised as BERT pairs are, the graph's
  logit (the positive class's, for a two-class head) is the score;
- a ``/rerank`` API: Jina, Cohere, llama.cpp's server and vLLM take ``{"query", "documents"}`` and
  answer ``{"results": [{"index", "relevance_score"}]}``; Hugging Face TEI takes ``{"query", "texts"}``
  and answers ``[{"index", "score"}]``. The first shape is tried first; a server that refuses it with
  a 4xx is asked in TEI's, and the one that worked is kept.

Off unless `[rerank]` is configured; how its order is folded into the ranking is the search's business
(indexer/search/answer.py `_cross_encoded`).
"""

from __future__ import annotations

import functools
import logging
import threading
from pathlib import Path

import numpy as np

from remembrancer.indexer.models.spec import Endpoint, ModelError, RerankSpec, ServerUnavailable

log = logging.getLogger(__name__)

MAX_TEXT_CHARS = 4000   # a candidate's text sent to a server (its model truncates at its own limit anyway)


class OnnxReranker:
    def __init__(self, folder: Path, max_tokens: int) -> None:
        from remembrancer.indexer.models.embed import load_tokenizer, onnx_session

        files = {n: folder / n for n in ("model.onnx", "tokenizer.json")}
        missing = [n for n, p in files.items() if not p.is_file()]
        if missing:
            raise ModelError(f"reranker folder {folder} lacks {', '.join(missing)}: fix [rerank] path "
                             "(a cross-encoder exported to ONNX, with its tokenizer.json)")
        self._tokenizer = load_tokenizer(files["tokenizer.json"], max_tokens, strategy="only_second")
        self._session = onnx_session(files["model.onnx"], threads=2)
        self._inputs = [i.name for i in self._session.get_inputs()]
        if "input_ids" not in self._inputs or set(self._inputs) - {"input_ids", "attention_mask", "token_type_ids"}:
            raise ModelError(f"the reranker {files['model.onnx']} declares inputs {self._inputs}; a BERT-style "
                             "cross-encoder (input_ids, attention_mask[, token_type_ids]) is needed")
        self.describe = f"{folder.name} (ONNX cross-encoder)"

    def score(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch([(query, t) for t in texts])
        width = max(len(e.ids) for e in encodings)
        feed = {k: np.zeros((len(texts), width), dtype=np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
        for row, e in enumerate(encodings):
            n = len(e.ids)
            feed["input_ids"][row, :n] = e.ids
            feed["attention_mask"][row, :n] = 1
            feed["token_type_ids"][row, :n] = e.type_ids
        logits = np.asarray(self._session.run(None, {k: feed[k] for k in self._inputs})[0], dtype=np.float64)
        if logits.ndim == 2:
            logits = logits[:, -1]   # one column: the logit; two: the "relevant" class's
        if logits.shape != (len(texts),):
            raise ModelError(f"the reranker answered shape {logits.shape} for {len(texts)} pairs: "
                             "is it a cross-encoder (one score per pair)?")
        return [float(x) for x in logits]


class ServerReranker:
    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.describe = f"{endpoint.name or 'reranker'} at {endpoint.where()}"
        self._shape = "documents"   # or "texts" (TEI), once a server refused the first
        self._lock = threading.Lock()

    def score(self, query: str, texts: list[str]) -> list[float]:
        from remembrancer.indexer.models.server import post_json

        if not texts:
            return []
        texts = [t[:MAX_TEXT_CHARS] for t in texts]
        shapes = [self._shape] + [s for s in ("documents", "texts") if s != self._shape]
        for i, shape in enumerate(shapes):
            payload = {"query": query, shape: texts} | ({"model": self.endpoint.name} if self.endpoint.name else {})
            if shape == "documents":
                payload["top_n"] = len(texts)
            try:
                answer = post_json(self.endpoint, "/rerank", payload)
            except ServerUnavailable as e:
                if i == 0 and e.refused:
                    continue   # perhaps the other request shape
                raise
            with self._lock:
                self._shape = shape
            return _scores(answer, len(texts), self.endpoint.where())
        raise AssertionError("unreachable")


def _scores(answer, count: int, where: str) -> list[float]:
    """Scores in input order from either answer shape; every input must have one."""
    rows = answer.get("results", answer.get("data")) if isinstance(answer, dict) else answer
    out: list[float | None] = [None] * count
    try:
        for row in rows:
            value = row["relevance_score"] if "relevance_score" in row else row["score"]
            out[int(row["index"])] = float(value)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        raise ServerUnavailable(f"{where}/rerank answered neither `results[i].relevance_score` nor "
                                "`[i].score`: is it a rerank API?") from None
    if any(v is None or not np.isfinite(v) for v in out):
        raise ServerUnavailable(f"{where}/rerank left some of the {count} texts without a score")
    return out   # type: ignore[return-value]


@functools.lru_cache(maxsize=4)
def load_reranker(spec: RerankSpec):
    """One reranker per setting and process (the daemon's corpora share it). ModelError when a
    local folder cannot be loaded; a server is only contacted when a search asks."""
    if spec.server is not None:
        return ServerReranker(spec.server)
    return OnnxReranker(Path(spec.path), spec.max_tokens)
