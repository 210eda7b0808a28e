"""The path a run took, on its page: the steps cut into sentences, each group with its wall
time, and how often each node ran."""

from __future__ import annotations

from html import escape

from activerag.drawing import END, START, Shape, layers
from activerag.page.logic import Group, sentence_groups
from activerag.page.record import RunRecord, visits


def groups_of(record: RunRecord, shape: Shape) -> list[Group]:
    """The record's path cut into the steps of each sentence (a sentence starts at a node
    that a loop of SHAPE goes back to)."""
    return sentence_groups(record.path, record.sentences_at, {t for _, t in layers(shape)[1]})


def group_seconds(record: RunRecord, group: Group) -> float | None:
    """The wall time of GROUP's steps, None when the record did not time them."""
    return sum(record.seconds[group.start:group.end]) if len(record.seconds) >= group.end \
        else None


def group_label(group: Group, after: bool, complete: bool) -> str:
    if len(group.sentences) == 1:
        return f"sentence {group.sentences[0] + 1}"
    if group.sentences:
        return f"sentences {group.sentences[0] + 1}–{group.sentences[-1] + 1}"
    if not after:
        return "before sentence 1"
    return "after the last sentence" if complete else "unfinished"


def path_html(record: RunRecord, shape: Shape) -> str:
    """The steps of RECORD's path by sentence, and a table of each node's runs."""
    if not record.path:
        return '<p class="note">no node ran in this record (a finished thread given back)</p>'
    timed = len(record.seconds) >= len(record.path)
    lines = []
    for group in groups_of(record, shape):
        steps = "".join(
            f'<li data-node="{escape(record.path[i])}">{escape(record.path[i])}'
            f'{f" <small>{record.seconds[i]:.2f} s</small>" if timed else ""}</li>'
            for i in range(group.start, group.end))
        took = group_seconds(record, group)
        label = group_label(group, group.start > 0, record.complete)
        lines.append(f'<div class="group" data-sentences="{len(group.sentences)}">'
                     f'<div class="glabel">{label}'
                     f'{"" if took is None else f" · {took:.2f} s"}</div>'
                     f'<ol class="path">{steps}</ol></div>')
    count = visits(record)
    rows = "".join(f'<tr data-node="{escape(n)}"><td>{escape(n)}</td><td>{count[n]}</td></tr>'
                   for n in shape.nodes if n not in (START, END) and count[n])
    return (f'{"".join(lines)}<table class="visits"><tr><th>node</th>'
            f"<th>runs</th></tr>{rows}</table>")
