"""What an OpenAI-compatible server can do, asked once per endpoint and model.

vLLM, SGLang, llama.cpp's server, Ollama and hosted APIs differ: some return no logprobs, cap
`top_logprobs`, refuse `echo`, `n` or prompt logprobs. `probe(url)` sends a handful of tiny
requests (a two-word prompt, at most two generated tokens), each shaped like the requests the
methods send, and records which the server honours. Results are kept per process, and in a
small JSON file under ACTIVERAG_HOME when one is given, keyed by endpoint and served model.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from activerag.errors import LMServerUnreachable
from activerag.moved import moved_names
from activerag.serving.probe_requests import (
    Abilities,
    ask,
)

__getattr__ = moved_names(__name__, {
    "ABILITIES": "activerag.serving.probe_requests",
    "PROMPT": "activerag.serving.probe_requests",
    "TOPS": "activerag.serving.probe_requests",
})
"""Names whose home moved: from here with a DeprecationWarning that names it."""

MAX_AGE_S = 24 * 3600.0
"""How long a probe in the file cache is trusted (a server may restart with other flags)."""
PROBE_FILE = "probes.json"
"""The probe file's name under ACTIVERAG_HOME."""
_seen: dict[tuple[str, str], Abilities] = {}

def probe(url: str, model: str | None = None, *, cache_file: Path | None = None,
          fresh: bool = False, timeout: float = 60.0) -> Abilities:
    """What the server at URL (serving MODEL, else its first) can do: asked once per process,
    and once a day when CACHE_FILE keeps the answers; FRESH asks again whatever is kept. Of
    several replicas (comma-separated), the first that answers is asked."""
    from activerag.serving.replicas import urls

    down: list[LMServerUnreachable] = []
    for one in urls(url):
        try:
            return _probe_one(one.rstrip("/"), model, cache_file, fresh, timeout)
        except LMServerUnreachable as exc:
            down.append(exc)
    if len(down) == 1:
        raise down[0]
    raise LMServerUnreachable("no replica answers: " + " | ".join(map(str, down)))


def _probe_one(url: str, model: str | None, cache_file: Path | None, fresh: bool,
               timeout: float) -> Abilities:
    key = (url, model or "")
    if not fresh and key in _seen:
        return _seen[key]
    if not fresh and cache_file is not None:
        kept = _read(cache_file).get(f"{url} {model or ''}")
        # a record older than the field most_n (n's cap) is asked again
        if kept and "most_n" in kept and time.time() - kept.get("probed_at", 0) < MAX_AGE_S:
            _seen[key] = Abilities.from_json(kept)
            return _seen[key]
    found = ask(url, model, timeout)
    _seen[key] = _seen[(url, found.model)] = found
    if cache_file is not None:
        kept_all = _read(cache_file)
        kept_all[f"{url} {model or ''}"] = kept_all[f"{url} {found.model}"] = found.as_json()
        _write(cache_file, kept_all)
    return found


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: Path, kept: dict[str, Any]) -> None:
    """KEPT as the probe file PATH, whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(kept, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(path)


def forget(url: str | None = None, cache_file: Path | None = None) -> None:
    """Drop this process's probes (of URL only, when given), and URL's records in CACHE_FILE: a
    server started anew on URL may be another engine, with other flags."""
    if url is None:
        _seen.clear()
    else:
        url = url.rstrip("/")
        for key in [k for k in _seen if k[0] == url]:
            del _seen[key]
    if cache_file is None or url is None or not cache_file.exists():
        return
    kept = _read(cache_file)
    left = {k: v for k, v in kept.items() if k.split(" ", 1)[0] != url}
    if left != kept:
        _write(cache_file, left)
