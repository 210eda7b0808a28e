"""The Markdown of a run's summary: one table per method set (means with 95% intervals, costs,
paired p-values against the first method), and a warning when rows are missing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

P_KEYS = ("em", "f1")
"""The metrics whose p-values against the first method the Markdown table shows."""
LONG_CONTEXT_COLUMNS = ("n", "em", "f1", "gold_word_recall", "gold_half_recall", "words_read",
                        "fallback_rate", "lm_calls_per_question", "prompt_tokens",
                        "generated_tokens", "seconds_per_question", "latency_seconds")
"""The table of a long-context run (FB-RAG and its baselines). gold_word_recall is the share of
the gold paragraphs' words the reader read, gold_half_recall the share of gold paragraphs it read
at least half of. latency_seconds counts cached light samples at what their draw took; without
--cache-samples it is seconds_per_question."""
TABLE_COLUMNS = ("n", "em", "f1", "f1_flare_rule", "rouge_l", "gold_title_recall",
                 "retrieval_rate", "retrievals_per_question", "retrievals_per_100_tokens",
                 "lm_calls_per_question", "generated_per_kept_token", "prompt_tokens",
                 "generated_tokens", "seconds_per_question")
"""f1_flare_rule: the F1 of a method scored by its authors' rule (IRCoT, Adaptive-RAG) when
its answers are scored by FLARE's instead; a column only where some method has it."""


def shortfall(result: dict[str, Any]) -> str | None:
    """A warning when a summary holds fewer rows than asked for or the rows file is damaged."""
    missing, damaged = result.get("missing", 0), result.get("damaged_lines", 0)
    if not missing and not damaged:
        return None
    parts = []
    if missing:
        parts.append(f"this summary is short: {missing} of {result['expected']} rows "
                     "(methods × examples) are missing")
    if damaged:
        parts.append(f"{damaged} line{'s' if damaged > 1 else ''} of examples.jsonl could "
                     "not be read")
    return "WARNING: " + "; ".join(parts)


def summary_markdown(result: dict[str, Any]) -> str:
    """summary.md: a shortfall warning if any, the overall table, then a table per group."""
    parts = []
    warning = shortfall(result)
    if warning:
        parts.append(f"**{warning}**\n")
    long = any("words_read" in s for s in result["summary"].values())
    columns = LONG_CONTEXT_COLUMNS if long else TABLE_COLUMNS
    parts.append(markdown_table(result["summary"], columns))
    for group, summary in result.get("groups", {}).items():
        n = max((s["n"] for s in summary.values()), default=0)
        parts.append(f"### {group} (n={n})\n\n" + markdown_table(summary, columns))
    return "\n".join(parts)


def cell(summary: dict[str, Any], key: str) -> str:
    """One table cell: a mean with its 95% interval where it has one, else the value."""
    value = summary.get(key)
    if value is None:
        return "-"
    if not isinstance(value, float):
        return str(value)
    ci = summary.get(f"{key}_ci")
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{value:.3f}"


def p_text(p: float | None) -> str:
    """A p-value as the tables print it: 3 decimals, "<0.001" below that, "-" for none."""
    return "-" if p is None else "<0.001" if p < 0.001 else f"{p:.3f}"


def _p_cell(summary: dict[str, Any]) -> str:
    """The p-values of P_KEYS against the first method, '-' where there is none."""
    vs = summary.get("vs_first", {})
    ps = [vs.get(f"{k}_p") for k in P_KEYS]
    if all(p is None for p in ps):
        return "-"
    return " / ".join(p_text(p) for p in ps)


def markdown_table(summary: dict[str, dict[str, Any]], columns: Sequence[str] = TABLE_COLUMNS,
                   label: str = "method") -> str:
    """Methods (or variants) as rows, the metrics (with 95% intervals) and costs as columns,
    and the paired sign-flip p-values of EM and F1 against the first row."""
    cols = [c for c in columns if any(c in s for s in summary.values())]
    first = next(iter(summary), "")
    with_p = any("vs_first" in s for s in summary.values())
    header = cols + ([f"p vs {first} ({' / '.join(P_KEYS)})"] if with_p else [])
    lines = [f"| {label} | " + " | ".join(header) + " |", "|---" * (len(header) + 1) + "|"]
    for name, s in summary.items():
        cells = [cell(s, c) for c in cols] + ([_p_cell(s)] if with_p else [])
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
