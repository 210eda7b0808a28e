"""Issue #37's tables with the 1.5B reader on llama.cpp, and each beside the default model's.

Run from the repository root after results/run_all.sh's 1.5B section (runs/ holds the run
folders). The whole rewrite refuses, writing nothing, when a run folder is missing (it once
rewrote the committed file from 91 lines to 6); a section's rewrite skips a missing run and
keeps the other sections as committed:

    python results/tables_15b.py               # every table (each run folder needed)
    python results/tables_15b.py --only-fb-rag # FB-RAG's, the other sections kept
    python results/tables_15b.py --only-demo   # the demo set's, the other sections kept
"""

import json
import shutil
from pathlib import Path
from typing import Any

from merging import OUT, RUNS, merged_table

from activerag.evaluation.summaries import summarise_methods
from activerag.evaluation.tables import p_text

MAIN_PARTS = {f"2wiki-main-n200-15b-{m}": None for m in ("flare", "single", "none")}


def cell(summary: dict[str, Any], key: str) -> str:
    if key not in summary:
        return "-"
    low, high = summary[f"{key}_ci"]
    return f"{summary[key]:.3f} [{low:.3f}, {high:.3f}]"


def p_cell(summary: dict[str, Any], key: str) -> str:
    p = summary.get("vs_first", {}).get(f"{key}_p")
    return p_text(p)


def side_by_side(title: str, rows: list[tuple[str, str, dict[str, Any] | None,
                                              dict[str, Any] | None]], key: str) -> list[str]:
    """A table of KEY per (label, method): the default model's and the 1.5B's, each with its
    paired p against the first method of its own run."""
    lines = [f"### {title}", "",
             f"| rows | method | 0.5B {key} | p | 1.5B {key} | p |", "|---|---|---|---|---|---|"]
    for label, name, small, large in rows:
        s = (small or {}).get(name, {})
        b = (large or {}).get(name, {})
        lines.append(f"| {label} | {name} | {cell(s, key)} | {p_cell(s, key)} | "
                     f"{cell(b, key)} | {p_cell(b, key)} |")
    return lines + [""]


def demo() -> list[str]:
    run = RUNS / "demo-n48-15b"
    if not (run / "summary.json").exists():
        print("skipped demo-n48-15b: no summary in runs/")
        return []
    shutil.copy(run / "summary.md", OUT / "demo-n48-15b.md")
    large = json.loads((run / "summary.json").read_text())
    (OUT / "demo-n48-15b.json").write_text(json.dumps(large, indent=1))
    small = json.loads((OUT / "demo-n48.json").read_text())
    from after_flare_rows import scores

    from activerag.evaluation.evaluate import Run

    # per question, so that a later run pairs with these without runs/ (the 0.5B's: collect.py)
    (OUT / "demo-n48-15b-scores.json").write_text(json.dumps(scores(Run(run).rows())))
    rows = [(group, m, small["groups"].get(group), large["groups"].get(group))
            for group in ("one-hop", "two-hop") for m in ("flare", "single", "none",
                                                           "flare_combined")]
    if (RUNS / "demo-n48-15b-trained-punkt" / "examples.jsonl").exists():
        merged_table("demo-n48-15b-punkt", "FLARE on the demo set, the 1.5B on llama.cpp, the "
                     "corpus split by untrained Punkt (as since the Punkt minimum) and by the "
                     "Punkt the demo corpus had taught (as before); p: sign-flip test against "
                     "the first", {"demo-n48-15b": {"flare": "flare"}, "demo-n48-15b-trained-punkt":
                                   {"flare": "flare, demo-trained Punkt"}},
                     ["flare", "flare, demo-trained Punkt"])
    return side_by_side("The demo set by kind, EM (0.5B on vLLM: results/demo-n48.md; 1.5B on "
                        "llama.cpp: results/demo-n48-15b.md; both with issue #36's exemplar and "
                        "the demo corpus split by untrained Punkt)", rows, "em")


def main_table() -> list[str]:
    large = merged_table("2wiki-main-n200-15b", "2WikiMultihopQA, the 1.5B reader on llama.cpp",
                         MAIN_PARTS, ["flare", "single", "none"], common=True)
    if large is None:
        return []
    small = json.loads((OUT / "2wiki-main-n200.json").read_text())["summary"]
    n = large["flare"]["n"]
    if n < 200:  # the runs were stopped: say so in the table itself
        table = OUT / "2wiki-main-n200-15b.md"
        table.write_text(f"**Partial: the {n} of the 200 questions that all three runs finished "
                         "before they were stopped; the same commands (results/run_all.sh) "
                         "resume them.**\n\n" + table.read_text())
    first_n = first_of(small_rows(), n)
    rows = [(f"0.5B: all 200; 1.5B: its {n}", m, small, large) for m in ("flare", "single", "none")]
    rows += [(f"both: the 1.5B's {n}", m, first_n, large) for m in ("flare", "single", "none")]
    return (side_by_side(f"2WikiMultihopQA main table, F1 (0.5B: results/2wiki-main-n200.md; "
                         f"1.5B: the {n} of the same 200 questions all three methods finished)",
                         rows, "f1")
            + side_by_side("... and EM", rows, "em"))


HOTPOT_PARTS = {f"hotpotqa-{part}n100-15b": None
                for part in ("", "flare-", "ircot-", "after-")}
HOTPOT_METHODS = ["none", "single", "flare", "ircot", "gate_entropy_max", "gate_entropy_mean",
                  "adaptive_rag_prompt", "flare_etc", "dragin_lite", "flare_seakr"]


def hotpot_table() -> list[str]:
    """The after-FLARE table on HotpotQA: the 1.5B's runs that exist, on the questions all
    their methods finished, beside the default model's on those questions; p against none."""
    parts = {k: v for k, v in HOTPOT_PARTS.items() if (RUNS / k / "examples.jsonl").exists()}
    if not parts:
        print("skipped hotpotqa-after-flare-n100-15b: no run in runs/")
        return []
    from activerag.evaluation.evaluate import Run

    by_method: dict[str, set[str]] = {}
    for name in parts:
        for r in Run(RUNS / name).rows():
            by_method.setdefault(r["method"], set()).add(r["id"])
    # a method whose run has not reached every question the others finished waits for the
    # next refresh, rather than shrinking everyone's table to its few questions
    most = max(len(ids) for ids in by_method.values())
    methods = [m for m in HOTPOT_METHODS if len(by_method.get(m, ())) == most]
    unfinished = {m: len(by_method[m]) for m in HOTPOT_METHODS
                  if m in by_method and m not in methods}
    large = merged_table("hotpotqa-after-flare-n100-15b", "HotpotQA after FLARE, the 1.5B "
                         "reader on llama.cpp", parts, methods, common=True)
    if large is None:
        return []
    done = set.intersection(*(by_method[m] for m in methods))
    kept = [r for r in small_rows("hotpotqa-after-flare-n100-scores.json")
            if r["id"] in done and r["method"] in methods]
    small = summarise_methods(kept, methods) if kept else {}
    n = large[methods[0]]["n"]
    rows_15b = [r for name in parts for r in Run(RUNS / name).rows()
                if r["id"] in done and r["method"] in methods]
    with (OUT / "hotpotqa-after-flare-n100-15b.md").open("a") as table:
        table.write("\n" + "\n".join(differences(rows_15b, methods)) + "\n")
    from after_flare import plot

    plot(large, {}, OUT / "hotpotqa-after-flare-n100-15b.png", f"HotpotQA, n={n}",
         "Qwen2.5-Coder-1.5B on llama.cpp")
    if n < 100 or unfinished:
        table = OUT / "hotpotqa-after-flare-n100-15b.md"
        waiting = "; ".join(f"{m}: {k} so far" for m, k in unfinished.items())
        table.write_text(f"**Partial: {', '.join(methods)} only, on the {n} of the 100 "
                         "questions every run so far finished"
                         + (f" (left out until they finish: {waiting})" if waiting else "")
                         + "; the same commands (results/run_all.sh) resume them.**\n\n"
                         + table.read_text())
    rows = [(f"both: the 1.5B's {n}", m, small, large) for m in methods]
    return (side_by_side(f"HotpotQA after FLARE, F1 (0.5B: results/hotpotqa-after-flare-n100.md; "
                         f"1.5B: the {n} of the same 100 questions every 1.5B run finished; "
                         "p against none)", rows, "f1")
            + side_by_side("... and EM", rows, "em"))


FB_PARTS = ("fb_rag", "fb_rag_fb", "op_rag", "vanilla_rag", "self_route", "long_context")


def fb_rag_tables() -> list[str]:
    """FB-RAG and its baselines with the 1.5B reading and the 0.5B drawing the light samples
    (both on llama.cpp), per dataset: the table, its per-question scores, the paper's claim
    checked against the best baseline, the F1-latency plot; beside the 0.5B reader's table."""
    from after_flare_rows import scores
    from fbrag_report import FB_DATASETS, claim, fb_setup, plot_fb_rag

    from activerag.evaluation.tables import LONG_CONTEXT_COLUMNS

    setup = fb_setup("Qwen2.5-Coder-0.5B-Instruct samples, ", "Qwen2.5-Coder-1.5B-Instruct")
    lines, tables = [], {}
    for ds, name in FB_DATASETS.items():
        run = f"fbrag-{ds}-y500-15b"
        if not (RUNS / run / "examples.jsonl").exists():
            print(f"skipped fbrag-{ds}-1500w-15b: no run in runs/")
            continue
        parts, every = fb_parts(run)
        present = {r["method"] for r in every}
        large = merged_table(f"fbrag-{ds}-1500w-15b", f"FB-RAG and its baselines on {name}, the "
                             f"1.5B reader on llama.cpp: {setup}; Y = 500 words; p: paired "
                             "bootstrap against fb_rag" + rerun_note(parts), parts,
                             [m for m in FB_PARTS if m in present],
                             columns=LONG_CONTEXT_COLUMNS, common=True)
        if large is None:
            continue
        tables[ds] = large
        rows = [r for r in every if r["method"] in large]
        done = set.intersection(*({r["id"] for r in rows if r["method"] == m} for m in large))
        (OUT / f"fbrag-{ds}-1500w-15b-scores.json").write_text(json.dumps(scores(
            [r for r in rows if r["id"] in done],
            ("em", "f1", "gold_word_recall", "latency_seconds", "lm_calls"))))
        said = claim(large, [r for r in rows if r["id"] in done])
        with (OUT / f"fbrag-{ds}-1500w-15b.md").open("a") as table:
            table.write("\n" + said + "\n")
        small = json.loads((OUT / f"fbrag-{ds}-1500w.json").read_text())
        n, n_small = large["fb_rag"]["n"], small["fb_rag"]["n"]
        side = [(f"0.5B: {n_small}; 1.5B: {n}", m, small, large) for m in large]
        lines += side_by_side(f"FB-RAG on {name}, F1 (0.5B reads, SmolLM2 samples: "
                              f"results/fbrag-{ds}-1500w.md; 1.5B reads, the 0.5B samples: "
                              f"results/fbrag-{ds}-1500w-15b.md; p against fb_rag)", side, "f1")
        lines += [said, ""]
    plot_fb_rag(tables, OUT / "fbrag-f1-latency-15b.png", "Qwen2.5-Coder-1.5B reads, the 0.5B "
                "samples, both on llama.cpp; Y = 500 words, K = 5")
    return lines


def fb_parts(run: str) -> tuple[dict[str, list[str] | None], list[dict[str, Any]]]:
    """RUN's folder and, where RUN-rerun exists, the methods re-run there alone (rows that
    shared the machine with other work), each method's rows from one folder; and those rows."""
    from activerag.evaluation.evaluate import Run

    rerun = f"{run}-rerun"
    if not (RUNS / rerun / "examples.jsonl").exists():
        return {run: None}, Run(RUNS / run).rows()
    again = Run(RUNS / rerun).rows()
    redone = {r["method"] for r in again}
    kept = [r for r in Run(RUNS / run).rows() if r["method"] not in redone]
    return ({run: sorted({r["method"] for r in kept}), rerun: sorted(redone)}, kept + again)


def rerun_note(parts: dict[str, list[str] | None]) -> str:
    """What a table's title says of the methods fb_parts took from a re-run folder."""
    return "".join(f"; {', '.join(ms)} re-run alone, the reader's prompt cache off ({folder})"
                   for folder, ms in list(parts.items())[1:] if ms)


def differences(rows: list[dict[str, Any]], methods: list[str]) -> list[str]:
    """F1 of each method minus single's and FLARE's, paired on the same questions."""
    from after_flare import paired

    lines = ["F1 differences, paired by question (95% bootstrap interval; paired sign-flip p):",
             "", "| method | against | F1 difference | p | n |", "|---|---|---|---|---|"]
    for against in ("single", "flare"):
        for m in methods:
            d = paired(rows, m, against) if m not in (against, "none") else None
            if d is not None:
                lo, hi = d["ci"]
                lines.append(f"| {m} | {against} | {d['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] | "
                             f"{d['p']:.3f} | {d['n']} |")
    return lines


def small_rows(name: str = "2wiki-after-flare-n200-scores.json") -> list[dict[str, Any]]:
    """The default model's rows, from its committed per-question scores (file NAME)."""
    path = OUT / name
    scores = json.loads(path.read_text())
    return [dict(zip(scores["fields"], values, strict=True))
            | {"method": m, "id": qid, "sentences": 0, "retrieved_sentences": 0, "seconds": 0.0}
            for m, by_id in scores["methods"].items() for qid, values in by_id.items()]


def first_of(rows: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """The default model's summary on the N questions every 1.5B run finished."""
    from activerag.evaluation.evaluate import Run

    done = set.intersection(*[{r["id"] for r in Run(RUNS / name).rows()}
                              for name in MAIN_PARTS])
    kept = [r for r in rows if r["id"] in done and r["method"] in ("flare", "single", "none")]
    assert len(done) == n, (len(done), n)
    return summarise_methods(kept, ["flare", "single", "none"]) if kept else {}


def only(lines: list[str], start: str, end: str | None = None) -> None:
    """Rewrite the section of models-side-by-side.md from its line starting START up to the
    next starting END (None: to the end) with LINES, keeping the other sections as committed:
    their run folders may be gone."""
    if not lines:
        return
    side = OUT / "models-side-by-side.md"
    text = side.read_text()
    first = text.find(start)
    kept = text[:first] if first >= 0 else text.rstrip("\n") + "\n\n"
    last = text.find(end, first) if end and first >= 0 else -1
    side.write_text(kept + "\n".join(lines) + "\n" + (text[last:] if last >= 0 else ""))
    print("\n".join(lines))


def missing_runs() -> list[str]:
    """The run folders every section of a whole rewrite needs that runs/ lacks."""
    from fbrag_report import FB_DATASETS

    needed = {"demo-n48-15b": "summary.json", **{name: "examples.jsonl" for name in
                                                  [*MAIN_PARTS, *HOTPOT_PARTS]},
              **{f"fbrag-{ds}-y500-15b": "examples.jsonl" for ds in FB_DATASETS}}
    return [name for name, file in needed.items() if not (RUNS / name / file).exists()]


SECTIONS = {"--only-fb-rag": (fb_rag_tables, "### FB-RAG on ", None),
            "--only-demo": (demo, "### The demo set by kind", "### 2WikiMultihopQA main table")}


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] and sys.argv[1] in SECTIONS:
        make, start, end = SECTIONS[sys.argv[1]]
        only(make(), start, end)
        raise SystemExit(0)
    if lacking := missing_runs():
        print(f"results/tables_15b.py: runs/ lacks {', '.join(lacking)}; make them with "
              "results/run_all.sh's 1.5B section, or copy the run folders back into runs/. "
              "Nothing was written: models-side-by-side.md is left as committed (--only-demo "
              "or --only-fb-rag rewrites one section from what runs/ holds).", file=sys.stderr)
        raise SystemExit(2)
    lines = ["# The default model beside the 1.5B reader (issue #37)", "",
             "p: sign-flip test against the first method of the same model's run.", "",
             "Tables 4 and 6 (REPLUG and the FLARE family on 2Wiki, one run folder a method) "
             "carry their side-by-side sections in their own files: 2wiki-replug-n100-15b.md "
             "and 2wiki-family-n100-15b.md (results/judged_15b.py).", "",
             *demo(), *main_table(), *hotpot_table(), *fb_rag_tables()]
    Path(OUT / "models-side-by-side.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
