"""Copy the summaries of runs/ into results/ (tables, plots, summary JSON without examples).

Run after results/run_all.sh; a run that is missing is skipped and said so.
"""

import json
import shutil
from pathlib import Path

from activerag.evaluation.evaluate import Run, summarise_methods
from activerag.evaluation.tables import LONG_CONTEXT_COLUMNS, markdown_table

RUNS, OUT = Path("runs"), Path("results")
RUN_FOLDERS = ("2wiki-main-n200", "demo-n48", "2wiki-family-n50", "2wiki-replug-n50",
               "fbrag-smoke-hotpot1500-n10")
SWEEPS = {"beta": "n100", "theta": "n100", "next_previous": "n50", "window": "n50"}


def copy_run(name: str) -> None:
    summary = json.loads((RUNS / name / "summary.json").read_text())
    (OUT / f"{name}.json").write_text(json.dumps(summary, indent=1))
    shutil.copy(RUNS / name / "summary.md", OUT / f"{name}.md")


for name in RUN_FOLDERS:
    if (RUNS / name / "summary.json").exists():
        copy_run(name)
    else:
        print(f"skipped {name}: no summary in runs/")
for sweep, suffix in SWEEPS.items():
    for ext in ("md", "png"):
        src = RUNS / "sweeps" / sweep / f"{sweep}.{ext}"
        if src.exists():
            shutil.copy(src, OUT / f"sweep-{sweep}-{suffix}.{ext}")
        else:
            print(f"skipped {src}: not there")
for src, dst in ((RUNS / "replug-cost.md", OUT / "replug-cost.md"),
                 (RUNS / "replug-lm" / "replug-lm.md", OUT / "replug-lm.md"),
                 (RUNS / "replug-lm" / "replug-lm.png", OUT / "replug-lm.png"),
                 (RUNS / "replug-lm" / "replug-lm.json", OUT / "replug-lm.json"),
                 (RUNS / "replug-lm-lsr" / "replug-lm.md", OUT / "replug-lm-lsr.md"),
                 (RUNS / "replug-lm-lsr" / "replug-lm.png", OUT / "replug-lm-lsr.png"),
                 (RUNS / "replug-lm-lsr" / "replug-lm.json", OUT / "replug-lm-lsr.json")):
    if src.exists():
        shutil.copy(src, dst)
    else:
        print(f"skipped {src}: not there")
flarechain = RUNS / "flarechain"
for ext in ("md", "json"):
    if (flarechain / f"compare.{ext}").exists():
        shutil.copy(flarechain / f"compare.{ext}", OUT / f"flarechain.{ext}")

# Every method on the same first 50 questions: the family run plus those rows of the main run.
if (RUNS / "2wiki-family-n50" / "summary.json").exists():
    family = Run(RUNS / "2wiki-family-n50").rows()
    ids = {r["id"] for r in family}
    main_rows = [r for r in Run(RUNS / "2wiki-main-n200").rows() if r["id"] in ids]
    rows = main_rows + family
    order = ["flare", "none", "single", "previous_window", "previous_sentence", "next_sentence",
             "self_ask", "flare_explicit", "flare_combined", "flare_instruct"]
    # each method after flare gets its paired p-values against flare on the same questions
    summary = summarise_methods(rows, order)
    (OUT / "2wiki-all-methods-n50.md").write_text(
        "### Every method on the same 50 2WikiMultihopQA dev questions (paper exemplars with "
        "their retrieved documents, BM25 k=2, SmolLM2-135M-Instruct, answers capped at 128 "
        "tokens, 4 questions at a time; p: paired bootstrap against flare)\n\n"
        + markdown_table(summary))
    print((OUT / "2wiki-all-methods-n50.md").read_text())
# The demo set on the default model: flare_combined (the question's documents kept in every
# step, Table 9) beside the main demo run's flare, single and none, per kind of question.
if all((RUNS / name / "examples.jsonl").exists() for name in ("demo-n48", "demo-n48-combined")):
    rows = Run(RUNS / "demo-n48").rows() + Run(RUNS / "demo-n48-combined").rows()
    order = ["flare_combined", "flare", "single", "none"]
    parts = [("all 48 questions", rows)] + [
        (f"{kind} (n=24)", [r for r in rows if r.get("group") == kind])
        for kind in ("one-hop", "two-hop")]
    text = ("### The demo set on Qwen2.5-Coder-0.5B-Instruct: flare_combined beside flare, "
            "single and none (the library's exemplar, BM25 k=2, θ=0.8, β=0.4, answers capped "
            "at 128 tokens; p: paired bootstrap against flare_combined)\n")
    for label, part in parts:
        text += f"\n#### {label}\n\n" + markdown_table(summarise_methods(part, order))
    (OUT / "demo-n48-combined.md").write_text(text)
    print(text)

# REPLUG over the dense store: MiniLM's own query encoder against the LSR-trained one, on the
# same 50 questions as the BM25 REPLUG run (p: paired bootstrap against REPLUG-LSR).
LSR_RUNS = {"2wiki-replug-lsr-vote-n50": "-LSR", "2wiki-replug-dense-vote-n50": " (MiniLM)"}
if all((RUNS / name / "examples.jsonl").exists() for name in LSR_RUNS):
    rows = []
    for name, suffix in LSR_RUNS.items():
        rows += [{**r, "method": r["method"] + suffix} for r in Run(RUNS / name).rows()]
    ids = {r["id"] for r in rows}
    rows += [r for r in Run(RUNS / "2wiki-replug-n50").rows() if r["id"] in ids
             and r["method"] in ("replug_vote", "none")]
    order = ["replug_vote-LSR", "replug_vote (MiniLM)", "replug_vote", "single_k1-LSR",
             "single_k1 (MiniLM)", "none"]
    order = [m for m in order if any(r["method"] == m for r in rows)]
    summary = summarise_methods(rows, order)
    (OUT / "2wiki-replug-lsr-n50.md").write_text(
        "### REPLUG (the released code's vote, k=10) and the top-1 document with the dense "
        "retriever, before (MiniLM) and after LSR, on the first 50 2WikiMultihopQA dev "
        "questions (paper exemplars without documents; SmolLM2-135M-Instruct; answers capped "
        "at 128 tokens; `replug_vote` and `none` are the BM25 run's rows; p: paired bootstrap "
        "against replug_vote-LSR)\n\n"
        + markdown_table(summary))
    (OUT / "2wiki-replug-lsr-n50.json").write_text(json.dumps(summary, indent=1))
    print((OUT / "2wiki-replug-lsr-n50.md").read_text())


def merged_table(out: str, title: str, parts: dict[str, list[str] | dict[str, str] | None],
                 order: list[str], only_done: str | None = None,
                 columns: tuple[str, ...] | None = None) -> dict | None:
    """One table from the rows of several runs (run folder: its methods to take, a dict: those
    methods under new labels, None: all), on the questions every run finished (ONLY_DONE:
    those the run of that method finished), with paired p-values against the first method."""
    if not all((RUNS / name / "examples.jsonl").exists() for name in parts):
        print(f"skipped {out}: a run is missing")
        return None
    rows = [{**r, "method": keep[r["method"]]} if isinstance(keep, dict) else r
            for name, keep in parts.items() for r in Run(RUNS / name).rows()
            if keep is None or r["method"] in keep]
    if only_done:
        ids = {r["id"] for r in rows if r["method"] == only_done}
        rows = [r for r in rows if r["id"] in ids]
    order = [m for m in order if any(r["method"] == m for r in rows)]
    summary = summarise_methods(rows, order)
    n = max(s["n"] for s in summary.values())
    table = markdown_table(summary, columns) if columns else markdown_table(summary)
    (OUT / f"{out}.md").write_text(f"### {title} (n={n})\n\n" + table)
    (OUT / f"{out}.json").write_text(json.dumps(summary, indent=1))
    print((OUT / f"{out}.md").read_text())
    return summary


REPLUG_ORDER = ["replug", "replug_rescore", "replug_vote", "none", "single_k1", "single_k10"]
merged_table("hotpotqa-replug-n50",
             "REPLUG on the first 50 HotpotQA dev questions (rpt dev split) over the 32,140-"
             "paragraph union corpus (BM25, k=10; the 2Wiki paper exemplars without documents; "
             "SmolLM2-135M-Instruct; answers capped at 128 tokens; p: paired bootstrap against "
             "replug)",
             {"hotpotqa-replug-agree-n50": None, "hotpotqa-replug-n50": None}, REPLUG_ORDER)
merged_table("2wiki-replug-rescore",
             "REPLUG's rescore (Eq. 2 exactly on the documents' own answers, echo-scored) beside "
             "the other REPLUG rows, on the 2Wiki questions its run finished (BM25, k=10; p: "
             "paired bootstrap against replug)",
             {"2wiki-replug-rescore-n50": None, "2wiki-replug-n50": None}, REPLUG_ORDER,
             only_done="replug_rescore")
for name in ("lsr-2wiki", "lsr-2wiki-shuffled", "lsr-2wiki-lm"):
    for src in ("recall.md", "recall.json", "lsr.json"):
        if (RUNS / name / src).exists():
            data = (RUNS / name / src).read_text()
            (OUT / f"{name}-{src}").write_text(data)
print(sorted(p.name for p in OUT.iterdir()))


def plot_recall() -> None:
    """Gold-title recall@k of MiniLM, the LSR query tower and the shuffled-teacher control."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    base = None
    for name, label in (("lsr-2wiki", "LSR (LM teacher)"),
                        ("lsr-2wiki-shuffled", "LSR, shuffled teacher (control)")):
        path = RUNS / name / "recall.json"
        if not path.exists():
            continue
        table = json.loads(path.read_text())["recall"]
        ks = [int(k) for k in table]
        base = base or (ks, [table[k]["before"] for k in table], [table[k]["before_ci"]
                                                                 for k in table])
        after = [table[k]["after"] for k in table]
        ci = [table[k]["after_ci"] for k in table]
        ax.errorbar(ks, after, yerr=[[a - c[0] for a, c in zip(after, ci, strict=True)],
                                     [c[1] - a for a, c in zip(after, ci, strict=True)]],
                    marker="o", capsize=3, label=label)
    if base is None:
        plt.close(fig)
        return
    ks, before, ci = base
    ax.errorbar(ks, before, yerr=[[b - c[0] for b, c in zip(before, ci, strict=True)],
                                  [c[1] - b for b, c in zip(before, ci, strict=True)]],
                marker="s", capsize=3, linestyle="--", color="gray", label="MiniLM (before)")
    ax.set_xscale("log")
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("k passages retrieved")
    ax.set_ylabel("gold-title recall@k")
    ax.set_title("2Wiki, 200 held-out questions, 7,611 passages")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(OUT / "lsr-recall.png")
    plt.close(fig)


plot_recall()


# FB-RAG (issue #9), from results/fbrag.sh: SmolLM2-135M samples, Gemma 3 270M reads.
FB_SETUP = ("contexts of about 1,500 words, 100-word chunks, X = 1,500 words (stage I reads the "
            "whole context), K = 5 samples of 96 tokens at temperature 1; SmolLM2-135M-Instruct "
            "samples, Gemma 3 270M reads (answers up to 32 tokens, LongBench's qa_f1); "
            "two questions at a time; latency_seconds: a question's wall time with its "
            "cached samples counted at what their draw took")
FB_ORDER = ["fb_rag", "fb_rag_fb", "op_rag", "vanilla_rag", "self_route", "long_context",
            "fb_rag Y=1000", "fb_rag_fb Y=1000", "op_rag Y=1000", "answer as query",
            "gold paragraphs"]
FB_DATASETS = {"hotpotqa": "HotpotQA (rpt test split)", "2wiki500": "2WikiMultihopQA (2wiki500)"}
Y1000 = {m: f"{m} Y=1000" for m in ("fb_rag", "fb_rag_fb", "op_rag")}
fb_tables = {}
for ds, name in FB_DATASETS.items():
    fb_tables[ds] = merged_table(
        f"fbrag-{ds}-1500w", f"FB-RAG and its baselines on {name}: {FB_SETUP}; Y = 500 words "
        "unless named; p: paired bootstrap against fb_rag",
        {f"fbrag-{ds}-y500": None, f"fbrag-{ds}-y1000": Y1000, f"fbrag-oracle-{ds}": None},
        FB_ORDER,
        columns=LONG_CONTEXT_COLUMNS)
merged_table("fbrag-hotpotqa-samples",
             f"FB-RAG (Ours-F, Y = 500) with K = 1..5 samples on HotpotQA: {FB_SETUP}; K < 5 "
             "reads the first K of the same K = 5 draw, so its latency_seconds counts the K = 5 "
             "draw (what K costs is measured in fbrag-cost.md); p: paired bootstrap against K=5",
             {"fbrag-hotpotqa-y500": {"fb_rag": "K=5"},
              **{f"fbrag-hotpotqa-k{k}": {"fb_rag": f"K={k}"} for k in range(1, 5)}},
             [f"K={k}" for k in (5, 1, 2, 3, 4)], columns=LONG_CONTEXT_COLUMNS)
merged_table("fbrag-hotpotqa-light-model",
             f"FB-RAG's light model, SmolLM2-135M against Gemma 3 270M (which also reads), on "
             f"HotpotQA: {FB_SETUP}; p: paired bootstrap against the SmolLM2 row",
             {"fbrag-hotpotqa-y500": {"fb_rag": "fb_rag, SmolLM2 light", "op_rag": "op_rag"},
              "fbrag-hotpotqa-gemma-light": {"fb_rag": "fb_rag, Gemma light"}},
             ["fb_rag, SmolLM2 light", "fb_rag, Gemma light", "op_rag"],
             only_done="fb_rag, Gemma light", columns=LONG_CONTEXT_COLUMNS)
merged_table("fbrag-hotpotqa-3000w",
             "FB-RAG at X = 1,500 -> Y = 1,000 over HotpotQA contexts of about 3,000 words "
             "(stage I reads half of the context): SmolLM2-135M-Instruct samples (K = 5), Gemma "
             "3 270M reads; two questions at a time; p: paired bootstrap against fb_rag",
             {"fbrag-hotpotqa3000-y1000": None}, ["fb_rag", "op_rag", "long_context"],
             columns=LONG_CONTEXT_COLUMNS)
if (RUNS / "fbrag-cost.md").exists():
    shutil.copy(RUNS / "fbrag-cost.md", OUT / "fbrag-cost.md")


def plot_fb_rag(tables: dict) -> None:
    """F1 against latency, one point per method and setting (FB-RAG's Figure 2 shape)."""
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
        for i, (method, s) in enumerate(table.items()):
            f1, (low, high) = s["f1"], s["f1_ci"]
            if method in ("gold paragraphs", "answer as query"):  # ceilings, not methods
                ax.axhline(f1, linestyle="--", linewidth=0.8, color="gray")
                ax.annotate(f"ceiling: {method}", (0.01, f1), xycoords=("axes fraction", "data"),
                            xytext=(0, 3), textcoords="offset points", fontsize=7, color="gray")
                continue
            style = "o" if method.startswith("fb_rag") else "s"
            ax.errorbar([s["latency_seconds"]], [f1], yerr=[[f1 - low], [high - f1]],
                        fmt=style, capsize=3)
            ax.annotate(method, (s["latency_seconds"], f1), textcoords="offset points",
                        xytext=(4, 4 + 8 * (i % 3 - 1)), fontsize=7)
        ax.set_xscale("log")
        ticks = [3, 5, 10, 20, 50, 100]
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("seconds per question (2 at a time, 2 CPU cores)")
        ax.set_ylabel("qa_f1 (95% interval)")
        ax.set_title(f"{FB_DATASETS[ds]}, n={max(s['n'] for s in table.values())}")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(OUT / "fbrag-f1-latency.png")
    plt.close(fig)


plot_fb_rag(fb_tables)


def recall_table() -> None:
    """How much of the gold paragraphs stage II's ranking reads against the question's own
    (OP-RAG), paired: the direction check a small model can show even where F1 cannot. The
    main number is the share of gold words read; beside it, the share of gold paragraphs read
    at least half."""
    lines = ["### Gold paragraphs read at Y = 500 words: FB-RAG's rankings against the "
             "question's BM25 (OP-RAG), paired bootstrap on the same questions\n",
             "gold_word_recall: the share of the gold paragraphs' words the reader read; "
             "gold_half_recall: the share of gold paragraphs it read at least half of\n",
             "| dataset | method | gold_word_recall | difference from op_rag | p "
             "| gold_half_recall | difference from op_rag | p |",
             "|---|---|---|---|---|---|---|---|"]
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
                          "-" if p is None else "<0.001" if p < 0.001 else f"{p:.3f}"]
            lines.append(f"| {name} | {method} | " + " | ".join(cells) + " |")
    (OUT / "fbrag-recall.md").write_text("\n".join(lines) + "\n")
    print((OUT / "fbrag-recall.md").read_text())


recall_table()


def gates_table() -> None:
    """Issue #21: the uncertainty gates beside flare, none and single (the main run's rows) on
    the same questions; gate_lexsim on the questions it has reached."""
    if not (RUNS / "2wiki-gates-n100" / "examples.jsonl").exists():
        print("skipped 2wiki-gates-n100: no rows in runs/")
        return
    gates = Run(RUNS / "2wiki-gates-n100").rows()
    main = Run(RUNS / "2wiki-main-n200").rows()
    parts = []
    names = ["gate_entropy_mean", "gate_entropy_max", "gate_perplexity", "gate_lexsim"]
    ids = {r["id"] for r in gates if r["method"] == names[0]}
    rows = [r for r in main + gates if r["id"] in ids]
    for first, other in (("flare", "none"), ("none", "flare")):  # p against flare, then none
        parts.append(f"{len(ids)} questions, p against {first}\n\n" + markdown_table(
            summarise_methods(rows, [first, other, "single", *names])))
    (OUT / "2wiki-gates-n100.tables.md").write_text("\n\n".join(parts))
    print((OUT / "2wiki-gates-n100.tables.md").read_text())


gates_table()
