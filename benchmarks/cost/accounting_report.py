"""The accounting tables and plot from benchmarks/cost/accounting.py's questions.jsonl.

    python -m benchmarks.cost.accounting_report RUN/questions.jsonl [...] --out results/accounting

Per pass (--label) and method: a question's wall time split into the server's prefill and
decode, the client's time around its requests, retrieval and the rest; its tokens (prompt
tokens from the cache and prefilled anew, decoded, kept, thrown away and why); its floor, the
time its prefilled and decoded tokens need at the server's own rates (measured over every
request of the pass), and efficiency, the floor over the wall time (median). Means carry 95%
bootstrap intervals; FLARE over single is set against the goal 1.2 × (1 + r), r the share of
sentences that retrieved; ours against FlareChain with paired tests on seconds and F1.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from activerag.answers import extract_answer
from activerag.evaluation.metrics import best_prf, exact_match
from activerag.evaluation.stats import bootstrap_ci, paired_permutation_p
from benchmarks.cost.breakdown import covered
from benchmarks.publish import publish

PARTS = ("prefill_s", "decode_s", "client_s", "retrieval_s", "rest_s")
LABELS = {"prefill_s": "server prefill", "decode_s": "server decode",
          "client_s": "client around requests (HTTP, stream, logprobs, cut)",
          "retrieval_s": "retrieval", "rest_s": "graph, prompts, splitting (the rest)"}


def _sum(requests: list[dict[str, Any]], key: str) -> float:
    return float(sum(r.get(key) or 0 for r in requests))


def rates(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """The server's prefill and decode rates (tokens/s) over every request of ROWS."""
    reqs = [r for row in rows for r in row["requests"] if r.get("prefill_s") is not None]
    prefill = _sum(reqs, "prefilled") / max(_sum(reqs, "prefill_s"), 1e-9)
    decode = _sum(reqs, "decoded") / max(_sum(reqs, "decode_s"), 1e-9)
    return prefill, decode


def account(row: dict[str, Any], prefill_rate: float, decode_rate: float) -> dict[str, Any]:
    """One question's accounting (see the module). Requests open at once are counted once in
    the wall time; their server seconds add up, so client_s is then floored at zero."""
    reqs = row["requests"]
    # requests open at once (FlareChain asks its questions for several spans together)
    lm_wall = covered([(r["at"], r["at"] + r["wall"]) for r in reqs])
    out = {k: _sum(reqs, k) for k in ("prompt_tokens", "cached", "prefilled", "decoded",
                                      "kept", "thrown_regenerated", "thrown_past_end",
                                      "prefill_s", "decode_s")}
    out.update(wall=row["wall"], calls=len(reqs), retrieval_s=row["retrieval_s"],
               client_s=max(0.0, lm_wall - out["prefill_s"] - out["decode_s"]),
               rest_s=row["wall"] - lm_wall - row["retrieval_s"],
               sentences=row.get("sentences", 0), retrieved=row.get("retrieved", 0))
    out["floor"] = out["prefilled"] / prefill_rate + out["decoded"] / decode_rate
    out["efficiency"] = out["floor"] / row["wall"] if row["wall"] else 0.0
    prediction = extract_answer(row["answer"], fallback=True)
    out["em"] = exact_match(prediction, row["golds"])
    out["f1"] = best_prf(prediction, row["golds"])[2]
    return out


def described(values: list[float], digits: int = 2) -> str:
    low, high = bootstrap_ci(values)
    return f"{statistics.fmean(values):.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def tables(passes: dict[str, dict[str, list[dict[str, Any]]]],
           speeds: dict[str, tuple[float, float]]) -> list[str]:
    lines: list[str] = []
    for label, methods in passes.items():
        pre, dec = speeds[label]
        n = min(len(v) for v in methods.values())
        lines += [f"### Pass `{label or 'unlabelled'}`: {n} questions, one at a time; the "
                  f"server prefilled {pre:.1f} tokens/s and decoded {dec:.1f} tokens/s "
                  "over all its requests", "",
                  "| per question | " + " | ".join(methods) + " |",
                  "|---|" + "---|" * len(methods)]
        keys = [("wall", "wall seconds"), *[(k, LABELS[k] + ", s") for k in PARTS],
                ("floor", "floor: prefilled and decoded tokens at the server's rates, s"),
                ("calls", "LM requests"), ("prompt_tokens", "prompt tokens"),
                ("cached", "… served from the slot's cache"), ("prefilled", "… prefilled anew"),
                ("decoded", "tokens decoded"), ("kept", "… kept in a reply"),
                ("thrown_regenerated", "… thrown: draft regenerated after a retrieval"),
                ("thrown_past_end", "… thrown: past the kept text (look-ahead, stop)"),
                ("em", "EM"), ("f1", "F1")]
        for key, name in keys:
            digits = 3 if key in ("em", "f1") else 1 if key not in PARTS else 2
            lines.append(f"| {name} | " + " | ".join(
                described([r[key] for r in rows], digits) for rows in methods.values()) + " |")
        lines.append("| efficiency (floor / wall), median | " + " | ".join(
            f"{statistics.median(r['efficiency'] for r in rows):.2f}"
            for rows in methods.values()) + " |")
        lines += ["", *comparisons(methods), ""]
    return lines


def comparisons(methods: dict[str, list[dict[str, Any]]]) -> list[str]:
    """FLARE against single (the wall-time goal) and against each FlareChain (paired)."""
    out = []
    flare, single = methods.get("flare"), methods.get("single")
    if flare and single:
        r = sum(x["retrieved"] for x in flare) / max(1, sum(x["sentences"] for x in flare))
        ratio = sum(x["wall"] for x in flare) / sum(x["wall"] for x in single)
        goal = 1.2 * (1 + r)
        out.append(f"- FLARE / single wall time: {ratio:.2f} at retrieval rate r = {r:.2f} "
                   f"(goal ≤ 1.2 × (1 + r) = {goal:.2f}: {'met' if ratio <= goal else 'missed'})")
        answer = sum(x["kept"] - x["thrown_regenerated"] for x in flare)
        per = sum(x["decoded"] for x in flare) / max(1, answer)
        out.append(f"- FLARE decoded {per:.2f} tokens for each it kept in its answers (goal "
                   f"≤ 1 + r + 0.1 = {1.1 + r:.2f}: {'met' if per <= 1.1 + r else 'missed'})")
    for mine, our_rows in methods.items():
        if mine.split(":")[0] != "flare":
            continue
        for name, rows in methods.items():
            if not name.startswith("flarechain") or len(rows) != len(our_rows):
                continue
            speed = sum(x["wall"] for x in rows) / sum(x["wall"] for x in our_rows)
            p_wall = paired_permutation_p([x["wall"] for x in our_rows], [x["wall"] for x in rows])
            p_f1 = paired_permutation_p([x["f1"] for x in our_rows], [x["f1"] for x in rows])
            f1 = (statistics.fmean(x["f1"] for x in our_rows)
                  - statistics.fmean(x["f1"] for x in rows))
            out.append(f"- {name} against {mine}: its time / ours = {speed:.2f} (paired p "
                       f"{p_wall:.3f}); our F1 minus its F1 = {f1:+.3f} (paired p {p_f1:.3f})")
    return out


def throughput(files: list[str], raw: dict[str, dict[str, list[dict[str, Any]]]]) -> list[str]:
    """Questions per minute of each pass above concurrency 1 (its passes.jsonl wall time)
    against the same questions one at a time (the sum of their wall times in the pass of the
    same label at concurrency 1)."""
    lines = ["| pass | method | questions | concurrency | questions / min | one at a time: "
             "questions / min | speed-up |", "|---|---|---|---|---|---|---|"]
    for f in files:
        for line in Path(f).read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            label, name, c = row["label"], row["method"], row["concurrency"]
            ids = {r["id"] for r in raw.get(f"{label} c{c}", {}).get(name, [])}
            alone = [r for r in raw.get(label, {}).get(name, []) if r["id"] in ids]
            rate = 60 * row["n"] / row["wall"]
            base = 60 * len(alone) / sum(r["wall"] for r in alone) if alone else None
            lines.append(f"| {label} | {name} | {row['n']} | {c} | {rate:.2f} | "
                         + (f"{base:.2f} | {rate / base:.2f}x |" if base and len(alone) == len(ids)
                            else "- | - |"))
    return lines


def before_after(raw: dict[str, dict[str, list[dict[str, Any]]]], first: str,
                 then: str) -> list[str]:
    """Each method of both passes on the questions both ran: mean wall times, their ratio,
    the paired test, and how many answers came out the same."""
    lines = [f"| method | questions | {first}: s | {then}: s | {then} / {first} | paired p | "
             "same answer |", "|---|---|---|---|---|---|---|"]
    for name, rows in raw.get(first, {}).items():
        after = {r["id"]: r for r in raw.get(then, {}).get(name, [])}
        pairs = [(r, after[r["id"]]) for r in rows if r["id"] in after]
        if not pairs:
            continue
        a = [x["wall"] for x, _ in pairs]
        b = [y["wall"] for _, y in pairs]
        same = sum(x["answer"] == y["answer"] for x, y in pairs)
        lines.append(f"| {name} | {len(pairs)} | {statistics.fmean(a):.1f} | "
                     f"{statistics.fmean(b):.1f} | {sum(b) / sum(a):.2f} | "
                     f"{paired_permutation_p(a, b):.3f} | {same}/{len(pairs)} |")
    return lines


def plot(passes: dict[str, dict[str, list[dict[str, Any]]]], path: Path) -> None:
    """Stacked bars: each pass and method's mean seconds per question by part, the floor
    marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars = [(f"{m}\n{label}" if label else m, rows)
            for label, methods in passes.items() for m, rows in methods.items()]
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(bars)), 4.5))
    bottom = [0.0] * len(bars)
    for part in PARTS:
        heights = [statistics.fmean(max(0.0, r[part]) for r in rows) for _, rows in bars]
        ax.bar(range(len(bars)), heights, bottom=bottom, label=LABELS[part])
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    floors = [statistics.fmean(r["floor"] for r in rows) for _, rows in bars]
    ax.scatter(range(len(bars)), floors, marker="_", s=900, color="black", zorder=3,
               label="floor (server rates)")
    ax.set_xticks(range(len(bars)), [name for name, _ in bars], fontsize=8)
    ax.set_ylabel("seconds per question (mean)")
    ax.set_title("Where a question's seconds go (one question at a time)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--out", default="results/accounting")
    p.add_argument("--note", default="", help="a line on the setting, above the tables")
    p.add_argument("--compare", nargs=2, metavar=("FIRST", "THEN"),
                   help="two pass labels to set side by side on the questions both ran")
    p.add_argument("--passes", nargs="*", default=[],
                   help="passes.jsonl files of runs above concurrency 1 (throughput)")
    args = p.parse_args()
    raw: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for f in args.files:
        for line in Path(f).read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                c = row.get("concurrency", 1)
                label = row["label"] if c == 1 else f"{row['label']} c{c}"
                raw[label][row["method"]].append(row)
    speeds = {label: rates([r for rows in m.values() for r in rows]) for label, m in raw.items()}
    passes = {label: {m: [account(r, *speeds[label]) for r in rows] for m, rows in ms.items()}
              for label, ms in raw.items()}
    out = Path(args.out)
    plot(passes, out.with_suffix(".png"))
    lines = ["# Every second of a question, accounted for (benchmarks/cost/accounting.py)", "",
             *([args.note, ""] if args.note else []), *tables(passes, speeds),
             *(["### Throughput", "", *throughput(args.passes, raw), ""] if args.passes
               else []),
             *([f"### {args.compare[0]} against {args.compare[1]}", "",
                *before_after(raw, *args.compare), ""] if args.compare else []),
             f"![seconds per question by part]({out.with_suffix('.png').name})"]
    publish("\n".join(lines) + "\n", out.with_suffix(".md"))


if __name__ == "__main__":
    main()
