"""`[model] compute = "int8"`: the packaged model's int8-compute graph, built locally, under its own
model contract (indexer/models/int8_model.py). The build tests run on the real packaged model."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import remembrancer.indexer.models.embed as embed
from remembrancer.indexer.config import load_config
from remembrancer.indexer.errors import UserError


def config_with(tmp_path, monkeypatch, text: str):
    cfg = tmp_path / "config.toml"
    cfg.write_text(text)
    monkeypatch.setenv("REMEMBRANCER_CONFIG", str(cfg))
    return load_config([str(tmp_path)])


def test_config_selects_the_int8_graph_by_name(tmp_path, monkeypatch):
    assert config_with(tmp_path, monkeypatch, '[model]\ncompute = "int8"\n').model == embed.INT8_SPEC
    assert config_with(tmp_path, monkeypatch, '[model]\ncompute = "float"\n').model is None
    model_dir = tmp_path / "m"
    model_dir.mkdir()   # a configured model folder that does not exist is refused at load
    assert config_with(tmp_path, monkeypatch, f'[model]\npath = "{model_dir}"\ncompute = "float"\n').model == str(model_dir)


@pytest.mark.parametrize("text, needle", [
    ('[model]\ncompute = "fp16"\n', "must be one of float, int8"),
    ('[model]\ncompute = 8\n', "must be one of float, int8"),
    ('[model]\npath = "/models/x"\ncompute = "int8"\n', "packaged default model only"),
])
def test_bad_compute_is_a_user_error(tmp_path, monkeypatch, text, needle):
    with pytest.raises(UserError, match=needle) as e:
        config_with(tmp_path, monkeypatch, text)
    assert e.value.param == "model.compute"


@pytest.mark.slow
@pytest.mark.real_model
def test_int8_graph_is_built_once_and_has_its_own_contract(data_env):
    """Built from the packaged graph into the data dir: another name and sha256 than the default,
    vectors close to the default's but not the same (so they must never mix), the cache reused,
    and a cached file that no longer matches its record rebuilt."""
    default = embed.load_default_embedder()
    int8 = embed.load_embedder(embed.INT8_SPEC)
    assert int8.contract.name != default.contract.name
    assert int8.contract.model_sha256 != default.contract.model_sha256
    assert int8.contract.tokenizer_sha256 == default.contract.tokenizer_sha256
    assert int8.contract.dim == default.contract.dim == 384
    texts = ["how to recover postgres from a dump", "configure the bike brakes", "rotate the TLS certificates"]
    a, b = default.embed_passages(texts), int8.embed_passages(texts)
    agreement = np.sum(a * b, axis=1)
    assert agreement.min() > 0.97 and np.abs(a - b).max() > 0      # close, not identical
    q = int8.embed_query("restore the database from a backup")
    assert float(q @ b[0]) > float(q @ b[1]) + 0.2                  # still understands paraphrase

    (graph,) = (data_env / "data" / "models").glob("*.onnx")
    record = graph.with_suffix(".json")
    assert json.loads(record.read_text())["sha256"] == int8.contract.model_sha256
    built_at = graph.stat().st_mtime_ns
    assert embed.load_embedder(embed.INT8_SPEC).contract == int8.contract
    assert graph.stat().st_mtime_ns == built_at                      # reused, not rebuilt
    with open(graph, "r+b") as f:                                    # damaged (or swapped) cache
        f.seek(os.path.getsize(graph) // 2)
        f.write(b"\0" * 64)
    assert embed.load_embedder(embed.INT8_SPEC).contract == int8.contract   # rebuilt: same bytes again
    assert graph.stat().st_mtime_ns != built_at


def test_int8_build_without_onnx_says_what_to_install(data_env, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_quantization(name, *args, **kwargs):
        if name.startswith("onnxruntime.quantization"):
            raise ImportError("No module named 'onnx'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_quantization)
    with pytest.raises(embed.ModelError, match="pip install 'onnx>=1.15'"):
        embed.load_embedder(embed.INT8_SPEC)
