"""Process-wide settings: where models, stores and the server live (env prefix ACTIVERAG_)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field


def _home() -> Path:
    return Path(os.environ.get("ACTIVERAG_HOME", Path.home() / ".cache" / "activerag"))


class Settings(BaseModel):
    """Paths and endpoints shared by the CLI, the server manager and the graphs."""

    home: Path = Field(default_factory=_home, description="cache root for models, stores, pids")
    host: str = Field(default="127.0.0.1", description="host the managed vLLM server binds to")
    port: int = Field(default=8765, description="port the managed vLLM server binds to")
    base_url: str | None = Field(
        default=None, description="an existing OpenAI-compatible server (skips the managed one)"
    )
    model: str | None = Field(default=None, description="served model name; None: ask the server")
    store_dir: Path | None = Field(default=None, description="where the stores persist")
    chroma_url: str | None = Field(default=None, description="Chroma server URL (`chroma run`)")

    @classmethod
    def from_env(cls) -> Settings:
        """Read ACTIVERAG_* variables over the defaults."""
        env = {
            "host": os.environ.get("ACTIVERAG_HOST"),
            "port": os.environ.get("ACTIVERAG_PORT"),
            "base_url": os.environ.get("ACTIVERAG_BASE_URL"),
            "model": os.environ.get("ACTIVERAG_MODEL"),
            "store_dir": os.environ.get("ACTIVERAG_STORE_DIR"),
            "chroma_url": os.environ.get("ACTIVERAG_CHROMA_URL"),
        }
        return cls.model_validate({k: v for k, v in env.items() if v})

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
