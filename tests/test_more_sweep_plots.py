"""The θ sweep's plot draws each point's 95% interval as its error bar (Figure 5)."""

from activerag.evaluation.sweeps import plot

RESULT = {"dataset": "t", "n": 2, "context": {"model": "", "k": 2, "retriever": "bm25",
                                              "prompt_set": "default"}}


def summary(em: float, f1: float, rate: float) -> dict:
    return {"em": em, "em_ci": [em - 0.10, em + 0.05], "f1": f1, "f1_ci": [f1 - 0.02, f1 + 0.08],
            "retrieval_rate": rate, "n": 2}


def test_the_theta_plot_s_error_bars_span_each_point_s_interval(closed_figures, tmp_path):
    figures = closed_figures
    rows = [("theta=0.4", 0.4, summary(0.20, 0.30, 0.50)),
            ("theta=0.8", 0.8, summary(0.40, 0.50, 0.90))]
    plot("theta", rows, tmp_path / "p.png", RESULT)
    em, f1 = figures[0].axes[0].containers
    spans = []
    for bars in (em, f1):
        _, _, (vertical,) = bars.lines
        spans.append([[round(float(v), 6) for v in (a[0], a[1], b[1])]
                      for a, b in vertical.get_segments()])
    # x: the share of sentences that retrieved; from the interval's low end to its high end
    assert spans[0] == [[50.0, 10.0, 25.0], [90.0, 30.0, 45.0]]  # EM
    assert spans[1] == [[50.0, 28.0, 38.0], [90.0, 48.0, 58.0]]  # F1
