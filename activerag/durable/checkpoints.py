"""Reading a checkpoint back without running what it names: LangGraph's serializer limited to
the classes a method graph's state holds, so that a crafted checkpoint file is refused, not
decoded (activerag.durable's SQLite checkpoints and activerag.durable.postgres's alike)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from activerag.errors import ActiveRagError

STATE_TYPES = (("langchain_core.documents.base", "Document"), ("langgraph.types", "Send"),
               ("langgraph.types", "Overwrite"))
"""The only classes a checkpoint of a method graph holds (documents, REPLUG's fan-out, the
start node's pending writes that reset a thread's trace and counters); a stored value naming
any other callable is refused, since decoding it would call it."""

_CONSTRUCTORS = range(6)
"""LangGraph's msgpack extension codes whose payload is (module, name, arguments[, method])."""


def _named(data: bytes) -> list[str]:
    """Every module.name[.method] that msgpack DATA asks its decoder to import and call."""
    import ormsgpack

    names: list[str] = []

    def look(code: int, payload: bytes) -> None:
        inner = ormsgpack.unpackb(payload, ext_hook=look, option=ormsgpack.OPT_NON_STR_KEYS)
        if code in _CONSTRUCTORS:
            if not isinstance(inner, (list, tuple)) or len(inner) < 3:
                names.append(f"a malformed constructor (extension {code})")
            elif (inner[0], inner[1]) not in STATE_TYPES or (code == 3 and len(inner) > 3):
                names.append(".".join(str(p) for p in (inner[0], inner[1], *inner[3:4])))

    ormsgpack.unpackb(data, ext_hook=look, option=ormsgpack.OPT_NON_STR_KEYS)
    return names


def serializer(path: Path | str) -> Any:
    """LangGraph's serializer limited to STATE_TYPES, refusing (with an ActiveRagError that
    names PATH) any stored value that names another callable or comes in another format."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    class StateSerializer(JsonPlusSerializer):
        def loads_typed(self, data: tuple[str, bytes]) -> Any:
            kind, blob = data
            if kind not in ("null", "bytes", "bytearray", "msgpack"):
                names = [f"{kind} data"]
            else:
                try:
                    names = _named(blob) if kind == "msgpack" else []
                except ValueError:
                    names = ["data that is not msgpack"]
            if names:
                raise ActiveRagError(
                    f"{path} holds a checkpoint with {', '.join(sorted(set(names)))}, which no "
                    "activerag run writes; it is not loaded, since decoding it could run code. "
                    "If you did not make that file, delete it (the runs it held start afresh)")
            return super().loads_typed(data)

    return StateSerializer(allowed_msgpack_modules=STATE_TYPES)
