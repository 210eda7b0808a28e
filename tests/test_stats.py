"""Bootstrap intervals and paired tests, on small samples whose answer is known by hand."""

import pytest

from activerag.evaluation.stats import bootstrap_ci, paired_permutation_p


def test_constant_values_give_a_zero_width_interval():
    assert bootstrap_ci([0.5] * 7) == (0.5, 0.5)


def test_interval_of_a_small_sample():
    # Resampled means of [0, 0, 0, 1] take 0, .25, .5, .75, 1 with probability
    # .316, .422, .211, .047, .004: the 2.5% point is 0 and the 97.5% point is .75.
    assert bootstrap_ci([0, 0, 0, 1]) == (0.0, 0.75)
    # Means of [0, 1] are 0, .5, 1 with probability 1/4, 1/2, 1/4.
    assert bootstrap_ci([0, 1]) == (0.0, 1.0)
    assert bootstrap_ci([0, 1], level=0.4) == (0.5, 0.5)


def test_bootstrap_is_reproducible_with_a_seed():
    values = [0.1, 0.9, 0.4, 0.4, 0.0, 1.0, 0.7, 0.3]
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)
    assert bootstrap_ci(values, seed=3) != bootstrap_ci(values, seed=4)
    # above 20 differing pairs the sign-flip test samples: its seed fixes it too
    a, b = [1, 0, 1] * 9, [0, 1, 0] * 9
    assert paired_permutation_p(a, b, n_perm=200, seed=3) == paired_permutation_p(
        a, b, n_perm=200, seed=3)


def test_a_clearly_different_pair_gives_a_small_p():
    a = [1.0] * 18 + [0.0] * 2
    b = [0.0] * 20
    assert paired_permutation_p(a, b) == paired_permutation_p(b, a) == 2 / 2 ** 18


def test_the_test_is_paired():
    # Unpaired, these means (0.45 and 0.55) would be indistinguishable; paired, b beats a
    # by exactly 0.1 on every example: only the two all-one-way sign sets are as far out.
    a = [i / 10 for i in range(10)]
    b = [x + 0.1 for x in a]
    assert paired_permutation_p(a, b) == pytest.approx(2 / 2 ** 10)


def test_one_differing_question_tells_nothing():
    assert paired_permutation_p([1, 0], [0, 0]) == 1.0


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="equal lengths"):
        paired_permutation_p([1, 0], [1])
    with pytest.raises(ValueError, match="non-empty"):
        bootstrap_ci([])
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci([1, 2], level=95)
