"""Bits per byte over a set of passages: total bits over total bytes (REPLUG, Table 1), with the
mean of the per-passage ratios beside it."""

import pytest

from activerag.evaluation.bpb import summarise_bpb

ROWS = [{"bytes": 100, "bpb": {"none": 1.0, "replug": 0.5}},
        {"bytes": 300, "bpb": {"none": 2.0, "replug": 2.0}}]
"""A short passage that retrieval halves, a long one it leaves alone: 100 + 600 bits without,
50 + 600 with, over 400 bytes."""


def test_bits_per_byte_is_total_bits_over_total_bytes_not_a_mean_of_passage_ratios():
    s = summarise_bpb(ROWS)
    assert s["none"]["bpb"] == pytest.approx(700 / 400)
    assert s["replug"]["bpb"] == pytest.approx(650 / 400)
    assert s["none"]["mean_passage_bpb"] == pytest.approx(1.5)
    assert s["replug"]["mean_passage_bpb"] == pytest.approx(1.25)


def test_the_interval_resamples_passages_with_their_bytes_and_p_compares_bits():
    s = summarise_bpb(ROWS)
    low, high = s["none"]["ci"]
    assert low == pytest.approx(1.0) and high == pytest.approx(2.0)  # one passage or the other
    assert 1.0 <= s["none"]["mean_passage_ci"][0] <= s["none"]["mean_passage_ci"][1] <= 2.0
    assert s["none"]["p"] is None and 0.0 <= s["replug"]["p"] <= 1.0
    same = summarise_bpb([{"bytes": 10, "bpb": {"none": 1.0, "replug": 1.0}}] * 3)
    assert same["replug"]["p"] == 1.0 and same["replug"]["bpb"] == 1.0
    with pytest.raises(ValueError, match="no passages"):
        summarise_bpb([])
