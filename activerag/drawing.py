"""A graph drawn as inline SVG, laid out here (layered, top-down): no renderer, no network.

Layers follow the longest path from START once the edges that close a loop are set aside;
an edge between neighbouring layers is a straight line, one that skips layers bows out to the
left and one that goes back up (a loop) bows out to the right. Conditional edges are dashed.
Visited nodes and the edges the run took are drawn in amber, with each node's visit count.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any, NamedTuple

START, END = "__start__", "__end__"
NODE_H, LAYER_GAP, NODE_GAP = 30, 34, 28
CHAR_W, PAD_X, FONT = 7.8, 14, 13  # a 13px monospace character is about 7.8px wide
VISITED_FILL, VISITED_LINE = "#fde68a", "#b45309"
IDLE_FILL, IDLE_LINE = "#f3f4f6", "#9ca3af"


class Edge(NamedTuple):
    """One edge of a graph: conditional edges are a router's choices."""

    source: str
    target: str
    conditional: bool = False
    label: str = ""


@dataclass(frozen=True)
class Shape:
    """The nodes (in the order they were added) and edges of a graph."""

    nodes: tuple[str, ...]
    edges: tuple[Edge, ...]


def shape_of(graph: Any, xray: int = 1) -> Shape:
    """The shape of a compiled LangGraph graph, subgraphs opened XRAY levels."""
    drawable = graph.get_graph(xray=xray)
    edges = tuple(Edge(e.source, e.target, bool(e.conditional),
                       "" if e.data is None or e.data == e.target else str(e.data))
                  for e in drawable.edges)
    return Shape(tuple(drawable.nodes), edges)


def layers(shape: Shape) -> tuple[dict[str, int], set[tuple[str, str]]]:
    """Each node's layer, and the edges that close a loop (found by depth-first search from
    START, children in the order the nodes were added), which do not push layers down."""
    order = {n: i for i, n in enumerate(shape.nodes)}
    children: dict[str, list[str]] = {n: [] for n in shape.nodes}
    for e in shape.edges:
        children.setdefault(e.source, []).append(e.target)
        children.setdefault(e.target, [])
    for targets in children.values():
        targets.sort(key=lambda n: order.get(n, len(order)))
    back: set[tuple[str, str]] = set()
    state: dict[str, int] = {}  # 1: on the search path, 2: finished
    finished: list[str] = []
    roots = [START] if START in children else []
    for root in roots + sorted(children, key=lambda n: order.get(n, len(order))):
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(children[root]))]
        while stack:
            node, kids = stack[-1]
            kid = next(kids, None)
            if kid is None:
                state[node] = 2
                finished.append(node)
                stack.pop()
            elif state.get(kid) == 1:
                back.add((node, kid))
            elif kid not in state:
                state[kid] = 1
                stack.append((kid, iter(children[kid])))
    layer = dict.fromkeys(children, 0)
    for node in reversed(finished):  # a topological order once back edges are set aside
        for kid in children[node]:
            if (node, kid) not in back:
                layer[kid] = max(layer[kid], layer[node] + 1)
    return layer, back


def _label(node: str, visits: int) -> str:
    name = {START: "START", END: "END"}.get(node, node)
    return f"{name} ×{visits}" if visits and node not in (START, END) else name


def _bezier_mid(p: Sequence[tuple[float, float]]) -> tuple[float, float]:
    return ((p[0][0] + 3 * p[1][0] + 3 * p[2][0] + p[3][0]) / 8,
            (p[0][1] + 3 * p[1][1] + 3 * p[2][1] + p[3][1]) / 8)


Box = tuple[float, float, float, float]
"""A node's box: x, y, width, height."""


def _boxes(shape: Shape, layer: Mapping[str, int], visits: Mapping[str, int]) -> dict[str, Box]:
    """Each node's box: a row per layer, centred, each box as wide as its label."""
    rows: dict[int, list[str]] = {}
    for node in sorted(layer, key=lambda n: (layer[n], shape.nodes.index(n)
                                              if n in shape.nodes else len(shape.nodes))):
        rows.setdefault(layer[node], []).append(node)
    box: dict[str, Box] = {}
    for row, nodes in rows.items():
        widths = [len(_label(n, visits.get(n, 0))) * CHAR_W + 2 * PAD_X for n in nodes]
        x = -(sum(widths) + NODE_GAP * (len(nodes) - 1)) / 2
        for node, w in zip(nodes, widths, strict=True):
            box[node] = (x, row * (NODE_H + LAYER_GAP), w, NODE_H)
            x += w + NODE_GAP
    return box


def _curve(s: Box, t: Box, span: int, looped: bool) -> list[tuple[float, float]]:
    """An edge's cubic Bezier from box S to box T, SPAN layers down: straight down to the next
    layer, else out on the side the two nodes lean to (in a centred column loops go right)."""
    sx, sy, sw, sh = s
    tx, ty, tw, th = t
    if not looped and span <= 1:
        a, b = (sx + sw / 2, sy + sh), (tx + tw / 2, ty)
        return [a, a, b, b]
    lean = sx + sw / 2 + tx + tw / 2
    side = 1 if lean > 1 or (abs(lean) <= 1 and looped) else -1
    bow = side * (30 + 16 * abs(span))
    ax, bx = (sx + sw, tx + tw) if side > 0 else (sx, tx)
    return [(ax, sy + sh / 2), (ax + bow, sy + sh / 2), (bx + bow, ty + th / 2), (bx, ty + th / 2)]


def _edge(e: Edge, curve: list[tuple[float, float]], on: bool) -> list[str]:
    """An edge's path (and label) as SVG, highlighted when ON (taken)."""
    dash = ' stroke-dasharray="5 4"' if e.conditional else ""
    d = "M{:.1f},{:.1f} C{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}".format(
        *(c for point in curve for c in point))
    out = [f'<path class="edge{" taken" if on else ""}{" conditional" if e.conditional else ""}"'
           f' data-source="{escape(e.source)}" data-target="{escape(e.target)}" d="{d}"'
           f' fill="none" stroke="{VISITED_LINE if on else IDLE_LINE}"'
           f' stroke-width="{2 if on else 1.2}"'
           f'{dash} marker-end="url(#ar-arrow-{"on" if on else "off"})"/>']
    if e.label:
        mx, my = _bezier_mid(curve)
        out.append(f'<text x="{mx:.1f}" y="{my - 3:.1f}" font-size="11" fill="#4b5563"'
                   f' text-anchor="middle" stroke="#fff" stroke-width="3"'
                   f' paint-order="stroke">{escape(e.label)}</text>')
    return out


def _node(node: str, box: Box, n: int) -> str:
    """A node's box and label as SVG, highlighted when it ran (N times)."""
    x, y, w, h = box
    radius = h / 2 if node in (START, END) else 6
    return (f'<g class="node{" visited" if n else ""}" data-node="{escape(node)}"'
            f' data-visits="{n}"><title>{escape(node)}: ran {n} time{"" if n == 1 else "s"}'
            f'</title><rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h}"'
            f' rx="{radius:.0f}" fill="{VISITED_FILL if n else IDLE_FILL}"'
            f' stroke="{VISITED_LINE if n else IDLE_LINE}" stroke-width="{2 if n else 1}"/>'
            f'<text x="{x + w / 2:.1f}" y="{y + h / 2 + FONT * 0.35:.1f}" text-anchor="middle"'
            f' font-family="monospace" font-size="{FONT}" fill="#111827">'
            f'{escape(_label(node, n))}</text></g>')


def graph_svg(shape: Shape, visits: Mapping[str, int] | None = None,
              taken: Collection[tuple[str, str]] = ()) -> str:
    """SHAPE as an SVG picture: VISITS (times each node ran) and TAKEN edges highlighted."""
    visits = visits or {}
    layer, back = layers(shape)
    box = _boxes(shape, layer, visits)
    parts: list[str] = []
    points: list[tuple[float, float]] = []
    for e in shape.edges:
        if e.source not in box or e.target not in box:
            continue
        span = layer[e.target] - layer[e.source]
        curve = _curve(box[e.source], box[e.target], span,
                       (e.source, e.target) in back or span <= 0)
        points += curve
        parts += _edge(e, curve, (e.source, e.target) in taken)
    for node, (x, y, w, h) in box.items():
        points += [(x, y), (x + w, y + h)]
        parts.append(_node(node, (x, y, w, h), visits.get(node, 0)))
    left = min((p[0] for p in points), default=0) - 16
    top = min((p[1] for p in points), default=0) - 8
    width = max((p[0] for p in points), default=0) + 16 - left
    height = max((p[1] for p in points), default=0) + 8 - top
    markers = "".join(
        f'<marker id="ar-arrow-{key}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8"'
        f' markerHeight="8" markerUnits="userSpaceOnUse" orient="auto">'
        f'<path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
        for key, colour in (("on", VISITED_LINE), ("off", IDLE_LINE)))
    return (f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}"'
            f' height="{height:.0f}" viewBox="{left:.1f} {top:.1f} {width:.1f} {height:.1f}"'
            f' role="img" aria-label="the graph"><defs>{markers}</defs>{"".join(parts)}</svg>')
