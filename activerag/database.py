"""Where runs keep their state beyond one machine: ACTIVERAG_DATABASE_URL, a PostgreSQL URL.

Unset, everything stays in SQLite files and run folders (the default). Set, durable threads,
the LM and sample caches and evaluation progress go to that database, so several processes
on several machines share them. A URL that is malformed or names a server that does not
answer is refused before any LM call, by the variable's name.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from activerag.errors import SettingError

VARIABLE = "ACTIVERAG_DATABASE_URL"
SCHEMES = ("postgresql", "postgres")
CONNECT_TIMEOUT = 10
"""Seconds a connection may take before the database counts as unreachable."""


class DatabaseError(SettingError):
    """ACTIVERAG_DATABASE_URL is malformed, or its database does not answer."""


def database_url() -> str | None:
    """ACTIVERAG_DATABASE_URL if set (checked for its form, not yet connected), else None."""
    url = os.environ.get(VARIABLE, "").strip()
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES or not (parts.hostname or "host=" in parts.query):
        raise DatabaseError(
            f"{VARIABLE}={shown(url)!r} is not a PostgreSQL URL; set it to "
            "postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE, or unset it to keep runs in "
            "local SQLite files")
    try:
        parts.port  # noqa: B018 -- a port that is not a number raises here
    except ValueError as exc:
        raise DatabaseError(f"{VARIABLE}={shown(url)!r} has a port that is not a number; fix "
                            "the variable or unset it") from exc
    return url


def shown(url: str) -> str:
    """URL with its password replaced by ***, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _driver() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise DatabaseError(f"{VARIABLE} is set, but psycopg is not installed; install the "
                            "extra: pip install 'activerag[postgres]'") from exc
    return psycopg


def connect(url: str, **options: Any) -> Any:
    """A psycopg connection to URL (autocommit), or a DatabaseError naming the variable."""
    psycopg = _driver()
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT, **options)
    except psycopg.Error as exc:
        raise unreachable(url, exc) from exc


def unreachable(url: str, exc: BaseException) -> DatabaseError:
    """The error for a database at URL that refused or did not answer (EXC)."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return DatabaseError(
        f"{VARIABLE}={shown(url)!r}: the database did not answer ({first}); start it, fix the "
        "URL, or unset the variable to keep runs in local SQLite files")


def check() -> str | None:
    """The database URL, once a connection to it worked; None when the variable is unset."""
    url = database_url()
    if url is not None:
        connect(url).close()
    return url
