"""FLARE's generated tokens per kept token, before and after a change, on the same questions.

    python -m benchmarks.cost.stop_holdback BEFORE_RUN AFTER_RUN [--method flare]
                                            [--out results/stop-holdback.md]

Reads two evaluation run folders of one method over the same questions on the same server
(made by two code trees: `PYTHONPATH=TREE activerag eval ... --run FOLDER`) and prints, for
each, the generated tokens per token kept in the answers with a bootstrap interval (questions
resampled), against the goal 1 + retrieval rate + 0.1; then the per-question difference in
generated tokens (paired sign-flip test), and on how many questions the two answers are the same
text. Written for vLLM's stop-string hold-back (issue #37): a change to how a stream is read
should save tokens without changing an answer. Nothing is asserted.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from activerag.evaluation.evaluate import Run
from activerag.evaluation.stats import bootstrap_ci, bootstrap_ratio_ci, paired_permutation_p
from activerag.evaluation.summaries import summarise


def rows_of(folder: Path, method: str) -> dict[str, dict[str, Any]]:
    """The run's rows of METHOD by question id."""
    return {r["id"]: r for r in Run(folder).rows() if r["method"] == method}


def compare(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]],
            names: tuple[str, str]) -> list[str]:
    """The table and the paired lines, over the questions both runs finished."""
    ids = sorted(set(before) & set(after))
    lines = ["| code | n | generated / kept | goal 1 + rate + 0.1 | retrieval rate | EM | "
             "generated tokens | kept tokens |", "|---|---|---|---|---|---|---|---|"]
    for name, rows in zip(names, (before, after), strict=True):
        picked = [rows[i] for i in ids]
        s = summarise(picked)
        low, high = bootstrap_ratio_ci([r["generated_tokens"] for r in picked],
                                       [r["answer_tokens"] for r in picked])
        lines.append(f"| {name} | {len(ids)} | {s['generated_per_kept_token']:.3f} "
                     f"[{low:.3f}, {high:.3f}] | {1 + s['retrieval_rate'] + 0.1:.3f} | "
                     f"{s['retrieval_rate']:.3f} | {s['em']:.3f} | {s['generated_tokens']} | "
                     f"{s['answer_tokens']} |")
    old, new = ([rows[i]["generated_tokens"] for i in ids] for rows in (before, after))
    saved = [a - b for a, b in zip(old, new, strict=True)]
    low, high = bootstrap_ci(saved)
    p = paired_permutation_p(old, new)
    same = sum(before[i]["answer"] == after[i]["answer"] for i in ids)
    cuts = sum(before[i].get("sentences", 0) for i in ids)
    lines += ["", f"- Generated tokens saved a question ({names[0]} - {names[1]}): "
              f"{sum(saved) / max(1, len(ids)):.2f} [{low:.2f}, {high:.2f}] (paired p "
              f"{p:.3f}); {sum(saved)} over {len(ids)} questions"
              + (f" and {cuts} sentences" if cuts else "") + ".",
              f"- The same answer text on {same} of {len(ids)} questions."]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path, help="the run folder made before the change")
    parser.add_argument("after", type=Path, help="the run folder made after it")
    parser.add_argument("--method", default="flare")
    parser.add_argument("--names", nargs=2, default=("before", "after"))
    parser.add_argument("--out", type=Path, help="also write the lines here")
    args = parser.parse_args()
    lines = compare(rows_of(args.before, args.method), rows_of(args.after, args.method),
                    tuple(args.names))
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
