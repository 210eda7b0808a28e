"""LongBench-style long contexts: padding with distractors of new titles up to a length, the
"Passage i:" layout with the gold paragraphs' word spans, and reading LongBench rows."""

import json
import random

import pytest

from activerag import longctx
from activerag.errors import ActiveRagError
from activerag.evaluation.datasets import user_jsonl
from activerag.settings import shared_data

OWN = [("Ada Lovelace", "Ada wrote the first program."), ("Paris", "Paris is in France.")]
POOL = [("Paris", "Paris is a city."), ("Rome", "Rome is in Italy."),
        ("Oslo", "Oslo is in Norway."), ("Rome", "Rome has seven hills."),
        ("Bern", "Bern is in Switzerland and has a long history of bears.")]


def test_padding_adds_distractors_of_new_titles_while_the_length_allows():
    out = longctx.pad(OWN, POOL, 40, random.Random(0))
    titles = [t for t, _ in out]
    assert len(titles) == len(set(titles))  # no title twice
    assert set(dict(OWN)) <= set(titles)  # the question's own paragraphs all stay
    assert ("Paris", "Paris is a city.") not in out  # a title already there is never added
    assert sum(len(longctx.passage_text(1, t, x).split()) for t, x in out) <= 40
    assert len(out) > len(OWN)
    # the same seed gives the same context; the own paragraphs are never dropped for length
    assert out == longctx.pad(OWN, POOL, 40, random.Random(0))
    assert sorted(longctx.pad(OWN, POOL, 5, random.Random(0))) == sorted(OWN)


def test_the_layout_numbers_passages_and_records_each_gold_span():
    context, spans = longctx.layout(OWN, ["Paris"])
    assert context == ("Passage 1:\nAda Lovelace\nAda wrote the first program.\n\n"
                       "Passage 2:\nParis\nParis is in France.")
    words = context.split()
    assert spans == [(9, 16)] and len(words) == 16
    assert " ".join(words[spans[0][0]:spans[0][1]]) == "Passage 2: Paris Paris is in France."


def test_longbench_rows_are_read_with_their_context_and_gold_spans(tmp_path):
    path = tmp_path / "lb.jsonl"
    rows = [{"_id": "q1", "input": "Who wrote the first program?", "context": "Passage 1: ...",
             "answers": ["Ada Lovelace"], "gold_spans": [[0, 3]]},
            {"question": "Plain row?", "answers": ["yes"]}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    [lb, plain] = user_jsonl(path)
    assert (lb.id, lb.question, lb.answers, lb.context, lb.gold_spans) == (
        "q1", "Who wrote the first program?", ["Ada Lovelace"], "Passage 1: ...", [(0, 3)])
    assert plain.context == "" and plain.gold_spans == []


def test_a_longbench_row_without_its_context_is_refused(tmp_path):
    path = tmp_path / "lb.jsonl"
    path.write_text(json.dumps({"input": "Who?", "answers": ["x"]}))
    with pytest.raises(ActiveRagError, match=r"lb.jsonl:1 is a LongBench row .* without a "
                                             "'context'"):
        user_jsonl(path)


def test_a_non_positive_length_is_refused():
    with pytest.raises(ActiveRagError, match="positive number of words"):
        longctx.build("hotpotqa", 0, pool=POOL)


@pytest.mark.parametrize("source", longctx.SOURCES)
def test_built_rows_hold_their_gold_paragraphs_at_the_recorded_spans(source):
    try:
        shared_data()
    except ActiveRagError:
        pytest.skip("../shared/data not found; set ACTIVERAG_DATA to run the data tests")
    pool = longctx.union_corpus()
    rows = longctx.build(source, 1500, n=5, pool=pool)
    assert len(rows) == 5 and len(pool) == 32140
    for r in rows:
        words = r["context"].split()
        assert r["length"] == len(words) and 1000 < r["length"] <= 1500
        assert len(r["gold_spans"]) == len(r["gold_titles"]) >= 2
        for (a, b), title in zip(r["gold_spans"], sorted(r["gold_titles"],
                                 key=lambda t: r["context"].index(f"\n{t}\n")), strict=True):
            assert words[a] == "Passage" and " ".join(words[a + 2:b]).startswith(title)
    assert rows == longctx.build(source, 1500, n=5, pool=pool)  # seeded
