"""Process-wide settings: where models, stores and the server live (env prefix ACTIVERAG_)."""

from __future__ import annotations

import math
import os
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from activerag.errors import ActiveRagError, SettingError


def _home() -> Path:
    """ACTIVERAG_HOME, else ~/.cache/activerag (blank counts as unset, as for every variable)."""
    given = os.environ.get("ACTIVERAG_HOME", "").strip()
    return Path(given) if given else Path.home() / ".cache" / "activerag"


class Settings(BaseModel):
    """Paths and endpoints shared by the CLI, the server manager and the graphs."""

    home: Path = Field(default_factory=_home, description="cache root for models, stores, pids")
    host: str = Field(default="127.0.0.1", description="host the managed vLLM server binds to")
    port: int = Field(default=8765, ge=1, le=65535,
                      description="port the managed vLLM server binds to")
    base_url: str | None = Field(
        default=None, description="an existing OpenAI-compatible server (skips the managed one)"
    )
    model: str | None = Field(default=None, description="served model name; None: ask the server")
    store_dir: Path | None = Field(default=None, description="where the stores persist")
    chroma_url: str | None = Field(default=None, description="Chroma server URL (`chroma run`)")

    @classmethod
    def from_env(cls) -> Settings:
        """Read ACTIVERAG_* variables over the defaults; a variable that does not parse (and
        ACTIVERAG_LM_TIMEOUT, which the LM clients read) is refused by name."""
        env = {name: os.environ.get(f"ACTIVERAG_{name.upper()}")
               for name in ("host", "port", "base_url", "model", "store_dir", "chroma_url")}
        given = {k: v for k, v in env.items() if v}
        lm_timeout()
        home = _home()
        if home.exists() and not home.is_dir():
            raise SettingError(f"ACTIVERAG_HOME={str(home)!r} is a file, not a folder; point it "
                               "at a folder (it is made when missing) or unset it")
        try:
            return cls.model_validate(given)
        except ValidationError as exc:
            first = exc.errors()[0]
            name = str(first["loc"][0]) if first["loc"] else ""
            raise SettingError(
                f"ACTIVERAG_{name.upper()}={given.get(name)!r} is not valid ({first['msg']}); "
                "fix the variable or unset it") from exc

    @property
    def url(self) -> str:
        """Base URL of the OpenAI-compatible API, ending in /v1."""
        return self.base_url or f"http://{self.host}:{self.port}/v1"

    @property
    def stores(self) -> Path:
        """Directory of the persisted stores."""
        return self.store_dir or self.home / "store"

    @property
    def models(self) -> Path:
        """Directory of converted models."""
        return self.home / "models"


def lm_timeout() -> float:
    """Seconds an LM request may wait for its answer: ACTIVERAG_LM_TIMEOUT, else 300. A busy CPU
    server can queue echo-scoring requests for longer than that."""
    raw = os.environ.get("ACTIVERAG_LM_TIMEOUT", "300")
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise SettingError(f"ACTIVERAG_LM_TIMEOUT={raw!r} is not a positive number of seconds; "
                           "set it to one (e.g. 300) or unset it")
    return seconds


def shared_data() -> Path:
    """The evaluation data folder: $ACTIVERAG_DATA, else ../shared/data beside the checkout."""
    if os.environ.get("ACTIVERAG_DATA"):
        path = Path(os.environ["ACTIVERAG_DATA"])
        if not path.is_dir():
            raise ActiveRagError(f"ACTIVERAG_DATA={path} is not a folder; point it at shared/data")
        return path
    for base in (Path.cwd(), Path(__file__).resolve().parents[1]):
        candidate = base.parent / "shared" / "data"
        if candidate.exists():
            return candidate
    raise ActiveRagError("evaluation data not found; set ACTIVERAG_DATA to the shared/data folder")
