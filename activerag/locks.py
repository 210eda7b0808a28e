"""One writer at a time for a folder (a BM25 store, an evaluation run): an exclusive flock on
its writer.lock, which names the process holding it. Readers take no lock and write nothing."""

from __future__ import annotations

import fcntl
import os
import shlex
import sys
from pathlib import Path
from typing import TextIO

from activerag.errors import ActiveRagError

LOCK_FILE = "writer.lock"


class WriterLock:
    """The writer's lock on FOLDER (WHAT names the folder in an error: "the BM25 store")."""

    def __init__(self, folder: Path, what: str) -> None:
        self.folder, self.what = folder, what
        self._file: TextIO | None = None

    @property
    def held(self) -> bool:
        return self._file is not None

    def acquire(self) -> bool:
        """Take the lock, or refuse (naming the holder) when another writer has it; False when
        this object held it already. The system drops it when the holder's process ends."""
        if self._file is not None:
            return False
        self.folder.mkdir(parents=True, exist_ok=True)
        file = open(self.folder / LOCK_FILE, "a+", encoding="utf-8")  # noqa: SIM115
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            holder = file.read().strip() or "one that has not yet written its pid"
            file.close()
            raise ActiveRagError(
                f"{self.what} {self.folder} is being written by another writer ({holder}); "
                "wait until it ends (or stop it), then run this again") from None
        file.truncate(0)
        file.write(f"pid {os.getpid()}: {shlex.join(sys.argv)}\n")
        file.flush()
        self._file = file
        return True

    def release(self) -> None:
        """Let the next writer in (nothing if this object does not hold the lock)."""
        file, self._file = self._file, None
        if file is not None:
            file.truncate(0)
            fcntl.flock(file, fcntl.LOCK_UN)
            file.close()
