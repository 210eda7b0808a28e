"""Issue #21's side-by-side: every method on the same first 100 questions of the 2Wiki main
table (default model), with paired p against flare and against none, a verdict on each
published claim, and F1 against LM calls with the Pareto front; then the same on the first 100
HotpotQA questions (rpt dev, the union corpus) for the methods run there, and none, single,
FLARE, IRCoT and the best new method on the main table's 200 2Wiki questions; and issue
#18's: the rest of the FLARE family on the 2Wiki table's 100 questions, judged against FLARE's
own claims (its flare, none and single rows are the 2Wiki table's), FLARE's β and masking
options (Table 5), and REPLUG against its baselines, each on the same questions. The tables and
the claims each judges are in after_flare_tables.py.

Writes results/<table>.md, .json, -scores.json, -sweeps.json and .png for each table one of
whose run folders exists (2wiki-after-flare-n100, hotpotqa-after-flare-n100, 2wiki-after-
flare-n200, 2wiki-family-n100, 2wiki-beta-n100, 2wiki-replug-n100); a table none of whose
folders is there keeps its committed files. Run it, like collect.py, from the folder whose
runs/ holds the run folders (results/run_all.sh); a run folder that is missing is left out and
said so, except that a method or swept variant it held whose rows were committed
(results/<table>.json or -sweeps.json, and -scores.json) keeps its committed row, and the
question ids come from the committed scores when the table's questions folder is gone. A method
that has not finished all the questions is shown on those it finished, with its n, and paired
with the others on those. Rows are taken in question order, so the bootstrap's intervals do not
depend on the order in which a run's questions finished.
"""

import json
from pathlib import Path
from typing import Any

from after_flare_rows import (
    OUT,
    RUNS,
    Claim,
    Table,
    load_rows,
    scores,
    summaries,
    swept_summaries,
)
from after_flare_tables import (
    BETA,
    CLAIMS,
    FAMILY,
    GATES,
    JUDGED,
    REPLUG,
    TABLES,
    TWOWIKI,
    TWOWIKI200,
)

from activerag.evaluation.stats import bootstrap_ci, paired_permutation_p
from activerag.evaluation.sweeps import error_bars, pareto
from activerag.evaluation.tables import markdown_table, p_text

SWEPT = [*GATES, "flare", "flare_etc", "dragin_lite"]
"""The methods whose sweeps the plot draws as lines, in the order of MARKERS."""
MARKERS = "sD^vo*P"
MARGIN = 0.05
"""The F1 difference within which two methods count as equal ("≈"): the 95% interval of the
paired difference must lie inside ±MARGIN. Fixed before any of these runs was read."""


def paired(rows: list[dict[str, Any]], method: str, against: str) -> dict[str, Any] | None:
    """F1 of METHOD minus AGAINST on the questions both answered: mean, 95% interval, p, and
    the LM calls and retrievals per question of each on those questions."""
    a = {r["id"]: r for r in rows if r["method"] == method}
    b = {r["id"]: r for r in rows if r["method"] == against}
    both = [i for i in a if i in b]
    if not both:
        return None
    diff = [a[i]["f1"] - b[i]["f1"] for i in both]

    def per_q(side: dict[str, dict[str, Any]], key: str) -> float:
        return sum(side[i].get(key, 0) for i in both) / len(both)

    return {"n": len(both), "diff": sum(diff) / len(both), "ci": bootstrap_ci(diff),
            "p": paired_permutation_p([a[i]["f1"] for i in both], [b[i]["f1"] for i in both]),
            "calls": (per_q(a, "lm_calls"), per_q(b, "lm_calls")),
            "retrievals": (per_q(a, "retrieval_steps"), per_q(b, "retrieval_steps"))}


def verdict(claim: Claim, d: dict[str, Any]) -> str:
    """What the numbers say of CLAIM: shown, reversed, or not shown (with why)."""
    lo, hi = d["ci"]
    if claim.equal:
        fewer = d["calls"][0] < d["calls"][1]
        if -MARGIN <= lo and hi <= MARGIN:
            return ("shown: equal within ±0.05 F1" + (", at fewer LM calls" if fewer
                                                      else ", but not at fewer LM calls"))
        if d["p"] < 0.05:
            return "not shown: it differs (p < 0.05)"
        return "not shown: the interval is too wide to call them equal (±0.05 F1)"
    if d["p"] < 0.05:
        return "shown" if d["diff"] > 0 else "reversed: it is worse (p < 0.05)"
    return "not shown (p >= 0.05)"


def claims_table(rows: list[dict[str, Any]], table: Table | None,
                 claims: list[Claim] | None = None) -> str:
    """CLAIMS (default: those TABLE judges, of the methods it lists) on ROWS, one line each."""
    lines = ["| published claim | here: F1 difference [95% interval] | p | n | LM calls per "
             "question (method / against) | verdict |", "|---|---|---|---|---|---|"]
    for claim in claims or JUDGED.get(table.name if table else "", CLAIMS):
        method, against = claim.method, claim.against
        if table and table.claims and not {method, against} <= {*table.claims, "none"}:
            continue
        d = paired(rows, method, against)
        if d is None:
            lines.append(f"| {claim.text} | {method} or {against} not run | - | - | - | "
                         "not measured |")
            continue
        lo, hi = d["ci"]
        lines.append(f"| {claim.text} | {method} - {against}: {d['diff']:+.3f} "
                     f"[{lo:+.3f}, {hi:+.3f}] | {p_text(d['p'])} | {d['n']} | "
                     f"{d['calls'][0]:.2f} / {d['calls'][1]:.2f} | {verdict(claim, d)} |")
    return "\n".join(lines) + "\n"


def plot(summary: dict[str, dict[str, Any]], swept: dict[str, dict[str, Any]],
         path: Path, title: str, model: str = "default model (Qwen2.5-Coder-0.5B)"
         ) -> list[str]:
    """F1 (95% intervals) against LM calls per question, every method a point, each gate's
    thresholds and FLARE's θ (SWEPT, with its own run) a line, the Pareto front of those that
    answered every question dashed; returns the front, cheapest first."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary)
    xs = [summary[m]["lm_calls_per_question"] for m in names]
    ys = [summary[m]["f1"] * 100 for m in names]
    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    ax.errorbar(xs, ys, yerr=error_bars([summary[m] for m in names], "f1"), fmt="o",
                capsize=3, alpha=0.8)
    for m, x, y in zip(names, xs, ys, strict=True):
        n = summary[m]["n"]
        ax.annotate(m + ("" if n == max(s["n"] for s in summary.values()) else f" (n={n})"),
                    (x, y), fontsize=7, textcoords="offset points", xytext=(5, 3))
    for gate, marker in zip(SWEPT, MARKERS, strict=True):
        curve = sorted([(v["lm_calls_per_question"], v["f1"] * 100)
                        for label, v in swept.items() if label.split(" ")[0] == gate]
                       + ([(summary[gate]["lm_calls_per_question"], summary[gate]["f1"] * 100)]
                          if gate in summary else []))
        if len(curve) > 1:
            ax.plot(*zip(*curve, strict=True), marker=marker, markersize=4, linewidth=0.8,
                    alpha=0.7, label=f"{gate}, {'θ' if gate == 'flare' else 'thresholds'} swept")
    every = {**summary, **swept}
    full = max(s["n"] for s in every.values())  # a run cut short is not on the front
    front = pareto([(m, s["lm_calls_per_question"], s["f1"]) for m, s in every.items()
                    if s["n"] == full])
    ax.step([every[m]["lm_calls_per_question"] for m in front],
            [every[m]["f1"] * 100 for m in front], where="post", color="black",
            linestyle="--", linewidth=1, label="Pareto front")
    ax.set_xscale("log")
    ticks = [t for t in (1, 1.5, 2, 3, 5, 10, 20, 30) if min(xs) / 1.2 <= t <= max(xs) * 1.2]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("LM calls per question (log scale)")
    ax.set_ylabel("F1 (%), bars: 95% intervals")
    ax.set_title(f"{title}, {model}", fontsize=9)
    ax.legend(loc="lower right", fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return front


def header(table: Table, n: int) -> str:
    """The table's title and what was run (the 2Wiki text is the committed table's)."""
    if table is TWOWIKI:
        return (
            f"### Every method on the same {n} 2WikiMultihopQA questions (issue #21; the first "
            "100 of the main table; default model, paper exemplars with their retrieved "
            "documents, BM25 k=2, answers capped at 128 tokens, LM cache shared)\n\n"
            "flare, none and single are the main run's rows (or the same methods re-run on these "
            "100 questions, which gave the same answers); each method's thresholds were fixed "
            "before its run (results/gate_thresholds.json for the gates; the papers' or the "
            "registry's defaults for the others). ")
    if table is TWOWIKI200:
        return (
            f"### none, single, FLARE, IRCoT and the best new method on {n} 2WikiMultihopQA "
            "questions (issue #21; the main table's 200, settings as in the 100-question "
            "table)\n\n"
            "The best new method is the one with the highest F1 on the 100-question table "
            "(gate_entropy_max, at its median threshold; chosen by a point estimate within "
            "noise of the others); its first 100 questions are that table's. ")
    if table is FAMILY:
        return (
            f"### The FLARE family on the same {n} 2WikiMultihopQA questions (issue #18; the "
            "first 100 of the main table; default model, paper exemplars with their retrieved "
            "documents, BM25 k=2, θ=0.8, β=0.4, answers capped at 128 tokens)\n\n"
            "flare, none and single are the rows of 2wiki-after-flare-n100 on these questions "
            "(its committed summaries and per-question scores where their run folders are "
            "gone); the other methods ran with the registry's settings, nothing tuned on these "
            "questions. ")
    if table is BETA:
        return (
            f"### FLARE's β and masking on the same {n} 2WikiMultihopQA questions (issue #18, "
            "Table 5; the first 100 of the main table; default model, paper exemplars with "
            "their retrieved documents, BM25 k=2, θ=0.8, answers capped at 128 tokens)\n\n"
            "`activerag sweep beta --variants ...`: β 0, 0.2 and 0.6 with per-token masking "
            "(the paper's), and at β 0.4 whole-word masking ('word') and whole words that never "
            "mask a word of the question ('word+x'); β 0.4 with per-token masking is FLARE's own "
            "setting, its flare row (flare, none and single are the rows of "
            "2wiki-after-flare-n100); both masking options at β 0.2 and 0.6 ran afterwards "
            "(sweeps-table5-options). Table 5 and its plot: 2wiki-table5-n100.md, .png. ")
    if table is REPLUG:
        return (
            f"### REPLUG on the same {n} 2WikiMultihopQA questions (issue #18, Table 3's "
            "shape; the first 100 of the main table; default model, the paper's exemplars "
            "without documents (10 a prompt would not fit 4,096 tokens), BM25 k=10 over the "
            "2Wiki corpus, answers capped at 128 tokens)\n\n"
            "none, the top document (single_k1), the 10 documents concatenated (single_k10) "
            "and the released code's answer-level vote over the 10 documents' greedy answers "
            "(replug_vote); flare is 2wiki-after-flare-n100's row (its exemplars carry their "
            "documents, so it is not this table's setting: a landmark, not a baseline). "
            "REPLUG's token-level ensemble (replug, agree mode) ran in a folder of its own "
            "(2wiki-replug-agree-n100), alone on the server, over two sessions (74 questions, "
            "then the last 26 resumed from the run folder): about 110 LM calls and a minute or "
            "more a question on this 2-core machine. ")
    return (
        f"### The same methods on {n} HotpotQA questions (issue #21; the first 100 of rpt's "
        "official dev split; default model, the paper's 2Wiki exemplars with the documents BM25 "
        "retrieves for them, BM25 k=2 over the 32,140-paragraph union corpus, answers capped at "
        "128 tokens, LM cache shared; IRCoT with its own HotpotQA exemplars)\n\n"
        "none, single, flare, ircot and the three new methods with the highest F1 on the 2Wiki "
        "table (gate_entropy_max, adaptive_rag_prompt, gate_entropy_mean: chosen by the 2Wiki "
        "point estimates, which are within noise of one another), with the thresholds of the "
        "2Wiki runs. ")


def report(table: Table) -> None:
    """Write TABLE's .md, .json, -scores.json and .png from its run folders."""
    folders = [table.questions, *table.sources, *table.sweeps]
    if not any((RUNS / f).exists() for f in folders):
        print(f"skipped {table.name}: none of its run folders is in runs/ (its committed "
              "results stand)")
        return
    if not ((RUNS / table.questions / "config.json").exists()
            or (OUT / f"{table.name}-scores.json").exists()):
        print(f"skipped {table.name}: runs/{table.questions} is missing and nothing was "
              "committed")
        return
    rows, methods, frozen = load_rows(table)
    if "flare" not in methods or "none" not in methods:
        print(f"skipped {table.name}: its flare and none rows are missing")
        return
    against_flare = summaries(rows, methods, "flare", frozen)
    against_none = summaries(rows, methods, "none", frozen)
    swept, swept_rows = swept_summaries(table, rows, frozen)
    swept_names = list(swept)
    thetas = [m.split("=")[1] for m in swept_names if m.startswith("flare ")]
    front = plot(against_flare, swept, OUT / f"{table.name}.png", table.title)
    sweep_text = (
        "#### Each gate's threshold and FLARE's θ swept (p against flare)\n\nThresholds: the "
        "10, 25, 75 and 90% quantiles of each estimator's values on the 40 calibration questions "
        "(results/gate_thresholds.json; the median is the gate's own row above), fixed before "
        "the sweep; its requests came from the LM cache wherever an earlier run had made them "
        "(the gates' first passes, single's retrieval passes), so it took about a second a "
        "question. " + (
            f"FLARE at θ = {', '.join(thetas)} (0.8 is its row above; 0.4 and 0.6 fixed before "
            "the runs, 0.2 and 1.0, the rest of `activerag sweep theta`'s grid, added after, "
            "and 0 later still, for Figure 5's left end): each a full run, its first drafts "
            "from the cache. " if thetas else "") +
        ("ETC's threshold at 0.9 and 1.7 and DRAGIN-lite's at 0.7 and 1.3 (0.7 and 1.3 times "
         "their defaults, 1.3 and 1.0, fixed before the runs): each a full run; a row with a "
         "smaller n did not finish and is not on the Pareto front."
         if any(m.startswith(("flare_etc ", "dragin_lite ")) for m in swept_names) else
         "ETC's and DRAGIN-lite's thresholds are not swept on these questions: each of their "
         "points is a full run of new requests.") + "\n\n"
        + markdown_table(
            {"flare": against_flare["flare"], **swept}, label="variant") + "\n"
        if swept else "")
    n = max(s["n"] for s in against_flare.values())
    text = (
        header(table, n) + (
            f"{', '.join(frozen)}: the row{'s are' if len(frozen) > 1 else ' is'} as "
            "committed before its run folder was lost with its machine (its paired tests "
            "recomputed from the committed per-question scores, "
            f"{' or '.join(f'{t}-scores.json' for t in [table.name, *table.borrowed])}). "
            if frozen else "") +
        "A row with a smaller n finished only those "
        "questions; its p is paired on them. Seconds per question are not comparable across "
        "rows: rows that share requests took them from the cache; LM calls and tokens count "
        "every request, cached or not.\n\n"
        "#### The published claims\n\n" + claims_table(rows, table) +
        f"\n'≈' needs the 95% interval of the paired F1 difference inside ±{MARGIN} (fixed "
        f"before the runs). 'Not shown' is not 'refuted': at n = {n} a difference of a few F1 "
        "points is within noise.\n\n"
        f"#### Against flare\n\n{markdown_table(against_flare)}\n"
        f"#### Against none (no retrieval)\n\n{markdown_table(against_none)}\n"
        + sweep_text +
        f"Pareto front of F1 against LM calls per question: {', '.join(front)} "
        f"(plot: {table.name}.png)\n")
    (OUT / f"{table.name}.md").write_text(text)
    (OUT / f"{table.name}.json").write_text(json.dumps(against_flare, indent=1))
    (OUT / f"{table.name}-scores.json").write_text(json.dumps(scores(rows + swept_rows)))
    if swept:
        (OUT / f"{table.name}-sweeps.json").write_text(json.dumps(
            {m: {k: v for k, v in s.items() if k != "vs_first"} for m, s in swept.items()},
            indent=1))
    print(text)


if __name__ == "__main__":
    for each in TABLES:
        report(each)
