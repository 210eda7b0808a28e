"""What LSR's query tower searches while it trains with re-embedding: every passage of the
collection with vectors from one state of the tower, searched exactly in memory; and the
tower's query vectors, with gradients."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from activerag.stores.embedding import unit_vectors


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


def index_at(base: PassageIndex | None, current: PassageIndex | None, model: Any, step: int,
             folder: Path, progress: bool) -> PassageIndex:
    """The passages as the tower embedded them at STEP (a multiple of T; 0: the collection's
    own embeddings, BASE), kept in FOLDER so that a resumed run searches what it searched;
    CURRENT when it is already that step's."""
    import numpy as np

    assert base is not None
    if step == 0:
        return base
    if current is not None and current.step == step:
        return current
    path = folder / f"index-step-{step}.npy"
    if path.exists():
        vectors = np.load(path)
    else:
        print(f"re-embedding {len(base.docs)} passages at step {step}", file=sys.stderr)
        model.eval()
        vectors = unit_vectors(model, [d.page_content for d in base.docs], progress)
        with open(path.with_suffix(".tmp"), "wb") as f:
            np.save(f, vectors)
        path.with_suffix(".tmp").replace(path)
    return PassageIndex(base.docs, vectors, step)


def write_collection(base: PassageIndex | None, model: Any, folder: Path, progress: bool) -> None:
    """The passages under the trained tower, as the Chroma collection FOLDER searches."""
    from activerag.stores.chroma import ChromaStore
    from activerag.stores.query_encoder import INDEX_FOLDER

    assert base is not None
    print(f"re-embedding {len(base.docs)} passages with the trained tower", file=sys.stderr)
    model.eval()
    vectors = unit_vectors(model, [d.page_content for d in base.docs], progress)
    store = ChromaStore(folder / INDEX_FOLDER)
    if len(store):  # written by an earlier run of the same command: write it again whole
        store.client.delete_collection(store.collection.name)
        store = ChromaStore(folder / INDEX_FOLDER)
    store.add_embedded(base.docs, vectors)
