"""Runs that survive a kill: every method's graph checkpointed on disk after each step.

A run belongs to a thread. Its state is written to SQLite (LangGraph's AsyncSqliteSaver) before
the next step starts, so a FLARE answer killed midway (kill -9, a power cut, a server that went
away) resumes from its last finished step, with the sentences it had accepted, instead of from
the start. `activerag ask --thread ID` and every evaluation run use it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from activerag.errors import ActiveRagError

log = logging.getLogger(__name__)


@asynccontextmanager
async def checkpoints(path: Path) -> AsyncIterator[Any]:
    """A SQLite checkpointer at PATH (made if missing), open for the block."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        yield saver


def _config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


async def stream(graph: Any, given: dict[str, Any], context: Any, saver: Any, thread: str,
                 modes: Sequence[str] = ("custom", "values")) -> AsyncIterator[tuple[str, Any]]:
    """GRAPH's stream of MODES for GIVEN on THREAD, checkpointed by SAVER.

    A thread whose run of the same question did not finish goes on from its last checkpoint;
    one that finished gives its final state again without running; anything else is a new
    run. An unfinished run of another question is refused rather than overwritten."""
    g = graph.copy(update={"checkpointer": saver})
    config = _config(thread)
    state = await g.aget_state(config)
    values = state.values or {}
    start: dict[str, Any] | None = given
    if values and values.get("question") == given.get("question"):
        if not state.next:
            log.warning("thread %s already answered this question; its stored answer follows",
                        thread)
            yield "values", values
            return
        log.warning("thread %s: resuming after %d accepted sentence(s), at %s", thread,
                    len(values.get("trace", [])), ", ".join(state.next))
        start = None
    elif values and state.next:
        raise ActiveRagError(
            f"thread {thread!r} holds an unfinished run of another question "
            f"({values.get('question')!r}); ask that question to finish it, or use another "
            "--thread")
    async for mode, chunk in g.astream(start, config, context=context,
                                       stream_mode=list(modes), durability="sync"):
        yield mode, chunk


async def final(graph: Any, given: dict[str, Any], context: Any, saver: Any,
                thread: str) -> dict[str, Any]:
    """The final state of GIVEN's run on THREAD (resumed or new, see `stream`)."""
    out: dict[str, Any] = {}
    async for mode, chunk in stream(graph, given, context, saver, thread):
        if mode == "values":
            out = chunk
    return out


async def forget(saver: Any, thread: str) -> None:
    """Drop THREAD's checkpoints (a finished evaluation example needs them no more)."""
    await saver.adelete_thread(thread)
