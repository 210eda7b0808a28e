"""FB-RAG's settings: the strong reader's and the light sampler's endpoints, the chunk sizes,
the samples and Eq. 6's weights."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from activerag.context import Server, ServingContext, _env
from activerag.context_checks import at_least, documented, refuse
from activerag.errors import SettingError
from activerag.method_record import with_samples
from activerag.serving.catalogue import DEFAULT_PORT, FAST_MODEL, CatalogueModel


def _served_here(model: CatalogueModel) -> str:
    """The endpoint `activerag serve --model KEY` gives MODEL on this machine."""
    return f"http://127.0.0.1:{model.port}/v1"


_LIGHT = FAST_MODEL
"""FB-RAG's default light sampler (its strong reader: the default model)."""


@documented
@dataclass(kw_only=True)
class FBRagContext(ServingContext):
    """Settings of one FB-RAG run (Chawla et al. 2025) and of its baselines over the same
    chunks: a light LM samples rationales and answers that rerank the chunks, a strong LM
    reads the best of them. base_url, model and prompt_format name the strong reader; light_*
    the light sampler. Sizes are in words, the paper's "(X→Y)"."""

    base_url: str = _env("ACTIVERAG_STRONG_URL",
                         _env("ACTIVERAG_BASE_URL", f"http://127.0.0.1:{DEFAULT_PORT}/v1"))
    """The strong reader's endpoint (default: the default model, as `activerag serve`
    serves it)."""
    prompt_format: Literal["chatml", "plain", "auto"] = "auto"
    """The strong reader's prompt layout (default: its own template, asked of its server)."""
    light_base_url: str = _env("ACTIVERAG_LIGHT_URL", _served_here(_LIGHT))
    """The light sampler's endpoint (default: SmolLM2-135M, as `activerag serve --model
    smollm2-135m` serves it)."""
    light_model: str = ""
    """The light sampler's model name; empty: the one its server serves."""
    light_prompt_format: Literal["chatml", "plain", "auto"] = "auto"
    """The light sampler's prompt layout (default: its own template, asked of its server)."""
    max_answer_tokens: int = 32
    """The reader's answer budget (LongBench's for 2WikiMQA and HotpotQA)."""
    chunking: Literal["words", "paragraphs"] = "words"
    """words: fixed chunks of chunk_words words; paragraphs: one chunk per passage."""
    chunk_words: int = 100
    """Words per chunk (the paper's 300, scaled to these models' windows)."""
    recall_words: int = 1500
    """X: words of the question's best BM25 chunks the light LM reads (stage I)."""
    read_words: int = 500
    """Y: words of the best-ranked chunks the strong LM reads."""
    samples: int = 5
    """K: the light LM's samples (stage II)."""
    separate_requests: bool = False
    """Draw the K samples as K requests instead of one request with n=K (which shares the
    prompt's prefill)."""
    sample_tokens: int = 96
    """Token budget of one sample (the answer's 32 plus 64 for the rationale)."""
    temperature: float = 1.0
    """The light LM's sampling temperature (stage II)."""
    top_p: float = 0.9
    """The light LM's nucleus: sample from the tokens holding this much probability."""
    top_k: int = 50
    """The light LM samples from its k most likely next tokens."""
    seed: int | None = None
    """Sampling seed; None: unseeded. A seeded request crashed vLLM's CPU engine here ("CPU
    Generator does not use offset") when its long prompt was prefilled in chunks, so seed
    only a GPU server."""
    eta_b: float = 0.0
    """η_B: weight of the question's own BM25 score (Eq. 6; Ours-FB 0.5, Ours-F 0)."""
    eta_f: float = 1.0
    """η_F: weight of the max over samples (Ours-FB 0.5, Ours-F 1)."""
    scale: Literal["raw", "minmax"] = "raw"
    """How the two terms of Eq. 6 are put together: as they are, or each mapped onto [0, 1]
    (the paper does not say)."""
    k: int = 50
    """A question without its own context: passages stage I retrieves from the store (their
    first recall_words words become the context)."""

    def __post_init__(self) -> None:
        self._check()
        at_least(self, 1, "chunk_words", "recall_words", "read_words", "samples",
                 "sample_tokens", "top_k")
        if not 0.0 < self.top_p <= 1.0:
            raise refuse("top_p", "lie in (0, 1]", self.top_p)
        at_least(self, 0, "temperature", "eta_b", "eta_f")
        if self.eta_b == self.eta_f == 0:
            raise SettingError("eta_b and eta_f are both 0: nothing would rank the chunks; "
                               "give one of them a positive weight")

    def sampling_needs(self, needs: frozenset[str]) -> frozenset[str]:
        """NEEDS (a row's) with this run's samples, for a row whose light sampler samples: K in
        one request (light.n_K), or one request each with separate_requests."""
        if "light.n" not in needs:
            return needs
        return with_samples(needs, "light.", None if self.separate_requests else self.samples)

    def servers(self, with_context: bool = False) -> list[Server]:
        """The light sampler (asked only by the methods that sample), then the strong reader."""
        return [Server("FB-RAG's light sampler", self, "light_base_url", FAST_MODEL.key,
                       "light."),
                Server("FB-RAG's strong reader", self, "base_url")]
