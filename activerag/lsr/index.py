"""What LSR's query tower searches while it trains with re-embedding: every passage of the
collection with vectors from one state of the tower, searched exactly in memory; and the
tower's query vectors, with gradients."""

from __future__ import annotations

from typing import Any


def embed(model: Any, texts: list[str]) -> Any:
    """Unit-length query vectors with gradients."""
    import torch

    prepare = getattr(model, "preprocess", None) or model.tokenize  # renamed in v5.3
    features = prepare(texts)
    out = model(features)["sentence_embedding"]
    return torch.nn.functional.normalize(out, dim=-1)


class PassageIndex:
    """Every passage of the collection with vectors from one state of the tower, searched
    exactly in memory (what training with re-embedding retrieves from)."""

    def __init__(self, docs: list[Any], vectors: Any, step: int = 0) -> None:
        import numpy as np

        self.docs = docs
        self.step = step
        """The training step whose tower embedded the passages."""
        self.vectors = np.asarray(vectors, np.float32)
        self.row = {d.id: i for i, d in enumerate(docs)}

    def search_vectors(self, queries: Any, k: int) -> list[list[tuple[Any, float, Any]]]:
        import numpy as np

        scores = np.asarray(queries, np.float32) @ self.vectors.T
        k = min(k, len(self.docs))
        out = []
        for row in scores:
            top = np.argpartition(-row, k - 1)[:k]
            top = top[np.argsort(-row[top], kind="stable")]
            out.append([(self.docs[i], float(row[i]), self.vectors[i]) for i in top])
        return out

    def embeddings(self, ids: list[str]) -> Any:
        import numpy as np

        return np.stack([self.vectors[self.row[i]] for i in ids])
