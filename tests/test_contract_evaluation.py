"""What an evaluation's summary is computed from (issue #38), on literal rows: a run's summary
counts exactly its config's methods x example ids (a stray row of another method or example is
left out, whatever else it shares); summary.md shows the long-context columns exactly when a
method read words of a context, in the overall table and each group's; bits per byte is read
from every passage, one alone included."""

from __future__ import annotations

import pytest
from test_evaluate import row

from activerag.evaluation.bpb import summarise_bpb
from activerag.evaluation.evaluate import Run
from activerag.evaluation.summaries import summarise_methods
from activerag.evaluation.tables import (
    LONG_CONTEXT_COLUMNS,
    TABLE_COLUMNS,
    markdown_table,
    summary_markdown,
)

CONFIG = {"dataset": "t", "ids": ["q0", "q1"], "methods": ["single", "flare"], "contexts": {}}


@pytest.mark.parametrize("stray", [
    row("replug", "q0", 1.0),  # another method, an id of the config
    row("single", "q9", 1.0),  # a method of the config, another id
    row("replug", "q9", 1.0),  # neither
])
def test_a_summary_counts_only_its_config_s_methods_and_examples(tmp_path, stray):
    run = Run(tmp_path)
    run.start(CONFIG)
    for r in (row("single", "q0", 1.0), row("single", "q1", 0.0), row("flare", "q0", 1.0),
              stray):
        run.append(r)
    result = run.write_summary({"dataset": "t"})
    assert (result["expected"], result["finished"], result["missing"]) == (4, 3, 1)
    assert set(result["summary"]) == {"single", "flare"}
    assert (result["summary"]["single"]["n"], result["summary"]["flare"]["n"]) == (2, 1)
    assert result["summary"]["single"]["em"] == 0.5


def summaries(long: set[str]) -> dict[str, dict]:
    """A summary of single and flare, those in LONG having read words of a context."""
    rows = [row(m, f"q{i}", float(i % 2), group="one-hop" if i else "two-hop")
            for m in ("single", "flare") for i in range(3)]
    out = summarise_methods(rows, ["single", "flare"])
    return {m: {**s, "words_read": 120} if m in long else s for m, s in out.items()}


@pytest.mark.parametrize("long", [set(), {"single"}, {"flare"}, {"single", "flare"}])
def test_summary_md_shows_the_long_context_columns_exactly_when_words_were_read(long):
    summary = summaries(long)
    columns = LONG_CONTEXT_COLUMNS if long else TABLE_COLUMNS
    result = {"expected": 6, "finished": 6, "missing": 0, "damaged_lines": 0,
              "summary": summary, "groups": {"one-hop": summary}}
    text = summary_markdown(result)
    table = markdown_table(summary, columns)
    assert text.startswith(table)
    assert text.endswith("### one-hop (n=3)\n\n" + table)
    other = markdown_table(summary, TABLE_COLUMNS if long else LONG_CONTEXT_COLUMNS)
    assert other.splitlines()[0] not in text


PASSAGES = [{"bytes": 10, "bpb": {"none": 1.0, "replug": 0.5}},
            {"bytes": 30, "bpb": {"none": 2.0, "replug": 1.0}},
            {"bytes": 20, "bpb": {"none": 1.5, "replug": 1.5}}]


@pytest.mark.parametrize("rows", [PASSAGES[:1], PASSAGES, PASSAGES[::-1]],
                         ids=["one", "all", "reversed"])
def test_bits_per_byte_reads_every_passage_in_any_order(rows):
    s = summarise_bpb(rows)
    size = sum(r["bytes"] for r in rows)
    for name in ("none", "replug"):
        assert s[name]["bpb"] == pytest.approx(sum(r["bpb"][name] * r["bytes"] for r in rows)
                                               / size)
        assert s[name]["mean_passage_bpb"] == pytest.approx(
            sum(r["bpb"][name] for r in rows) / len(rows))
    assert set(s) == {"none", "replug"} and s["none"]["p"] is None


class BarMade(Exception):
    """Raised by a stand-in progress bar: the arguments it was made with."""


def bar(*args: object, **kwargs: object) -> None:
    raise BarMade(kwargs)


def test_an_evaluation_s_progress_bar_counts_to_methods_times_examples(monkeypatch, tmp_path):
    import asyncio

    from activerag.context import FlareContext
    from activerag.evaluation import evaluate
    from activerag.evaluation.datasets import Example

    examples = [Example(f"q{i}", f"Question {i}?", ["a"]) for i in range(3)]
    runs = {"single": (None, FlareContext()), "flare": (None, FlareContext())}
    monkeypatch.setattr(evaluate, "tqdm", bar)
    started = evaluate.evaluate(Run(tmp_path), "t", runs, examples, progress=False)
    with pytest.raises(BarMade) as made:
        asyncio.run(started)
    assert made.value.args[0]["total"] == 6
    assert made.value.args[0]["disable"] is True
