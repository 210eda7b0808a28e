"""Per-run settings of the graphs (LangGraph `context_schema`): Studio shows and edits them.
Every family's context extends ServingContext (REPLUG's, FB-RAG's) or FlareContext (the gates',
IRCoT's, the app's); those of the families in folders are in their folders (nodes/<family>/
context.py). The checks and the field descriptions every context class uses are
context_checks.py's."""

from __future__ import annotations

import os
import typing
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal

from activerag.context_checks import at_least, documented, finite_floats, refuse, within_deployment
from activerag.serving.catalogue import DEFAULT_PORT
from activerag.trigger_names import check_trigger


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


@dataclass(frozen=True)
class Server:
    """One LM server a run asks: what it is called in messages, the context and field that
    hold its URL, the catalogue model `activerag serve` gives it by default (empty: the
    default model), and the prefix of the needs it must meet where it is not the run's main
    server (FB-RAG's light sampler: "light."; asked only by a method that has such needs)."""

    role: str
    context: Any
    field: str
    model: str = ""
    needs_prefix: str = ""

    @property
    def url(self) -> str:
        return str(getattr(self.context, self.field))


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
    base_url: str = _env("ACTIVERAG_BASE_URL", f"http://127.0.0.1:{DEFAULT_PORT}/v1")
    """OpenAI-compatible (vLLM) endpoint (default: where `activerag serve` serves the default
    model)."""
    model: str = _env("ACTIVERAG_MODEL", "")
    """Served model name; empty: the one the server serves."""
    prompt_format: Literal["chatml", "plain", "auto"] = "auto"
    """auto: the served model's own chat template, asked of its server once (a model without
    one: plain, said once; Qwen's renders byte for byte as chatml); chatml: ChatML as written
    here (Qwen, SmolLM2); plain: text for base models."""
    retriever: Literal["bm25", "chroma"] = "bm25"
    """Which store of the corpus answers queries (the paper uses BM25)."""
    store_dir: str = _env("ACTIVERAG_STORE_DIR", "")
    """Corpus folder; empty: the default under ACTIVERAG_HOME."""
    query_encoder: str = ""
    """A query encoder folder trained by `activerag train-retriever` (REPLUG-LSR), searching
    the chroma store; empty: the collection's own MiniLM."""

    ROUTES: ClassVar[bool] = False
    """Whether its methods route a question to other methods (the app, Adaptive-RAG) rather
    than answer it in one method."""

    def servers(self, with_context: bool = False) -> list[Server]:
        """The LM servers a run under this context asks, in the order to check them
        (WITH_CONTEXT: the question brings its own long context)."""
        return [Server("the LM server", self, "base_url")]

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


_COMPOSITES: dict[type, dict[str, type[ServingContext]]] = {}


def composites(cls: type) -> dict[str, type[ServingContext]]:
    """The fields of context class CLS that hold another family's context (the app's fb), with
    that context's class: the CLI builds it from that family's flags, and the registry gives a
    method the one a caller passes. Found once per class."""
    if cls not in _COMPOSITES:
        hints = typing.get_type_hints(cls)
        _COMPOSITES[cls] = {
            f.name: kind for f in fields(cls)
            for kind in (typing.get_args(hints[f.name]) or (hints[f.name],))
            if isinstance(kind, type) and issubclass(kind, ServingContext)}
    return _COMPOSITES[cls]
