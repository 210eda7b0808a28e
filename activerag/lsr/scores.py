"""The teacher's side of LSR: an answer's token log-probabilities after each passage, asked of
the served LM by echo scoring and kept in SQLite."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from activerag.lsr.objective import TEACHER_PROMPTS
from activerag.nodes.prompts import neutralise


class ScoreCache:
    """LM scores by (question, passage id, answer, model, teacher prompt) in SQLite: a resumed or
    repeated training run asks the server only for pairs it has not scored."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS score (key TEXT PRIMARY KEY, "
                         "logprobs TEXT NOT NULL)")
        self._lock = threading.Lock()

    @staticmethod
    def key(question: str, passage_id: str, answer: str, model: str, template: str) -> str:
        return json.dumps([question, passage_id, answer, model, template])

    def get(self, key: str) -> list[float] | None:
        with self._lock:
            row = self._db.execute("SELECT logprobs FROM score WHERE key = ?", (key,)).fetchone()
        return None if row is None else list(json.loads(row[0]))

    def put(self, key: str, logprobs: list[float]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO score VALUES (?, ?)",
                             (key, json.dumps(logprobs)))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM score").fetchone()[0])


async def answer_logprobs(lm: Any, cache: ScoreCache, question: str, answer: str,
                          passages: Sequence[tuple[str, str]],
                          template: str = TEACHER_PROMPTS["qa"]
                          ) -> tuple[list[list[float]], int]:
    """The token log-probabilities of ANSWER after each (id, text) passage and QUESTION (put in
    TEMPLATE), and how many the server had to score (the rest came from CACHE)."""
    answer = answer.strip()
    keys = [cache.key(question, pid, answer, lm.model, template) for pid, _ in passages]
    found = [cache.get(k) for k in keys]
    todo = [i for i, f in enumerate(found) if f is None]
    if todo:
        y = await lm.tokenize(" " + answer)
        prompts = await asyncio.gather(*[
            lm.tokenize(template.format(passage=neutralise(passages[i][1]),
                                         question=neutralise(question)))
            for i in todo])
        scored = await asyncio.gather(*[lm.score(p, y) for p in prompts])
        for i, values in zip(todo, scored, strict=True):
            cache.put(keys[i], values)
            found[i] = values
    return [list(f) for f in found if f is not None], len(todo)
