"""Adaptive-RAG with scripted LMs and a toy embedder: the silver label (simplest correct strategy,
the dataset's bias when none is), the logistic regression, the router folder (round trip and
refusals), the prompt classifier's parse, and the routing of A, B and C to their subgraphs."""

import json
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from activerag.context import FlareContext
from activerag.errors import ActiveRagError, ModelFileMissing, ModelMismatch, SettingError
from activerag.evaluation.datasets import Example
from activerag.evaluation.evaluate import Run
from activerag.evaluation.router_train import fit_router, silver_labels, train_router
from activerag.graphs.adaptive_rag import (
    build_adaptive_rag_graph,
    build_prompt_graph,
    build_router_graph,
)
from activerag.graphs.flare import build_flare_graph
from activerag.graphs.single import build_single_graph
from activerag.nodes.adaptive_rag.context import AdaptiveContext
from activerag.nodes.adaptive_rag.logic import (
    HOPS_LABEL,
    deciding_labels,
    fit_logistic,
    label_counts,
    parse_complexity,
    probabilities,
    silver_label,
)
from activerag.nodes.adaptive_rag.router import Router, load_router
from activerag.nodes.adaptive_rag.steps import context_for
from activerag.sentences import SentenceSplitter
from activerag.testing.retriever import memory_retriever
from activerag.testing.scripted import ScriptedLM, ends

Q = "Where was Alpha Beta born?"
DOCS = {"Alpha Beta": "Alpha Beta was born in Kelmor.", "Gamma": "Gamma lives in Orvale."}


# --- the silver label (§3.3) ---------------------------------------------------------------

def test_the_simplest_correct_strategy_is_the_label():
    assert silver_label({"A": True, "B": True, "C": True}, "C") == "A"
    assert silver_label({"A": False, "B": True, "C": True}, "C") == "B"
    assert silver_label({"A": True, "B": False, "C": True}, "C") == "A"
    assert silver_label({"A": False, "B": False, "C": True}, "B") == "C"


def test_a_question_no_strategy_answers_gets_the_datasets_bias():
    assert silver_label({"A": False, "B": False, "C": False}, HOPS_LABEL["multi-hop"]) == "C"
    assert silver_label({"A": False, "B": False, "C": False}, HOPS_LABEL["single-hop"]) == "B"
    assert silver_label({}, "B") == "B"  # a strategy without a result did not answer


def test_only_the_labels_that_can_change_a_silver_label_are_run():
    assert deciding_labels("C") == ("A", "B")  # multi-hop: a question neither answers is C
    assert deciding_labels("B") == ("A", "B", "C")  # single-hop: C right and B wrong gives C
    assert deciding_labels("A") == ("A", "B", "C")


def test_labels_come_from_exact_match_rows_and_a_missing_row_is_refused():
    rows = [{"method": m, "id": i, "em": em} for m, i, em in [
        ("none", "q1", 0.0), ("single", "q1", 1.0), ("flare", "q1", 1.0),
        ("none", "q2", 0.0), ("single", "q2", 0.0), ("flare", "q2", 0.0),
        ("none", "q3", 1.0), ("single", "q3", 0.0), ("flare", "q3", 0.0)]]
    strategies = {"A": "none", "B": "single", "C": "flare"}
    assert silver_labels(rows, strategies, ["q1", "q2", "q3"], "C") == {
        "q1": "B", "q2": "C", "q3": "A"}
    with pytest.raises(ActiveRagError, match="1 runs are missing .*flare on q1"):
        silver_labels(rows[:2] + rows[3:], strategies, ["q1", "q2", "q3"], "C")


def test_label_counts_list_every_label():
    assert label_counts(["C", "A", "C"]) == {"A": 1, "B": 0, "C": 2}


# --- the logistic regression ---------------------------------------------------------------

CENTRES = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])


def toy_set(n: int = 10) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(0)
    x = np.vstack([c + 0.1 * rng.standard_normal((n, 2)) for c in CENTRES])
    return x, [k for k in range(3) for _ in range(n)]


def test_logistic_regression_fits_a_separable_set():
    x, y = toy_set()
    w, b = fit_logistic(x, y, 3, l2=1e-4, steps=3000)
    p = probabilities(w, b, x)
    assert (p.argmax(axis=1) == np.array(y)).all()
    assert np.allclose(p.sum(axis=1), 1.0)
    centre = probabilities(w, b, CENTRES)
    assert (centre.argmax(axis=1) == [0, 1, 2]).all() and centre.max(axis=1).min() > 0.9


def test_logistic_regression_is_deterministic_and_stops_at_a_flat_gradient():
    x, y = toy_set()
    first, again = fit_logistic(x, y), fit_logistic(x, y)
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[1], again[1])
    # one class only: the bias alone fits it, and the gradient flattens long before the cap
    w, b = fit_logistic(x[:10], [2] * 10, 3, steps=100_000)
    assert probabilities(w, b, x[:1])[0].argmax() == 2


def test_logistic_regression_reaches_the_regularised_optimum():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 4))  # overlapping classes: no separating set of weights
    y = list(rng.integers(0, 3, 40))
    w, b = fit_logistic(x, y, 3, l2=0.1, steps=300, tolerance=1e-9)
    targets = np.eye(3)[y]
    residual = probabilities(w, b, x) - targets
    assert np.abs(residual.T @ x / 40 + 0.1 * w).max() < 1e-6  # ∂/∂W of the objective
    assert np.abs(residual.mean(axis=0)).max() < 1e-6  # ∂/∂b (b is not regularised)


def test_probabilities_do_not_overflow():
    p = probabilities(np.array([[1000.0], [0.0], [-1000.0]]), np.zeros(3), np.array([[1.0]]))
    assert np.allclose(p, [[1.0, 0.0, 0.0]])


# --- the router folder ---------------------------------------------------------------------

@dataclass
class ToyEmbedder:
    """Three features of a question: names a birth, names a founder, and a constant."""

    name: str = "toy-encoder"
    dim: int = 3

    def dimension(self) -> int:
        return self.dim

    def __call__(self, texts):
        return np.array([[float("born" in t), float("founder" in t), 1.0][: self.dim]
                         for t in texts])


def saved_router(tmp_path, weights=None, embedder=None) -> tuple:
    embedder = embedder or ToyEmbedder()
    w = np.array([[0.0, 0.0, 2.0], [4.0, -4.0, 0.0], [0.0, 8.0, 0.0]]) if weights is None \
        else weights
    router = Router(w, np.zeros(3), {"embedding_model": embedder.name, "train_ids": ["q1"]})
    router.save(tmp_path / "router")
    return tmp_path / "router", router


def test_a_saved_router_loads_as_it_was(tmp_path):
    folder, router = saved_router(tmp_path)
    loaded = load_router(folder, ToyEmbedder())
    assert np.array_equal(loaded.weights, router.weights)
    assert loaded.meta["train_ids"] == ["q1"] and loaded.meta["dimension"] == 3
    assert loaded.meta["labels"] == ["A", "B", "C"]
    vectors = ToyEmbedder()(["Where was he born?"])
    assert loaded.probabilities(vectors) == router.probabilities(vectors)
    assert sorted(p.name for p in folder.iterdir()) == ["bias.npy", "meta.json", "weights.npy"]


def test_a_save_cut_short_leaves_a_folder_that_is_refused(tmp_path, monkeypatch):
    folder, router = saved_router(tmp_path)

    def killed(path, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "save", killed)
    with pytest.raises(KeyboardInterrupt):
        router.save(folder)
    with pytest.raises(ModelFileMissing, match="lacks meta.json"):
        load_router(folder, ToyEmbedder())


def test_a_router_is_never_read_from_a_pickle(tmp_path):
    folder, _ = saved_router(tmp_path)
    np.save(folder / "weights.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ModelFileMissing, match="unreadable"):
        load_router(folder, ToyEmbedder())


def test_a_missing_or_incomplete_folder_is_refused_with_what_to_do(tmp_path):
    with pytest.raises(ModelFileMissing, match="does not exist; train one with `activerag "
                                               "train-router --out"):
        load_router(tmp_path / "nowhere", ToyEmbedder())
    folder, _ = saved_router(tmp_path)
    (folder / "meta.json").unlink()
    with pytest.raises(ModelFileMissing, match="lacks meta.json"):
        load_router(folder, ToyEmbedder())
    with pytest.raises(SettingError, match="none was given.*--router DIR"):
        load_router("", ToyEmbedder())


def test_a_router_of_another_embedding_model_or_dimension_is_refused(tmp_path):
    folder, _ = saved_router(tmp_path)
    with pytest.raises(ModelMismatch, match="trained on toy-encoder embeddings .* other-encoder"):
        load_router(folder, ToyEmbedder(name="other-encoder"))
    with pytest.raises(ModelMismatch, match="3-dimensional embeddings and toy-encoder gives 2"):
        load_router(folder, ToyEmbedder(dim=2))


def test_the_context_refuses_a_router_folder_that_does_not_exist(tmp_path):
    with pytest.raises(SettingError, match="router folder .* does not exist"):
        AdaptiveContext(router=str(tmp_path / "nowhere"))
    assert AdaptiveContext(router=str(tmp_path)).router == str(tmp_path)


# --- the prompt classifier's reply ---------------------------------------------------------

@pytest.mark.parametrize("reply,label", [
    ("B", "B"), ("  c\n", "C"), ("C.", "C"), ("(A) no retrieval", "A"), ("**C**", "C"),
    ("Answer: C", "C"), ("The complexity is B", "B"), ("it needs (B)", "B"),
    ("The answer is a city", None), ("Abc", None), ("", None), ("maybe", None),
])
def test_the_reply_is_parsed_robustly(reply, label):
    assert parse_complexity(reply) == label


@given(st.sampled_from("ABC"), st.text(" \n\t\"'(*", max_size=3), st.sampled_from(["", ".", ")",
                                                                                  " - why"]))
def test_a_reply_that_leads_with_a_letter_is_that_letter(letter, before, after):
    assert parse_complexity(before + letter + after) == letter


# --- routing -------------------------------------------------------------------------------

def strategies(none_lm: ScriptedLM, single_lm: ScriptedLM, multi_lm: ScriptedLM) -> dict:
    split = SentenceSplitter()
    return {"none": build_single_graph(lm=none_lm, retriever=memory_retriever(DOCS),
                                       splitter=split, retrieval=False),
            "single": build_single_graph(lm=single_lm, retriever=memory_retriever(DOCS),
                                         splitter=split),
            "multi": build_flare_graph(lm=multi_lm, retriever=memory_retriever(DOCS),
                                       splitter=split)}


def scripted_lms() -> tuple[ScriptedLM, ScriptedLM, ScriptedLM]:
    return (ScriptedLM([ends("From memory: Orvale.")]), ScriptedLM([ends("In Kelmor.")]),
            ScriptedLM([ends("Alpha Beta was born in Kelmor.", prob=0.99)]))


def fixed(label: str):
    async def classify(state, runtime):
        return {"route": label, "probabilities": {label: 1.0}, "classification": {}}
    return classify


@pytest.mark.parametrize("label,strategy,answer,steps", [
    ("A", "no_retrieval", "From memory: Orvale.", 0),
    ("B", "single_step", "In Kelmor.", 1),
    ("C", "multi_step", "Alpha Beta was born in Kelmor.", 1),
])
async def test_each_label_runs_its_own_strategy_and_no_other(label, strategy, answer, steps):
    lms = scripted_lms()
    graph = build_adaptive_rag_graph(**strategies(*lms), classify=fixed(label))
    out = await graph.ainvoke({"question": Q}, context=AdaptiveContext())
    assert (out["route"], out["strategy"], out["answer"]) == (label, strategy, answer)
    assert list(out["runs"]) == [strategy] and out["trace"] == out["runs"][strategy]["trace"]
    assert out["retrieval_steps"] == steps and out["lm_calls"] == 1
    ran = [bool(lm.prompts) for lm in lms]
    assert ran == [x == label for x in "ABC"]


async def test_a_classify_node_that_gives_no_label_is_an_error():
    graph = build_adaptive_rag_graph(**strategies(*scripted_lms()), classify=fixed("D"))
    with pytest.raises(ValueError, match="no complexity label"):
        await graph.ainvoke({"question": Q}, context=AdaptiveContext())


async def test_the_prompt_classifier_routes_by_the_lms_letter_and_counts_its_call():
    classifier = ScriptedLM([ends(" B", prob=0.7)])
    lms = scripted_lms()
    out = await build_prompt_graph(**strategies(*lms), lm=classifier).ainvoke(
        {"question": Q}, context=AdaptiveContext())
    assert out["route"] == "B" and out["answer"] == "In Kelmor."
    assert out["probabilities"] == pytest.approx({"B": 0.7})
    assert out["classification"] == {"classifier": "prompt", "reply": " B", "label": "B"}
    assert out["lm_calls"] == 2  # the classifier's and single's
    assert out["prompt_tokens"] == (len(classifier.prompts[0].split())
                                    + len(lms[1].prompts[0].split()))
    assert "Question: Where was Alpha Beta born?" in classifier.prompts[0]
    assert classifier.calls[0]["stop"] == ["\n"]


async def test_an_unparseable_reply_goes_multi_step_and_says_so():
    lms = scripted_lms()
    out = await build_prompt_graph(**strategies(*lms), lm=ScriptedLM([ends("maybe so")])
                                   ).ainvoke({"question": Q}, context=AdaptiveContext())
    assert out["route"] == "C" and out["strategy"] == "multi_step"
    assert out["probabilities"] == {}
    assert out["classification"]["note"] == ("the reply 'maybe so' names no complexity A, B or "
                                             "C: C (multi_step) by default")


async def test_the_trained_router_routes_by_its_most_probable_label(tmp_path):
    folder, _ = saved_router(tmp_path)
    graph = build_router_graph(**strategies(*scripted_lms()), embedder=ToyEmbedder())
    ctx = AdaptiveContext(router=str(folder))
    born = await graph.ainvoke({"question": Q}, context=ctx)
    assert born["route"] == "B" and born["answer"] == "In Kelmor."
    # logits A 2, B 4, C 0 for a question that names a birth and no founder
    assert born["probabilities"]["B"] == pytest.approx(np.exp(4) / (np.exp(2) + np.exp(4) + 1))
    assert born["lm_calls"] == 1
    assert born["classification"] == {"classifier": "router", "router": str(folder),
                                      "label": "B"}
    graph = build_router_graph(**strategies(*scripted_lms()), embedder=ToyEmbedder())
    other = await graph.ainvoke({"question": "Who is Gamma?"}, context=ctx)
    assert other["route"] == "A" and sum(other["probabilities"].values()) == pytest.approx(1)


async def test_a_tie_goes_to_the_simpler_label(tmp_path):
    folder, _ = saved_router(tmp_path, weights=np.zeros((3, 3)))
    out = await build_router_graph(**strategies(*scripted_lms()), embedder=ToyEmbedder()
                                   ).ainvoke({"question": Q},
                                             context=AdaptiveContext(router=str(folder)))
    assert out["route"] == "A"


async def test_the_router_graph_refuses_to_run_without_a_router():
    graph = build_router_graph(**strategies(*scripted_lms()), embedder=ToyEmbedder())
    with pytest.raises(SettingError, match="train-router"):
        await graph.ainvoke({"question": Q}, context=AdaptiveContext())


async def test_the_default_classifier_is_the_router_when_one_is_named(tmp_path):
    folder, _ = saved_router(tmp_path)
    graph = build_adaptive_rag_graph(**strategies(*scripted_lms()), embedder=ToyEmbedder(),
                                     lm=ScriptedLM([ends("A")]))
    by_router = await graph.ainvoke({"question": Q}, context=AdaptiveContext(router=str(folder)))
    by_prompt = await graph.ainvoke({"question": Q}, context=AdaptiveContext())
    assert by_router["classification"]["classifier"] == "router" and by_router["route"] == "B"
    assert by_prompt["classification"]["classifier"] == "prompt" and by_prompt["route"] == "A"


@dataclass(kw_only=True)
class OwnContext(FlareContext):
    rounds: int = 3


def test_the_multi_step_strategy_is_ircot_by_default():
    from activerag.graphs import adaptive_rag, ircot
    from activerag.nodes.adaptive_rag.steps import STRATEGIES

    assert adaptive_rag.MULTI_STEP is ircot.graph
    assert STRATEGIES == {"A": "no_retrieval", "B": "single_step", "C": "multi_step"}


def test_a_strategy_with_a_context_of_its_own_gets_it_from_the_run():
    class Graph:
        context_schema = OwnContext

    ctx = AdaptiveContext(theta=0.3, k=5, router="")
    made = context_for(Graph(), ctx)
    assert type(made) is OwnContext and (made.theta, made.k, made.rounds) == (0.3, 5, 3)
    assert context_for(build_single_graph(lm=ScriptedLM([])), ctx) is ctx
    from activerag.graphs.ircot import graph as ircot_graph
    from activerag.nodes.ircot.context import IRCoTContext

    made = context_for(ircot_graph, ctx)
    assert type(made) is IRCoTContext and made.k == 5
    assert made.ircot_max_paragraphs == IRCoTContext.ircot_max_paragraphs


# --- training on scripted runs -------------------------------------------------------------

EXAMPLES = [Example("q1", "Who is the founder of Zeta?", ["Ilsa"]),
            Example("q2", "Where was Alpha Beta born?", ["Kelmor"]),
            Example("q3", "Where was the founder of Zeta born?", ["Vedria"])]


async def test_training_labels_scripted_runs_and_writes_a_loadable_router(tmp_path):
    split = SentenceSplitter()
    answers = {  # per strategy, per question in order: q1 none right, q2 single, q3 nobody
        "none": ["So the answer is Ilsa.", "So the answer is Orvale.", "So the answer is X."],
        "single": ["So the answer is Ilsa.", "So the answer is Kelmor.", "So the answer is Y."],
        "flare": ["So the answer is Ilsa.", "So the answer is Kelmor.", "So the answer is Z."]}
    lms = {m: ScriptedLM([ends(a, prob=0.99) for a in texts]) for m, texts in answers.items()}
    runs = {"none": (build_single_graph(lm=lms["none"], retriever=memory_retriever(DOCS),
                                        splitter=split,
                                        retrieval=False), FlareContext()),
            "single": (build_single_graph(lm=lms["single"], retriever=memory_retriever(DOCS),
                                          splitter=split),
                       FlareContext()),
            "flare": (build_flare_graph(lm=lms["flare"], retriever=memory_retriever(DOCS),
                                        splitter=split),
                      FlareContext())}
    strategies_ = {"A": "none", "B": "single", "C": "flare"}
    out = tmp_path / "router"
    trained = await train_router(out, EXAMPLES, runs, strategies_, ToyEmbedder(),
                                 dataset="2wiki", fallback="C", concurrency=1, progress=False,
                                 meta={"command": "activerag train-router --out x --n 3"})
    assert trained.labels == {"q1": "A", "q2": "B", "q3": "C"}
    assert trained.counts == {"A": 1, "B": 1, "C": 1} and trained.accuracy == 1.0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["train_ids"] == ["q1", "q2", "q3"] and meta["dataset"] == "2wiki"
    assert meta["embedding_model"] == "toy-encoder" and meta["dimension"] == 3
    assert meta["command"].startswith("activerag train-router") and meta["fallback"] == "C"
    assert meta["strategies"] == strategies_ and meta["not_run"] == ["flare"]
    # C is 2Wiki's fallback: its answers cannot change a label, so flare was never asked
    assert lms["flare"].prompts == [] and lms["none"].prompts and lms["single"].prompts
    assert {r["method"] for r in Run(out / "silver").rows()} == {"none", "single"}
    router = load_router(out, ToyEmbedder())
    assert [max(p, key=p.get) for p in router.probabilities(ToyEmbedder()(
        [e.question for e in EXAMPLES]))] == ["A", "B", "C"]
    again = await train_router(out, EXAMPLES, runs, strategies_, ToyEmbedder(), dataset="2wiki",
                               fallback="C", concurrency=1, progress=False)
    assert again.labels == trained.labels  # resumed: every run was done, no LM asked again


def test_fit_router_records_ids_labels_and_accuracy():
    labels = {"q1": "C", "q2": "B", "q3": "C"}
    trained = fit_router(EXAMPLES, labels, ToyEmbedder(), meta={"dataset": "2wiki"})
    assert trained.router.meta["train_labels"] == labels
    assert trained.router.meta["label_counts"] == {"A": 0, "B": 1, "C": 2}
    assert trained.router.meta["dataset"] == "2wiki" and trained.accuracy == 1.0


def test_train_router_refuses_strategies_that_are_not_three_methods(tmp_path):
    import asyncio

    with pytest.raises(ActiveRagError, match="three different methods"):
        asyncio.run(train_router(tmp_path, EXAMPLES, {"none": None, "single": None},
                                 {"A": "none", "B": "single", "C": "single"}, ToyEmbedder(),
                                 dataset="2wiki", fallback="C"))


# --- the CLI -------------------------------------------------------------------------------

def test_train_router_refuses_a_multi_step_method_that_is_not_one(capsys):
    from activerag.cli import main

    assert main(["train-router", "--out", "x", "--multi", "single"]) == 2
    assert "--multi single is not a multi-step method" in capsys.readouterr().err
    assert main(["train-router", "--out", "x", "--multi", "replug"]) == 2
    assert main(["train-router", "--out", "x", "--multi", "flair"]) == 2
    assert "did you mean 'flare'" in capsys.readouterr().err
    # a method whose context is not FLARE's (FB-RAG's long contexts) is refused too
    assert main(["train-router", "--out", "x", "--multi", "fb_rag"]) == 2
    assert "--multi fb_rag is not a multi-step method" in capsys.readouterr().err


def test_train_router_takes_flare_as_its_multi_step_method_and_goes_on_to_the_server(
        capsys, own_home, allow_port, monkeypatch):
    from activerag import lsr
    from activerag.cli import main

    allow_port(9)  # nothing listens there: the server check answers, not the method check
    # the training questions without the data folder (a checkout may have none beside it)
    monkeypatch.setattr(lsr, "training_examples", lambda n, seed: [])
    assert main(["train-router", "--out", "x", "--multi", "flare", "--n", "2",
                 "--base-url", "http://127.0.0.1:9/v1"]) == 2
    said = capsys.readouterr().err
    assert "not a multi-step method" not in said
    assert "the LM server at http://127.0.0.1:9/v1 does not answer" in said


def test_the_training_command_is_recorded_with_the_flags_given():
    from activerag.cli import parser
    from activerag.cli.router import command_line

    args = parser().parse_args(["train-router", "--out", "r", "--n", "3", "--theta", "0.5",
                                "--no-initial-retrieval", "--base-url", "http://h:1/v1"])
    assert command_line(args) == (
        "activerag train-router --out r --n 3 --seed 0 --multi ircot --l2 0.001 --steps 2000 "
        "--base-url http://h:1/v1 --theta 0.5 --no-initial-retrieval")


def test_ask_and_eval_take_the_router_flag(tmp_path):
    from activerag.cli import parser
    from activerag.cli.options import method_runs
    from activerag.settings import Settings

    args = parser().parse_args(["eval", "--methods", "adaptive_rag,adaptive_rag_prompt",
                                "--router", str(tmp_path), "--theta", "0.4"])
    runs = method_runs(args, Settings.from_env(), ["adaptive_rag", "adaptive_rag_prompt"])
    assert runs["adaptive_rag"][1].router == str(tmp_path)
    assert runs["adaptive_rag"][1].theta == 0.4
    assert runs["adaptive_rag_prompt"][1].router == ""


async def test_the_decision_streams_as_a_line_ask_trace_prints(tmp_path):
    from activerag.cli.trace import event

    folder, _ = saved_router(tmp_path)
    graph = build_router_graph(**strategies(*scripted_lms()), embedder=ToyEmbedder())
    chunks = [c async for c in graph.astream({"question": Q}, stream_mode="custom",
                                             context=AdaptiveContext(router=str(folder)))]
    stages = [c for c in chunks if "stage" in c]
    assert len(stages) == 1
    assert event(stages[0]).startswith("[classify: B -> single_step (router; p A 0.12 B 0.87 "
                                       "C 0.02) ")


def test_the_registry_rows_give_adaptive_rag_its_context_and_the_authors_answer_rule():
    from activerag.graphs.registry import METHODS, answer_rule, method

    rows = METHODS["adaptive_rag"], METHODS["adaptive_rag_prompt"]
    assert [(r.context, r.overrides, r.family) for r in rows] == [
        (AdaptiveContext, {}, "Adaptive-RAG"), (AdaptiveContext, {"router": ""}, "Adaptive-RAG")]
    assert answer_rule("adaptive_rag") == answer_rule("adaptive_rag_prompt") == "whole"
    _, ctx = method("adaptive_rag_prompt", FlareContext(k=4))
    assert type(ctx) is AdaptiveContext and (ctx.k, ctx.router) == (4, "")
