"""The paper's ablations as sweeps, each a Markdown table and a PNG plot.

theta: θ from 0 to 1, EM against the retrieval rate (Figure 5); beta: β over 0/0.2/0.4/0.6
(Table 5) with per-token masking, and with whole-word masking, with and without the
question's words kept; next_previous: next vs previous sentence, retrieving every sentence
(Table 3);
window: previous-window queries of 16/32/48/all tokens (Table 4);
trigger: every registered trigger over thresholds chosen before the run (nodes/triggers.py), F1
against the retrieval rate and against LM calls, with the Pareto front marked; app: the adaptive
app (graphs/app.py) over its min_confidence against always-single and always-FLARE.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from activerag.context import FlareContext
from activerag.errors import SettingError
from activerag.evaluation.datasets import Example
from activerag.evaluation.evaluate import Run, evaluate
from activerag.evaluation.tables import markdown_table, shortfall
from activerag.graphs.registry import method

# The β sweep's masking modes beyond the paper's per-token masking (label -> settings).
MASKINGS: dict[str, dict[str, Any]] = {
    "word": {"mask_unit": "word"},
    "word+x": {"mask_unit": "word", "keep_question_words": True},
}
MASK_NAMES = {"token": "per-token masking (the paper)", "word": "whole-word masking",
              "word+x": "whole words, question's words kept"}
# sweep -> [(label, x value, method, context overrides)]
SWEEPS: dict[str, list[tuple[str, float, str, dict[str, Any]]]] = {
    "theta": [(f"theta={t}", t, "flare", {"theta": t}) for t in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)],
    "beta": [
        *[(f"beta={b}", b, "flare", {"beta": b}) for b in (0.0, 0.2, 0.4, 0.6)],
        *[(f"beta={b} {label}", b, "flare", {"beta": b, **masking})
          for label, masking in MASKINGS.items() for b in (0.2, 0.4, 0.6)],
    ],
    "next_previous": [("previous", 0, "previous_sentence", {}),
                      ("next", 1, "next_sentence", {})],
    "window": [(f"query={n if n > 0 else 'all'}", n, "previous_window", {"query_tokens": n})
               for n in (16, 32, 48, -1)],
    "trigger": [
        # FLARE's own trigger and θ first: the paired tests compare every variant with it
        *[(f"min_prob θ={t}", t, "flare", {"trigger": "min_prob", "theta": t})
          for t in (0.8, 0.4, 0.2)],
        *[(f"mean_surprisal θ={t}", t, "flare", {"trigger": "mean_surprisal", "theta": t})
          for t in (0.6, 0.8, 0.9)],
        *[(f"entropy θ={t}", t, "flare", {"trigger": "entropy", "theta": t})
          for t in (0.3, 0.5, 0.7)],
        *[(f"every_n n={n}", n, "flare", {"trigger": "every_n", "trigger_n": n})
          for n in (16, 32)],
        ("never", 0, "flare", {"trigger": "never"}),
        ("always", 1, "flare", {"trigger": "always"}),
    ],
    "app": [
        ("single", 0, "single", {}),
        ("flare", 1, "flare", {}),
        *[(f"app min_confidence={c}", c, "app", {"min_confidence": c})
          for c in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)],
    ],
}
COLUMNS = ("em", "f1", "precision", "recall", "retrieval_rate", "retrievals_per_question",
           "retrievals_per_100_tokens", "lm_calls_per_question", "generated_tokens",
           "seconds_per_question")
APP_COLUMNS = ("em", "f1", "flare_share", "lm_calls_per_question", "retrievals_per_question",
               "generated_tokens", "seconds_per_question")
# sweep -> the costs its plot and Pareto fronts put F1 against: (key, name, axis label, scale)
COSTS: dict[str, list[tuple[str, str, str, float]]] = {
    "trigger": [("retrieval_rate", "retrieval rate", "sentences that retrieved (%)", 100),
                ("lm_calls_per_question", "LM calls per question", "LM calls per question", 1)],
    "app": [("lm_calls_per_question", "LM calls per question", "LM calls per question", 1),
            ("generated_tokens", "tokens generated", "tokens generated (all questions)", 1)],
}


Rows = list[tuple[str, float, dict[str, Any]]]
"""A sweep's variants: (label, x, summary)."""


def chosen(name: str, only: list[str] | None) -> list[tuple[str, float, str, dict[str, Any]]]:
    """The variants of sweep NAME that ONLY names (labels as its table writes them), in ONLY's
    order, so that the first is the one the table's p are against; all of them in order when
    ONLY is None. A label the sweep does not have is refused with the labels it has."""
    variants = SWEEPS[name]
    if only is None:
        return variants
    by_label = {v[0]: v for v in variants}
    unknown = [label for label in only if label not in by_label]
    if unknown or not only or len(set(only)) < len(only):
        what = (f"has no variant {', '.join(repr(u) for u in unknown)}" if unknown
                else "needs each variant once" if only else "needs at least one variant")
        raise SettingError(f"the {name} sweep {what}; its variants: "
                           f"{', '.join(by_label)} (--variants takes them comma-separated)")
    return [by_label[label] for label in only]


async def run_sweep(name: str, folder: Path, dataset: str, examples: list[Example],
                    context: FlareContext, concurrency: int = 4,
                    only: list[str] | None = None) -> dict[str, Any]:
    """Run sweep NAME (or the variants ONLY names, in that order: see chosen) into FOLDER
    (resumable) and write its table and plot there."""
    variants = chosen(name, only)
    runs = {}
    for label, _, method_name, overrides in variants:
        graph, ctx = method(method_name, context)
        runs[label] = (graph, replace(ctx, **overrides))
    result = await evaluate(Run(folder), dataset, runs, examples, concurrency,
                            metrics_url=context.base_url)
    rows = [(label, x, result["summary"][label]) for label, x, _, _ in variants]
    (folder / f"{name}.md").write_text(table(name, rows, result))
    plot(name, rows, folder / f"{name}.png", result)
    return result


def table(name: str, rows: Rows, result: dict[str, Any]) -> str:
    """A Markdown table of one sweep (metrics with 95% intervals), with what it was run on."""
    ctx = result["context"]
    out = [f"### {name} sweep: {result['dataset']}, n={result['n']}, model "
           f"{ctx['model'] or 'served default'}, k={ctx['k']}, retriever {ctx['retriever']}, "
           f"prompts {ctx['prompt_set']}", ""]
    warning = shortfall(result)
    if warning:
        out += [f"**{warning}**", ""]
    summary = {label: s for label, _, s in rows}
    columns = APP_COLUMNS if name == "app" else COLUMNS
    text = "\n".join(out) + "\n" + markdown_table(summary, columns, "variant")
    for cost, what, _, _ in COSTS.get(name, []):
        front = pareto([(label, s[cost], s["f1"]) for label, _, s in rows])
        text += f"\nPareto front of F1 against {what}: {', '.join(front)}\n"
    return text


def pareto(points: list[tuple[str, float, float]]) -> list[str]:
    """The labels of the points (label, cost, quality) that no other point dominates (as cheap
    or cheaper and at least as good, better in one), cheapest first."""
    front = [(cost, -quality, label) for label, cost, quality in points
             if not any(c <= cost and q >= quality and (c, q) != (cost, quality)
                        for _, c, q in points)]
    return [label for _, _, label in sorted(front)]


def error_bars(summaries: list[dict[str, Any]], metric: str) -> list[list[float]]:
    """Matplotlib's yerr (below, above) of METRIC's 95% intervals, in percent."""
    below = [(s[metric] - s.get(f"{metric}_ci", [s[metric]] * 2)[0]) * 100 for s in summaries]
    above = [(s.get(f"{metric}_ci", [s[metric]] * 2)[1] - s[metric]) * 100 for s in summaries]
    return [below, above]


def plot(name: str, rows: Rows, path: Path, result: dict[str, Any]) -> None:
    """The sweep's picture: Figure 5's EM against retrieval rate for θ, else metric by variant."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plots need matplotlib: pip install 'activerag[plot]'") from exc
    if name in COSTS:
        _plot_costs(name, rows, path, result, plt)
        return
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    {"theta": _draw_theta, "beta": _draw_beta}.get(name, _draw_bars)(ax, rows)
    ax.set_ylabel("score (%)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{name} sweep, {result['dataset']} (n={result['n']})")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _draw_theta(ax: Any, rows: Rows) -> None:
    """Figure 5: EM and F1 against the share of sentences that retrieved, each point's θ."""
    xs = [s["retrieval_rate"] * 100 for _, _, s in rows]
    for metric in ("em", "f1"):
        ax.errorbar(xs, [s[metric] * 100 for _, _, s in rows],
                    yerr=error_bars([s for _, _, s in rows], metric), marker="o",
                    capsize=3, label=f"{metric.upper()} (95% interval)")
    # points within 5 percentage points of retrieval and at the same EM share a label
    groups: list[list[tuple[float, float, str]]] = []
    for x, (label, _, s) in sorted(zip(xs, rows, strict=True), key=lambda p: p[0]):
        y, theta = round(s["em"] * 100, 1), label.split("=")[1]
        if groups and x - groups[-1][-1][0] <= 5 and groups[-1][-1][1] == y:
            groups[-1].append((x, y, theta))
        else:
            groups.append([(x, y, theta)])
    for group in groups:
        x, y, _ = group[0]
        ax.annotate("θ=" + ",".join(t for _, _, t in group), (x, y),
                    textcoords="offset points", xytext=(0, 7),
                    ha="right" if x > 85 else "center", fontsize=8)
    ax.set_xlabel("sentences that retrieved (%)")


def _draw_beta(ax: Any, rows: Rows) -> None:
    """Table 5 as curves: EM against β, one curve per masking mode, shifted apart a little."""
    modes: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    for label, x, summary in rows:
        modes.setdefault(label.partition(" ")[2] or "token", []).append((x, summary))
    for i, (mode, curve) in enumerate(modes.items()):
        if mode != "token":
            # β = 0 masks nothing, so every mode starts from the same point (when swept)
            curve = [p for p in modes.get("token", []) if p[0] == 0.0] + curve
        shift = (i - 1) * 0.008  # keep the intervals of the modes apart
        ax.errorbar([x + shift for x, _ in curve], [s["em"] * 100 for _, s in curve],
                    yerr=error_bars([s for _, s in curve], "em"), marker="o", capsize=3,
                    label=f"EM, {MASK_NAMES.get(mode, mode)}")
    ax.set_xlabel("β (draft tokens below it are masked); bars: 95% intervals")


def _draw_bars(ax: Any, rows: Rows) -> None:
    """Any other sweep: EM and F1 bars side by side about each variant's tick."""
    pos = range(len(rows))
    width = 0.38
    for i, metric in enumerate(("em", "f1")):
        ax.bar([p + (i - 0.5) * width for p in pos], [s[metric] * 100 for _, _, s in rows],
               width, yerr=error_bars([s for _, _, s in rows], metric), capsize=3,
               label=f"{metric.upper()} (95% interval)")
    ax.set_xticks(list(pos), [label for label, _, _ in rows])


def _plot_costs(name: str, rows: Rows, path: Path, result: dict[str, Any], plt: Any) -> None:
    """F1 against each of the sweep's costs, one series per family of variants (the label's
    first word), the Pareto front dashed."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), dpi=120, sharey=True)
    families: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for label, _, s in rows:
        families.setdefault(label.split(" ")[0], []).append((label, s))
    for ax, (cost, _, xlabel, scale) in zip(axes, COSTS[name], strict=True):
        for i, ((family, points), marker) in enumerate(zip(families.items(), "osD^vP*X",
                                                           strict=False)):
            points = sorted(points, key=lambda p: p[1][cost])
            # each family's markers a little smaller than the one drawn before it, so a point
            # that lands on another (single under the app that routes nothing) stays visible
            ax.errorbar([s[cost] * scale for _, s in points], [s["f1"] * 100 for _, s in points],
                        yerr=error_bars([s for _, s in points], "f1"), marker=marker,
                        markersize=max(6.0, 10.0 - 1.0 * i), capsize=3, label=family,
                        alpha=0.85)
            spots: dict[tuple[float, float], list[str]] = {}  # tied points share one label
            for label, s in points:
                knob = label.partition(" ")[2]
                if knob:
                    spots.setdefault((s[cost] * scale, s["f1"] * 100), []).append(
                        knob if len(knob) <= 8 else knob.rpartition("=")[2])
            span = max([1e-9, *(x for x, _ in spots)])
            last, below = None, False
            for (x, y), knobs in sorted(spots.items()):
                # a label close to the previous one goes on the other side of its point
                below = last is not None and x - last < 0.06 * span and not below
                ax.annotate(",".join(knobs), (x, y), fontsize=7, textcoords="offset points",
                            xytext=(4, -11 if below else 4))
                last = x
        by_label = {label: s for label, _, s in rows}
        front = pareto([(label, s[cost], s["f1"]) for label, s in by_label.items()])
        ax.step([by_label[label][cost] * scale for label in front],
                [by_label[label]["f1"] * 100 for label in front], where="post", color="black",
                linestyle="--", linewidth=1, label="Pareto front")
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("F1 (%), bars: 95% intervals")
    axes[0].set_ylim(bottom=0)
    axes[1].legend(fontsize=8, loc="upper right")
    title = ("retrieval triggers" if name == "trigger"
             else "adaptive app (labels: min_confidence) against its parts")
    fig.suptitle(f"{title}, {result['dataset']} (n={result['n']})")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
