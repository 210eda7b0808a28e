"""Training Adaptive-RAG's query-complexity router (Jeong et al. 2024, §3.3) from this
library's own runs: each training question is answered by no retrieval, single-step retrieval
and the multi-step method (the evaluation runner, resumable, into a run folder); its silver
label is the simplest strategy whose answer matches the gold exactly (the authors' code:
normalised answer equal to a gold answer), or the dataset's inductive bias when none does;
a logistic regression on the questions' MiniLM embeddings is fitted to the labels and saved as
a router folder (nodes/adaptive_rag/router.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from activerag.errors import ActiveRagError
from activerag.evaluation.datasets import Example
from activerag.evaluation.evaluate import Run, evaluate
from activerag.nodes.adaptive_rag.logic import (
    LABELS,
    Label,
    deciding_labels,
    fit_logistic,
    label_counts,
    probabilities,
    silver_label,
)
from activerag.nodes.adaptive_rag.router import Embedder, Router


def silver_labels(rows: Sequence[Mapping[str, Any]], strategies: Mapping[Label, str],
                  ids: Sequence[str], fallback: Label) -> dict[str, Label]:
    """Each question id's silver label from the run's ROWS (one per method and id): the
    simplest of STRATEGIES (label -> method) whose answer has EM 1, else FALLBACK. A question
    some strategy has no row for is refused: its label would be a guess."""
    em = {(r["method"], r["id"]): float(r.get("em") or 0.0) for r in rows}
    missing = [(m, i) for i in ids for m in strategies.values() if (m, i) not in em]
    if missing:
        named = ", ".join(f"{m} on {i}" for m, i in missing[:3])
        raise ActiveRagError(f"{len(missing)} runs are missing from the labelling run ({named}"
                             f"{', ...' if len(missing) > 3 else ''}); run train-router again "
                             "with the same settings to finish them")
    return {i: silver_label({label: em[(m, i)] >= 1.0 for label, m in strategies.items()},
                            fallback) for i in ids}


@dataclass
class Trained:
    """A fitted router and how it fits its own training questions."""

    router: Router
    labels: dict[str, Label]
    accuracy: float
    """Share of training questions whose most probable label is their silver label."""
    counts: dict[str, int]


def fit_router(examples: Sequence[Example], labels: Mapping[str, Label], embedder: Embedder,
               l2: float = 1e-3, steps: int = 2000, meta: Mapping[str, Any] | None = None
               ) -> Trained:
    """Fit the logistic regression of LABELS on EXAMPLES' question embeddings by EMBEDDER."""
    vectors = np.asarray(embedder([e.question for e in examples]), np.float64)
    y = [LABELS.index(labels[e.id]) for e in examples]
    weights, bias = fit_logistic(vectors, y, len(LABELS), l2=l2, steps=steps)
    predicted = probabilities(weights, bias, vectors).argmax(axis=1)
    accuracy = float(np.mean(predicted == np.asarray(y))) if y else 0.0
    ordered = {e.id: labels[e.id] for e in examples}
    counts = label_counts(list(ordered.values()))
    record = {**(meta or {}), "embedding_model": embedder.name,
              "train_ids": list(ordered), "train_labels": ordered, "label_counts": counts,
              "training_accuracy": accuracy, "l2": l2, "steps": steps}
    return Trained(Router(weights, bias, record), ordered, accuracy, counts)


async def train_router(out: Path, examples: list[Example], runs: dict[str, tuple[Any, Any]],
                       strategies: Mapping[Label, str], embedder: Embedder, *,
                       dataset: str, fallback: Label, run_dir: Path | None = None,
                       concurrency: int = 4, l2: float = 1e-3, steps: int = 2000,
                       meta: Mapping[str, Any] | None = None, progress: bool = True) -> Trained:
    """Run STRATEGIES' methods (RUNS: name -> graph and context) on EXAMPLES into RUN_DIR
    (default OUT/silver; a second call resumes it), label each question, fit and save the
    router in OUT. A strategy whose answers cannot change a label (the multi-step one when it
    is the FALLBACK, see deciding_labels) is not run."""
    if set(strategies.values()) != set(runs) or len(runs) != len(LABELS):
        raise ActiveRagError(f"the three strategies {dict(strategies)} must be three different "
                             f"methods, and those run; got {list(runs)}")
    if not examples:
        raise ActiveRagError("no training questions to label; ask for at least one (--n)")
    deciding = {label: strategies[label] for label in deciding_labels(fallback)}
    run = Run(run_dir or out / "silver")
    await evaluate(run, dataset, {m: runs[m] for m in deciding.values()}, examples, concurrency,
                   progress=progress)
    labels = silver_labels(run.rows(), deciding, [e.id for e in examples], fallback)
    record = {**(meta or {}), "dataset": dataset, "strategies": dict(strategies),
              "fallback": fallback, "run_folder": str(run.path),
              "not_run": sorted(set(strategies.values()) - set(deciding.values()))}
    trained = fit_router(examples, labels, embedder, l2, steps, record)
    trained.router.save(out)
    return trained
