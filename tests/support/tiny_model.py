"""A tiny, deterministic BERT-like model directory for tests (builds in milliseconds, no downloads).

It goes through the same path as the real model: a WordPiece ``tokenizer.json`` (lowercasing, [CLS]/
[SEP] template) → an ONNX graph taking input_ids/attention_mask[/token_type_ids] → last_hidden_state
(batch, seq, 32) → pooling in ``indexer.models.embed``. Token vectors are fixed random embeddings passed
through one small mask-aware layer, so texts that share words get more similar vectors than unrelated
texts, and padding never changes a real token's output (batching cannot change a vector).

Like the shipped default tokenizer, the tokenizer.json carries its own fixed padding/truncation,
which the embedder must override; and like BERT, the graph has a position table of fixed size,
so a sequence that is not truncated fails instead of passing silently.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

DIM = 32
RERANKER_DIM = 256
MAX_POSITIONS = 64
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
WORDS = """
a an and are as at be by for from how in is it of on or the to with what when where why who not
restore recover backup backups database databases postgres dump dumps table query index server
configure config bike bikes brake brakes wheel tyre chain ride road mountain garden plant water
tomato seed soil rain sun cat dog walk food cook recipe bread oven flour salt sugar coffee tea
deploy release build test tests commit branch merge git repo host hosts service services restart
log logs error errors disk memory cpu network dns port socket file files folder path user users
key keys secret token password login shell script python rust install update upgrade version
note notes journal plan plans runbook lesson lessons doc docs search find read write delete move
""".split()


def _vocab() -> dict[str, int]:
    return {tok: i for i, tok in enumerate(SPECIALS + sorted(set(WORDS)))}


def _tokenizer(vocab: dict[str, int]) -> Tokenizer:
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.decoder = decoders.WordPiece()
    # Export-time settings the embedder must replace (the shipped tokenizer pads/truncates to 128).
    tok.enable_truncation(max_length=8)
    tok.enable_padding(length=8, pad_id=vocab["[PAD]"], pad_token="[PAD]")
    return tok


def _graph(vocab_size: int, token_type_ids: bool, seed: int) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    f32 = np.float32
    words = rng.normal(size=(vocab_size, DIM)).astype(f32)
    words[: len(SPECIALS)] *= 0.1  # specials are in every text; keep them from dominating
    inits = {
        "word_emb": words,
        "pos_emb": (0.05 * rng.normal(size=(MAX_POSITIONS, DIM))).astype(f32),
        "type_emb": (0.05 * rng.normal(size=(2, DIM))).astype(f32),
        "w_tok": (rng.normal(size=(DIM, DIM)) / np.sqrt(DIM)).astype(f32),
        "w_ctx": (0.3 * rng.normal(size=(DIM, DIM)) / np.sqrt(DIM)).astype(f32),
        "bias": (0.1 * rng.normal(size=(DIM,))).astype(f32),
        "half": np.array(0.5, dtype=f32),
        "axis1": np.array([1], dtype=np.int64),
        "axis2": np.array([2], dtype=np.int64),
        "one": np.array([1], dtype=np.int64),
        "zero_s": np.array(0, dtype=np.int64),
        "one_s": np.array(1, dtype=np.int64),
    }
    n = helper.make_node
    nodes = [
        n("Gather", ["word_emb", "input_ids"], ["x_word"]),
        # positions 0..seq-1, looked up in a fixed-size table (like BERT's 512).
        n("Shape", ["input_ids"], ["shape"]),
        n("Gather", ["shape", "one_s"], ["seq_len"], axis=0),
        n("Range", ["zero_s", "seq_len", "one_s"], ["positions"]),
        n("Gather", ["pos_emb", "positions"], ["x_pos"]),
        n("Add", ["x_word", "x_pos"], ["x_wp"]),
    ]
    if token_type_ids:
        nodes += [n("Gather", ["type_emb", "token_type_ids"], ["x_type"]), n("Add", ["x_wp", "x_type"], ["x"])]
    else:
        nodes += [n("Identity", ["x_wp"], ["x"])]
    nodes += [
        # masked mean of the sequence: a one-head "attention" that ignores padding
        n("Unsqueeze", ["attention_mask", "axis2"], ["mask3"]),
        n("Cast", ["mask3"], ["maskf"], to=TensorProto.FLOAT),
        n("Mul", ["x", "maskf"], ["x_masked"]),
        n("ReduceSum", ["x_masked", "axis1"], ["x_sum"], keepdims=1),
        n("ReduceSum", ["maskf", "axis1"], ["m_sum"], keepdims=1),
        n("Div", ["x_sum", "m_sum"], ["ctx"]),
        n("MatMul", ["x", "w_tok"], ["h_tok"]),
        n("MatMul", ["ctx", "w_ctx"], ["h_ctx"]),
        n("Add", ["h_tok", "h_ctx"], ["h_sum"]),
        n("Add", ["h_sum", "bias"], ["h_pre"]),
        n("Tanh", ["h_pre"], ["h_act"]),
        n("Mul", ["h_act", "half"], ["h_scaled"]),
        n("Add", ["x", "h_scaled"], ["last_hidden_state"]),
    ]
    ids = lambda name: helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
    inputs = [ids("input_ids"), ids("attention_mask")] + ([ids("token_type_ids")] if token_type_ids else [])
    graph = helper.make_graph(
        nodes, "tiny_bert", inputs,
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", DIM])],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="remembrancer-tests")
    model.ir_version = 8  # old enough for any onnxruntime we support
    onnx.checker.check_model(model)
    return model


def build_tiny_model(dir: Path, *, token_type_ids: bool = True, seed: int = 0, **toml: object) -> Path:
    """Write model.onnx, tokenizer.json and remembrancer-model.toml into ``dir`` and return it.

    ``toml`` overrides manifest keys (e.g. ``pooling="cls"``, ``dim=16``, ``passage_prefix="p "``).
    """
    dir = Path(dir)
    dir.mkdir(parents=True, exist_ok=True)
    vocab = _vocab()
    _tokenizer(vocab).save(str(dir / "tokenizer.json"))
    onnx.save(_graph(len(vocab), token_type_ids, seed), str(dir / "model.onnx"))
    manifest = {"name": "tiny-test-model", "dim": DIM, "pooling": "mean", "normalize": True,
                "max_tokens": 32, "query_prefix": "", "passage_prefix": ""} | toml
    lines = [f"{k} = {_toml_value(v)}" for k, v in manifest.items()]
    (dir / "remembrancer-model.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dir


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _reranker_graph(vocab_size: int, seed: int) -> onnx.ModelProto:
    """A cross-encoder's shape (a pair in, one logit per pair out): the logit is the inner product
    of the question's mean token vector and the passage's (token type 0 and 1), so a passage that
    shares the question's words scores higher — a relevance a test can predict."""
    rng = np.random.default_rng(seed)
    f32 = np.float32
    words = rng.normal(size=(vocab_size, RERANKER_DIM)).astype(f32)   # wide: chance overlaps stay small
    words[: len(SPECIALS)] *= 0.01
    inits = {"word_emb": words, "one_f": np.array(1.0, dtype=f32), "axis1": np.array([1], dtype=np.int64),
             "axis2": np.array([2], dtype=np.int64), "tiny": np.array(1e-6, dtype=f32)}
    n = helper.make_node
    nodes = [
        n("Gather", ["word_emb", "input_ids"], ["x"]),
        n("Cast", ["attention_mask"], ["m"], to=TensorProto.FLOAT),
        n("Cast", ["token_type_ids"], ["t"], to=TensorProto.FLOAT),
        n("Mul", ["m", "t"], ["mb"]),
        n("Sub", ["one_f", "t"], ["not_t"]),
        n("Mul", ["m", "not_t"], ["ma"]),
    ]
    for side in ("a", "b"):
        nodes += [
            n("Unsqueeze", [f"m{side}", "axis2"], [f"m{side}3"]),
            n("Mul", ["x", f"m{side}3"], [f"x{side}"]),
            n("ReduceSum", [f"x{side}", "axis1"], [f"s{side}"], keepdims=0),
            n("ReduceSum", [f"m{side}3", "axis1"], [f"c{side}0"], keepdims=0),
            n("Add", [f"c{side}0", "tiny"], [f"c{side}"]),
            n("Div", [f"s{side}", f"c{side}"], [f"mean_{side}"]),
        ]
    nodes += [n("Mul", ["mean_a", "mean_b"], ["prod"]), n("ReduceSum", ["prod", "axis1"], ["logits"], keepdims=1)]
    ids = lambda name: helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
    graph = helper.make_graph(
        nodes, "tiny_cross_encoder", [ids("input_ids"), ids("attention_mask"), ids("token_type_ids")],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="remembrancer-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def build_tiny_reranker(dir: Path, *, seed: int = 1) -> Path:
    """Write a tiny cross-encoder folder (model.onnx + tokenizer.json) into ``dir`` and return it."""
    dir = Path(dir)
    dir.mkdir(parents=True, exist_ok=True)
    vocab = _vocab()
    _tokenizer(vocab).save(str(dir / "tokenizer.json"))
    onnx.save(_reranker_graph(len(vocab), seed), str(dir / "model.onnx"))
    return dir
