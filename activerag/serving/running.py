"""What a running OpenAI-compatible server says about itself: the models it serves, its /models
entries, and vLLM's cumulative counters."""

from __future__ import annotations

import re
from typing import Any

from activerag.errors import LMServerUnreachable
from activerag.serving.security import auth_headers, unauthorized_error


def server_models(base_url: str, timeout: float = 5.0) -> list[str]:
    """Ids of the models an OpenAI-compatible server serves; raise if it does not answer."""
    return [m["id"] for m in server_entries(base_url, timeout)]


def server_entries(base_url: str, timeout: float = 5.0) -> list[dict[str, Any]]:
    """The /models entries of an OpenAI-compatible server (vLLM's carry `root` and
    `max_model_len` beside `id`); raise if it does not answer."""
    import httpx  # here, not at import: the CLI's start stays quick

    try:
        resp = httpx.get(f"{base_url.rstrip('/')}/models", timeout=timeout,
                         headers=auth_headers())
        if resp.status_code == 401:
            raise unauthorized_error(base_url)
        resp.raise_for_status()
    except httpx.HTTPError as exc:
        raise LMServerUnreachable(
            f"no OpenAI-compatible server answers at {base_url} ({exc}); start one with "
            "`activerag serve` or pass the URL of a running vLLM server with --base-url"
        ) from exc
    return list(resp.json().get("data", []))


_COUNTER = re.compile(r"^(vllm:[a-z_]+_total)\{[^}]*\} (\S+)$", re.MULTILINE)


def vllm_counters(base_url: str) -> dict[str, float]:
    """vLLM's cumulative counters from /metrics, summed over labels and over the replicas of a
    comma-separated BASE_URL (a replica that does not answer adds nothing)."""
    import httpx  # here, not at import: the CLI's start stays quick

    out: dict[str, float] = {}
    for url in base_url.split(","):
        try:
            text = httpx.get(url.strip().removesuffix("/v1") + "/metrics", timeout=5).text
        except httpx.HTTPError:
            continue
        for name, value in _COUNTER.findall(text):
            out[name] = out.get(name, 0.0) + float(value)
    return out
