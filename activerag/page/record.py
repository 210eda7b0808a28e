"""What a run leaves for its page (activerag/page/__init__.py): a graph run on its input,
recorded as it streams: its settings, the nodes it ran and their order and wall time, the
sentence events, the final state; with the path's node counts and edges."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document

from activerag.drawing import END, START, Shape

STREAM_MODES = ["custom", "values", "updates"]
"""What a recorded run streams: sentence events, the state, and each node's update (the path)."""

SETTINGS = ("theta", "beta", "trigger", "k", "query_formulation", "mask_unit",
            "keep_question_words", "retriever", "ensemble", "min_confidence", "model")
"""Context fields the page shows, where the method's context has them."""
SYMBOLS = {"theta": "θ", "beta": "β"}


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
    servers: list[tuple[str, str, str]] = field(default_factory=list)  # (role, URL, model)
    seconds: list[float] = field(default_factory=list)  # per path entry: wall time since the
    # previous node's update arrived (or the record began) until its own did
    sentences_at: list[int] = field(default_factory=list)  # per path entry: sentence events
    total_seconds: float | None = None  # wall time from the record's start to finish()
    decisions: dict[int, dict[str, dict[str, Any]]] = field(default_factory=dict)  # per
    # sentence index, the `decision` each node's update showed (nodes that show one)
    started: float = field(default_factory=time.perf_counter, repr=False)
    _last: float | None = field(default=None, init=False, repr=False)
    _sentences: int = field(default=0, init=False, repr=False)

    def observe(self, mode: str, chunk: Any) -> None:
        """Take one item of a STREAM_MODES stream, timed as it arrives."""
        if mode == "values":
            self.final = chunk
        elif mode == "custom" and isinstance(chunk, Mapping) and "sentence" in chunk:
            self._sentences += 1
        elif mode == "updates":
            now = time.perf_counter()
            for node, update in chunk.items():
                if not node.startswith("__"):  # __interrupt__ and the like are not nodes
                    self.path.append(node)
                    self.seconds.append(now - (self.started if self._last is None
                                               else self._last))
                    self._last = now  # nodes of one chunk: the first takes the time
                    decision = update.get("decision") if isinstance(update, Mapping) else None
                    if isinstance(decision, Mapping):
                        index = sum(self.sentences_at)
                        self.decisions.setdefault(index, {})[node] = dict(decision)
                    self.sentences_at.append(self._sentences)
                    self._sentences = 0
                    self._keep_documents(update)

    def finish(self) -> None:
        """Mark the run as having reached END, and its total wall time as taken now."""
        self.complete = True
        self.total_seconds = time.perf_counter() - self.started

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
    record.finish()
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
