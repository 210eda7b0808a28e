"""The LM and sample caches in PostgreSQL: the twin of cache.py's SQLite table, used when
ACTIVERAG_DATABASE_URL is set, so that processes on several machines share one cache."""

from __future__ import annotations

import json
import threading
from typing import Any

from activerag.database import connect, shown, unreachable

PREFIX = "activerag_cache_"
"""Each cache table's name in the database is this prefix and the table's own name."""


class PgTable:
    """One PostgreSQL table of JSON values by key, with `_Table`'s get and put; safe to share
    between threads (one connection, used under a lock) and processes (the database's own
    row locks: a put of an existing key replaces its value)."""

    def __init__(self, url: str, table: str) -> None:
        if not table.isidentifier():
            raise ValueError(f"table name {table!r} is not an identifier")
        self._url, self._name = url, PREFIX + table
        self._path = f"{shown(url)}#{self._name}"  # what names this cache in messages and locks
        self._lock = threading.Lock()
        self._db = connect(url)
        self._run(f"CREATE TABLE IF NOT EXISTS {self._name} (key TEXT PRIMARY KEY, "
                  "value TEXT NOT NULL)")

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        import psycopg

        with self._lock:
            try:
                return self._db.execute(sql, params).fetchone() if sql.startswith(
                    "SELECT") else self._db.execute(sql, params)
            except psycopg.OperationalError as exc:
                raise unreachable(self._url, exc) from exc

    def get(self, key: str) -> Any:
        row = self._run(f"SELECT value FROM {self._name} WHERE key = %s", (key,))
        return None if row is None else json.loads(row[0])

    def put(self, key: str, value: Any) -> None:
        self._run(f"INSERT INTO {self._name} (key, value) VALUES (%s, %s) ON CONFLICT (key) "
                  "DO UPDATE SET value = EXCLUDED.value", (key, json.dumps(value)))

    def close(self) -> None:
        self._db.close()
