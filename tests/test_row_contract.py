"""Every column of an evaluation row derived from a scripted run's real trace (issue #38): the
rows are the harness's, made by `evaluate` from a FLARE run whose first sentence retrieves and
whose second does not, not written by hand; each column is checked against what the run did."""

from __future__ import annotations

import pytest

from activerag.context import FlareContext
from activerag.evaluation.datasets import Example
from activerag.evaluation.evaluate import Run, evaluate
from activerag.graphs.flare import build_flare_graph
from activerag.sentences import SentenceSplitter
from activerag.testing import ScriptedLM, ends, memory_retriever, sentence

QUESTION = "Where was Alpha Beta born?"
EXAMPLE = Example("q0", QUESTION, ["Gepu"], ["Alpha Beta"], group="one-hop")
PASSAGES = {"Alpha Beta": "Alpha Beta was born in Gepu.", "Gepu": "Gepu is a town."}


async def scripted_row(tmp_path) -> tuple[dict, ScriptedLM]:  # type: ignore[no-untyped-def]
    lm = ScriptedLM([
        sentence("Alpha Beta was born in Kelmor. So", low={"Kelmor.": 0.2}),  # draft 1: unsure
        sentence(" Alpha Beta was born in Gepu. So"),  # regenerated over the documents
        ends(" So the answer is Gepu."),  # draft 2: sure, kept
    ])
    graph = build_flare_graph(lm=lm, retriever=memory_retriever(PASSAGES, k=1),
                              splitter=SentenceSplitter())
    ctx = FlareContext(initial_retrieval=False, max_answer_tokens=64)
    run = Run(tmp_path)
    await evaluate(run, "t", {"flare": (graph, ctx)}, [EXAMPLE], concurrency=1, progress=False)
    [row] = run.rows()
    return row, lm


async def test_every_column_of_a_row_comes_from_the_run(tmp_path):
    row, lm = await scripted_row(tmp_path)
    answer = " Alpha Beta was born in Gepu. So the answer is Gepu."
    assert row["method"] == "flare" and row["id"] == "q0" and row["group"] == "one-hop"
    assert row["answer"].strip() == answer.strip()
    assert row["prediction"] == "Gepu" and row["em"] == 1.0 and row["f1"] == 1.0
    assert row["precision"] == 1.0 and row["recall"] == 1.0
    assert row["sentences"] == 2  # two sentences kept
    assert row["retrieved_sentences"] == 1  # only the first retrieved: rate 0.5, not 1.0
    assert row["retrievals"] == 1 and row["retrieval_steps"] == 1
    assert row["retrieved_titles"] == ["Alpha Beta"]
    assert row["gold_title_recall"] == 1.0
    assert row["lm_calls"] == len(lm.prompts) == 3
    assert row["answer_tokens"] == 6 + 5  # the regenerated sentence's tokens, then draft 2's
    # every token generated: draft 1 and the regeneration each to the look-ahead " So" that
    # completes their sentence (6 + 1), draft 2 to its end (5)
    assert row["generated_tokens"] == 7 + 7 + 5
    assert row["prompt_tokens"] > 0 and row["seconds"] > 0


async def test_the_summary_rate_is_the_rows_retrieved_over_their_sentences(tmp_path):
    from activerag.evaluation.summaries import summarise

    row, _ = await scripted_row(tmp_path)
    summary = summarise([row])
    assert summary["retrieval_rate"] == pytest.approx(0.5)
    assert summary["generated_per_kept_token"] == pytest.approx(
        row["generated_tokens"] / row["answer_tokens"])


COUNTS = ("lm_calls", "prompt_tokens", "generated_tokens", "answer_tokens", "retrievals",
          "retrieval_steps", "sentences", "retrieved_sentences")


def test_a_run_that_reports_nothing_counts_nothing():
    """A graph of the user's own may give only an answer: every count of its row is then 0,
    every list empty, nothing made up."""
    from activerag.evaluation.rows import row_of

    row = row_of("mine", EXAMPLE, {}, 0.5)
    assert {k: row[k] for k in COUNTS} == dict.fromkeys(COUNTS, 0)
    assert row["answer"] == "" and row["retrieved_titles"] == [] and row["seconds"] == 0.5
    assert row["em"] == 0 and row["f1"] == 0 and row["gold_title_recall"] == 0
    assert not {"route", "confidence", "certified", "selected_spans"} & set(row)


KIND_CASES = {
    "short": (Example("s", "Where?", ["Gepu"]), "So the answer is Gepu.",
              "So the answer is Kelmor."),
    "yesno": (Example("y", "Is it?", ["no"], kind="yesno"), "So the answer is no.",
              "So the answer is yes."),
    "long": (Example("l", "What?", ["Gepu is a town on the Vedria."], kind="long",
                     short_answers=[["Gepu"], ["Vedria"]]), "Gepu lies on the Vedria.",
             "Kelmor lies elsewhere."),
    "longbench": (Example("b", "Where?", ["Gepu"], kind="longbench"), "Gepu", "Kelmor"),
}
"""For every kind of example: one example, a right answer and a wrong one."""


def test_every_kind_of_example_is_listed_here():
    from typing import get_args

    from activerag.evaluation.datasets import Kind

    assert set(KIND_CASES) == set(get_args(Kind))


@pytest.mark.parametrize("kind", list(KIND_CASES))
def test_each_kind_scores_its_right_answer_1_and_its_wrong_one_0(kind):
    from activerag.evaluation.rows import score

    example, right, wrong = KIND_CASES[kind]
    assert score(example, right, [])["em"] == 1.0, kind
    assert score(example, wrong, [])["em"] == 0.0, kind
    if kind == "yesno":  # the yes/no read from the answer, kept to be scored again
        assert score(example, right, [])["prediction"] == "no"


def test_a_summary_counts_no_cost_its_rows_do_not_report():
    """Long-context rows that carry their stages but not every field (a run stopped before
    they were added): what no row reports sums to 0, not to one per row."""
    from activerag.evaluation.rows import row_of
    from activerag.evaluation.summaries import summarise

    rows = [{**row_of("fb_rag", EXAMPLE, {"answer": "Gepu"}, 1.0),
             "stage_seconds": {"sample": 0.5}} for _ in range(2)]
    out = summarise(rows)
    assert out["words_read"] == 0 and out["fallback_rate"] == 0
    assert out["stage_seconds"] == {"sample": 0.5}


def test_a_long_context_summary_averages_its_stages_words_and_fallbacks_per_question():
    from activerag.evaluation.rows import row_of
    from activerag.evaluation.summaries import summarise

    base = row_of("self_route", EXAMPLE, {"answer": "Gepu"}, 1.0)
    rows = [{**base, "stage_seconds": {"sample": 1.0, "read": 2.0}, "words_read": 100,
             "route": "long_context"},
            {**base, "stage_seconds": {"sample": 3.0}, "words_read": 300, "route": "rag"},
            {**base, "stage_seconds": {"read": 4.0}, "words_read": 0, "route": "rag"},
            {**base, "stage_seconds": {}, "words_read": 200, "route": "rag"}]
    out = summarise(rows)
    assert out["stage_seconds"] == {"read": 1.5, "sample": 1.0}
    assert out["words_read"] == 150 and out["fallback_rate"] == 0.25
