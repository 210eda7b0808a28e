"""A run as one self-contained HTML page: the model and server, the graph and the path the run
took through it sentence by sentence with each step's wall time, each sentence's draft tokens
coloured by probability against θ and β (the tokens its query masked marked), the retrievals,
whether the regenerated sentence changed, the answer and the cost counters. Inline CSS and SVG
only, so the page opens without a network; every text the run produced is escaped."""

from __future__ import annotations

import colorsys
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from langchain_core.documents import Document

from activerag.drawing import Shape, graph_svg, shape_of
from activerag.moved import moved_names
from activerag.page.logic import differs, query_masks
from activerag.page.path import group_seconds, groups_of, path_html
from activerag.page.record import (
    SYMBOLS,
    RunRecord,
    taken_edges,
    visits,
)
from activerag.page.style import CSS

__getattr__ = moved_names(__name__, {
    "SETTINGS": "activerag.page.record",
    "STREAM_MODES": "activerag.page.record",
    "record_run": "activerag.page.record",
    "settings_of": "activerag.page.record",
})
"""Names whose home moved: from here with a DeprecationWarning that names it."""

COSTS = (("lm_calls", "LM calls"), ("generated_tokens", "tokens generated"),
         ("prompt_tokens", "prompt tokens"), ("answer_tokens", "answer tokens"),
         ("retrievals", "retriever calls"), ("retrieval_steps", "retrieval steps"),
         ("truncated_tokens", "prompt tokens cut to fit"), ("certified", "share certified"))
"""The state's cost counters, as the page names them."""


def token_colour(p: float) -> str:
    """A probability as a background colour: red at 0, through yellow, to green at 1."""
    r, g, b = colorsys.hls_to_rgb(min(max(p, 0.0), 1.0) / 3, 0.78, 0.75)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def _tokens(tokens: Iterable[Sequence[Any]], theta: float | None,
            masks: Sequence[bool] | None = None) -> str:
    spans = []
    for i, (text, p, *_) in enumerate(tokens):
        low = theta is not None and p < theta
        masked = masks is not None and i < len(masks) and masks[i]
        note = (f"p={p:.3f}" + (f" < θ={theta:g}" if low else "")
                + ("; masked out of the query (β)" if masked else ""))
        spans.append(f'<span class="tok{" low" if low else ""}{" masked" if masked else ""}"'
                     f' data-p="{p:.4f}"'
                     f' style="background:{token_colour(p)}" title="{escape(note)}">'
                     f"{escape(text)}</span>")
    return "".join(spans)


def _documents(ids: Sequence[str], titles: Sequence[str], known: Mapping[str, tuple[str, str]],
               label: str, weights: Sequence[float] = ()) -> str:
    if not titles:
        return ""
    items = []
    for i, (doc_id, title) in enumerate(zip(ids, titles, strict=False)):
        text = known.get(doc_id, (title, ""))[1]
        weight = f' <span class="weight">λ={weights[i]:.2f}</span>' if i < len(weights) else ""
        items.append(f'<div class="doc"><b>{escape(title)}</b>{weight}'
                     f' <span class="id">{escape(doc_id[:12])}</span>'
                     f'{f"<p>{escape(text)}</p>" if text else ""}</div>')
    return (f'<details class="docs"><summary>{escape(label)} ({len(titles)}): '
            f'{escape(", ".join(titles))}</summary>{"".join(items)}</details>')


def _sentence(step: Mapping[str, Any], theta: float | None, gated: bool,
              known: Mapping[str, tuple[str, str]], masks: Sequence[bool] | None = None,
              seconds: float | None = None, gate: Mapping[str, Any] | None = None) -> str:
    """One traced unit; GATED: its tokens are a look-ahead draft that a trigger judged; MASKS:
    the draft tokens its query dropped; SECONDS: the wall time of its steps; GATE: the gate's
    decision, where its update showed one."""
    index = int(step.get("index", 0))
    fired = bool(step.get("retrieved"))
    took = "" if seconds is None else f' <span class="time">{seconds:.2f} s</span>'
    changed = ""
    if "weights" in step:  # a REPLUG sentence: the ensemble's tokens and weighted documents
        head = f'<span class="badge">certified {step.get("certified", 0):.0%}</span>'
        rows = (f'<div class="row"><span class="label">tokens</span>'
                f'<span class="toks">{_tokens(step.get("tokens", []), None)}</span></div>'
                + _documents(step.get("doc_ids", []), step.get("doc_titles", []), known,
                             "documents ensembled", step.get("weights", [])))
    else:
        mp = step.get("min_prob")
        badge = (("retrieval fired", "draft kept: no retrieval") if gated else
                 ("retrieved for it", "no retrieval of its own"))[not fired]
        head = (f'<span class="badge {"fired" if fired else "kept"}">{badge}</span>'
                f' <span class="minp">min p {"-" if mp is None else f"{mp:.3f}"}</span>')
        if gated and fired:
            new = differs(str(step.get("draft", "")), str(step.get("sentence", "")))
            changed = f' data-differs="{str(new).lower()}"'
            head += (f' <span class="badge {"changed" if new else "same"}">regenerated: '
                     f'{"differs from" if new else "the same words as"} the draft</span>')
        tokens = _tokens(step.get("draft_tokens", []), theta, masks)
        rows = (f'<div class="row"><span class="label">{"draft" if gated else "tokens"}</span>'
                f'<span class="toks">{tokens}</span></div>{_gate(gate)}')
        if step.get("queries"):
            note = (' <span class="note">(matched nothing: the question was searched)</span>'
                    if step.get("fallback") else "")
            if masks is not None:
                n = sum(masks)
                note += (f' <span class="note">(the draft without its {n} masked '
                         f'token{"" if n == 1 else "s"})</span>')
            queries = " ".join(f"<code>{escape(q)}</code>" for q in step["queries"])
            rows += f'<div class="row"><span class="label">queries</span>{queries}{note}</div>'
        rows += _documents(step.get("doc_ids", []), step.get("doc_titles", []), known,
                           "documents retrieved for it" if fired else "documents it saw")
    return (f'<article class="sentence" data-index="{index}" data-retrieved="{str(fired).lower()}"'
            f'{changed}><h3>sentence {index + 1} {head}{took}</h3>{rows}'
            f'<p class="accepted">⇒ {escape(str(step.get("sentence", "")))}</p></article>')


def _gate(decision: Mapping[str, Any] | None) -> str:
    """The gate's decision: its trigger, what it measured and against what, and the outcome."""
    if not decision or "fire" not in decision:
        return ""
    value, threshold = decision.get("value"), decision.get("threshold")
    numbers = "".join(f" {word} {v:.3f}" if isinstance(v, int | float) else ""
                      for word, v in (("=", value), ("against", threshold)))
    return (f'<div class="row gate"><span class="label">gate</span>'
            f'{escape(str(decision.get("trigger", "")))}: '
            f'{escape(str(decision.get("measure", "")))}{numbers} ⇒ '
            f'{"fire" if decision["fire"] else "keep"}</div>')


def _mark(name: str, value: float | None) -> str:
    return "" if value is None else (f'<span class="mark {name}" style="left:'
                                     f'{min(max(value, 0), 1) * 100:.1f}%">{SYMBOLS[name]} = '
                                     f"{value:g}</span>")


def _legend(theta: float | None, gated: bool, beta: float | None = None,
            masked: bool = False) -> str:
    stops = ", ".join(f"{token_colour(i / 10)} {i * 10}%" for i in range(11))
    mark = _mark("theta", theta) + _mark("beta", beta if gated else None)
    scale = (f'<span>p = 0</span><span class="scale" style="background:linear-gradient(to '
             f'right, {stops})">{mark}</span><span>p = 1</span>')
    if theta is None:
        return (f'<div class="legend">{scale} <small>tokens coloured by probability; no '
                "threshold θ in this method</small></div>")
    words = ("the gate asks its trigger whether a draft retrieves (min_prob: some token below "
             "θ)" if gated else "this method does not gate on θ: tokens below it are outlined "
             "for reference")
    if masked:
        words += ("; struck through: the tokens below β that the query left out (FLARE's "
                  "masked query)")
    sample = ' <span class="tok masked">masked</span>' if masked else ""
    return (f'<div class="legend">{scale} <span class="tok low" style="background:'
            f'{token_colour(theta / 2)}">below θ</span>{sample} <small>{words}</small></div>')


def _costs(final: Mapping[str, Any], total: float | None = None) -> str:
    rows = [] if total is None else [f'<tr data-key="wall_seconds"><td>wall time (s)</td>'
                                     f"<td>{total:.2f}</td></tr>"]
    for key, name in COSTS:
        if isinstance(final.get(key), int | float):
            value = final[key]
            shown = f"{value:.0%}" if key == "certified" else f"{value:,}"
            rows.append(f'<tr data-key="{key}"><td>{name}</td><td>{shown}</td></tr>')
    if final.get("trace"):
        rows.append(f'<tr data-key="sentences"><td>sentences</td>'
                    f'<td>{len(final["trace"])}</td></tr>')
    for stage, seconds in (final.get("stage_seconds") or {}).items():
        rows.append(f"<tr><td>{escape(stage)} (s)</td><td>{seconds:.2f}</td></tr>")
    return f'<table class="costs">{"".join(rows)}</table>' if rows else ""


def _without_trace(final: Mapping[str, Any], known: Mapping[str, tuple[str, str]]) -> str:
    """What a method without per-sentence drafts (FB-RAG and its baselines) left to show."""
    parts = ['<p class="note">this method keeps no per-sentence drafts: its answer is one '
             "generation</p>"]
    if final.get("route"):
        parts.append(f'<p>route: <code>{escape(str(final["route"]))}</code></p>')
    for i, sample in enumerate(final.get("samples") or []):
        parts.append(f'<details><summary>light LM sample {i + 1}</summary>'
                     f"<p>{escape(sample)}</p></details>")
    chunks = {c["index"]: c for c in final.get("chunk_list") or []}
    read = [chunks[i] for i in final.get("selected") or [] if i in chunks]
    if read:
        items = "".join(f'<div class="doc"><b>chunk {c["index"]}</b><p>{escape(c["text"])}</p>'
                        "</div>" for c in read)
        parts.append(f'<details class="docs"><summary>chunks read ({len(read)}): '
                     f'{", ".join(str(c["index"]) for c in read)}</summary>{items}</details>')
    elif final.get("retrieved_titles"):
        parts.append(f'<p>retrieved: {escape(", ".join(final["retrieved_titles"]))}</p>')
    return "".join(parts)


def _servers(record: RunRecord) -> str:
    """Which model answered, on which server, for each LM the method asks."""
    if not record.servers:
        return ""
    items = "; ".join(f"<b>{escape(model or 'the served model')}</b> at <code>{escape(url)}"
                      f"</code> ({escape(role)})" for role, url, model in record.servers)
    return f'<p class="servers">model {items}</p>'


def shape_for(record: RunRecord, graph: Any) -> Shape:
    """GRAPH's shape with its subgraphs opened, unless the record names nodes only the closed
    one has (a graph that runs whole graphs inside its nodes: the stream names those nodes)."""
    shape = shape_of(graph)
    return shape if set(record.path) <= set(shape.nodes) else shape_of(graph, xray=0)


def run_view(record: RunRecord, graph: Shape | Any) -> str:
    """The run as an HTML fragment with its own scoped style (a notebook shows it inline);
    GRAPH is the compiled graph that ran, or its Shape."""
    shape = graph if isinstance(graph, Shape) else shape_for(record, graph)
    final = record.final
    theta = record.settings.get("theta")
    theta = float(theta) if isinstance(theta, int | float) else None
    gated = "confidence_gate" in shape.nodes
    trace = final.get("trace") or []
    shown = ", ".join(f"{SYMBOLS.get(k, k)}={v:g}" if isinstance(v, float) else
                      f"{SYMBOLS.get(k, k)}={v}" for k, v in record.settings.items())
    total = record.total_seconds
    head = (f"<h1>{escape(record.question)}</h1><p class=\"settings\">method "
            f"<b>{escape(record.method)}</b>{'; ' + escape(shown) if shown else ''}"
            f"{'' if record.complete else '; the run did not finish'}"
            f"{'' if total is None else f'; wall time {total:.2f} s'}</p>{_servers(record)}"
            f'<h2>Answer</h2><p class="answer">{escape(str(final.get("answer", "")).strip())}'
            "</p>")
    drawn = (f'<div class="graphcol"><h2>The graph and the path taken</h2>'
             f"{graph_svg(shape, visits(record), taken_edges(record, shape))}"
             f"{path_html(record, shape)}</div>")
    known = record.documents
    before = [d for d in final.get("input_documents") or [] if isinstance(d, Document)]
    first = _documents([d.id or "" for d in before],
                       [d.metadata.get("title", "") for d in before], known,
                       "retrieved with the question before the first sentence")
    if trace:
        question = str(final.get("question") or record.question)
        decided = [record.decisions.get(i, {}) for i in range(len(trace))]
        masks = [query_masks(s, record.settings, question, d.get("formulate_query"))
                 if gated else None for s, d in zip(trace, decided, strict=True)]
        took = {g.sentences[0]: group_seconds(record, g) for g in groups_of(record, shape)
                if len(g.sentences) == 1}
        beta = record.settings.get("beta")
        body = (_legend(theta, gated, float(beta) if isinstance(beta, int | float) else None,
                        any(m and any(m) for m in masks))
                + first + "".join(_sentence(s, theta, gated, known, m, took.get(i),
                                            decided[i].get("confidence_gate"))
                                  for i, (s, m) in enumerate(zip(trace, masks, strict=True))))
    else:
        body = _without_trace(final, known)
    run = (f'<div class="runcol"><h2>Sentences</h2>{body}<h2>Cost</h2>'
           f"{_costs(final, record.total_seconds)}</div>")
    return (f'<div class="activerag-run"><style>{CSS}</style>{head}'
            f'<div class="columns">{drawn}{run}</div></div>')


def render_page(record: RunRecord, graph: Shape | Any) -> str:
    """The run as one self-contained HTML page; GRAPH is the compiled graph or its Shape."""
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>activerag: {escape(record.question)}</title></head>"
            f"<body>{run_view(record, graph)}</body></html>\n")
