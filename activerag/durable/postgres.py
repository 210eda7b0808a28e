"""Durable threads in PostgreSQL (ACTIVERAG_DATABASE_URL): LangGraph's AsyncPostgresSaver with
durable.py's allowlisting serializer (a stored value naming any class but the state's own is
refused, never unpickled or called), and the side table of each thread's method and settings."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from activerag.database import VARIABLE, shown, unreachable

RUNS_TABLE = "activerag_thread_runs"
"""Each thread's method and settings, as durable.py keeps them beside its SQLite checkpoints."""
SETUP_LOCK = 7_220_220_001
"""The advisory lock under which one process at a time makes or migrates the tables."""


def _saver_class() -> Any:
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError as exc:
        from activerag.database import DatabaseError

        raise DatabaseError(f"{VARIABLE} is set, but langgraph-checkpoint-postgres is not "
                            "installed; install the extra: pip install 'activerag[postgres]'"
                            ) from exc

    class PgSaver(AsyncPostgresSaver):  # type: ignore[misc]
        """AsyncPostgresSaver that also records which method and settings made each thread."""

        async def recorded_settings(self, thread: str) -> dict[str, Any] | None:
            async with self._cursor() as cur:
                await cur.execute(f"SELECT settings FROM {RUNS_TABLE} WHERE thread_id = %s",
                                  (thread,))
                row = await cur.fetchone()
            return None if row is None else dict(json.loads(row["settings"]))

        async def record_settings(self, thread: str, settings: dict[str, Any] | None,
                                  digest: str) -> None:
            async with self._cursor() as cur:
                if settings is None:
                    await cur.execute(f"DELETE FROM {RUNS_TABLE} WHERE thread_id = %s",
                                      (thread,))
                else:
                    await cur.execute(
                        f"INSERT INTO {RUNS_TABLE} VALUES (%s, %s, %s) ON CONFLICT (thread_id) "
                        "DO UPDATE SET fingerprint = EXCLUDED.fingerprint, "
                        "settings = EXCLUDED.settings",
                        (thread, digest, json.dumps(settings, sort_keys=True)))

    return PgSaver


@asynccontextmanager
async def pg_checkpoints(url: str) -> AsyncIterator[Any]:
    """A checkpointer in the database at URL (its tables made if missing), open for the block."""
    import psycopg
    from psycopg.rows import dict_row

    from activerag.durable.checkpoints import serializer

    saver_class = _saver_class()
    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True, prepare_threshold=0,
                                                     row_factory=dict_row, connect_timeout=10)
    except psycopg.Error as exc:
        raise unreachable(url, exc) from exc
    async with conn:
        saver = saver_class(conn, serde=serializer(f"the database {shown(url)} ({VARIABLE})"))
        await conn.execute("SELECT pg_advisory_lock(%s)", (SETUP_LOCK,))
        try:
            await saver.setup()
            await conn.execute(f"CREATE TABLE IF NOT EXISTS {RUNS_TABLE} (thread_id TEXT "
                               "PRIMARY KEY, fingerprint TEXT NOT NULL, settings TEXT NOT NULL)")
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))
        yield saver


@asynccontextmanager
async def dev_checkpointer() -> AsyncIterator[Any]:
    """The database's checkpointer for `langgraph dev` and the LangGraph server: name it in
    langgraph.json as `"checkpointer": {"path": "activerag.durable.postgres.dev_checkpointer"}`; the
    URL is ACTIVERAG_DATABASE_URL, which must be set."""
    from activerag.database import DatabaseError, check

    url = check()
    if url is None:
        raise DatabaseError(f"langgraph.json names activerag's Postgres checkpointer, but "
                            f"{VARIABLE} is not set; set it to postgresql://..., or remove "
                            "the checkpointer entry")
    async with pg_checkpoints(url) as saver:
        yield saver


def forget_threads(url: str, threads: list[str]) -> None:
    """Drop the checkpoints and recorded settings of THREADS (finished questions whose rows are
    kept elsewhere) in the database at URL, in one statement per table."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as db:
            for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints", RUNS_TABLE):
                db.execute(f"DELETE FROM {table} WHERE thread_id = ANY(%s)", (threads,))
    except psycopg.Error as exc:
        raise unreachable(url, exc) from exc
