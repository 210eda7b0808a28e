"""Every element of every sweep's picture, pinned (issue #38): what a reader looks at is held as
a whole, not only the few properties a hand-written test thought of. Each sweep in SWEEPS is
drawn from literal summaries and read back as facts: the figure's size, each panel's title,
labels, limits, ticks and grid, each line's points, marker, style and colour, each bar, each
error bar's segments and caps, each annotation, and the legend. They are compared with
tests/golden/sweep_plots.json.

A deliberate change of the plots' look rewrites the file:

    ACTIVERAG_REWRITE_GOLDEN=1 python -m pytest tests/test_plot_facts.py

and the diff of that JSON is then the change to review. Numbers are rounded to 4 places, so
that only a real change shows."""

from __future__ import annotations

import json
from typing import Any

import golden_files
import pytest
from matplotlib.colors import to_hex
from test_contract_sweep_plots import drawn

from activerag.evaluation.sweeps import SWEEPS

GOLDEN = "sweep_plots.json"


def r(value: Any) -> Any:
    """VALUE with its numbers rounded to 4 places, arrays and tuples as lists."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [r(v) for v in value]
    if isinstance(value, float):
        return round(value, 4) + 0.0
    return value


def line_facts(line: Any) -> dict[str, Any]:
    return {"x": r(line.get_xdata()), "y": r(line.get_ydata()), "label": line.get_label(),
            "marker": str(line.get_marker()), "style": line.get_linestyle(),
            "drawstyle": line.get_drawstyle(), "colour": to_hex(line.get_color()),
            "width": r(line.get_linewidth()), "size": r(line.get_markersize()),
            "alpha": line.get_alpha(), "visible": line.get_visible()}


def axes_facts(ax: Any) -> dict[str, Any]:
    grid = ax.get_xgridlines() + ax.get_ygridlines()
    legend = ax.get_legend()
    return {
        "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
        "xlim": r(ax.get_xlim()), "ylim": r(ax.get_ylim()),
        "xticks": r(ax.get_xticks()), "xticklabels": [t.get_text() for t in ax.get_xticklabels()],
        "grid": sorted({(g.get_visible(), g.get_alpha()) for g in grid}, key=str),
        "lines": [line_facts(line) for line in ax.get_lines()],
        "bars": [{"x": r(p.get_x()), "width": r(p.get_width()), "height": r(p.get_height()),
                  "colour": to_hex(p.get_facecolor())} for p in ax.patches],
        "segments": [r(c.get_segments()) for c in ax.collections if hasattr(c, "get_segments")],
        "containers": [{"kind": type(c).__name__, "label": c.get_label(), "size": len(c)}
                       for c in ax.containers],
        "texts": [{"text": t.get_text(), "xy": r(getattr(t, "xy", t.get_position())),
                   "at": r(t.get_position()), "size": r(t.get_fontsize()),
                   "coords": str(getattr(t, "anncoords", "")), "ha": t.get_ha()}
                  for t in ax.texts],
        "legend": None if legend is None else {
            "labels": [t.get_text() for t in legend.get_texts()], "loc": legend._loc,
            "size": r(legend.get_texts()[0].get_fontsize()) if legend.get_texts() else None},
    }


def figure_facts(fig: Any) -> dict[str, Any]:
    return {"inches": r(fig.get_size_inches()), "dpi": r(fig.dpi),
            "title": fig._suptitle.get_text() if fig._suptitle else None,
            "shared_y": [len(ax.get_shared_y_axes().get_siblings(ax)) for ax in fig.axes],
            "axes": [axes_facts(ax) for ax in fig.axes]}


@pytest.mark.parametrize("name", list(SWEEPS))
def test_each_sweep_s_picture_is_the_pinned_one(closed_figures, tmp_path, name):
    # the facts go through JSON both ways, as the golden file does (tuples become lists)
    facts = json.loads(json.dumps(figure_facts(drawn(closed_figures, tmp_path, name))))
    pinned = golden_files.pinned(GOLDEN, facts, key=name)
    assert pinned is not None, f"{name}: no pinned picture; rewrite {GOLDEN} (module doc)"
    for key in sorted(set(pinned) | set(facts)):
        if key == "axes":
            continue
        assert facts.get(key) == pinned.get(key), f"{name}: the figure's {key} changed"
    assert len(facts["axes"]) == len(pinned["axes"]), f"{name}: the number of panels changed"
    for i, (now, was) in enumerate(zip(facts["axes"], pinned["axes"], strict=True)):
        for key in sorted(set(now) | set(was)):
            assert now.get(key) == was.get(key), f"{name}: panel {i}'s {key} changed"


def test_the_golden_file_pins_every_sweep_and_no_other():
    assert set(json.loads((golden_files.FOLDER / GOLDEN).read_text())) == set(SWEEPS)
