"""One evaluation shared by several workers through PostgreSQL: who answers which question.

Every (method, question) of a run is a row of the claim table. A worker claims the first row
that is neither finished nor under a live lease (`SELECT ... FOR UPDATE SKIP LOCKED`, so two
workers never take the same row), renews its leases while it works, and stores the finished
row in place. A worker killed with -9 renews nothing: its lease runs out and another worker
claims the question again (and resumes its durable thread). A row is stored once: a late
finisher of a question someone else already finished is told so, and its row is dropped.
All times are the database's clock, so machines with skewed clocks still agree.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from activerag.database import VARIABLE, DatabaseError, connect, shown, unreachable
from activerag.errors import ActiveRagError, SettingError

RUNS = "activerag_eval_runs"
CLAIMS = "activerag_eval_claims"
SETUP_LOCK = 7_220_220_002
"""The advisory lock under which one worker at a time makes the tables."""
DEFAULT_LEASE = 120.0
"""Seconds a claim lasts unless renewed: how long a killed worker's question waits."""
LEASE_VARIABLE = "ACTIVERAG_EVAL_LEASE"


def lease_seconds(given: float | None = None) -> float:
    """The lease: GIVEN (--lease), else ACTIVERAG_EVAL_LEASE, else DEFAULT_LEASE; refused
    below one second (a lease renewed every third of it must outlast a round trip)."""
    raw: Any = given if given is not None else os.environ.get(LEASE_VARIABLE, DEFAULT_LEASE)
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not seconds >= 1.0 or seconds == float("inf"):
        where = "--lease" if given is not None else LEASE_VARIABLE
        raise SettingError(f"{where}={raw!r} is not a lease of at least 1 second; give the "
                           f"seconds a claimed question is held (default {DEFAULT_LEASE:g})")
    return seconds


def worker_name() -> str:
    """This process's name in the claim table: host, pid and a random tail."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Claims:
    """The claim table of one RUN in an open database connection CONN, seen by WORKER."""

    def __init__(self, conn: Any, url: str, run: str, worker: str, lease: float) -> None:
        import asyncio

        self._conn, self._url, self.run, self.worker, self.lease = conn, url, run, worker, lease
        self._lock = asyncio.Lock()

    async def _all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        async with self._lock:
            try:
                cur = await self._conn.execute(sql, params)
                return list(await cur.fetchall()) if cur.description else []
            except psycopg.OperationalError as exc:
                raise unreachable(self._url, exc) from exc

    async def setup(self) -> None:
        await self._all("SELECT pg_advisory_lock(%s)", (SETUP_LOCK,))
        try:
            await self._all(f"CREATE TABLE IF NOT EXISTS {RUNS} (run TEXT PRIMARY KEY, "
                            "config TEXT NOT NULL, summary TEXT)")
            await self._all(
                f"CREATE TABLE IF NOT EXISTS {CLAIMS} (run TEXT NOT NULL, method TEXT NOT NULL, "
                "id TEXT NOT NULL, seq INTEGER NOT NULL, worker TEXT, lease_until TIMESTAMPTZ, "
                "claims INTEGER NOT NULL DEFAULT 0, row TEXT, finished_by TEXT, "
                "PRIMARY KEY (run, method, id))")
        finally:
            await self._all("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))

    async def start(self, config: dict[str, Any], items: Sequence[tuple[str, str]]) -> None:
        """Record the run's CONFIG and its ITEMS (method, question id) unless a worker did;
        refuse a run of this name that was asked something else."""
        text = json.dumps(config, sort_keys=True)
        await self._all(f"INSERT INTO {RUNS} (run, config) VALUES (%s, %s) "
                        "ON CONFLICT (run) DO NOTHING", (self.run, text))
        (old,), = await self._all(f"SELECT config FROM {RUNS} WHERE run = %s", (self.run,))
        if old != text:
            was = json.loads(old)
            diff = sorted(k for k in set(was) | set(config) if was.get(k) != config.get(k))
            raise ActiveRagError(
                f"the run {self.run!r} in {shown(self._url)} ({VARIABLE}) was started with other "
                f"settings ({', '.join(diff)}); start every worker with the same dataset, --n, "
                "methods and flags, or choose a new --run name")
        async with self._lock:
            async with self._conn.cursor() as cur:
                await cur.executemany(
                    f"INSERT INTO {CLAIMS} (run, method, id, seq) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    [(self.run, m, i, n) for n, (m, i) in enumerate(items)])

    async def claim(self) -> tuple[str, str] | None:
        """Take the first unfinished (method, id) that no live lease holds, leased to this
        worker; None when there is none now.

        The pick is a MATERIALIZED CTE, run once. As a subquery in FROM, the planner may put it
        on the inner side of a nested loop and run it again for every row of the run: each
        rescan skips the rows this statement has just updated and locks the next, so one claim
        leased every question of the run to this worker, which then waited on its own leases
        for ever (seen once the table's statistics were skewed by a large run)."""
        rows = await self._all(
            f"WITH pick AS MATERIALIZED (SELECT method, id FROM {CLAIMS} WHERE run = %s "
            "AND row IS NULL AND (lease_until IS NULL OR lease_until < now()) ORDER BY seq "
            "LIMIT 1 FOR UPDATE SKIP LOCKED) "
            f"UPDATE {CLAIMS} AS c SET worker = %s, claims = c.claims + 1, "
            "lease_until = now() + make_interval(secs => %s) FROM pick "
            "WHERE c.run = %s AND c.method = pick.method AND c.id = pick.id "
            "RETURNING c.method, c.id", (self.run, self.worker, self.lease, self.run))
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    async def renew(self) -> int:
        """Extend the leases this worker still holds; how many it holds."""
        rows = await self._all(RENEW, (self.lease, self.run, self.worker))
        return len(rows)

    async def finish(self, method: str, id_: str, row: dict[str, Any]) -> bool:
        """Store ROW as the answer of (METHOD, ID_) unless one is stored already; whether it
        was stored."""
        rows = await self._all(
            f"UPDATE {CLAIMS} SET row = %s, finished_by = %s, lease_until = NULL "
            "WHERE run = %s AND method = %s AND id = %s AND row IS NULL RETURNING 1",
            (json.dumps(row), self.worker, self.run, method, id_))
        return bool(rows)

    async def release(self) -> None:
        """Give up this worker's unfinished claims at once (it stops on an error)."""
        await self._all(f"UPDATE {CLAIMS} SET lease_until = NULL WHERE run = %s AND worker = %s "
                        "AND row IS NULL", (self.run, self.worker))

    async def remaining(self) -> int:
        """Questions of the run not finished yet, by any worker."""
        (n,), = await self._all(f"SELECT count(*) FROM {CLAIMS} WHERE run = %s AND row IS NULL",
                                (self.run,))
        return int(n)

    async def rows(self) -> list[dict[str, Any]]:
        """The finished rows, one per method and question."""
        found = await self._all(f"SELECT row FROM {CLAIMS} WHERE run = %s AND row IS NOT NULL "
                                "ORDER BY seq", (self.run,))
        return [json.loads(r[0]) for r in found]

    async def claim_counts(self) -> dict[tuple[str, str], int]:
        """How many times each (method, id) was claimed (more than once: retaken)."""
        found = await self._all(f"SELECT method, id, claims FROM {CLAIMS} WHERE run = %s",
                                (self.run,))
        return {(str(m), str(i)): int(n) for m, i, n in found}

    async def save_summary(self, summary: dict[str, Any]) -> None:
        await self._all(f"UPDATE {RUNS} SET summary = %s WHERE run = %s",
                        (json.dumps(summary), self.run))


@asynccontextmanager
async def open_claims(url: str, run: str, lease: float,
                      worker: str | None = None) -> AsyncIterator[Claims]:
    """The claim table of RUN in the database at URL (tables made if missing), for the block."""
    try:
        import psycopg
    except ImportError as exc:
        raise DatabaseError(f"{VARIABLE} is set, but psycopg is not installed; install the "
                            "extra: pip install 'activerag[postgres]'") from exc
    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise unreachable(url, exc) from exc
    async with conn:
        claims = Claims(conn, url, run, worker or worker_name(), lease)
        await claims.setup()
        yield claims


RENEW = (f"UPDATE {CLAIMS} SET lease_until = now() + make_interval(secs => %s) "
         "WHERE run = %s AND worker = %s AND row IS NULL AND lease_until IS NOT NULL "
         "RETURNING 1")
"""Extend a worker's live leases (lease seconds, run, worker)."""


@contextmanager
def renewing(claims: Claims) -> Iterator[list[BaseException]]:
    """Renew CLAIMS's leases every third of a lease from a thread and connection of their own
    for the block, so a worker whose event loop is busy (a store loading, a long question)
    still holds its questions; yields the list where a failed renewal's error lands."""
    stop, errors = threading.Event(), list[BaseException]()

    def renew() -> None:
        try:
            with connect(claims._url) as db:
                while not stop.wait(claims.lease / 3):
                    db.execute(RENEW, (claims.lease, claims.run, claims.worker))
        except Exception as exc:  # noqa: BLE001 -- handed to the worker, which raises it
            errors.append(exc)

    thread = threading.Thread(target=renew, name="lease-renewal", daemon=True)
    thread.start()
    try:
        yield errors
    finally:
        stop.set()
        thread.join(timeout=30)
