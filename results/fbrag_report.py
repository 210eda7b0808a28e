"""FB-RAG's tables and plots (issues #9, #18) from the run folders of results/fbrag.sh and
results/fbrag_extra.sh: the main tables per dataset, K = 1..5, the light model, 3,000-word
contexts, the F1-latency plot and the gold words read. Run from the folder holding runs/, after
those scripts; a table whose runs are missing is skipped and said so (its committed file stays).
"""

import shutil
from pathlib import Path
from typing import Any

from merging import OUT, RUNS, merged_table

from activerag.evaluation.evaluate import Run, summarise_methods
from activerag.evaluation.tables import LONG_CONTEXT_COLUMNS, p_text

# From results/fbrag.sh on the default model (issue #18): SmolLM2-135M samples, the default model
# reads. The committed tables of issue #9 (Gemma 3 270M reading) say so in their own titles.
SAMPLER = "SmolLM2-135M-Instruct samples, "


def fb_setup(sampler: str = SAMPLER, reader: str = "Qwen2.5-Coder-0.5B-Instruct") -> str:
    """The setting of the 1,500-word tables, naming who draws the light samples and who reads."""
    return ("contexts of about 1,500 words, 100-word chunks, X = 1,500 words (stage I reads the "
            f"whole context), K = 5 samples of 96 tokens at temperature 1; {sampler}"
            f"{reader} reads (answers up to 32 tokens, LongBench's qa_f1); two "
            "questions at a time; latency_seconds: a question's wall time with its cached samples "
            "counted at what their draw took")


FB_SETUP = fb_setup()
FB_ORDER = ["fb_rag", "fb_rag_fb", "op_rag", "vanilla_rag", "self_route", "long_context",
            "fb_rag Y=1000", "fb_rag_fb Y=1000", "op_rag Y=1000", "answer as query",
            "gold paragraphs"]
FB_DATASETS = {"hotpotqa": "HotpotQA (rpt test split)", "2wiki500": "2WikiMultihopQA (2wiki500)"}
Y1000 = {m: f"{m} Y=1000" for m in ("fb_rag", "fb_rag_fb", "op_rag")}
fb_tables = {}


CEILINGS = ("gold paragraphs", "answer as query")
"""The rows that are ceilings, not methods (drawn as lines)."""


LABEL_SPOTS = ((4, 4), (4, -10), (-4, 4), (-4, -10))
"""Where a point's label may go, in points from it (a negative x ends the label at the point)."""
CHAR, HALF_HEIGHT = 0.012, 0.02
"""A 7-point label's character width and half its height, in a panel's axes fractions."""


def label_spots(points: list[tuple[float, float]], labels: list[str],
                gap: float = 0.01) -> list[tuple[int, int]]:
    """A label offset for each point (x, y, each in axes fractions) and its label, in the
    points' x order: the first of LABEL_SPOTS whose label box is at least GAP from every other
    point and every label already placed; with none such, the spot with the most room."""
    boxes: list[tuple[float, float, float, float]] = []  # middle x and y, half width and height
    spots: dict[int, tuple[int, int]] = {}
    for i in sorted(range(len(points)), key=lambda i: points[i]):
        half = len(labels[i]) * CHAR / 2
        others = [(*p, 0.0, 0.0) for j, p in enumerate(points) if j != i] + boxes
        fits = {spot: _box(points[i], half, spot) for spot in LABEL_SPOTS}
        rooms = {spot: _room(box, others) for spot, box in fits.items()}
        spot = next((s for s in LABEL_SPOTS if rooms[s] >= gap), max(rooms, key=rooms.__getitem__))
        spots[i] = spot
        boxes.append(fits[spot])
    return [spots[i] for i in range(len(points))]


def _box(point: tuple[float, float], half: float,
         spot: tuple[int, int]) -> tuple[float, float, float, float]:
    """The box of a label HALF wide each way, put at SPOT from POINT."""
    return (point[0] + (half if spot[0] > 0 else -half),
            point[1] + (HALF_HEIGHT if spot[1] > 0 else -HALF_HEIGHT), half, HALF_HEIGHT)


def _room(box: tuple[float, float, float, float],
          others: list[tuple[float, float, float, float]]) -> float:
    """How far BOX is from the nearest of OTHERS (boxes; a point is one with no size)."""
    x, y, w, h = box
    return min((max(abs(x - ox) - w - ow, abs(y - oy) - h - oh) for ox, oy, ow, oh in others),
               default=1.0)


def plot_fb_rag(tables: dict, path: Path = OUT / "fbrag-f1-latency.png",
                title: str | None = None) -> None:
    """F1 against latency, one point per method and setting (FB-RAG's Figure 2 shape); TITLE
    (who reads, who samples) above the panels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    shown = {ds: t for ds, t in tables.items() if t}
    if not shown:
        return
    fig, axes = plt.subplots(1, len(shown), figsize=(6 * len(shown), 4.5), dpi=120,
                             squeeze=False)
    for ax, (ds, table) in zip(axes[0], shown.items(), strict=True):
        dots = {m: s for m, s in table.items() if m not in CEILINGS}
        for method, s in table.items():
            if method in CEILINGS:
                ax.axhline(s["f1"], linestyle="--", linewidth=0.8, color="gray")
                ax.annotate(f"ceiling: {method}", (0.01, s["f1"]), fontsize=7, color="gray",
                            xycoords=("axes fraction", "data"), xytext=(0, 3),
                            textcoords="offset points")
        for method, s in dots.items():
            f1, (low, high) = s["f1"], s["f1_ci"]
            style = "o" if method.startswith("fb_rag") else "s"
            ax.errorbar([s["latency_seconds"]], [f1], yerr=[[f1 - low], [high - f1]],
                        fmt=style, capsize=3)
        ax.set_xscale("log")
        seconds = [s["latency_seconds"] for s in dots.values() if s.get("latency_seconds")]
        # round ticks from half the fastest method to twice the slowest
        ticks = [t for t in (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)
                 if min(seconds, default=1) / 2 <= t <= max(seconds, default=100) * 2]
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
        to_axes = ax.transData + ax.transAxes.inverted()
        where = [tuple(to_axes.transform((s["latency_seconds"], s["f1"]))) for s in dots.values()]
        for method, s, spot in zip(dots, dots.values(), label_spots(where, list(dots)),
                                    strict=True):
            ax.annotate(method, (s["latency_seconds"], s["f1"]), textcoords="offset points",
                        xytext=spot, fontsize=7, ha="left" if spot[0] > 0 else "right")
        ax.set_xlabel("seconds per question (2 at a time, 2 CPU cores)")
        ax.set_ylabel("qa_f1 (95% interval)")
        ax.set_title(f"{FB_DATASETS[ds]}, n={max(s['n'] for s in table.values())}")
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def recall_table() -> None:
    """How much of the gold paragraphs stage II's ranking reads against the question's own
    (OP-RAG), paired: the direction check a small model can show even where F1 cannot. The
    main number is the share of gold words read; beside it, the share of gold paragraphs read
    at least half."""
    header = ["### Gold paragraphs read at Y = 500 words: FB-RAG's rankings against the "
              "question's BM25 (OP-RAG), paired sign-flip test on the same questions\n",
              "gold_word_recall: the share of the gold paragraphs' words the reader read; "
              "gold_half_recall: the share of gold paragraphs it read at least half of\n",
              "| dataset | method | gold_word_recall | difference from op_rag | p "
              "| gold_half_recall | difference from op_rag | p |",
              "|---|---|---|---|---|---|---|---|"]
    lines = list(header)
    for ds, name in FB_DATASETS.items():
        run = RUNS / f"fbrag-{ds}-y500"
        if not (run / "examples.jsonl").exists():
            continue
        summary = summarise_methods(Run(run).rows(), ["op_rag", "fb_rag", "fb_rag_fb"])
        for method, s in summary.items():
            if "gold_word_recall" not in s:
                print(f"skipped {run} {method}: its rows predate the spans read (run it again)")
                continue
            vs = s.get("vs_first", {})
            cells = []
            for key in ("gold_word_recall", "gold_half_recall"):
                lo, hi = s[f"{key}_ci"]
                diff, p = vs.get(f"{key}_diff"), vs.get(f"{key}_p")
                cells += [f"{s[key]:.3f} [{lo:.3f}, {hi:.3f}]",
                          "-" if diff is None else f"{diff:+.3f}",
                          p_text(p)]
            lines.append(f"| {name} | {method} | " + " | ".join(cells) + " |")
    if len(lines) == len(header):
        print("skipped fbrag-recall: no fbrag-*-y500 run in runs/ (its committed file stays)")
        return
    (OUT / "fbrag-recall.md").write_text("\n".join(lines) + "\n")
    print((OUT / "fbrag-recall.md").read_text())


def main() -> None:
    """Everything above, in order: each table or plot whose runs are there."""
    for ds, name in FB_DATASETS.items():
        # Y = 500 is the table; the Y = 1000 rows and the ceilings join it where they were run
        extra = {f"fbrag-{ds}-y1000": Y1000, f"fbrag-oracle-{ds}": None}
        fb_tables[ds] = merged_table(
            f"fbrag-{ds}-1500w", f"FB-RAG and its baselines on {name}: {FB_SETUP}; Y = 500 words "
            "unless named; p: paired sign-flip test against fb_rag",
            {f"fbrag-{ds}-y500": None,
             **{run: keep for run, keep in extra.items()
                if (RUNS / run / "examples.jsonl").exists()}},
            FB_ORDER,
            columns=LONG_CONTEXT_COLUMNS)
    merged_table("fbrag-hotpotqa-samples",
                 f"FB-RAG (Ours-F, Y = 500) with K = 1..5 samples on HotpotQA: {FB_SETUP}; K < 5 "
                 "reads the first K of the same K = 5 draw, so its latency_seconds counts the "
                 "K = 5 draw (what K costs is measured in fbrag-cost.md); p: paired sign-flip test "
                 "against K=5",
                 {"fbrag-hotpotqa-y500": {"fb_rag": "K=5"},
                  **{f"fbrag-hotpotqa-k{k}": {"fb_rag": f"K={k}"} for k in range(1, 5)}},
                 [f"K={k}" for k in (5, 1, 2, 3, 4)], columns=LONG_CONTEXT_COLUMNS)
    merged_table("fbrag-hotpotqa-light-model",
                 f"FB-RAG's light model, SmolLM2-135M against Gemma 3 270M, on HotpotQA: "
                 f"{fb_setup('the named model samples, ')}; the SmolLM2 row's samples were drawn "
                 "beside other runs (its latency is not comparable), the Gemma row's alone on the "
                 "machine; p: paired sign-flip test against the SmolLM2 row",
                 {"fbrag-hotpotqa-y500": {"fb_rag": "fb_rag, SmolLM2 light", "op_rag": "op_rag"},
                  "fbrag-hotpotqa-gemma-light": {"fb_rag": "fb_rag, Gemma light"}},
                 ["fb_rag, SmolLM2 light", "fb_rag, Gemma light", "op_rag"],
                 only_done="fb_rag, Gemma light", columns=LONG_CONTEXT_COLUMNS)
    merged_table("fbrag-hotpotqa-3000w",
                 "FB-RAG at X = 1,500 -> Y = 1,000 over HotpotQA contexts of about 3,000 words "
                 "(stage I reads half of the context): SmolLM2-135M-Instruct samples (K = 5), "
                 "Qwen2.5-Coder-0.5B-Instruct reads, served with an 8,192-token window so that "
                 "long_context reads the whole context uncut; two questions at a time, alone on "
                 "the "
                 "machine; p: paired sign-flip test against fb_rag",
                 {"fbrag-hotpotqa3000-y1000": None}, ["fb_rag", "op_rag", "long_context"],
                 columns=LONG_CONTEXT_COLUMNS)
    if (RUNS / "fbrag-cost.md").exists():
        shutil.copy(RUNS / "fbrag-cost.md", OUT / "fbrag-cost.md")
    plot_fb_rag(fb_tables)
    recall_table()


if __name__ == "__main__":
    main()


FB_BASELINES = ("op_rag", "vanilla_rag", "self_route", "long_context")


def claim(summary: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """FB-RAG's claim (the best baseline's F1 at 48% less latency), for Ours-F and Ours-FB
    against the baseline with the highest F1 here, the F1 difference paired on ROWS."""
    from after_flare import paired

    baselines = [m for m in FB_BASELINES if m in summary]
    if not baselines:
        return "No baseline has run yet: the paper's claim is not checked."
    best = max(baselines, key=lambda m: summary[m]["f1"])
    b = summary[best]
    parts = []
    for ours in ("fb_rag", "fb_rag_fb"):
        d = paired(rows, ours, best) if ours in summary else None
        if d is None:
            continue
        (lo, hi), ours_s = d["ci"], summary[ours]["latency_seconds"]
        saved = 1 - ours_s / b["latency_seconds"]
        parts.append(f"{ours} F1 {summary[ours]['f1']:.3f} against {b['f1']:.3f}, difference "
                     f"{d['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] (paired p {p_text(d['p'])}), "
                     f"latency "
                     f"{ours_s:.0f} s against {b['latency_seconds']:.0f} s a question "
                     f"({abs(saved):.0%} {'less' if saved >= 0 else 'more'})")
    return (f"The paper's claim (the best baseline's F1 at 48% less latency), here against the "
            f"best baseline by F1, {best}: " + "; ".join(parts) + ".")
