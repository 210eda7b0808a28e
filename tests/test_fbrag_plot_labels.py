"""results/fbrag_report.label_spots: the F1-latency plot's labels cover neither another point
nor another label (stop 48's plot wrote long_context over fb_rag_fb)."""

import importlib.util
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "results" / "fbrag_report.py"


@pytest.fixture()
def report(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # its merging module beside it
    spec = importlib.util.spec_from_file_location("fbrag_report_under_test", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_lone_point_is_labelled_above_right(report):
    assert report.label_spots([(0.5, 0.5)], ["op_rag"]) == [(4, 4)]


def covers(report, point, spot, label, other) -> bool:
    """Whether LABEL, put at SPOT from POINT, covers the point OTHER."""
    x0 = point[0] if spot[0] > 0 else point[0] - len(label) * report.CHAR
    y0 = point[1] if spot[1] > 0 else point[1] - 2 * report.HALF_HEIGHT
    return (x0 <= other[0] <= x0 + len(label) * report.CHAR
            and y0 <= other[1] <= y0 + 2 * report.HALF_HEIGHT)


def test_close_points_get_labels_that_cover_no_other_point(report):
    # stop 48's HotpotQA panel: long_context just left of and below fb_rag_fb, fb_rag to the right
    points = [(0.62, 0.55), (0.65, 0.59), (0.72, 0.50)]
    labels = ["long_context", "fb_rag_fb", "fb_rag"]
    spots = report.label_spots(points, labels)
    assert spots[0] != (4, 4)  # above right, it would cover fb_rag_fb
    for i, (point, spot, label) in enumerate(zip(points, spots, labels, strict=True)):
        assert not any(covers(report, point, spot, label, other)
                       for j, other in enumerate(points) if j != i), label
    # two far-apart points keep the first spot each, whatever their order in the list
    assert report.label_spots([(0.9, 0.1), (0.1, 0.9)], ["a", "b"]) == [(4, 4), (4, 4)]


def test_with_no_free_spot_the_roomiest_is_taken(report):
    crowd = [(0.5 + dx, 0.5 + dy) for dx in (-0.01, 0, 0.01) for dy in (-0.01, 0, 0.01)]
    spots = report.label_spots(crowd, ["a long label"] * len(crowd))
    assert len(spots) == 9 and set(spots) <= set(report.LABEL_SPOTS)
