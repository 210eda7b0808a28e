"""Issue #58: the committed tables' paired p-values again, by the sign-flip (permutation) test over
questions (exact up to 20 questions that differ), from the per-question scores committed beside
each table (results/<table>-scores.json); no LM and no run folder is needed.

    python results/sign_flip.py           # rewrite the p cells, write results/p-values.md
    python results/sign_flip.py --check   # only say what would change; write nothing

A table is recomputed where its scores are committed: each "p vs X (em / f1)" cell of a row whose
n equals the questions both methods scored (the demo set's "one-hop" and "two-hop" sections by
each question's hops). A cell that cannot be paired that way is left as it was and listed.
"""

import argparse
import functools
import json
import re
import sys
from pathlib import Path
from typing import Any

from activerag.demo import load_demo_questions
from activerag.evaluation.stats import paired_permutation_p
from activerag.evaluation.tables import p_text

OUT = Path(__file__).resolve().parent
HEADER = re.compile(r"^p vs (?P<base>\S+) \(em / f1\)$")
SECTION = re.compile(r"^#+ (?P<name>[^(]+?)\s*(\(n=\d+\))?$")
GROUPS = {"one-hop": 1, "two-hop": 2}


def p_value(text: str) -> float | None:
    """A p cell's number (<0.001 read as 0.0005), or None for "-" or anything else."""
    text = text.strip()
    if text == "<0.001":
        return 0.0005
    try:
        return float(text)
    except ValueError:
        return None


@functools.cache
def group_ids(section: str) -> frozenset[str] | None:
    """The ids of a section named after a group of the demo set, or None for any other (read
    once a group, not once a row)."""
    hops = GROUPS.get(section)
    if hops is None:
        return None
    return frozenset(q["id"] for q in load_demo_questions() if q.get("hops") == hops)


def paired(scores: dict[str, Any], method: str, base: str, ids: frozenset[str] | None,
           field: str) -> tuple[list[float], list[float]]:
    """METHOD's and BASE's FIELD on the questions both scored (within IDS where given)."""
    at = scores["fields"].index(field)
    ours, theirs = scores["methods"][method], scores["methods"][base]
    both = [i for i in ours if i in theirs and (ids is None or i in ids)
            and ours[i][at] is not None and theirs[i][at] is not None]
    return [float(ours[i][at]) for i in both], [float(theirs[i][at]) for i in both]


def recompute(text: str, scores: dict[str, Any], table: str) -> tuple[str, list[dict[str, Any]]]:
    """TEXT with every p cell it can pair recomputed; one record per cell looked at."""
    lines = text.split("\n")
    records: list[dict[str, Any]] = []
    section, columns = "", None
    for k, line in enumerate(lines):
        if (heading := SECTION.match(line)) is not None:
            section, columns = heading["name"].strip(), None
            continue
        if not line.startswith("|"):
            columns = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if columns is None:
            columns = cells
            continue
        if set(line) <= set("|-: "):
            continue
        where = next((j for j, c in enumerate(columns) if HEADER.match(c)), None)
        fields = ("em", "f1")
        if where is None and {"against", "F1 difference", "p"} <= set(columns):
            where, fields = columns.index("p"), ("f1",)  # F1 differences, one row a pair
        if where is None or "method" not in columns or "n" not in columns:
            continue
        base = (cells[columns.index("against")] if "against" in columns
                else HEADER.match(columns[where])["base"])  # type: ignore[index]
        method, n = cells[columns.index("method")], int(cells[columns.index("n")])
        record = {"table": table, "section": section if section in GROUPS else "all",
                  "method": method, "against": base, "old": cells[where]}
        records.append(record)
        if method == base or cells[where] == "-":
            record["why"] = "the baseline itself"
            continue
        if method not in scores["methods"] or base not in scores["methods"]:
            record["why"] = "no committed scores for one of the two"
            continue
        ids = group_ids(section)
        pairs = {f: paired(scores, method, base, ids, f) for f in fields}
        if len(pairs["f1"][0]) != n:
            record["why"] = f"{len(pairs['f1'][0])} paired questions, the row says n={n}"
            continue
        new = {f: paired_permutation_p(*pairs[f]) for f in pairs}
        record.update(new=" / ".join(p_text(new[f]) for f in fields), fields=fields, **new)
        cells[where] = record["new"]
        lines[k] = "| " + " | ".join(cells) + " |"
    return "\n".join(lines), records


def earlier(report: str) -> dict[tuple[str, ...], str]:
    """Each comparison's p before its first recomputation, from an earlier REPORT (p-values.md),
    by (table, questions, method, against): a later run reads the tables' sign-flip cells, and
    keeps the bootstrap's from here rather than losing them."""
    found = {}
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and (link := re.fullmatch(r"\[([^]]+)\]\(\1\.md\)", cells[0])):
            found[(link[1], *cells[1:4])] = cells[4]
    return found


def crossed(record: dict[str, Any]) -> list[str]:
    """The metrics whose p moved across 0.05 (either way)."""
    old = [p_value(x) for x in record["old"].split("/")]
    out = []
    for metric, before in zip(record["fields"], old, strict=False):
        if before is not None and (before < 0.05) != (record[metric] < 0.05):
            out.append(metric)
    return out


def report(records: list[dict[str, Any]]) -> str:
    done = [r for r in records if "new" in r]
    left = [r for r in records if "new" not in r and r.get("why") != "the baseline itself"]
    lines = ["# The committed tables' p-values by the sign-flip test", "",
             "Written by `python results/sign_flip.py` from each table's committed per-question "
             "scores (no LM). p: two-sided paired sign-flip (permutation) test over questions, "
             "exact up to 20 questions that differ, 10,000 random sign sets above; it replaces "
             "the paired bootstrap with a shifted null, which read small or lopsided "
             "differences as more certain than they are. The intervals stay bootstrap.", "",
             f"{len(done)} comparisons recomputed, {len(left)} left as they were (listed last).",
             "", "| table | questions | method | against | bootstrap p (em / f1; F1 alone in a "
             "difference table) | sign-flip p | across 0.05 |", "|---|---|---|---|---|---|---|"]
    for r in done:
        lines.append(f"| [{r['table']}]({r['table']}.md) | {r['section']} | {r['method']} | "
                     f"{r['against']} | {r['old']} | {r['new']} | "
                     f"{', '.join(crossed(r)) or '-'} |")
    if left:
        lines += ["", "Left as they were (their bootstrap p stands):", "",
                  "| table | questions | method | against | why |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['table']} | {r['section']} | {r['method']} | {r['against']} | "
                  f"{r['why']} |" for r in left]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing")
    args = parser.parse_args(argv)
    records: list[dict[str, Any]] = []
    report_file = OUT / "p-values.md"
    before_first = earlier(report_file.read_text()) if report_file.exists() else {}
    pages = sorted(OUT.glob("*-scores.json"))
    if not pages:
        print("no results/*-scores.json: nothing to recompute", file=sys.stderr)
        return 1
    for scores_file in pages:
        table = scores_file.name.removesuffix("-scores.json")
        page = OUT / f"{table}.md"
        if not page.exists():
            continue
        before = page.read_text()
        text, found = recompute(before, json.loads(scores_file.read_text()), table)
        for old in ("p: paired bootstrap", "paired bootstrap p"):
            text = text.replace(old, old.replace("bootstrap", "sign-flip"))
        for r in found:
            r["old"] = before_first.get((table, r["section"], r["method"], r["against"]), r["old"])
        records += found
        if not args.check and text != before:
            page.write_text(text)
    rowless = sorted(page.stem for page in OUT.glob("*.md")
                     if page.stem not in {s.name.removesuffix("-scores.json") for s in pages}
                     and re.search(r"\| p vs |\| p \|", page.read_text()))
    out = report(records) + (
        "\nTables whose p cells are still the earlier bootstrap's, their per-question scores not "
        "committed (a re-run that commits them lets this script recompute them): "
        + ", ".join(f"[{name}]({name}.md)" for name in rowless) + ".\n")
    if not args.check:
        report_file.write_text(out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
