"""The uncertainty gates' settings (Moskvoretskii et al. 2025's gated single retrieval,
GateContext), and those of the two FLARE gates of the family, ETC's (EtcContext) and
DRAGIN-lite's (DraginContext). Each is FLARE's settings (activerag/context.py) and the fields
of its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from activerag.context import FlareContext
from activerag.context_checks import at_least, documented, refuse
from activerag.method_record import with_samples
from activerag.trigger_names import check_estimator


@documented
@dataclass(kw_only=True)
class GateContext(FlareContext):
    """Settings of one uncertainty-gated single retrieval run (Moskvoretskii et al. 2025): the
    whole answer without documents, an estimate of its uncertainty, and only when it is
    uncertain one retrieval with the question and the answer again over its documents. The
    FLARE fields give the LM, the store, the prompts and the caps; theta, beta and FLARE's
    query and window fields are not read."""

    estimator: str = "entropy_mean"
    """The uncertainty estimator (nodes/triggers.py ESTIMATORS): entropy_mean or entropy_max
    (each token's entropy over its top-20 alternatives, the mass they leave out one more
    outcome), perplexity (the mean negative log-probability of the answer's tokens) or lexsim
    (how alike lexsim_samples sampled answers are, ROUGE-L)."""
    gate_threshold: float | None = None
    """Retrieve when the estimate is above this (lexsim: when the answers agree less than
    this); None: the estimator's own threshold, fixed before any run (docs/gates.md says where
    each comes from)."""
    lexsim_samples: int = 10
    """lexsim: answers sampled in one request with n (LM-Polygraph's default, which the paper
    ran)."""
    lexsim_temperature: float = 1.0
    """lexsim: the samples' temperature (LM-Polygraph's default, which the paper ran)."""

    def sampling_needs(self, needs: frozenset[str]) -> frozenset[str]:
        """NEEDS (a row's) with this run's samples: lexsim asks lexsim_samples in one request
        (n, n_K), whichever gate runs it; the other estimators sample nothing."""
        return with_samples(needs, "", self.lexsim_samples if self.estimator == "lexsim" else None)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_estimator(self.estimator)
        at_least(self, 2, "lexsim_samples")
        if self.lexsim_temperature <= 0:
            raise refuse("lexsim_temperature", "be positive", self.lexsim_temperature)


@documented
@dataclass(kw_only=True)
class RegeneratedSentenceDocuments(FlareContext):
    """FLARE's settings with DRAGIN's and ETC's document handling, which both authors' code
    runs: no retrieval before the first draft, the retrieved documents read only by the one
    sentence regenerated over them (every later draft's prompt is the exemplars, the question
    and the answer so far), the top 3 per retrieval. keep_documents=True, initial_retrieval=True
    and k=2 give FLARE's handling instead."""

    k: int = 3
    """Documents per retrieval (both authors' configurations: retrieve_topk 3; FLARE's 2)."""
    initial_retrieval: bool = False
    """Retrieve with the question before the first draft (FLARE's Appendix A); off in DRAGIN's
    and ETC's code, whose first draft sees no documents."""
    keep_documents: bool = False
    """Keep the last retrieved documents in every later prompt (FLARE's code); off in DRAGIN's
    and ETC's code: only the sentence regenerated over them sees them."""


@documented
@dataclass(kw_only=True)
class EtcContext(RegeneratedSentenceDocuments):
    """Settings of one ETC run (Li et al., AAAI 2026): FLARE's graph, its gate the trend of the
    draft's word entropies, retrieval from the first word where it rises sharply. The FLARE
    fields are the host's own (beta masks the query as in FLARE; theta and trigger are not
    read: the gate is ETC's), with the authors' document handling by default
    (RegeneratedSentenceDocuments)."""

    reads_alternatives: ClassVar[int] = 20
    """Top logprobs per token ETC's gate reads, which the LM client asks for whatever the
    trigger (nodes/triggers.top_logprobs_for)."""
    etc_threshold: float = 1.3
    """Retrieve from the first content word whose smoothed second difference of entropy
    (nats) is above this (the authors' released configuration: 1.3)."""
    etc_alpha: float = 0.9
    """The smoothing's floor: M = a·Δ²H + (1 - a)·Δ²H_prev, a = etc_alpha + (1 - etc_alpha)·w
    (the authors' code: 0.9)."""
    etc_absolute: bool = False
    """Compare |M| with the threshold, so that a sharp fall fires too (the authors' thres_abs,
    off in their configuration)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.etc_alpha <= 1.0:
            raise refuse("etc_alpha", "lie in [0, 1]", self.etc_alpha)


@documented
@dataclass(kw_only=True)
class DraginContext(RegeneratedSentenceDocuments):
    """Settings of one DRAGIN-lite run (after Su et al. 2024, DRAGIN, without attention):
    FLARE's graph, its gate RIND's entropy times a content-word filter, its query the question
    and the draft's most surprising words. The FLARE fields are the host's own (theta, beta,
    trigger and FLARE's query fields are not read), with the authors' document handling by
    default (RegeneratedSentenceDocuments)."""

    reads_alternatives: ClassVar[int] = 20
    """Top logprobs per token DRAGIN-lite's gate reads, which the LM client asks for whatever
    the trigger (nodes/triggers.top_logprobs_for)."""
    dragin_threshold: float = 1.0
    """Retrieve from the first content word whose entropy (nats, the mean over its tokens) is
    above this (the authors' configuration for Llama2-7b on 2WikiMultihopQA: 1.0)."""
    dragin_query_words: int = 25
    """The query: the question, then at most this many of the draft's content words before
    the fired one, those of highest surprisal (the authors' retrieve_keep_top_k: 25)."""
    dragin_truncate: Literal["word", "sentence"] = "word"
    """word: keep the draft up to the fired word and continue it over the documents (the
    paper, §3.3); sentence: write the whole sentence again, as the authors' code does."""

    def __post_init__(self) -> None:
        super().__post_init__()
        at_least(self, 0, "dragin_query_words")
