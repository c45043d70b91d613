"""Embeddings from an HTTP server speaking the OpenAI-compatible embeddings API.

``POST {url}/embeddings`` with ``{"model": name, "input": [texts]}`` answers
``{"data": [{"index": i, "embedding": [...]}, ...]}``: Ollama, llama.cpp's server, vLLM, LM Studio,
Hugging Face TEI and the hosted APIs all speak it. The client has the local model's interface
(``indexer.models.embed.Embedder``), so nothing downstream knows where vectors come from.

A server is a model whose weights we cannot hash, so its contract is what it *does*: the model name,
the dimension, and the vector it returns for a fixed probe text. The probe is taken on first use,
at the start of every index run and whenever the server comes back after a failure; a changed
answer changes the contract,
and the index refuses the server's vectors until ``index --reembed`` (vectors of two models never mix).

Failures are ordinary: a request that fails is retried a bounded number of times with backoff
(documents) or not at all (a question: the search answers by keywords at once); after a failure the
server is left alone for ``RETRY_AFTER_S``, so a dead server costs one timeout, not one per search.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from remembrancer.indexer.models.contract import SAME_PROBE, ModelContract, QueryVectors
from remembrancer.indexer.models.spec import Endpoint, ModelError, ServerModel, ServerUnavailable

log = logging.getLogger(__name__)

PROBE_TEXT = "remembrancer model probe: which model answers, and in how many dimensions?"
QUERY_TIMEOUT_S = 5.0      # a question waits at most this long for its vector (or the endpoint's timeout, if less)
RETRY_AFTER_S = 15.0       # after a failure, calls fail at once for this long (no timeout per search)
DOCUMENT_ATTEMPTS = 3      # a batch of documents is tried this often, waiting BACKOFF_S × 2^k between
BACKOFF_S = 0.5
CONCURRENT_REQUESTS = 2    # batches in flight at once while indexing (the server may batch them together)
BODY_SHOWN = 200           # characters of an error answer quoted in a message


def post_json(endpoint: Endpoint, path: str, payload: dict, timeout: float | None = None):
    """One POST of JSON to ``{endpoint.url}{path}``; the decoded answer, or ServerUnavailable saying
    why in one line. The API key is read from its variable now and sent as a bearer token only."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if endpoint.api_key_env:
        key = os.environ.get(endpoint.api_key_env)
        if not key:
            raise ServerUnavailable(f"{endpoint.where()} needs the key in ${endpoint.api_key_env}, "
                                    "which is not set in this process's environment")
        headers["Authorization"] = f"Bearer {key}"
    url = endpoint.url.rstrip("/") + path
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), headers=headers, method="POST")
    where = endpoint.where().rstrip("/") + path
    try:
        with urllib.request.urlopen(request, timeout=timeout or endpoint.timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as e:
        detail = e.read(BODY_SHOWN * 2).decode("utf-8", "replace").strip().replace("\n", " ")[:BODY_SHOWN]
        raise ServerUnavailable(f"{where} answered HTTP {e.code}" + (f": {detail}" if detail else ""),
                                status=e.code) from None
    except (urllib.error.URLError, OSError) as e:   # refused, unreachable, reset, timed out
        reason = getattr(e, "reason", e)
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            reason = f"no answer within {timeout or endpoint.timeout:g} s"
        raise ServerUnavailable(f"{where} did not answer: {reason}") from None
    try:
        return json.loads(body)
    except ValueError:
        raise ServerUnavailable(f"{where} answered something that is not JSON "
                                f"({body[:60].decode('utf-8', 'replace')!r}…)") from None


def _vectors(answer, count: int, where: str) -> np.ndarray:
    """The `data[i].embedding` of an embeddings answer, in input order, as float32 rows."""
    try:
        data = answer["data"]
        rows = sorted(data, key=lambda d: d.get("index", 0)) if all("index" in d for d in data) else data
        vecs = np.asarray([d["embedding"] for d in rows], dtype=np.float32)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ServerUnavailable(f"{where} answered without `data[i].embedding` vectors of one length: "
                                "is it an OpenAI-compatible embeddings API?") from None
    if vecs.ndim != 2 or len(vecs) != count or not vecs.shape[1]:
        raise ServerUnavailable(f"{where} answered {len(vecs)} vectors for {count} texts")
    if not np.isfinite(vecs).all():
        raise ServerUnavailable(f"{where} answered vectors holding NaN or infinity")
    return vecs


def _too_large(e: ServerUnavailable) -> bool:
    """A refusal of the request's size rather than of its content."""
    return e.status == 413 or (e.status == 422 and "batch" in str(e).lower())


def normalized(vecs: np.ndarray) -> np.ndarray:
    """Unit rows (cosine = inner product). Rows already of unit length are left bit for bit as they
    are, so a server running the default model answers exactly the local vectors."""
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    if np.all(np.abs(norms - 1.0) < 1e-4):
        return vecs
    return (vecs / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


class _Breaker:
    """Remembers the last failure, so calls within RETRY_AFTER_S of it fail at once."""

    def __init__(self) -> None:
        self.failed_at = 0.0
        self.reason = ""

    def check(self) -> None:
        ago = time.monotonic() - self.failed_at
        if self.reason and ago < RETRY_AFTER_S:
            raise ServerUnavailable(f"{self.reason} ({ago:.0f} s ago; not asked again for {RETRY_AFTER_S:g} s)")

    def forget(self) -> None:
        """The next call is asked at once (a retry that is part of the same call)."""
        self.reason = ""

    def failed(self, reason: str) -> None:
        self.failed_at, self.reason = time.monotonic(), reason

    def succeeded(self) -> bool:
        """True when this success follows a failure (the server came back: probe it again)."""
        back = bool(self.reason)
        self.reason = ""
        return back


class ServerEmbedder:
    """The embedding model behind `[model] url`. Thread-safe; builds no connection until used."""

    def __init__(self, spec: ServerModel, common_words) -> None:
        self.spec = spec
        self.texts_embedded = 0
        self._contract = None
        self._lock = threading.Lock()
        self._breakers = {id(spec.documents): _Breaker(), id(spec.query_endpoint): _Breaker()}
        self._queries = QueryVectors()
        self._batch = spec.batch   # lowered when the server refuses a batch as too large
        self._common_words = common_words   # () -> frozenset: the default tokenizer's whole words
        self._common: frozenset[str] | None = None

    # -- the contract --------------------------------------------------------------------------------
    @property
    def contract(self):
        """What the server's vectors are (probed on first use; ServerUnavailable when it cannot be)."""
        with self._lock:
            if self._contract is None:
                self._contract = self._probe()
            return self._contract

    def _probe(self) -> ModelContract:
        docs = self.spec.documents
        # A short wait: searches wait for the contract (a slow server must not hold them for long).
        probe = normalized(self._request(docs, [self.spec.document_prefix + PROBE_TEXT], self._query_timeout(docs)))[0]
        if self.spec.queries is not None:
            other = normalized(self._request(self.spec.queries, [self.spec.document_prefix + PROBE_TEXT],
                                             self._query_timeout(self.spec.queries)))[0]
            if other.shape != probe.shape or float(other @ probe) < SAME_PROBE:
                raise ModelError(f"the query server {self.spec.queries.where()} ({self.spec.queries.name!r}) "
                                 f"does not embed like the document server {docs.where()} ({docs.name!r}): "
                                 "its vectors would not match the index's; serve the same model on both")
        contract = ModelContract(
            name=docs.name or "server model", model_sha256="served", tokenizer_sha256="served",
            dim=int(probe.shape[0]), pooling="server", normalize=True, max_tokens=0,
            query_prefix=self.spec.query_prefix, passage_prefix=self.spec.document_prefix,
            probe=tuple(round(float(x), 5) for x in probe))
        log.info("embedding server %s: %s", docs.where(), contract.describe())
        return contract

    def recheck(self) -> None:
        """Forget the probed contract: the next use probes the server again. Every index run starts
        with this, so a server that now serves another model under the same name never adds one
        of its vectors to an index of the old one."""
        with self._lock:
            self._contract = None

    @staticmethod
    def _query_timeout(endpoint: Endpoint) -> float:
        return min(endpoint.timeout, QUERY_TIMEOUT_S)

    # -- requests ------------------------------------------------------------------------------------
    def _request(self, endpoint: Endpoint, texts: list[str], timeout: float) -> np.ndarray:
        """One request's raw vectors; a failure trips the endpoint's breaker. The first success after a
        failure probes the server again: a server restarted with another model is refused before
        one of its vectors is used."""
        breaker = self._breakers[id(endpoint)]
        breaker.check()
        payload = {"input": texts} | ({"model": endpoint.name} if endpoint.name else {})
        try:
            answer = post_json(endpoint, "/embeddings", payload, timeout)
            vecs = _vectors(answer, len(texts), endpoint.where())
            known = self._contract
            if known is not None and vecs.shape[1] != known.dim:
                self._contract = None   # probed again: the index then compares the new contract with its own
                raise ServerUnavailable(f"{endpoint.where()} now answers {vecs.shape[1]}-dimensional vectors, "
                                        f"the index holds {known.dim}: the server's model changed "
                                        "(re-embed with `remembrancer index --reembed`)")
        except ServerUnavailable as e:
            breaker.failed(str(e))
            raise
        if breaker.succeeded() and known is not None:   # it came back: is it still the same model?
            self._contract = fresh = self._probe()
            if not fresh.matches(known.to_dict()):
                raise ModelError(f"{endpoint.where()} came back with another model (its vector for a fixed text "
                                 "changed): its vectors are refused until `remembrancer index --reembed`")
        return vecs

    def _documents(self, texts: list[str]) -> np.ndarray:
        """A batch of documents, retried with backoff; ServerUnavailable after the last attempt. A
        batch the server finds too large (HTTP 413, or TEI's 422 naming its batch size) is sent in
        halves, and later batches stay below the size refused."""
        for attempt in range(DOCUMENT_ATTEMPTS):
            try:
                return self._request(self.spec.documents, texts, self.spec.documents.timeout)
            except ServerUnavailable as e:
                if len(texts) > 1 and _too_large(e):
                    self._breakers[id(self.spec.documents)].forget()
                    self._batch = min(self._batch, len(texts) - 1)   # the largest size not yet refused
                    log.info("embedding server: a batch of %d is too large; sending halves", len(texts))
                    half = len(texts) // 2
                    return np.concatenate([self._documents(texts[:half]), self._documents(texts[half:])])
                if attempt == DOCUMENT_ATTEMPTS - 1 or e.refused:
                    raise
                log.warning("embedding server: %s; trying again", e)
                self._breakers[id(self.spec.documents)].forget()   # the retry is the next attempt
                time.sleep(BACKOFF_S * 2 ** attempt)
        raise AssertionError("unreachable")

    # -- the model interface (indexer.models.embed.Embedder's) ---------------------------------------
    def embed_passages(self, texts: list[str]) -> np.ndarray:
        dim = self.contract.dim
        out = np.zeros((len(texts), dim), dtype=np.float32)
        if not texts:
            return out
        prefix, size = self.spec.document_prefix, max(1, self._batch)
        spans = [(i, min(i + size, len(texts))) for i in range(0, len(texts), size)]

        def run(span: tuple[int, int]) -> None:
            a, b = span
            out[a:b] = normalized(self._documents([prefix + t for t in texts[a:b]]))

        if len(spans) == 1:
            run(spans[0])
        else:
            with ThreadPoolExecutor(CONCURRENT_REQUESTS, thread_name_prefix="embed-http") as pool:
                list(pool.map(run, spans))
        self.texts_embedded += len(texts)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        self.texts_embedded += 1
        return self._queries.get(text, lambda: self._ask([text])[0])

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.contract.dim), dtype=np.float32)
        self.texts_embedded += len(texts)
        return self._ask(texts)

    def _ask(self, texts: list[str]) -> np.ndarray:
        endpoint = self.spec.query_endpoint
        vecs = self._request(endpoint, [self.spec.query_prefix + t for t in texts], self._query_timeout(endpoint))
        return normalized(vecs)

    def common_words(self) -> frozenset[str]:
        """A server's vocabulary is not ours to read: the default model's tokenizer says which words
        are everyday English (abstention's notion of a common word), as it does for the local model."""
        if self._common is None:
            self._common = self._common_words()
        return self._common

    def release_workers(self) -> None:
        """Nothing held between runs (requests open no lasting connection)."""
