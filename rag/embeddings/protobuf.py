"""The few Protocol Buffers messages the e5 engine hands to its libraries, written field by field: an ONNX
model (onnxruntime takes one as bytes) and a SentencePiece model (sentencepiece takes one as bytes). Both
libraries are installed without their message classes (the `onnx` package would add a 16 MB wheel for a
graph of ~90 nodes), and the wire format is small: a key (field number and wire type) then a varint, four
little-endian bytes, or a length and bytes.

Field numbers: onnx/onnx.proto (IR version 10) and sentencepiece's sentencepiece_model.proto.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import numpy as np

_VARINT, _FIXED32, _BYTES = 0, 5, 2


def varint(value: int) -> bytes:
    """`value` as a base-128 varint (a negative int64 as its two's complement, ten bytes)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def int_field(number: int, value: int) -> bytes:
    return varint(number << 3 | _VARINT) + varint(value)


def float_field(number: int, value: float) -> bytes:
    return varint(number << 3 | _FIXED32) + struct.pack("<f", value)


def bytes_field(number: int, value: bytes | str) -> bytes:
    data = value.encode("utf-8") if isinstance(value, str) else value
    return varint(number << 3 | _BYTES) + varint(len(data)) + data


def repeated(number: int, messages: Iterable[bytes]) -> bytes:
    return b"".join(bytes_field(number, message) for message in messages)


# --- ONNX ---------------------------------------------------------------------------------------------

_ONNX_TYPES = {np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int32): 6, np.dtype(np.int64): 7}
"""TensorProto.DataType of the arrays a graph here holds."""

_ATTRIBUTE_FLOAT, _ATTRIBUTE_INT, _ATTRIBUTE_STRING = 1, 2, 3


def onnx_attribute(name: str, value: float | int | str) -> bytes:
    """AttributeProto: name 1, f 2, i 3, s 4, type 20."""
    if isinstance(value, float):
        return bytes_field(1, name) + float_field(2, value) + int_field(20, _ATTRIBUTE_FLOAT)
    if isinstance(value, int):
        return bytes_field(1, name) + int_field(3, value) + int_field(20, _ATTRIBUTE_INT)
    return bytes_field(1, name) + bytes_field(4, value) + int_field(20, _ATTRIBUTE_STRING)


def onnx_node(
    op_type: str, inputs: Sequence[str], outputs: Sequence[str], domain: str = "", **attributes: float | str
) -> bytes:
    """NodeProto: input 1, output 2, op_type 4, attribute 5, domain 7. An empty input name is an optional
    input left out."""
    node = b"".join(bytes_field(1, name) for name in inputs) + b"".join(bytes_field(2, name) for name in outputs)
    node += bytes_field(4, op_type)
    if domain:
        node += bytes_field(7, domain)
    return node + repeated(5, (onnx_attribute(key, value) for key, value in attributes.items()))


def onnx_tensor(name: str, array: np.ndarray) -> bytes:
    """TensorProto: dims 1, data_type 2, name 8, raw_data 9 (row-major, little-endian)."""
    data = np.ascontiguousarray(array)
    dims = b"".join(int_field(1, size) for size in data.shape)
    return dims + int_field(2, _ONNX_TYPES[data.dtype]) + bytes_field(8, name) + bytes_field(9, data.tobytes())


def onnx_value(name: str, element_type: np.dtype, dims: Sequence[int | str]) -> bytes:
    """ValueInfoProto (name 1, type 2) of a tensor: TypeProto.tensor_type 1 (elem_type 1, shape 2), each
    TensorShapeProto.dim 1 a dim_value 1 or a named dim_param 2."""
    shape = b"".join(bytes_field(1, int_field(1, dim) if isinstance(dim, int) else bytes_field(2, dim)) for dim in dims)
    tensor_type = int_field(1, _ONNX_TYPES[np.dtype(element_type)]) + bytes_field(2, shape)
    return bytes_field(1, name) + bytes_field(2, bytes_field(1, tensor_type))


def onnx_model(
    nodes: Sequence[bytes],
    initializers: Sequence[bytes],
    inputs: Sequence[bytes],
    outputs: Sequence[bytes],
    opsets: Sequence[tuple[str, int]],
) -> bytes:
    """ModelProto (ir_version 1, producer_name 2, graph 7, opset_import 8) around a GraphProto (node 1,
    name 2, initializer 5, input 11, output 12)."""
    graph = repeated(1, nodes) + bytes_field(2, "graph") + repeated(5, initializers)
    graph += repeated(11, inputs) + repeated(12, outputs)
    opset_import = repeated(8, ((bytes_field(1, domain) if domain else b"") + int_field(2, v) for domain, v in opsets))
    return int_field(1, 10) + bytes_field(2, "rag") + bytes_field(7, graph) + opset_import


# --- SentencePiece ------------------------------------------------------------------------------------

SENTENCEPIECE_NORMAL, SENTENCEPIECE_UNKNOWN, SENTENCEPIECE_CONTROL = 1, 2, 3
"""ModelProto.SentencePiece.Type."""


def sentencepiece_model(
    pieces: Sequence[str], scores: Sequence[float], types: dict[int, int], special: dict[str, int]
) -> bytes:
    """A unigram ModelProto (pieces 1: piece 1, score 2, type 3; trainer_spec 2: model_type 3 = UNIGRAM,
    vocab_size 4, unk_id 40, bos_id 41, eos_id 42, pad_id 43; normalizer_spec 3: name 1, add_dummy_prefix
    3, remove_extra_whitespaces 4, escape_whitespaces 5) that tokenises its input as it is given: the
    caller normalises (no dummy prefix, spaces kept, no escaping). `types` holds the pieces that are not
    NORMAL, `special` the ids unk, bos, eos and pad."""
    entries = (
        bytes_field(1, piece) + float_field(2, score) + (int_field(3, types[i]) if i in types else b"")
        for i, (piece, score) in enumerate(zip(pieces, scores, strict=True))
    )
    trainer = int_field(3, 1) + int_field(4, len(pieces))
    trainer += b"".join(
        int_field(number, special[key]) for number, key in ((40, "unk"), (41, "bos"), (42, "eos"), (43, "pad"))
    )
    normalizer = bytes_field(1, "identity") + int_field(3, 0) + int_field(4, 0) + int_field(5, 0)
    return repeated(1, entries) + bytes_field(2, trainer) + bytes_field(3, normalizer)
