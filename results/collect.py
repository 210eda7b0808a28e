"""Copy the summaries of runs/ into results/ (tables, plots, summary JSON without examples).

Run after results/run_all.sh; a run that is missing is skipped and said so.
"""

import json
import shutil

from after_flare_rows import scores
from merging import OUT, RUNS, merged_table, save_recall_plot

from activerag.evaluation.evaluate import Run, summarise_methods
from activerag.evaluation.tables import markdown_table

RUN_FOLDERS = ("2wiki-main-n200", "demo-n48", "demo-n48-1.5b", "2wiki-family-n50",
               "2wiki-replug-n50", "fbrag-smoke-hotpot1500-n10")
SWEEPS = {"beta": "n100", "theta": "n100", "next_previous": "n50", "window": "n50"}


def copy_run(name: str) -> None:
    summary = json.loads((RUNS / name / "summary.json").read_text())
    (OUT / f"{name}.json").write_text(json.dumps(summary, indent=1))
    shutil.copy(RUNS / name / "summary.md", OUT / f"{name}.md")


flarechain = RUNS / "flarechain"

# Every method on the same first 50 questions: the family run plus those rows of the main run.
# The demo set on the default model: flare_combined (the question's documents kept in every
# step, Table 9) beside the main demo run's flare, single and none, per kind of question.

# REPLUG over the dense store: MiniLM's own query encoder against the LSR-trained one, on the
# same 50 questions as the BM25 REPLUG run (p: sign-flip test against REPLUG-LSR).
LSR_RUNS = {"2wiki-replug-lsr-vote-n50": "-LSR", "2wiki-replug-dense-vote-n50": " (MiniLM)"}


REPLUG_ORDER = ["replug", "replug_rescore", "replug_vote", "none", "single_k1", "single_k10"]


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
    save_recall_plot(fig, ax, ks, "2Wiki, 200 held-out questions, 7,611 passages",
                     OUT / "lsr-recall.png")
    plt.close(fig)


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


def main() -> None:
    """Everything above, in order: each table or plot whose runs are there."""
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
    for ext in ("md", "json"):
        if (flarechain / f"compare.{ext}").exists():
            shutil.copy(flarechain / f"compare.{ext}", OUT / f"flarechain.{ext}")
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
            "tokens, 4 questions at a time; p: sign-flip test against flare)\n\n"
            + markdown_table(summary))
        print((OUT / "2wiki-all-methods-n50.md").read_text())
    if all((RUNS / name / "examples.jsonl").exists() for name in ("demo-n48", "demo-n48-combined")):
        rows = Run(RUNS / "demo-n48").rows() + Run(RUNS / "demo-n48-combined").rows()
        order = ["flare_combined", "flare", "single", "none"]
        parts = [("all 48 questions", rows)] + [
            (f"{kind} (n=24)", [r for r in rows if r.get("group") == kind])
            for kind in ("one-hop", "two-hop")]
        text = ("### The demo set on Qwen2.5-Coder-0.5B-Instruct: flare_combined beside flare, "
                "single and none (the library's exemplar, BM25 k=2, θ=0.8, β=0.4, answers capped "
                "at 128 tokens; p: sign-flip test against flare_combined)\n")
        for label, part in parts:
            text += f"\n#### {label}\n\n" + markdown_table(summarise_methods(part, order))
        (OUT / "demo-n48-combined.md").write_text(text)
        # per question, so that a later run pairs with these without runs/
        (OUT / "demo-n48-scores.json").write_text(json.dumps(scores(rows)))
        print(text)
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
            "at 128 tokens; `replug_vote` and `none` are the BM25 run's rows; p: sign-flip test "
            "against replug_vote-LSR)\n\n"
            + markdown_table(summary))
        (OUT / "2wiki-replug-lsr-n50.json").write_text(json.dumps(summary, indent=1))
        print((OUT / "2wiki-replug-lsr-n50.md").read_text())
    merged_table("hotpotqa-replug-n50",
                 "REPLUG on the first 50 HotpotQA dev questions (rpt dev split) over the 32,140-"
                 "paragraph union corpus (BM25, k=10; the 2Wiki paper exemplars without documents; "
                 "SmolLM2-135M-Instruct; answers capped at 128 tokens; p: sign-flip test against "
                 "replug)",
                 {"hotpotqa-replug-agree-n50": None, "hotpotqa-replug-n50": None}, REPLUG_ORDER)
    merged_table("2wiki-replug-rescore",
                 "REPLUG's rescore (Eq. 2 exactly on the documents' own answers, echo-scored) "
                 "beside "
                 "the other REPLUG rows, on the 2Wiki questions its run finished (BM25, k=10; p: "
                 "paired sign-flip test against replug)",
                 {"2wiki-replug-rescore-n50": None, "2wiki-replug-n50": None}, REPLUG_ORDER,
                 only_done="replug_rescore")
    for name in ("lsr-2wiki", "lsr-2wiki-shuffled", "lsr-2wiki-lm"):
        for src in ("recall.md", "recall.json", "lsr.json"):
            if (RUNS / name / src).exists():
                data = (RUNS / name / src).read_text()
                (OUT / f"{name}-{src}").write_text(data)
    print(sorted(p.name for p in OUT.iterdir()))
    plot_recall()
    gates_table()


if __name__ == "__main__":
    main()
