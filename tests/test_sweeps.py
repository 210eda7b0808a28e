"""The trigger sweep's Pareto front, table and plot, from literal summaries."""

from activerag.evaluation.sweeps import SWEEPS, pareto, plot, table
from activerag.trigger_names import TRIGGERS


def test_pareto_keeps_points_no_other_beats_cheapest_first():
    points = [("a", 1.0, 0.10), ("b", 2.0, 0.30), ("c", 3.0, 0.20), ("d", 0.5, 0.05),
              ("e", 2.0, 0.25), ("f", 4.0, 0.40)]
    assert pareto(points) == ["d", "a", "b", "f"]


def test_pareto_ties_on_both_axes_keep_both_and_cost_ties_keep_the_better():
    assert pareto([("x", 1.0, 0.2), ("y", 1.0, 0.2)]) == ["x", "y"]
    assert pareto([("x", 1.0, 0.2), ("y", 1.0, 0.3)]) == ["y"]
    assert pareto([("x", 1.0, 0.3), ("y", 2.0, 0.3)]) == ["x"]


def test_trigger_sweep_covers_every_shipped_trigger():
    used = {overrides["trigger"] for _, _, _, overrides in SWEEPS["trigger"]}
    assert used == {"min_prob", "mean_surprisal", "entropy", "every_n", "never", "always"}
    assert used <= set(TRIGGERS)


def summary(f1: float, rate: float, calls: float) -> dict:
    return {"em": f1, "f1": f1, "f1_ci": [f1 - 0.05, f1 + 0.05], "precision": f1, "recall": f1,
            "retrieval_rate": rate, "retrievals_per_question": 1.0,
            "retrievals_per_100_tokens": 1.0, "lm_calls_per_question": calls,
            "generated_tokens": 10, "seconds_per_question": 1.0, "n": 2}


RESULT = {"dataset": "t", "n": 2, "context": {"model": "", "k": 2, "retriever": "bm25",
                                              "prompt_set": "default"}}
ROWS = [("never", 0, summary(0.10, 0.0, 2.0)), ("min_prob θ=0.4", 0.4, summary(0.20, 0.5, 4.0)),
        ("min_prob θ=0.8", 0.8, summary(0.15, 0.9, 6.0)), ("always", 1, summary(0.30, 1.0, 7.0))]


def test_trigger_table_names_the_fronts():
    text = table("trigger", ROWS, RESULT)
    assert "| min_prob θ=0.4 |" in text
    assert "Pareto front of F1 against retrieval rate: never, min_prob θ=0.4, always" in text
    assert "Pareto front of F1 against LM calls per question: never, min_prob θ=0.4, always" in text


def test_trigger_plot_writes_a_png(tmp_path):
    plot("trigger", ROWS, tmp_path / "t.png", RESULT)
    png = (tmp_path / "t.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000


def test_app_sweep_puts_the_app_between_its_parts_and_plots_it(tmp_path):
    labels = [label for label, _, _, _ in SWEEPS["app"]]
    assert labels[:2] == ["single", "flare"] and all(lb.startswith("app ") for lb in labels[2:])
    rows = [("single", 0, {**summary(0.10, 0.0, 1.0), "flare_share": 0.0}),
            ("flare", 1, {**summary(0.20, 0.9, 6.0), "flare_share": 1.0}),
            ("app min_confidence=0.5", 0.5, {**summary(0.18, 0.5, 3.0), "flare_share": 0.4})]
    text = table("app", rows, RESULT)
    assert "| flare_share |" in text.replace("| f1 | flare_share |", "| flare_share |")
    assert "Pareto front of F1 against LM calls per question: single, app min_confidence=0.5, " \
           "flare" in text
    plot("app", rows, tmp_path / "a.png", RESULT)
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_sweep_runs_the_variants_named_in_the_order_named():
    from activerag.evaluation.sweeps import chosen

    picked = chosen("beta", ["beta=0.6", "beta=0.0", "beta=0.4 word+x"])
    assert [(label, x, overrides) for label, x, _, overrides in picked] == [
        ("beta=0.6", 0.6, {"beta": 0.6}), ("beta=0.0", 0.0, {"beta": 0.0}),
        ("beta=0.4 word+x", 0.4, {"beta": 0.4, "mask_unit": "word",
                                  "keep_question_words": True})]
    assert chosen("theta", None) == SWEEPS["theta"]


def test_a_beta_sweep_of_masking_options_alone_plots_without_the_per_token_curve(tmp_path):
    """`--variants "beta=0.2 word,beta=0.6 word"`: no per-token variant to start the curve."""
    rows = [("beta=0.2 word", 0.2, summary(0.20, 0.5, 4.0)),
            ("beta=0.6 word", 0.6, summary(0.25, 0.5, 4.0))]
    plot("beta", rows, tmp_path / "b.png", RESULT)
    assert (tmp_path / "b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def drawn(figures, name, rows, tmp_path):
    """The figure `plot` draws, kept from being closed (`closed_figures`)."""
    plot(name, rows, tmp_path / "p.png", RESULT)
    return figures[0]


def test_the_theta_plot_is_em_against_retrieval_rate_with_shared_labels(closed_figures, tmp_path):
    """Figure 5: x is the share of sentences that retrieved, y EM and F1 in percent; points
    within 5 points of retrieval at the same EM share one θ label, in the sweep's order."""
    rows = [("theta=0.9", 0.9, {**summary(0.35, 0.855, 6.0), "em": 0.30}),
            ("theta=0.4", 0.4, {**summary(0.25, 0.50, 4.0), "em": 0.20}),
            ("theta=0.3", 0.3, {**summary(0.25, 0.50, 4.0), "em": 0.20}),
            ("theta=0.2", 0.2, {**summary(0.25, 0.53, 4.0), "em": 0.20})]
    ax = drawn(closed_figures, "theta", rows, tmp_path).axes[0]
    em, f1 = (bars.lines[0] for bars in ax.containers)
    assert list(em.get_xdata()) == [85.5, 50.0, 50.0, 53.0] == list(f1.get_xdata())
    assert list(em.get_ydata()) == [30.0, 20.0, 20.0, 20.0]
    assert list(f1.get_ydata()) == [35.0, 25.0, 25.0, 25.0]
    notes = {t.get_text(): (t.xy, t.get_ha()) for t in ax.texts}
    # tied points keep the sweep's order; a point right of 85% is labelled to its left
    assert notes == {"θ=0.4,0.3,0.2": ((50.0, 20.0), "center"),
                     "θ=0.9": ((85.5, 30.0), "right")}
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "EM (95% interval)", "F1 (95% interval)"]


def test_a_cost_plot_puts_a_label_near_the_last_below_its_point(closed_figures, tmp_path):
    rows = [("never", 0, summary(0.10, 0.0, 2.0)),
            ("min_prob θ=0.4", 0.4, summary(0.20, 0.50, 4.0)),
            ("min_prob θ=0.5", 0.5, summary(0.25, 0.52, 4.1))]
    ax = drawn(closed_figures, "trigger", rows, tmp_path).axes[0]
    offsets = {t.get_text(): (t.xyann, t.get_fontsize()) for t in ax.texts}
    assert offsets == {"θ=0.4": ((4, 4), 7.0), "θ=0.5": ((4, -11), 7.0)}
