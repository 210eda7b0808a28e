"""Per-run settings of the graphs (LangGraph `context_schema`): Studio shows and edits them.
The checks and the field descriptions every context class uses are context_checks.py's."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from activerag.context_checks import at_least, documented, finite_floats, refuse, within_deployment
from activerag.errors import SettingError
from activerag.serving.catalogue import DEFAULT_MODEL, FAST_MODEL, CatalogueModel
from activerag.trigger_names import check_trigger


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


@documented
@dataclass(kw_only=True)
class ServingContext:
    """Where the LM and the documents come from, and how prompts are put: every method
    family's context (FLARE's, REPLUG's) has these."""

    k: int = 2
    """Documents retrieved per retrieval."""
    max_answer_tokens: int = 256
    """Stop once the answer holds this many tokens (the authors' max generation length)."""
    exemplar_retrieval: bool | None = None
    """Give each exemplar the documents retrieved with its own question (Table 7, Appendix B).
    None: on for the paper's 2WikiMultihopQA exemplars (prompt_set "paper"), off otherwise."""
    prompt_set: Literal["default", "paper", "paper-strategyqa", "paper-asqa", "none"] = "default"
    """Exemplars: the library's own, or the paper's for 2Wiki, StrategyQA or ASQA (read from
    $ACTIVERAG_DATA at run time, never copied); none: the library's instruction alone, zero-shot
    (as LangChain's FlareChain prompts; self-ask, defined by its exemplars, refuses it)."""
    base_url: str = _env("ACTIVERAG_BASE_URL", f"http://127.0.0.1:{DEFAULT_MODEL.port}/v1")
    """OpenAI-compatible (vLLM) endpoint (default: where `activerag serve` serves the default
    model)."""
    model: str = _env("ACTIVERAG_MODEL", "")
    """Served model name; empty: the one the server serves."""
    prompt_format: Literal["chatml", "plain", "auto"] = "chatml"
    """auto: the served model's own chat template, asked of its server (a model without one:
    plain); chatml: ChatML as written here (Qwen, SmolLM2); plain: text for base models."""
    retriever: Literal["bm25", "chroma"] = "bm25"
    """Which store of the corpus answers queries (the paper uses BM25)."""
    store_dir: str = _env("ACTIVERAG_STORE_DIR", "")
    """Corpus folder; empty: the default under ACTIVERAG_HOME."""
    query_encoder: str = ""
    """A query encoder folder trained by `activerag train-retriever` (REPLUG-LSR), searching
    the chroma store; empty: the collection's own MiniLM."""

    @property
    def exemplars_retrieve(self) -> bool:
        """Whether exemplars carry retrieved documents in this run."""
        if self.exemplar_retrieval is None:
            return self.prompt_set == "paper"
        return self.exemplar_retrieval

    def _check(self) -> None:
        finite_floats(self)
        at_least(self, 1, "k", "max_answer_tokens")
        within_deployment(self)


@documented
@dataclass(kw_only=True)
class FlareContext(ServingContext):
    """Thresholds, limits, model and endpoint of one run; defaults follow FLARE Table 9 (2Wiki)."""

    theta: float = 0.8
    """Retrieve when any draft token has probability below theta (0: never, 1: always)."""
    trigger: str = "min_prob"
    """When to retrieve (nodes/triggers.py): min_prob (FLARE: any token below theta),
    mean_surprisal (geometric-mean probability below theta), never, always, every_n (every
    trigger_n answer tokens), or a trigger registered by name."""
    trigger_n: int = 16
    """every_n's period in answer tokens."""
    beta: float = 0.4
    """Implicit queries mask draft tokens below beta; explicit ones ask about those spans."""
    k: int = 2
    """Documents retrieved per step (the paper's top-k for 2WikiMultihopQA)."""
    query_formulation: Literal["implicit", "explicit"] = "implicit"
    """implicit: the draft with low-confidence tokens masked; explicit: generated questions."""
    mask_unit: Literal["token", "word"] = "token"
    """Implicit queries: mask each token below beta (the paper, Table 5), or whole words with
    any token below beta (no word fragments such as "eselin" left in the query)."""
    keep_question_words: bool = False
    """Implicit queries: never mask a word that occurs in the question x."""
    span_merge_gap: int = 3
    """Explicit queries: low-confidence tokens with at most this many confident tokens between
    them form one span ("University of Pennsylvania"; the authors' code merges tokens fewer than
    5 positions apart, i.e. 3 between)."""
    initial_retrieval: bool = True
    """Retrieve with the question for the first sentence (FLARE Appendix A)."""
    keep_documents: bool = True
    """The last retrieved documents stay in every later prompt, look-ahead drafts included,
    until the next retrieval replaces them (§2.3; what the authors' code ran). False: only the
    regenerated sentence sees them."""
    max_sentences: int | None = None
    """Stop after this many accepted sentences (None: only max_answer_tokens caps the answer,
    the same cap for every method)."""
    max_sentence_tokens: int = 64
    """Token budget of one sentence (the paper generates 64 tokens per step)."""
    max_question_tokens: int = 32
    """Token budget of one generated question (explicit query formulation)."""
    combine_retrieval: bool = False
    """Also condition every step on the documents of the question (Table 9's last column)."""
    window_tokens: int = 16
    """Previous-window: retrieve every l tokens (§4; IC-RALM's l=16)."""
    query_tokens: int = 0
    """Previous-window query: 0 the previous window, N the last N tokens, -1 all (Table 4)."""
    search_bias: float = 2.0
    """FLARE-instruct: logit bias added to "[" (Appendix A)."""
    search_ban_tokens: int = 8
    """FLARE-instruct: tokens generated with "[" forbidden right after a search."""

    def __post_init__(self) -> None:
        self._check()
        for name in ("theta", "beta"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise refuse(name, "lie in [0, 1]", value)
        check_trigger(self.trigger)
        at_least(self, 1, "max_sentence_tokens", "max_question_tokens", "window_tokens",
                 "search_ban_tokens", "trigger_n")
        if self.max_sentences is not None and self.max_sentences < 1:
            raise refuse("max_sentences", "be at least 1 or None", self.max_sentences)
        at_least(self, 0, "span_merge_gap")
        if self.query_tokens < -1:
            raise refuse("query_tokens", "be -1, 0 or positive", self.query_tokens)


def _served_here(model: CatalogueModel) -> str:
    """The endpoint `activerag serve --model KEY` gives MODEL on this machine."""
    return f"http://127.0.0.1:{model.port}/v1"


_LIGHT, _STRONG = FAST_MODEL, DEFAULT_MODEL
"""FB-RAG's default light sampler and strong reader."""


@documented
@dataclass(kw_only=True)
class FBRagContext(ServingContext):
    """Settings of one FB-RAG run (Chawla et al. 2025) and of its baselines over the same
    chunks: a light LM samples rationales and answers that rerank the chunks, a strong LM
    reads the best of them. base_url, model and prompt_format name the strong reader; light_*
    the light sampler. Sizes are in words, the paper's "(X→Y)"."""

    base_url: str = _env("ACTIVERAG_STRONG_URL",
                         _env("ACTIVERAG_BASE_URL", _served_here(_STRONG)))
    """The strong reader's endpoint (default: the default model, Qwen2.5-Coder-0.5B-Instruct,
    as `activerag serve` serves it)."""
    prompt_format: Literal["chatml", "plain", "auto"] = _STRONG.prompt_format
    """The strong reader's prompt layout (Qwen2.5-Instruct: ChatML)."""
    light_base_url: str = _env("ACTIVERAG_LIGHT_URL", _served_here(_LIGHT))
    """The light sampler's endpoint (default: SmolLM2-135M, as `activerag serve --model
    smollm2-135m` serves it)."""
    light_model: str = ""
    """The light sampler's model name; empty: the one its server serves."""
    light_prompt_format: Literal["chatml", "plain", "auto"] = _LIGHT.prompt_format
    """The light sampler's prompt layout (SmolLM2-Instruct: ChatML)."""
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


@documented
@dataclass(kw_only=True)
class AppContext(FlareContext):
    """Settings of the adaptive QA app (graphs/app.py): FLARE's and single-time retrieval's
    (the fields it shares with FlareContext), when FLARE takes over, and FB-RAG's settings for
    questions that bring their own long context."""

    min_confidence: float = 0.5
    """Keep single-time retrieval's answer when the geometric mean of its tokens'
    probabilities is at least this; below it FLARE answers instead (0: never FLARE; above 1:
    always)."""
    fb: FBRagContext | None = None
    """FB-RAG's settings for a question that comes with a long context (None: FBRagContext's
    defaults over this run's store)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        at_least(self, 0, "min_confidence")
