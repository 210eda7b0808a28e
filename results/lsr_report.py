"""Issue #18's REPLUG-LSR on the default model: gold-title recall@k on the first 200 2Wiki
questions (held out) with the collection's MiniLM, the query tower the default model taught and
the shuffled-teacher control (and SmolLM2-135M as the teacher at the same budget), each
question's recall kept so every pair of towers gets a paired p; and, where their run folders
exist, the answers from the top-1 document the dense retriever finds before and after LSR on
the first 100 questions.

Run it, like collect.py, from the folder whose runs/ holds lsr-2wiki-05b and
lsr-2wiki-05b-shuffled (and 2wiki-dense-top1-05b-n100, 2wiki-lsr-top1-05b-n100,
2wiki-replug-n100), with the store the towers were trained on:
`python results/lsr_report.py --store $DENSE_STORE` (results/run_all.sh). Writes
results/lsr05b-2wiki-recall.{md,json}, lsr05b-recall.png and, with the QA runs,
2wiki-lsr05b-top1.{md,json}; with both teachers' towers, lsr05b-teachers.md from the LM score
cache their training filled (under ACTIVERAG_HOME).
"""

import argparse
import json
import math
from pathlib import Path

from merging import save_recall_plot

from activerag.evaluation.datasets import twowiki
from activerag.evaluation.stats import bootstrap_ci, paired_permutation_p
from activerag.lsr import ScoreCache, lm_score, recall_at, training_examples
from activerag.settings import Settings
from activerag.stores.corpus import Corpus
from activerag.stores.query_encoder import QueryEncoder

RUNS = Path("runs")
OUT = Path(__file__).resolve().parent
KS = (1, 2, 5, 10, 20)
TOWERS = {"LSR (0.5B teacher)": "lsr-2wiki-05b",
          "shuffled teacher (control)": "lsr-2wiki-05b-shuffled",
          "LSR (SmolLM2 teacher)": "lsr-2wiki-smol160"}
PAIRS = [("LSR (0.5B teacher)", "MiniLM"), ("LSR (0.5B teacher)", "shuffled teacher (control)"),
         ("LSR (0.5B teacher)", "LSR (SmolLM2 teacher)"), ("LSR (SmolLM2 teacher)", "MiniLM"),
         ("shuffled teacher (control)", "MiniLM")]
QA = {"top-1, LSR tower (dense)": ("2wiki-lsr-top1-05b-n100", "single_k1"),
      "top-1, MiniLM (dense)": ("2wiki-dense-top1-05b-n100", "single_k1"),
      "top-1, BM25": ("2wiki-replug-n100", "single_k1"),
      "no retrieval": ("2wiki-replug-n100", "none")}


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def cell(values: list[float]) -> str:
    low, high = bootstrap_ci(values)
    return f"{mean(values):.3f} [{low:.3f}, {high:.3f}]"


def recall_table(store: Path, n: int) -> dict[str, dict[int, list[float]]]:
    """Per-question recall@k of every tower whose folder exists, MiniLM first."""
    corpus = Corpus(store, None)
    held_out = twowiki()[:n]
    towers = {"MiniLM": recall_at(corpus.chroma, held_out, KS)}
    for label, name in TOWERS.items():
        if (RUNS / name).is_dir():
            encoder = QueryEncoder(RUNS / name)
            towers[label] = recall_at(encoder.index() or corpus.chroma, held_out, KS, encoder)
    return towers


def write_recall(towers: dict[str, dict[int, list[float]]], setup: str) -> None:
    """Recall@k of each tower, then each paired difference of PAIRS with its p."""
    n = len(towers["MiniLM"][KS[0]])
    lines = [f"gold-title recall@k on the first {n} 2Wiki questions (held out; {setup}; mean and "
             "95% bootstrap interval)", "", "| tower | " + " | ".join(f"k={k}" for k in KS)
             + " |", "|---|" + "---|" * len(KS)]
    lines += [f"| {t} | " + " | ".join(cell(table[k]) for k in KS) + " |"
              for t, table in towers.items()]
    lines += ["", "Paired differences (first minus second) and paired sign-flip p", "",
              "| comparison | " + " | ".join(f"k={k}" for k in KS) + " |",
              "|---|" + "---|" * len(KS)]
    for a, b in PAIRS:
        if a in towers and b in towers:
            diffs = [mean(towers[a][k]) - mean(towers[b][k]) for k in KS]
            ps = [paired_permutation_p(towers[a][k], towers[b][k]) for k in KS]
            lines.append(f"| {a} - {b} | " + " | ".join(
                f"{d:+.3f} (p {p:.3f})" for d, p in zip(diffs, ps, strict=True)) + " |")
    data = {"setup": setup, "n": n, "recall": {
        t: {k: {"mean": mean(table[k]), "ci": list(bootstrap_ci(table[k])), "values": table[k]}
            for k in KS} for t, table in towers.items()}}
    (OUT / "lsr05b-2wiki-recall.md").write_text("\n".join(lines) + "\n")
    (OUT / "lsr05b-2wiki-recall.json").write_text(json.dumps(data, indent=1))
    print("\n".join(lines))
    plot(towers)


def plot(towers: dict[str, dict[int, list[float]]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for (label, table), style in zip(towers.items(), ("s--", "o-", "^:", "D-"), strict=False):
        means = [mean(table[k]) for k in KS]
        cis = [bootstrap_ci(table[k]) for k in KS]
        ax.errorbar(KS, means, yerr=[[m - c[0] for m, c in zip(means, cis, strict=True)],
                                     [c[1] - m for m, c in zip(means, cis, strict=True)]],
                    fmt=style, capsize=3, label=label)
    save_recall_plot(fig, ax, list(KS), "REPLUG-LSR at 60 steps, 2Wiki held-out questions",
                     OUT / "lsr05b-recall.png")
    plt.close(fig)


def teacher_table() -> None:
    """What each teacher tells the tower in the first epoch (the same MiniLM passages for both):
    the entropy of its target Q = softmax(LM score / beta) over a question's 10 passages, and how
    often its favourite passage has a gold title, on the questions with a gold passage among
    the 10, beside a random passage's and MiniLM's first passage's rate; p: paired sign-flip test
    against the first teacher. LM scores from the score cache the training filled."""
    metas = {name: json.loads((RUNS / name / "lsr.json").read_text())
             for name in (TOWERS["LSR (0.5B teacher)"], TOWERS["LSR (SmolLM2 teacher)"])
             if (RUNS / name / "lsr.json").exists()}
    if len(metas) < 2:
        return
    meta = next(iter(metas.values()))
    examples = training_examples(meta["questions"], meta["config"]["seed"])
    found = json.loads((RUNS / TOWERS["LSR (0.5B teacher)"] / "epoch-0.json").read_text())
    cache = ScoreCache(Settings.from_env().home / "lsr-lm-scores.sqlite")
    beta, prompt = meta["config"]["beta"], meta["teacher_prompt"]
    entropy: dict[str, list[float]] = {m["lm"]: [] for m in metas.values()}
    top_gold: dict[str, list[float]] = {m["lm"]: [] for m in metas.values()}
    random_gold, first_gold = [], []
    for example, row in zip(examples, found, strict=True):
        gold = [float(t in example.gold_titles) for t in row["titles"]]
        scores = {}
        for lm in entropy:
            logprobs = [cache.get(cache.key(example.question, pid, example.answers[0].strip(), lm,
                                            prompt)) for pid in row["ids"]]
            if not all(logprobs):
                break
            scores[lm] = [lm_score(v, meta["config"]["lm_score"]) / beta for v in logprobs]
        if len(scores) < len(entropy) or not any(gold):
            continue
        for lm, z in scores.items():
            top = max(z)
            q = [math.exp(v - top) for v in z]
            q = [v / sum(q) for v in q]
            entropy[lm].append(-sum(v * math.log(v) for v in q if v > 0))
            top_gold[lm].append(gold[q.index(max(q))])
        random_gold.append(mean(gold))
        first_gold.append(gold[0])
    first = next(iter(top_gold))
    lines = [f"What each teacher's LM scores say about the first epoch's 10 MiniLM passages, "
             f"on the {len(first_gold)} of {len(examples)} training questions with a gold-title "
             f"passage among them and an LM score for every passage (beta = {beta}; p: paired "
             f"bootstrap against {first})", "",
             "| teacher | entropy of Q (nats; uniform 2.303) | its top passage has a gold title |",
             "|---|---|---|"]
    for lm in entropy:
        ps = ["" if lm == first else f" (p {paired_permutation_p(d[first], d[lm]):.2f})"
              for d in (entropy, top_gold)]
        lines.append(f"| {lm} | {cell(entropy[lm])}{ps[0]} | {cell(top_gold[lm])}{ps[1]} |")
    lines += [f"| (a random passage of the 10) | - | {cell(random_gold)} |",
              f"| (MiniLM's first passage) | - | {cell(first_gold)} |"]
    (OUT / "lsr05b-teachers.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def qa_table() -> None:
    """The top-1 document (single_k1) retrieved by MiniLM and by the LSR tower, beside BM25's
    top-1 and no retrieval from the REPLUG run (runs/2wiki-replug-n100, same prompts), paired
    on the questions all runs finished; p against the LSR tower's row."""
    rows: dict[str, dict[str, dict]] = {}
    for label, (name, method) in QA.items():
        path = RUNS / name / "examples.jsonl"
        if not path.exists():
            return
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r["method"] == method:
                rows.setdefault(label, {})[r["id"]] = r
    ids = sorted(set.intersection(*(set(v) for v in rows.values())))
    base = "top-1, LSR tower (dense)"
    metrics = ("em", "f1", "gold_title_recall")
    lines = ["| retrieval | n | EM | F1 | gold-title recall |", "|---|---|---|---|---|"]
    table = []
    for label, by_id in rows.items():
        entry: dict[str, object] = {"retrieval": label, "n": len(ids)}
        texts = []
        for metric in metrics:
            values = [float(by_id[i][metric]) for i in ids]
            entry[metric] = {"mean": mean(values), "ci": list(bootstrap_ci(values))}
            text = cell(values)
            if label != base:
                p = paired_permutation_p([float(rows[base][i][metric]) for i in ids], values)
                entry[f"{metric}_p"] = p
                text += f" (p {p:.2f})"
            texts.append(text)
        lines.append(f"| {label} | {len(ids)} | " + " | ".join(texts) + " |")
        table.append(entry)
    (OUT / "2wiki-lsr05b-top1.md").write_text(
        "### The top-1 document retrieved before (MiniLM) and after LSR with the default model "
        "as teacher, on the first 2Wiki dev questions, beside BM25's top-1 and no retrieval "
        "(paper exemplars without documents; Qwen2.5-Coder-0.5B-Instruct; answers capped at "
        "128 tokens; p: paired sign-flip test against the LSR tower's row)\n\n"
        + "\n".join(lines) + "\n")
    (OUT / "2wiki-lsr05b-top1.json").write_text(json.dumps(table, indent=1))
    print((OUT / "2wiki-lsr05b-top1.md").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True, help="the dense store trained on")
    parser.add_argument("--n", type=int, default=200, help="held-out questions")
    args = parser.parse_args()
    meta = json.loads((RUNS / TOWERS["LSR (0.5B teacher)"] / "lsr.json").read_text())
    setup = (f"each tower {meta['questions']} training questions, {meta['steps']} steps of "
             f"batch {meta['config']['batch']}; settings in lsr05b-2wiki-lsr.json")
    write_recall(recall_table(args.store, args.n), setup)
    for name, stem in zip(TOWERS.values(), ("", "-shuffled", "-smollm2"), strict=True):
        source = RUNS / name / "lsr.json"
        if source.exists():
            (OUT / f"lsr05b-2wiki{stem}-lsr.json").write_text(source.read_text())
    teacher_table()
    qa_table()


if __name__ == "__main__":
    main()
