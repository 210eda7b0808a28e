"""How many demo answers name an entity of the library's exemplars, before and after the
exemplars changed (issue: exemplars with nothing to copy).

    python results/exemplar_copies.py RUN_BEFORE RUN_AFTER [--out results/exemplar-copies.md]

RUN_BEFORE and RUN_AFTER are `activerag eval --dataset demo` run folders of the same methods
and questions. An answer "names" an entity when its text holds the entity's name; the old
exemplars' invented entities and the new ones' real ones are both counted in both runs, so a
copy of either shows. Each share carries a 95% bootstrap interval, each change a paired p.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from activerag.evaluation.stats import bootstrap_ci, paired_permutation_p
from activerag.nodes.prompts import EXEMPLAR_ENTITIES

OLD_ENTITIES = ("Morrow Lamp Works", "Ilsa Brandt", "Kelmor", "Vedria", "Osterfeld")
"""What the exemplars named until they changed (invented, of the demo corpus's own kind)."""


def rows(run: Path) -> dict[tuple[str, str], dict]:
    """(method, question id) -> row of RUN's examples.jsonl."""
    out = {}
    for line in (run / "examples.jsonl").read_text().splitlines():
        row = json.loads(line)
        out[(row["method"], row["id"])] = row
    return out


def names(answer: str, entities: tuple[str, ...]) -> float:
    return float(any(e.lower() in answer.lower() for e in entities))


def fmt(values: list[float]) -> str:
    low, high = bootstrap_ci(values)
    share = sum(values) / len(values)
    return f"{int(sum(values))}/{len(values)} ({share:.3f} [{low:.3f}, {high:.3f}])"


def table(before: dict, after: dict) -> list[str]:
    methods = sorted({m for m, _ in before}, key=lambda m: ["none", "single", "flare"].index(m)
                     if m in ("none", "single", "flare") else 9)
    lines = ["| method | exemplars | names an old exemplar entity | names a new one | any | "
             "em |", "|---|---|---|---|---|---|"]
    verdicts = []
    for method in methods:
        keys = sorted(k for k in before if k[0] == method and k in after)
        series = {}
        for label, run in (("before", before), ("after", after)):
            answers = [run[k]["answer"] for k in keys]
            old = [names(a, OLD_ENTITIES) for a in answers]
            new = [names(a, EXEMPLAR_ENTITIES) for a in answers]
            both = [max(o, n) for o, n in zip(old, new, strict=True)]
            em = [float(run[k]["em"]) for k in keys]
            series[label] = (both, em)
            lines.append(f"| {method} | {label} | {fmt(old)} | {fmt(new)} | {fmt(both)} | "
                         f"{sum(em) / len(em):.3f} |")
        p_copy = paired_permutation_p(series["after"][0], series["before"][0])
        p_em = paired_permutation_p(series["after"][1], series["before"][1])
        verdicts.append(f"- {method}: answers naming an exemplar entity "
                        f"{int(sum(series['before'][0]))} -> {int(sum(series['after'][0]))} "
                        f"(paired p {p_copy:.3f}); EM {sum(series['before'][1]) / len(keys):.3f}"
                        f" -> {sum(series['after'][1]) / len(keys):.3f} (paired p {p_em:.3f})")
    return lines + [""] + verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--out", type=Path, default=Path("results/exemplar-copies.md"))
    parser.add_argument("--title", default="Demo answers that name an exemplar's entity")
    args = parser.parse_args()
    lines = [f"# {args.title}", "", *table(rows(args.before), rows(args.after)), ""]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
