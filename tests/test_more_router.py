"""Adaptive-RAG's router: fitted with the defaults `activerag train-router` uses, labelled with
a progress bar unless asked not to, one MiniLM per process, and a Router that needs no
training record to route and refuses weights that do not give every label a row."""

import json

import numpy as np
import pytest

from activerag.context import FlareContext
from activerag.evaluation.datasets import Example
from activerag.evaluation.router_train import fit_router, train_router
from activerag.graphs.single import build_single_graph
from activerag.nodes.adaptive_rag import router as adaptive_router
from activerag.nodes.adaptive_rag.logic import LABELS
from activerag.nodes.adaptive_rag.router import Router
from activerag.sentences import SentenceSplitter
from activerag.testing.retriever import memory_retriever
from activerag.testing.scripted import ScriptedLM, ends

EXAMPLES = [Example("q1", "Who is the founder of Zeta?", ["Ilsa"]),
            Example("q2", "Where was Alpha Beta born?", ["Kelmor"]),
            Example("q3", "Where was the founder of Zeta born?", ["Vedria"])]
LABELLED = {"q1": "A", "q2": "B", "q3": "C"}
DOCS = {"Alpha Beta": "Alpha Beta was born in Kelmor.", "Gamma": "Gamma lives in Orvale."}


class Toy:
    """Three features of a question: names a birth, names a founder, and a constant."""

    name = "toy-encoder"

    def dimension(self) -> int:
        return 3

    def __call__(self, texts):
        return np.array([[float("born" in t), float("founder" in t), 1.0] for t in texts])


def test_fit_router_s_defaults_are_the_ones_train_router_s_command_line_uses(tmp_path):
    from activerag.cli import parser

    args = parser().parse_args(["train-router", "--out", str(tmp_path)])
    default = fit_router(EXAMPLES, LABELLED, Toy())
    by_cli = fit_router(EXAMPLES, LABELLED, Toy(), l2=args.l2, steps=args.steps)
    assert np.array_equal(default.router.weights, by_cli.router.weights)
    assert np.array_equal(default.router.bias, by_cli.router.bias)
    default.router.save(tmp_path / "router")
    meta = json.loads((tmp_path / "router" / "meta.json").read_text())
    assert (meta["steps"], meta["l2"]) == (args.steps, args.l2) == (2000, 1e-3)


def _runs():
    split = SentenceSplitter()
    answers = {"none": ["So the answer is Ilsa.", "So the answer is X.", "So the answer is Y."],
               "single": ["So the answer is Z.", "So the answer is Kelmor.", "So the answer is W."]}
    runs = {m: (build_single_graph(lm=ScriptedLM([ends(a, prob=0.99) for a in texts]),
                                   retriever=memory_retriever(DOCS), splitter=split,
                                   retrieval=m == "single"), FlareContext())
            for m, texts in answers.items()}
    runs["flare"] = (None, FlareContext())  # the fallback's method: never run
    return runs


async def test_labelling_shows_its_progress_unless_asked_not_to(tmp_path, capsys):
    strategies = {"A": "none", "B": "single", "C": "flare"}
    shown = await train_router(tmp_path / "shown", EXAMPLES, _runs(), strategies, Toy(),
                               dataset="2wiki", fallback="C", concurrency=1)
    assert shown.labels == LABELLED
    assert "eval: 100%" in capsys.readouterr().err
    await train_router(tmp_path / "quiet", EXAMPLES, _runs(), strategies, Toy(),
                       dataset="2wiki", fallback="C", concurrency=1, progress=False)
    assert "eval" not in capsys.readouterr().err


def test_the_process_loads_one_minilm_on_first_use_and_keeps_it(monkeypatch):
    made = []

    class StandIn:
        def __init__(self) -> None:
            made.append(self)

    monkeypatch.setattr(adaptive_router, "MiniLMEmbedder", StandIn)
    monkeypatch.setattr(adaptive_router, "_minilm", None)
    first = adaptive_router.minilm()
    assert isinstance(first, StandIn) and adaptive_router.minilm() is first
    assert made == [first]


def test_a_router_made_without_a_training_record_routes_and_saves(tmp_path):
    router = Router(np.array([[0.0, 0.0, 2.0], [4.0, -4.0, 0.0], [0.0, 8.0, 0.0]]), np.zeros(3))
    [p] = router.probabilities(Toy()(["Where was Alpha Beta born?"]))
    assert set(p) == set(LABELS) and max(p, key=p.get) == "B"
    router.save(tmp_path / "r")
    assert json.loads((tmp_path / "r" / "meta.json").read_text()) == {
        "labels": list(LABELS), "dimension": 3}
    assert Router(np.zeros((3, 3)), np.zeros(3)).meta == {}  # a record of its own


def test_weights_without_a_row_for_every_label_are_refused_not_read_as_the_first_labels():
    router = Router(np.array([[0.0, 0.0, 2.0], [4.0, -4.0, 0.0]]), np.zeros(2))
    with pytest.raises(ValueError, match="zip"):
        router.probabilities(Toy()(["Where was Alpha Beta born?"]))


@pytest.mark.parametrize(("setting", "other"), [("l2", 0.5), ("steps", 20)])
def test_each_training_setting_of_fit_router_changes_the_router_it_fits(setting, other):
    """`train-router --l2` and `--steps` reach the fit: another value, another router."""
    default = fit_router(EXAMPLES, LABELLED, Toy())
    changed = fit_router(EXAMPLES, LABELLED, Toy(), **{setting: other})
    assert not np.allclose(default.router.weights, changed.router.weights), setting
    assert changed.router.meta[setting] == other
