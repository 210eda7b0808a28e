"""A run as one self-contained HTML page: the graph and the path the run took through it,
each sentence's draft tokens coloured by probability against θ, the retrievals, the answer and
the cost counters. Inline CSS and SVG only, so the page opens without a network; every text
the run produced is escaped."""

from __future__ import annotations

import colorsys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from langchain_core.documents import Document

from activerag.drawing import END, START, Shape, graph_svg, shape_of

STREAM_MODES = ["custom", "values", "updates"]
"""What a recorded run streams: sentence events, the state, and each node's update (the path)."""

SETTINGS = ("theta", "beta", "trigger", "k", "query_formulation", "retriever", "ensemble",
            "min_confidence", "model")
"""Context fields the page shows, where the method's context has them."""
SYMBOLS = {"theta": "θ", "beta": "β"}

COSTS = (("lm_calls", "LM calls"), ("generated_tokens", "tokens generated"),
         ("prompt_tokens", "prompt tokens"), ("answer_tokens", "answer tokens"),
         ("retrievals", "retriever calls"), ("retrieval_steps", "retrieval steps"),
         ("truncated_tokens", "prompt tokens cut to fit"), ("certified", "share certified"))
"""The state's cost counters, as the page names them."""


@dataclass
class RunRecord:
    """What a run leaves to show: its settings, the nodes it ran, the documents it saw and
    its final state."""

    question: str
    method: str = ""
    settings: dict[str, Any] = field(default_factory=dict)  # SETTINGS of the run's context
    path: list[str] = field(default_factory=list)  # the nodes that ran, in order
    documents: dict[str, tuple[str, str]] = field(default_factory=dict)  # id: (title, text)
    final: dict[str, Any] = field(default_factory=dict)  # the last streamed state
    complete: bool = False  # the run reached END

    def observe(self, mode: str, chunk: Any) -> None:
        """Take one item of a STREAM_MODES stream."""
        if mode == "values":
            self.final = chunk
        elif mode == "updates":
            for node, update in chunk.items():
                if not node.startswith("__"):  # __interrupt__ and the like are not nodes
                    self.path.append(node)
                    self._keep_documents(update)

    def _keep_documents(self, value: Any) -> None:
        if isinstance(value, Document):
            if value.id:
                self.documents[value.id] = (value.metadata.get("title", ""), value.page_content)
        elif isinstance(value, Mapping):
            for v in value.values():
                self._keep_documents(v)
        elif isinstance(value, list | tuple):
            for v in value:
                self._keep_documents(v)
        elif hasattr(value, "value"):  # an Overwrite
            self._keep_documents(value.value)


def settings_of(context: Any) -> dict[str, Any]:
    """The SETTINGS a run's context has (an unset model left out)."""
    return {name: getattr(context, name) for name in SETTINGS
            if getattr(context, name, None) not in (None, "")}


async def record_run(graph: Any, given: Mapping[str, Any], context: Any,
                     method: str = "") -> RunRecord:
    """Run GRAPH on GIVEN and record it (RunRecord.final is what ainvoke's state would be)."""
    record = RunRecord(str(given.get("question", "")), method or getattr(graph, "name", ""),
                       settings_of(context))
    async for mode, chunk in graph.astream(dict(given), context=context,
                                           stream_mode=STREAM_MODES):
        record.observe(mode, chunk)
    record.complete = True
    return record


def visits(record: RunRecord) -> Counter[str]:
    """How many times each node ran (START once for a run that started, END for one that
    finished)."""
    count = Counter(record.path)
    if record.path:
        count[START] = 1
        if record.complete:
            count[END] = 1
    return count


def taken_edges(record: RunRecord, shape: Shape) -> set[tuple[str, str]]:
    """The edges the run went along: consecutive nodes of its path joined by an edge."""
    edges = {(e.source, e.target) for e in shape.edges}
    path = [START, *record.path, *([END] if record.complete else [])] if record.path else []
    return {pair for pair in zip(path, path[1:], strict=False) if pair in edges}


def token_colour(p: float) -> str:
    """A probability as a background colour: red at 0, through yellow, to green at 1."""
    r, g, b = colorsys.hls_to_rgb(min(max(p, 0.0), 1.0) / 3, 0.78, 0.75)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def _tokens(tokens: Iterable[Sequence[Any]], theta: float | None) -> str:
    spans = []
    for text, p, *_ in tokens:
        low = theta is not None and p < theta
        note = f"p={p:.3f}" + (f" < θ={theta:g}" if low else "")
        spans.append(f'<span class="tok{" low" if low else ""}" data-p="{p:.4f}"'
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
              known: Mapping[str, tuple[str, str]]) -> str:
    """One traced unit; GATED: its tokens are a look-ahead draft that a trigger judged."""
    index = int(step.get("index", 0))
    fired = bool(step.get("retrieved"))
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
        rows = (f'<div class="row"><span class="label">{"draft" if gated else "tokens"}</span>'
                f'<span class="toks">{_tokens(step.get("draft_tokens", []), theta)}</span></div>')
        if step.get("queries"):
            note = (' <span class="note">(matched nothing: the question was searched)</span>'
                    if step.get("fallback") else "")
            queries = " ".join(f"<code>{escape(q)}</code>" for q in step["queries"])
            rows += f'<div class="row"><span class="label">queries</span>{queries}{note}</div>'
        rows += _documents(step.get("doc_ids", []), step.get("doc_titles", []), known,
                           "documents retrieved for it" if fired else "documents it saw")
    return (f'<article class="sentence" data-index="{index}" data-retrieved="{str(fired).lower()}">'
            f'<h3>sentence {index + 1} {head}</h3>{rows}'
            f'<p class="accepted">⇒ {escape(str(step.get("sentence", "")))}</p></article>')


def _legend(theta: float | None, gated: bool) -> str:
    stops = ", ".join(f"{token_colour(i / 10)} {i * 10}%" for i in range(11))
    mark = "" if theta is None else (f'<span class="theta" style="left:'
                                     f'{min(max(theta, 0), 1) * 100:.1f}%">θ = {theta:g}</span>')
    scale = (f'<span>p = 0</span><span class="scale" style="background:linear-gradient(to '
             f'right, {stops})">{mark}</span><span>p = 1</span>')
    if theta is None:
        return (f'<div class="legend">{scale} <small>tokens coloured by probability; no '
                "threshold θ in this method</small></div>")
    words = ("the gate asks its trigger whether a draft retrieves (min_prob: some token below "
             "θ)" if gated else "this method does not gate on θ: tokens below it are outlined "
             "for reference")
    return (f'<div class="legend">{scale} <span class="tok low" style="background:'
            f'{token_colour(theta / 2)}">below θ</span> <small>{words}</small></div>')


def _path(record: RunRecord, shape: Shape) -> str:
    runs: list[tuple[str, int]] = []
    for node in record.path:
        if runs and runs[-1][0] == node:
            runs[-1] = (node, runs[-1][1] + 1)
        else:
            runs.append((node, 1))
    steps = "".join(f'<li data-node="{escape(n)}">{escape(n)}{f" ×{k}" if k > 1 else ""}</li>'
                    for n, k in runs)
    count = visits(record)
    rows = "".join(f'<tr data-node="{escape(n)}"><td>{escape(n)}</td><td>{count[n]}</td></tr>'
                   for n in shape.nodes if n not in (START, END) and count[n])
    if not record.path:
        return '<p class="note">no node ran in this record (a finished thread given back)</p>'
    return (f'<ol class="path">{steps}</ol><table class="visits"><tr><th>node</th>'
            f"<th>runs</th></tr>{rows}</table>")


def _costs(final: Mapping[str, Any]) -> str:
    rows = []
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


CSS = """
.activerag-run{font:14px/1.45 system-ui,sans-serif;color:#111827;max-width:1400px}
.activerag-run h1{font-size:20px;margin:0 0 4px}
.activerag-run h2{font-size:16px;margin:18px 0 8px;border-bottom:1px solid #e5e7eb}
.activerag-run h3{font-size:14px;margin:0 0 6px}
.activerag-run .settings,.activerag-run .note{color:#4b5563}
.activerag-run .answer{font-size:16px;background:#f0f9ff;border-left:4px solid #0284c7;
 padding:8px 12px}
.activerag-run .columns{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
.activerag-run .graphcol{flex:0 1 auto;max-width:460px}
.activerag-run .graphcol svg{max-width:100%;height:auto}
.activerag-run .runcol{flex:1 1 520px;min-width:0}
.activerag-run .sentence{border:1px solid #e5e7eb;border-radius:8px;padding:8px 12px;
 margin:0 0 10px}
.activerag-run .row{margin:4px 0}.activerag-run .label{display:inline-block;width:64px;
 color:#6b7280;font-size:12px}
.activerag-run .tok{white-space:pre-wrap;font-family:monospace;padding:2px 0;
 border-radius:2px}
.activerag-run .tok.low{outline:2px solid #7f1d1d;outline-offset:-1px}
.activerag-run .badge{font-size:12px;font-weight:normal;padding:1px 8px;border-radius:10px;
 background:#e5e7eb}
.activerag-run .badge.fired{background:#fecaca;color:#7f1d1d}
.activerag-run .badge.kept{background:#bbf7d0;color:#14532d}
.activerag-run .minp{font-weight:normal;color:#4b5563;font-size:12px}
.activerag-run code{background:#f3f4f6;padding:1px 4px;border-radius:3px}
.activerag-run .accepted{margin:6px 0 0;font-weight:600}
.activerag-run details{margin:4px 0}.activerag-run summary{cursor:pointer;color:#374151}
.activerag-run .doc{margin:4px 0 4px 16px}.activerag-run .doc p{margin:2px 0}
.activerag-run .id{color:#9ca3af;font-size:11px}
.activerag-run .legend{display:flex;align-items:center;gap:8px;flex-wrap:wrap;margin:0 0 10px}
.activerag-run .scale{position:relative;display:inline-block;width:260px;height:14px;
 border-radius:3px}
.activerag-run .theta{position:absolute;top:-4px;height:22px;border-left:2px solid #111827;
 font-size:11px;padding-left:3px;line-height:34px;white-space:nowrap}
.activerag-run .path{display:flex;flex-wrap:wrap;gap:4px;padding:0;list-style:none}
.activerag-run .path li{background:#fde68a;border:1px solid #b45309;border-radius:4px;
 padding:0 6px;font-family:monospace;font-size:12px}
.activerag-run .path li+li::before{content:"→ ";color:#b45309}
.activerag-run table{border-collapse:collapse}.activerag-run td,.activerag-run th{
 padding:2px 10px;border-bottom:1px solid #e5e7eb;text-align:left}
"""


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
    head = (f"<h1>{escape(record.question)}</h1><p class=\"settings\">method "
            f"<b>{escape(record.method)}</b>{'; ' + escape(shown) if shown else ''}"
            f"{'' if record.complete else '; the run did not finish'}</p>"
            f'<h2>Answer</h2><p class="answer">{escape(str(final.get("answer", "")).strip())}'
            "</p>")
    drawn = (f'<div class="graphcol"><h2>The graph and the path taken</h2>'
             f"{graph_svg(shape, visits(record), taken_edges(record, shape))}"
             f"{_path(record, shape)}</div>")
    known = record.documents
    before = [d for d in final.get("input_documents") or [] if isinstance(d, Document)]
    first = _documents([d.id or "" for d in before],
                       [d.metadata.get("title", "") for d in before], known,
                       "retrieved with the question before the first sentence")
    if trace:
        body = _legend(theta, gated) + first + "".join(_sentence(s, theta, gated, known)
                                                       for s in trace)
    else:
        body = _without_trace(final, known)
    run = (f'<div class="runcol"><h2>Sentences</h2>{body}<h2>Cost</h2>{_costs(final)}</div>')
    return (f'<div class="activerag-run"><style>{CSS}</style>{head}'
            f'<div class="columns">{drawn}{run}</div></div>')


def render_page(record: RunRecord, graph: Shape | Any) -> str:
    """The run as one self-contained HTML page; GRAPH is the compiled graph or its Shape."""
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>activerag: {escape(record.question)}</title></head>"
            f"<body>{run_view(record, graph)}</body></html>\n")
