"""A throwaway PostgreSQL cluster for tests: made in a temporary folder, listening on a free
loopback port only, stopped and removed afterwards.

    with throwaway_postgres() as url:   # postgresql://postgres@127.0.0.1:PORT/postgres
        os.environ["ACTIVERAG_DATABASE_URL"] = url
        ...

It needs PostgreSQL's server programs (`initdb`, `pg_ctl`; Debian's `postgresql` package puts
them under /usr/lib/postgresql/VERSION/bin, which is searched too). PostgreSQL refuses to run
as root: run as root, the cluster is made and run as the user `postgres` (with `runuser`), in a
folder that user owns.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from activerag.testing.dev_server import free_port


class PostgresMissing(RuntimeError):
    """PostgreSQL's server programs are not installed."""


def server_program(name: str) -> str:
    """The path of PostgreSQL's program NAME (initdb, pg_ctl): on PATH, else Debian's folder."""
    found = shutil.which(name) or next(iter(sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if not found:
        raise PostgresMissing(f"PostgreSQL's {name} is not installed; install it (Debian: "
                              "apt-get install postgresql, or `make setup`)")
    return found


def _as_owner(argv: list[str], owner: str | None) -> list[str]:
    return ["runuser", "-u", owner, "--", *argv] if owner else argv


@contextlib.contextmanager
def throwaway_postgres(port: int | None = None, user: str = "postgres") -> Iterator[str]:
    """A new PostgreSQL cluster on 127.0.0.1:PORT (a free one if None), trusting local
    connections, for the block; yields its URL. The cluster's folder is removed after."""
    initdb, pg_ctl = server_program("initdb"), server_program("pg_ctl")
    owner = "postgres" if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="activerag-pg-"))
    if owner:
        entry = pwd.getpwnam(owner)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    data, log = folder / "data", folder / "log"
    port = port or free_port()
    try:
        try:
            subprocess.run(_as_owner([initdb, "-D", str(data), "-A", "trust", "-U", user,
                                      "--no-sync"], owner),
                           check=True, capture_output=True, timeout=120)
            options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off"
            subprocess.run(_as_owner([pg_ctl, "-D", str(data), "-o", options, "-l", str(log),
                                      "-w", "-t", "60", "start"], owner),
                           check=True, capture_output=True, timeout=120)
        except subprocess.CalledProcessError as exc:
            told = (exc.stderr or b"").decode(errors="replace").strip()
            tail = log.read_text(errors="replace")[-800:] if log.exists() else ""
            raise RuntimeError(f"PostgreSQL did not start ({told}) {tail}") from exc
        try:
            yield f"postgresql://{user}@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run(_as_owner([pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"],
                                     owner), capture_output=True, timeout=120)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def checkpointed(url: str, prefix: str) -> dict[str, int]:
    """The threads of the database at URL whose ids start with PREFIX that hold checkpoints,
    and how many each holds (none before the checkpointer made its tables)."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=10) as db:
        try:
            found = db.execute("SELECT thread_id, count(*) FROM checkpoints WHERE thread_id "
                               "LIKE %s GROUP BY thread_id", (prefix + "%",)).fetchall()
        except psycopg.errors.UndefinedTable:
            return {}
    return {str(thread): int(n) for thread, n in found}
