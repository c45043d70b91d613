"""The opt-in int8-compute graph (`[model] compute = "int8"`), built here from the packaged model.

The shipped all-MiniLM-L6-v2 graph stores int8 weights but computes in float32 (each weight is
cast and scaled back at load), so its matrix products run on float units. This builds, once and
locally (nothing is downloaded), the same model with its weight products in int8
(``MatMulInteger`` on dynamically quantised activations, onnxruntime.quantization): about twice
the passages per CPU-second on this machine, at the price of slightly different vectors (see the
README's figures). Those vectors get their own model contract (another name, the built graph's
sha256), so they never mix with the default's: switching either way asks for `--reembed`.

Steps, each a library call: onnxruntime's basic graph optimisation folds the cast-and-scale of
every weight into a float initialiser (saved to a temp file), then ``quantize_dynamic``
quantises every weight product per output channel, symmetric int8. The shipped weights are
already per-channel symmetric int8 with each column reaching ±127, so the re-quantised weights
are the shipped ones; only the activations are new. The attention products (activation ×
activation) stay float. The result is cached in the data directory beside a record of its
sha256 and what it was built from; a file that no longer matches its record is rebuilt.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from pathlib import Path

from remembrancer.indexer.models.spec import ModelError

log = logging.getLogger(__name__)

CONTRACT_NAME = "all-MiniLM-L6-v2-int8-compute"
RECIPE = 1   # bump when the build steps change: the cached graph is rebuilt, its sha (the contract) moves
INSTALL_HINT = "pip install 'onnx>=1.15'  (or: pip install 'remembrancer[int8]')"


def cached_graph(source: Path, source_sha256: str, cache_dir: Path, sha256) -> tuple[Path, str]:
    """(path, sha256) of the int8-compute graph built from `source`, building it on first use.

    `sha256` is the hashing function (embed._sha256), passed in so the hash is computed one way."""
    import onnxruntime as ort

    key = f"{CONTRACT_NAME}-{source_sha256[:16]}-r{RECIPE}-ort{ort.__version__}"
    graph, record = cache_dir / f"{key}.onnx", cache_dir / f"{key}.json"
    if graph.is_file() and record.is_file():
        try:
            wanted = json.loads(record.read_text(encoding="utf-8"))["sha256"]
        except (ValueError, KeyError, TypeError):
            wanted = None
        actual = sha256(graph)
        if actual == wanted:
            return graph, actual
        log.warning("cached int8-compute graph %s does not match its record; rebuilding it", graph)
    return _build(source, source_sha256, graph, record, sha256)


def _build(source: Path, source_sha256: str, graph: Path, record: Path, sha256) -> tuple[Path, str]:
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as e:   # onnxruntime.quantization imports the `onnx` package
        raise ModelError(f'[model] compute = "int8" builds its graph with onnxruntime.quantization, '
                         f"which needs the onnx package ({e}); run: {INSTALL_HINT}") from e
    t0 = time.perf_counter()
    graph.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=graph.parent, prefix=".int8-build-") as tmp:
        folded, built = Path(tmp) / "folded.onnx", Path(tmp) / "int8.onnx"
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC   # standard ops only
        opts.optimized_model_filepath = str(folded)
        opts.log_severity_level = 3
        try:
            ort.InferenceSession(str(source), opts, providers=["CPUExecutionProvider"])
            quantize_dynamic(folded, built, per_channel=True, weight_type=QuantType.QInt8,
                             op_types_to_quantize=["MatMul"], extra_options={"MatMulConstBOnly": True})
        except Exception as e:
            raise ModelError(f"cannot build the int8-compute graph from {source}: {e}; remove "
                             '`compute = "int8"` from [model] to use the default graph') from e
        digest = sha256(built)
        os.replace(built, graph)
    record.write_text(json.dumps({"sha256": digest, "source_sha256": source_sha256, "recipe": RECIPE,
                                  "onnxruntime": ort.__version__}), encoding="utf-8")
    log.info("built the int8-compute graph %s in %.1fs", graph, time.perf_counter() - t0)
    return graph, digest
