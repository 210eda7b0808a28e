"""Every field a user's dataset row may carry reaches its Example (issue #38), and a field of
the wrong shape is refused with the row named, not dropped."""

from __future__ import annotations

import json
import re

import pytest

from activerag.errors import ActiveRagError
from activerag.evaluation.datasets import Example, user_jsonl

FULL = {"id": "q7", "question": "Which?", "answers": ["A", "B"], "gold_titles": ["T1", "T2"],
        "kind": "long", "short_answers": [["a1", "a2"], ["b1"]], "group": "two-hop",
        "context": "First paragraph.\n\nSecond one.", "gold_spans": [[0, 2], [2, 4]]}


def rows(tmp_path, *given):  # type: ignore[no-untyped-def]
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in given))
    return user_jsonl(path)


def test_a_row_with_every_field_keeps_each(tmp_path):
    [ex] = rows(tmp_path, FULL)
    assert ex == Example("q7", "Which?", ["A", "B"], ["T1", "T2"], kind="long",
                         short_answers=[["a1", "a2"], ["b1"]], group="two-hop",
                         context="First paragraph.\n\nSecond one.",
                         gold_spans=[(0, 2), (2, 4)])


def test_a_row_with_only_what_is_needed_gets_the_defaults(tmp_path):
    [ex] = rows(tmp_path, {"question": "Q?", "answer": "A"})
    assert ex == Example("row-1", "Q?", ["A"])


@pytest.mark.parametrize(("field", "value", "said"), [
    ("kind", "essay", "'kind' must be one of short, yesno, long, longbench"),
    ("group", ["x"], "'group' must be a string"),
    ("context", 3, "'context' must be a string"),
    ("short_answers", "a", "'short_answers' must be a list of lists of strings"),
    ("gold_spans", [[0]], "'gold_spans' must be a list of [start, end] word pairs"),
])
def test_a_field_of_the_wrong_shape_is_refused_with_its_row(tmp_path, field, value, said):
    with pytest.raises(ActiveRagError, match=re.escape(f"mine.jsonl:1: {said}")):
        rows(tmp_path, {**FULL, field: value})


def test_a_longbench_row_keeps_every_field_and_is_scored_as_longbench(tmp_path):
    [ex] = rows(tmp_path, {"_id": "lb1", "input": "Where?", "answers": ["Gepu"],
                           "context": "Gepu is a town.", "gold_titles": ["Gepu"],
                           "gold_spans": [[0, 4]]})
    assert ex == Example("lb1", "Where?", ["Gepu"], ["Gepu"], kind="longbench",
                         context="Gepu is a town.", gold_spans=[(0, 4)])
