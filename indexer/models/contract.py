"""The model contract: everything that determines a vector, so vectors of two models never mix.

A local model is identified by its files' hashes and settings; a model behind a server, whose weights
we cannot hash, by its name, dimension and the vector it returns for a fixed probe text
(indexer/models/server.py). The catalog stores the contract of its vectors and refuses a model
whose contract does not match it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, fields

import numpy as np

from remembrancer.indexer.models.spec import ModelError

QUERIES_KEPT = 64   # query vectors kept for a question asked again (QueryVectors)
SAME_PROBE = 0.999  # cosine of two probe answers of one model (a GPU's float noise stays far above)


@dataclass(frozen=True)
class ModelContract:
    """Everything that determines a vector. Two equal contracts produce interchangeable vectors;
    the catalog stores one and refuses stored vectors whose contract differs from the loaded one."""

    name: str
    model_sha256: str
    tokenizer_sha256: str
    dim: int
    pooling: str
    normalize: bool
    max_tokens: int
    query_prefix: str
    passage_prefix: str
    probe: tuple[float, ...] | None = None   # a server's answer to a fixed text (indexer/models/server.py)

    def to_dict(self) -> dict:
        d = asdict(self)
        if self.probe is None:   # a local model's stored contract is as it always was
            del d["probe"]
        else:
            d["probe"] = list(self.probe)
        return d

    def matches(self, stored: dict | None) -> bool:
        """Whether vectors stored under `stored` (a contract's dict) are interchangeable with this
        model's: every field equal, and a server's probe answer the same up to float noise."""
        if stored is None:
            return True
        mine = self.to_dict()
        theirs = dict(stored)
        a, b = mine.pop("probe", None), theirs.pop("probe", None)
        if mine != theirs or (a is None) != (b is None):
            return False
        if a is None:
            return True
        va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if va.shape != vb.shape:
            return False
        return float(va @ vb / max(np.linalg.norm(va) * np.linalg.norm(vb), 1e-12)) >= SAME_PROBE

    @classmethod
    def from_dict(cls, d) -> ModelContract:
        try:
            return cls(
                name=str(d["name"]),
                model_sha256=str(d["model_sha256"]),
                tokenizer_sha256=str(d["tokenizer_sha256"]),
                dim=int(d["dim"]),
                pooling=str(d["pooling"]),
                normalize=bool(d["normalize"]),
                max_tokens=int(d["max_tokens"]),
                query_prefix=str(d["query_prefix"]),
                passage_prefix=str(d["passage_prefix"]),
                probe=tuple(float(x) for x in d["probe"]) if d.get("probe") is not None else None,
            )
        except (KeyError, TypeError, ValueError) as e:
            wanted = ", ".join(f.name for f in fields(cls))
            raise ModelError(f"stored model contract is incomplete or malformed ({e!r}); "
                             f"expected fields: {wanted}. Reindex to rebuild it.") from e

    def describe(self) -> str:
        if self.probe is not None:
            prefixes = ", ".join(f"{k} prefix {v!r}" for k, v in (("query", self.query_prefix),
                                                                  ("document", self.passage_prefix)) if v)
            return f"{self.name} ({self.dim}d, from an embedding server{', ' + prefixes if prefixes else ''})"
        norm = "normalized" if self.normalize else "raw"
        return (f"{self.name} ({self.dim}d, {self.pooling} pooling, {norm}, "
                f"≤{self.max_tokens} tokens, model sha256 {self.model_sha256[:12]})")


class QueryVectors:
    """The last QUERIES_KEPT query vectors: one question asked of two corpora (notes and
    conversations, which share the model) is embedded once. Read-only arrays: every caller gets
    the same one."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str, compute) -> np.ndarray:
        with self._lock:
            vec = self._kept.get(text)
            if vec is not None:
                self._kept.move_to_end(text)
                return vec
        vec = compute()
        vec.setflags(write=False)
        with self._lock:
            self._kept[text] = vec
            while len(self._kept) > QUERIES_KEPT:
                self._kept.popitem(last=False)
        return vec
