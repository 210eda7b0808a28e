"""Runs that survive a kill: every method's graph checkpointed on disk after each step.

A run belongs to a thread. Its state is written to SQLite (LangGraph's AsyncSqliteSaver) before
the next step starts, so a FLARE answer killed midway (kill -9, a power cut, a server that went
away) resumes from its last finished step, with the sentences it had accepted, instead of from
the start. `activerag ask --thread ID` and every evaluation run use it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from activerag.durable.checkpoints import serializer
from activerag.errors import ActiveRagError
from activerag.moved import moved_names

__getattr__ = moved_names(__name__, {
    "STATE_TYPES": "activerag.durable.checkpoints",
})
"""Names whose home moved: from here with a DeprecationWarning that names it."""

log = logging.getLogger(__name__)

@asynccontextmanager
async def checkpoints(path: Path) -> AsyncIterator[Any]:
    """A SQLite checkpointer at PATH (made if missing), open for the block; what it reads back
    may hold only the state's own types (see `serializer`). With ACTIVERAG_DATABASE_URL set,
    the database's checkpointer instead (durable/postgres.py), PATH unused."""
    from activerag.database import database_url

    if (url := database_url()) is not None:
        from activerag.durable.postgres import pg_checkpoints

        async with pg_checkpoints(url) as saver:
            yield saver
        return
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path.parent.mkdir(parents=True, exist_ok=True)
    async with aiosqlite.connect(str(path)) as conn:
        try:
            async with conn.execute("PRAGMA schema_version") as cursor:
                await cursor.fetchall()
        except sqlite3.DatabaseError as exc:
            raise ActiveRagError(f"{path} is not a checkpoint file ({exc}); it was left as it is. "
                                 "Name another file with --checkpoints, or move that one away"
                                 ) from exc
        yield AsyncSqliteSaver(conn, serde=serializer(path))


def _config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


RUNS_TABLE = "activerag_thread_runs"
"""The side table (in the checkpoints' own SQLite file) naming each thread's method and
settings, so that a thread is only ever resumed or answered by the run that made it."""


def settings_of(method: str, context: Any) -> dict[str, Any]:
    """METHOD and every field of the CONTEXT dataclass, as JSON values: all that shapes a
    generation (endpoint and model included)."""
    fields = asdict(context) if is_dataclass(context) and not isinstance(context, type) else {}
    return json.loads(json.dumps({"method": method, **fields}, sort_keys=True, default=str))


def fingerprint(method: str, context: Any) -> str:
    """The sha256 of METHOD's settings under CONTEXT (JSON with sorted keys)."""
    text = json.dumps(settings_of(method, context), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [f"{key} {json.dumps(old.get(key))} -> {json.dumps(new.get(key))}"
            for key in sorted(old.keys() | new.keys()) if old.get(key) != new.get(key)]


async def _table(saver: Any) -> None:
    await saver.conn.execute(f"CREATE TABLE IF NOT EXISTS {RUNS_TABLE} (thread_id TEXT PRIMARY "
                             "KEY, fingerprint TEXT NOT NULL, settings TEXT NOT NULL)")


async def _recorded(saver: Any, thread: str) -> dict[str, Any] | None:
    if hasattr(saver, "recorded_settings"):  # the database's checkpointer (durable/postgres.py)
        found: dict[str, Any] | None = await saver.recorded_settings(thread)
        return found
    async with saver.lock:
        await _table(saver)
        async with saver.conn.execute(f"SELECT settings FROM {RUNS_TABLE} WHERE thread_id = ?",
                                      (thread,)) as cur:
            row = await cur.fetchone()
    return None if row is None else dict(json.loads(row[0]))


async def _record(saver: Any, thread: str, settings: dict[str, Any] | None) -> None:
    if hasattr(saver, "record_settings"):  # the database's checkpointer (durable/postgres.py)
        text = json.dumps(settings, sort_keys=True)
        await saver.record_settings(thread, settings, hashlib.sha256(text.encode()).hexdigest())
        return
    async with saver.lock:
        await _table(saver)
        if settings is None:
            await saver.conn.execute(f"DELETE FROM {RUNS_TABLE} WHERE thread_id = ?", (thread,))
        else:
            text = json.dumps(settings, sort_keys=True)
            await saver.conn.execute(
                f"INSERT OR REPLACE INTO {RUNS_TABLE} VALUES (?, ?, ?)",
                (thread, hashlib.sha256(text.encode()).hexdigest(), text))
        await saver.conn.commit()


async def _check_run(saver: Any, thread: str, method: str, context: Any, held: bool,
                     local: Sequence[str] = ()) -> None:
    """Refuse a run of METHOD under CONTEXT on THREAD when the thread HELD state from a run with
    another method or settings (resuming or answering it would mix the two); else record them.
    Fields named in LOCAL (a shared evaluation's endpoint and store paths, which differ from one
    machine to the next) are left out of both."""
    settings = {k: v for k, v in settings_of(method, context).items() if k not in local}
    old = await _recorded(saver, thread)
    if held and old is None:
        log.warning("thread %s predates recorded settings; it is taken to be %s with these",
                    thread, method or "this method")
    elif held and old is not None and old != settings:
        differs = _differences(old, settings)
        raise ActiveRagError(
            f"thread {thread!r} holds a run of method {old.get('method') or '(unnamed)'} with "
            f"other settings than this one, which asked for {method or '(unnamed)'} "
            f"({'; '.join(differs)}); going on with it would mix the two runs. Ask with the "
            "same method and settings, or use another --thread for this run")
    if old != settings:
        await _record(saver, thread, settings)


def _same_question(stored: Any, asked: Any) -> bool:
    """Whether a thread's STORED question is the one ASKED again: the graphs keep it without
    surrounding whitespace (nodes.base.checked_question), so "Who? " resumes "Who?"."""
    return isinstance(stored, str) and isinstance(asked, str) and stored.strip() == asked.strip()


async def stream(graph: Any, given: dict[str, Any], context: Any, saver: Any, thread: str,
                 modes: Sequence[str] = ("custom", "values"),
                 method: str = "", local: Sequence[str] = ()) -> AsyncIterator[tuple[str, Any]]:
    """GRAPH's stream of MODES for GIVEN on THREAD, checkpointed by SAVER.

    A thread whose run of the same question did not finish goes on from its last checkpoint;
    one that finished gives its final state again without running; anything else is a new
    run. An unfinished run of another question is refused rather than overwritten, and so is
    any run on a thread that holds state from another METHOD or CONTEXT (`_check_run`)."""
    g = graph.copy(update={"checkpointer": saver})
    config = _config(thread)
    state = await g.aget_state(config)
    values = state.values or {}
    if "question" not in values:
        values = {}  # stopped before its first step (only its input stored): a new run
    await _check_run(saver, thread, method, context, bool(values), local)
    start: dict[str, Any] | None = given
    if values and _same_question(values.get("question"), given.get("question")):
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
                thread: str, method: str = "", local: Sequence[str] = ()) -> dict[str, Any]:
    """The final state of GIVEN's run of METHOD on THREAD (resumed or new, see `stream`)."""
    out: dict[str, Any] = {}
    async for mode, chunk in stream(graph, given, context, saver, thread, method=method,
                                    local=local):
        if mode == "values":
            out = chunk
    return out


async def forget(saver: Any, thread: str) -> None:
    """Drop THREAD's checkpoints (a finished evaluation example needs them no more)."""
    await saver.adelete_thread(thread)
    await _record(saver, thread, None)
