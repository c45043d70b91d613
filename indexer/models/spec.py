"""What the config names about a model and what every model loader raises: kept apart from the
loaders so `indexer.config` can check `[model]` and `[rerank]` without importing them (they import
config for the data dir)."""

from __future__ import annotations

from dataclasses import dataclass

COMPUTES = ("float", "int8")   # [model] compute: the packaged graph as shipped, or its int8-compute build
INT8_SPEC = "default:int8"     # the model spec (Config.model) of the packaged model's int8-compute graph


class ModelError(Exception):
    """The embedding model cannot be used; the message tells the user what to do."""


class ServerUnavailable(ModelError):
    """A model server did not answer usefully (down, slow, an error, a malformed answer). Ordinary:
    indexing keeps the passages waiting for their vectors, a search answers by keywords. `status`:
    the HTTP status of a refusal, if it was one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    @property
    def refused(self) -> bool:
        """The server refused this request (a 4xx other than 429): asking it again the same way
        will not help."""
        return self.status is not None and 400 <= self.status < 500 and self.status != 429


@dataclass(frozen=True)
class Endpoint:
    """One HTTP server of a model: where, which of its models, and the variable holding its key
    (the key itself is read at call time, never stored in a config record, a log or an index)."""

    url: str                  # the API's base, e.g. http://localhost:11434/v1 (the path is appended)
    name: str = ""            # the server's model name, sent as "model"
    api_key_env: str = ""     # the environment variable holding a bearer token, if the server wants one
    timeout: float = 30.0     # seconds per request

    def where(self) -> str:
        """The URL without its query string or credentials (for messages)."""
        from urllib.parse import urlsplit

        parts = urlsplit(self.url)
        host = parts.hostname or ""
        return f"{parts.scheme}://{host}{':' + str(parts.port) if parts.port else ''}{parts.path}"


@dataclass(frozen=True)
class ServerModel:
    """`[model] url`: embeddings from an OpenAI-compatible server (Ollama, llama.cpp, vLLM, LM Studio,
    TEI, a hosted API). Hashable: the daemon shares one client per setting, as it shares a local model."""

    documents: Endpoint
    queries: Endpoint | None = None   # `[model.query]`: a separate server for questions
    query_prefix: str = ""
    document_prefix: str = ""
    batch: int = 64                   # texts per request (fewer when the server says it is too many)

    @property
    def query_endpoint(self) -> Endpoint:
        return self.queries or self.documents


@dataclass(frozen=True)
class RerankSpec:
    """`[rerank]`: a cross-encoder that re-orders the best few candidates; off unless configured."""

    path: str = ""                   # an ONNX cross-encoder folder (model.onnx + tokenizer.json)
    server: Endpoint | None = None   # or a `/rerank` API (TEI, llama.cpp, Jina/Cohere-compatible)
    top: int = 20                    # how many of the best candidates it re-orders
    budget_ms: int = 1500            # past this, a search keeps the order it had (and says so)
    max_tokens: int = 512            # a pair longer than this is cut (local model)

    def describe(self) -> str:
        return f"reranker {self.path or self.server.where()} (top {self.top})"
