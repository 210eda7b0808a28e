"""Every sweep's plot draws its data as it says (issue #38), generated over SWEEPS from literal
summaries: each point's or bar's error bar spans its 95% interval with caps, the EM and F1 bars
of a variant sit side by side about its tick, the β modes' small shifts keep each point at its
β, each cost plot is titled by its sweep, and each kind of picture keeps its pixel size
(120 dpi; 6 x 4 in, the cost plots' two panels 11 x 4.5 in: a pinned table, cosmetic, to be
rewritten with the plot's look)."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from matplotlib.container import BarContainer, ErrorbarContainer

from activerag.evaluation.sweeps import COSTS, SWEEPS, plot

RESULT = {"dataset": "t", "n": 4, "context": {"model": "", "k": 2, "retriever": "bm25",
                                              "prompt_set": "default"}}
PIXELS = {"cost": (1320, 540), "one": (720, 480)}
"""Each kind of sweep picture's size in pixels: COSTS' two panels, else one."""
TITLES = {"trigger": "retrieval triggers", "app": "adaptive app"}
"""What each cost plot's title says it compares."""


def summary(i: int) -> dict[str, Any]:
    em, f1 = 0.2 + 0.05 * i, 0.3 + 0.04 * i
    return {"em": em, "em_ci": [em - 0.1, em + 0.05], "f1": f1, "f1_ci": [f1 - 0.02, f1 + 0.07],
            "retrieval_rate": 0.1 + 0.2 * i, "lm_calls_per_question": 1.0 + i,
            "generated_tokens": 100 + 40 * i, "n": 4}


def rows(name: str) -> list[tuple[str, float, dict[str, Any]]]:
    return [(label, x, summary(i)) for i, (label, x, *_) in enumerate(SWEEPS[name])]


def drawn(figures: list[Any], tmp_path, name: str) -> Any:
    plot(name, rows(name), tmp_path / f"{name}.png", RESULT)
    (fig,) = figures  # one picture, closed once
    return fig


def error_bars(fig: Any) -> list[ErrorbarContainer]:
    out = []
    for ax in fig.axes:
        for c in ax.containers:
            if isinstance(c, BarContainer):
                assert c.errorbar is not None
                out.append(c.errorbar)
            elif isinstance(c, ErrorbarContainer):
                out.append(c)
    return out


@pytest.mark.parametrize("name", list(SWEEPS))
def test_each_plot_s_error_bars_span_the_intervals_with_caps(closed_figures, tmp_path, name):
    fig = drawn(closed_figures, tmp_path, name)
    bars = error_bars(fig)
    assert bars
    lows = {round(v, 6) for _, _, s in rows(name) for m in ("em", "f1")
            for v in (s[f"{m}_ci"][0] * 100, s[f"{m}_ci"][1] * 100)}
    for eb in bars:
        _, caps, (vertical,) = eb.lines
        assert len(caps) == 2, f"{name}: an interval drawn without its caps"
        for (_, a), (_, b) in vertical.get_segments():
            assert {round(float(a), 6), round(float(b), 6)} <= lows, name


@pytest.mark.parametrize("name", [n for n in SWEEPS if n not in (*COSTS, "theta", "beta")])
def test_a_variant_s_em_and_f1_bars_sit_side_by_side_about_its_tick(closed_figures, tmp_path,
                                                                     name):
    ax = drawn(closed_figures, tmp_path, name).axes[0]
    em, f1 = (c for c in ax.containers if isinstance(c, BarContainer))
    ticks = list(ax.get_xticks())
    assert [t.get_text() for t in ax.get_xticklabels()] == [r[0] for r in rows(name)]
    for tick, a, b in zip(ticks, em.patches, f1.patches, strict=True):
        centres = (a.get_x() + a.get_width() / 2, b.get_x() + b.get_width() / 2)
        assert centres[0] < tick < centres[1]
        assert sum(centres) / 2 == pytest.approx(tick)
        assert a.get_x() + a.get_width() == pytest.approx(b.get_x())  # touching, no overlap
    for (_, _, s), a, b in zip(rows(name), em.patches, f1.patches, strict=True):
        assert (a.get_height(), b.get_height()) == pytest.approx((s["em"] * 100, s["f1"] * 100))


def test_the_beta_modes_are_shifted_apart_but_each_point_stays_at_its_beta(closed_figures,
                                                                           tmp_path):
    ax = drawn(closed_figures, tmp_path, "beta").axes[0]
    betas = {x for _, x, _ in rows("beta")}
    shifts = []
    for eb in error_bars(ax.figure):
        xs = list(eb.lines[0].get_xdata())
        shift = {round(x - min(betas, key=lambda b, x=x: abs(b - x)), 6) for x in xs}
        assert len(shift) == 1 and abs(next(iter(shift))) <= 0.01, shift
        shifts.append(next(iter(shift)))
    assert len(shifts) >= 2 and len(set(shifts)) == len(shifts)  # every mode apart
    assert min(abs(s) for s in shifts) == 0.0  # one mode (the paper's) exactly at its β


@pytest.mark.parametrize("name", list(COSTS))
def test_each_cost_plot_is_titled_by_what_it_compares(closed_figures, tmp_path, name):
    assert set(TITLES) == set(COSTS)
    title = drawn(closed_figures, tmp_path, name)._suptitle.get_text()
    assert title.startswith(TITLES[name]) and title.endswith("t (n=4)")
    assert not any(other in title for key, other in TITLES.items() if key != name)


@pytest.mark.parametrize("name", list(SWEEPS))
def test_each_kind_of_picture_keeps_its_pixel_size(tmp_path, name):
    path = tmp_path / f"{name}.png"
    plot(name, rows(name), path, RESULT)
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == PIXELS["cost" if name in COSTS else "one"]
