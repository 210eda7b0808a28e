"""The header of a GGUF file, read with the standard library: the key-value metadata, and the
KV cache shape it states (what llama-server's memory check needs of a user's own file)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

from activerag.errors import ActiveRagError, ModelFileMissing
from activerag.serving.catalogue import KvShape

_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
            12: "d"}
"""GGUF's value types that are one number, as struct formats (8 is a string, 9 an array)."""


def _unpack(src: BinaryIO, fmt: str) -> int | float:
    size = struct.calcsize("<" + fmt)
    data = src.read(size)
    if len(data) < size:
        raise EOFError("the file ends inside it")
    return struct.unpack("<" + fmt, data)[0]


def _gguf_value(src: BinaryIO, kind: int, keep: bool = True) -> object:
    """The next value of type KIND; long arrays (the vocabulary) are skipped and read as None."""
    if kind == 8:
        text = src.read(int(_unpack(src, "Q")))
        return text.decode(errors="replace") if keep else None
    if kind == 9:
        item, count = int(_unpack(src, "I")), int(_unpack(src, "Q"))
        if keep and count <= 64:
            return [_gguf_value(src, item) for _ in range(count)]
        if item in _SCALARS:
            src.seek(count * struct.calcsize("<" + _SCALARS[item]), 1)
        else:
            for _ in range(count):
                _gguf_value(src, item, keep=False)
        return None
    if kind not in _SCALARS:
        raise ValueError(f"a value of unknown type {kind}")
    return _unpack(src, _SCALARS[kind])


def gguf_metadata(gguf: Path) -> dict[str, object]:
    """The key-value header of the GGUF file (GGUF versions 2 and 3), read with the standard
    library: the gguf package is an optional extra, and its GGUFReader parses every array and
    tensor first (2.5 s for SmolLM2-135M's file here; this reader 0.05 s)."""
    try:
        with open(gguf, "rb") as src:
            if src.read(4) != b"GGUF":
                raise ActiveRagError(f"{gguf} is not a GGUF file (it does not begin with GGUF); "
                                     "llama.cpp serves .gguf model files")
            version = _unpack(src, "I")
            if version not in (2, 3):
                raise ActiveRagError(f"{gguf} is GGUF version {version}; llama.cpp here reads "
                                     "versions 2 and 3")
            _unpack(src, "Q")  # the tensors' count
            count = int(_unpack(src, "Q"))
            meta = {}
            for _ in range(count):
                key = src.read(int(_unpack(src, "Q"))).decode(errors="replace")
                meta[key] = _gguf_value(src, int(_unpack(src, "I")))
            return meta
    except FileNotFoundError as exc:
        raise ModelFileMissing(f"GGUF file {gguf} does not exist; pass an existing .gguf "
                               "file") from exc
    except (EOFError, ValueError, OverflowError, MemoryError) as exc:
        raise ActiveRagError(f"{gguf}'s GGUF header is cut short or damaged ({exc}); fetch the "
                             "file again") from exc


def gguf_kv(gguf: Path) -> KvShape:
    """The KV cache shape GGUF's header states: ARCH.block_count layers of
    ARCH.attention.head_count_kv heads (head_count where absent; the most of any layer where
    listed per layer) of key_length (embedding_length / head_count where absent)."""
    meta = gguf_metadata(gguf)
    arch = meta.get("general.architecture")

    def number(key: str) -> int:
        value = meta.get(f"{arch}.{key}")
        if isinstance(value, list):  # one a layer
            value = max((v for v in value if isinstance(v, int)), default=0)
        return value if isinstance(value, int) else 0

    layers, heads = number("block_count"), number("attention.head_count")
    if not layers or not heads:
        raise ActiveRagError(f"{gguf} states no {arch}.block_count or attention.head_count, so "
                             "its KV cache cannot be sized; is it a language model's GGUF?")
    head_dim = max(number("attention.key_length"), number("attention.value_length")) \
        or number("embedding_length") // heads
    return KvShape(layers, number("attention.head_count_kv") or heads, head_dim)
