"""results/sign_flip.py rewrites a committed table's p cells from its per-question scores (issue
#58), and leaves a cell it cannot pair as it was, saying why."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("sign_flip", ROOT / "results" / "sign_flip.py")
sign_flip = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sign_flip)

TABLE = """### a table; p: paired bootstrap against a

| method | n | em | p vs a (em / f1) |
|---|---|---|---|
| a | 4 | 0.000 | - |
| b | 4 | 0.750 | 0.010 / 0.020 |
| c | 5 | 0.000 | 0.500 / 0.500 |
"""
SCORES = {"fields": ["em", "f1"], "methods": {
    "a": {f"q{i}": [0, 0] for i in range(4)},
    "b": {"q0": [1, 1], "q1": [1, 1], "q2": [1, 0.5], "q3": [0, 0]},
    "c": {f"q{i}": [0, 0] for i in range(4)}}}


def test_a_cell_it_can_pair_is_the_exact_sign_flip_p():
    text, records = sign_flip.recompute(TABLE, SCORES, "t")
    # EM: three questions differ, all one way: 2 of 8 sign sets; F1: 1, 1, 0.5 likewise
    assert "| b | 4 | 0.750 | 0.250 / 0.250 |" in text
    b = next(r for r in records if r["method"] == "b")
    assert (b["old"], b["new"], sign_flip.crossed(b)) == ("0.010 / 0.020", "0.250 / 0.250",
                                                          ["em", "f1"])


def test_a_row_whose_n_does_not_match_its_pairs_is_left_with_the_reason():
    text, records = sign_flip.recompute(TABLE, SCORES, "t")
    assert "| c | 5 | 0.000 | 0.500 / 0.500 |" in text
    c = next(r for r in records if r["method"] == "c")
    assert "new" not in c and c["why"] == "4 paired questions, the row says n=5"
    assert "Left as they were" in sign_flip.report(records)


def test_a_second_run_keeps_the_first_run_s_earlier_p():
    text, records = sign_flip.recompute(TABLE, SCORES, "t")
    first = sign_flip.report(records)
    _, again = sign_flip.recompute(text, SCORES, "t")  # the table now holds sign-flip cells
    kept = sign_flip.earlier(first)
    assert kept[("t", "all", "b", "a")] == "0.010 / 0.020"
    for r in again:
        r["old"] = kept.get(("t", r["section"], r["method"], r["against"]), r["old"])
    assert sign_flip.report(again) == first
