"""What a deployment may limit: the API key the LM server asks for, the LM endpoints and the
folders a run's context may name. Each limit is an ACTIVERAG_ variable; unset, it limits
nothing."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from urllib.parse import SplitResult, unquote, urlsplit

from activerag.errors import ActiveRagError, SettingError

API_KEY = "ACTIVERAG_API_KEY"
"""The key every server activerag starts is given (vLLM as VLLM_API_KEY, llama-server as
LLAMA_API_KEY) and every client sends as a bearer token."""
SERVER_KEY_VARIABLES = ("VLLM_API_KEY", "LLAMA_API_KEY")
"""The variables each engine reads its API key from: vLLM's, then llama-server's (which ignores
vLLM's; given only that one, it served every request without a key)."""
ALLOWED_BASE_URLS = "ACTIVERAG_ALLOWED_BASE_URLS"
"""Comma-separated URL prefixes; set, every LM endpoint a run names must lie under one."""
STORE_ROOT = "ACTIVERAG_STORE_ROOT"
"""A folder; set, every store or query encoder folder a run names must lie inside it."""


def api_key() -> str | None:
    """ACTIVERAG_API_KEY, or None when it is unset or blank."""
    return os.environ.get(API_KEY, "").strip() or None


def auth_headers() -> dict[str, str]:
    """The header that carries the API key to the LM server; none without a key."""
    key = api_key()
    return {"Authorization": f"Bearer {key}"} if key else {}


def unauthorized_error(base_url: str) -> ActiveRagError:
    """The error for a server at BASE_URL that answered 401: it wants another API key."""
    sent = (f"refused the key in {API_KEY}" if api_key()
            else f"wants an API key and {API_KEY} is unset")
    return ActiveRagError(f"the LM server at {base_url} answered 401: it {sent}; set {API_KEY} "
                          "to the key the server was started with (its --api-key)")


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_key_env(host: str) -> dict[str, str]:
    """The environment that gives every engine its API key, for a server bound to HOST:
    {"VLLM_API_KEY": KEY, "LLAMA_API_KEY": KEY} when ACTIVERAG_API_KEY is set (the environment,
    not --api-key, keeps the key out of the process list); none for a loopback HOST without
    one; a HOST other
    machines can reach (0.0.0.0, an interface's address, a name) without a key is refused,
    since anyone who reaches it could use the model."""
    key = api_key()
    if key:
        return dict.fromkeys(SERVER_KEY_VARIABLES, key)
    if _loopback(host):
        return {}
    raise SettingError(f"the LM server would listen on {host or 'every interface'!r} with no "
                       f"API key, open to anyone who reaches it; set {API_KEY} (the clients "
                       "send it too), or bind it to 127.0.0.1")


def _port(url: SplitResult) -> int | None:
    return url.port or {"http": 80, "https": 443}.get(url.scheme.lower())


def _parts(url: str) -> tuple[str, str, int | None, str] | None:
    """URL's scheme, host, port and decoded path; None where it is not a plain http(s) URL
    (user info, a backslash, a blank or control character, a bad port)."""
    if any(c == "\\" or ord(c) <= 32 for c in url):
        return None
    split = urlsplit(url)
    try:
        port = _port(split)
    except ValueError:
        return None
    if split.scheme.lower() not in ("http", "https") or not split.hostname or "@" in split.netloc:
        return None
    return split.scheme.lower(), split.hostname.lower(), port, unquote(split.path)


def allowed_base_urls() -> list[str] | None:
    """The prefixes of ACTIVERAG_ALLOWED_BASE_URLS; None when it is unset or blank."""
    raw = os.environ.get(ALLOWED_BASE_URLS, "")
    prefixes = [p.strip() for p in raw.split(",") if p.strip()]
    for prefix in prefixes:
        if _parts(prefix) is None:
            raise SettingError(f"{ALLOWED_BASE_URLS} holds {prefix!r}, not an http(s) URL such "
                               "as http://127.0.0.1:8000/v1; fix the variable or unset it")
    return prefixes or None


def _under(url: str, prefix: str) -> bool:
    """Whether URL lies under PREFIX by its parts, not its text: the same scheme, host and
    port, and a path that is the prefix's or below it (no "." or ".." segment), so neither
    http://127.0.0.1:80001 nor http://127.0.0.1:8000@elsewhere passes for http://127.0.0.1:8000."""
    got, want = _parts(url), _parts(prefix)
    if got is None or want is None or got[:3] != want[:3]:
        return False
    segments = got[3].split("/")
    if "." in segments or ".." in segments:
        return False
    base = want[3].rstrip("/")
    return got[3] == base or got[3].startswith(base + "/")


def check_endpoint(name: str, url: str) -> None:
    """Refuse setting NAME's URL unless it lies under a prefix of ACTIVERAG_ALLOWED_BASE_URLS
    (any URL when that is unset)."""
    prefixes = allowed_base_urls()
    if prefixes is None or any(_under(url, p) for p in prefixes):
        return
    raise SettingError(f"{name} {url!r} is not under an endpoint {ALLOWED_BASE_URLS} allows "
                       f"({', '.join(prefixes)}); use one of those, or have the deployment "
                       "add it")


def check_folder(name: str, folder: str) -> None:
    """Refuse setting NAME's FOLDER unless it resolves (symlinks and ".." followed) inside
    ACTIVERAG_STORE_ROOT; empty (the deployment's own default) and any folder pass when that
    is unset."""
    root = os.environ.get(STORE_ROOT, "").strip()
    if not root or not folder:
        return
    inside = Path(root).expanduser().resolve()
    if not Path(folder).expanduser().resolve().is_relative_to(inside):
        raise SettingError(f"{name} {folder!r} lies outside {STORE_ROOT} ({inside}); give a "
                           "folder inside it")


def check_key_enforced(base_url: str, model: str, timeout: float = 30.0) -> None:
    """With ACTIVERAG_API_KEY set, refuse the server at BASE_URL unless it refuses a request that
    carries no key (a completion of one token: llama-server leaves /v1/models open): a server
    started without the key would serve anyone who reaches it. Nothing is asked without a key."""
    if api_key() is None:
        return
    import httpx  # here, not at import: the CLI's start stays quick

    try:
        resp = httpx.post(f"{base_url.rstrip('/')}/completions", timeout=timeout,
                          json={"model": model, "prompt": "a", "max_tokens": 1})
    except httpx.HTTPError as exc:
        raise ActiveRagError(f"could not check that the server at {base_url} asks for its API "
                             f"key ({exc}); check that it answers") from exc
    if resp.status_code not in (401, 403):
        raise ActiveRagError(
            f"{API_KEY} is set, but the server at {base_url} answered a request without the key "
            f"(HTTP {resp.status_code}): it was started without it and serves anyone who reaches "
            f"it; stop it and start it again with the key (activerag serve does)")
