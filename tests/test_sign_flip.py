"""The paired sign-flip test (activerag/evaluation/stats.py, issue #58): exact for small n,
Monte Carlo above, on literal scores and hypothesis-drawn ones."""

from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from activerag.evaluation.stats import paired_permutation_p


def binomial_two_sided(k: int, m: int) -> float:
    """The exact two-sided sign test for K of M discordant pairs one way."""
    tail = sum(comb(m, i) for i in range(max(k, m - k), m + 1)) / 2 ** m
    return min(1.0, 2 * tail)


def test_nine_of_nine_one_way_is_the_exact_sign_test():
    flare = [1.0] * 9 + [0.0] * 15
    single = [0.0] * 24
    assert paired_permutation_p(flare, single) == pytest.approx(2 / 512)
    assert paired_permutation_p(single, flare) == pytest.approx(2 / 512)


@pytest.mark.parametrize("k, m", [(7, 10), (5, 10), (10, 12), (3, 4), (1, 1)])
def test_win_loss_scores_give_the_binomial_p(k, m):
    a = [1.0] * k + [0.0] * (m - k) + [0.5] * 3  # ties: no difference, left out
    b = [0.0] * k + [1.0] * (m - k) + [0.5] * 3
    assert paired_permutation_p(a, b) == pytest.approx(binomial_two_sided(k, m))


def test_identical_empty_and_unequal_samples():
    assert paired_permutation_p([0.3, 0.4], [0.3, 0.4]) == 1.0
    assert paired_permutation_p([], []) == 1.0
    assert paired_permutation_p([1.0, 0.0], [0.0, 1.0]) == 1.0  # differences cancel
    with pytest.raises(ValueError, match="equal lengths"):
        paired_permutation_p([1.0], [1.0, 0.0])


def test_above_the_exact_limit_it_samples_and_never_says_zero():
    a, b = [1.0] * 30, [0.0] * 30
    p = paired_permutation_p(a, b, n_perm=2000)
    assert p == pytest.approx(1 / 2001)  # every random assignment is smaller than all-one-way
    exact = paired_permutation_p([0.6, 0.2, -0.1, 0.4] * 3, [0.0] * 12, exact_up_to=20)
    sampled = paired_permutation_p([0.6, 0.2, -0.1, 0.4] * 3, [0.0] * 12, exact_up_to=0,
                                   n_perm=20000)
    assert abs(exact - sampled) < 0.02


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.25, 0.5, 1.0]),
                          st.sampled_from([0.0, 0.25, 0.5, 1.0])), max_size=14))
def test_the_p_value_is_symmetric_and_a_probability(pairs):
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    p = paired_permutation_p(a, b)
    assert 0.0 < p <= 1.0
    assert p == pytest.approx(paired_permutation_p(b, a))
    assert p == pytest.approx(paired_permutation_p([x + 1 for x in a], [y + 1 for y in b]))


def test_a_sum_of_one_is_not_mistaken_for_no_difference():
    assert paired_permutation_p([0.5, 0.5], [0.0, 0.0]) == pytest.approx(0.5)


def test_at_the_exact_limit_it_still_counts_every_assignment():
    flare, single = [1.0] * 9, [0.0] * 9
    assert paired_permutation_p(flare, single, exact_up_to=9) == 2 / 512


MODERATE = [1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 0.5, -0.5, 1.0, -1.0, 0.5, 1.0, -1.0, 1.0, 0.5,
            -0.5]
"""16 differences whose exact p is moderate (neither near 0 nor 1), with many tied sums."""


def test_the_sampled_p_follows_the_exact_one_over_several_chunks():
    zeros = [0.0] * len(MODERATE)
    exact = paired_permutation_p(MODERATE, zeros)
    assert 0.1 < exact < 0.9
    sampled = paired_permutation_p(MODERATE, zeros, exact_up_to=0, n_perm=30000)
    assert sampled == pytest.approx(exact, abs=0.015)
    again = paired_permutation_p(MODERATE, zeros, exact_up_to=0, n_perm=30000)
    assert again == sampled  # seeded: the same draws
    assert paired_permutation_p([1.0] * 30, [0.0] * 30) == 1 / 10001  # the default n_perm


def test_the_number_of_random_assignments_is_checked():
    assert paired_permutation_p(MODERATE, [0.0] * 16, exact_up_to=0, n_perm=1) in (0.5, 1.0)
    with pytest.raises(ValueError, match="n_perm must be at least 1, got 0"):
        paired_permutation_p(MODERATE, [0.0] * 16, exact_up_to=0, n_perm=0)


def test_it_draws_exactly_n_perm_sign_sets_whatever_the_chunks():
    # 21 differences of ±1 with an odd sum: every sign set reaches |sum| >= 1, so p counts the
    # draws themselves, (1 + draws) / (1 + n_perm); 1500 is not a multiple of the chunk
    a, b = [1.0] * 11 + [0.0] * 10, [0.0] * 11 + [1.0] * 10
    assert paired_permutation_p(a, b, n_perm=1500) == 1.0
