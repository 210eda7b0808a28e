"""The gates' estimators (Moskvoretskii et al. 2025: entropy_mean, entropy_max, perplexity,
lexsim), registered with `register_estimator`, and the word-level triggers of the look-ahead
graphs: ETC (Li et al. 2026) and DRAGIN-lite.

Each walks the draft's words once (`etc_check`, `dragin_check`: where it fires and why, a
`WordFire`), fires at the first word past its threshold, and keeps the draft's text before
that word. Their arithmetic is logic.py's; `register` and `measures` (nodes/
triggers.py) make them the triggers "etc" and "dragin_lite", whose measure also carries the
decision, so that the gate walks the draft once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from activerag.context import FlareContext
from activerag.errors import NoLogprobs
from activerag.nodes.estimators import register_estimator
from activerag.nodes.gated import logic as gate_logic
from activerag.nodes.triggers import Tokens, entropy, measures, register
from activerag.state import FlareState


@dataclass(frozen=True)
class WordFire:
    """Where a word-level trigger (ETC, DRAGIN-lite) fired in a draft, and why."""

    at: int | None
    """The word it fired at (None: it did not)."""
    words: list[str]
    """The draft's words."""
    content: list[bool]
    """Whether each is a content word."""
    values: list[float | None]
    """What was compared with the threshold, per word (ETC: the smoothed Δ²H; DRAGIN-lite:
    the entropy of a content word)."""
    entropies: list[float]
    """Each word's entropy (nats)."""
    keep: str
    """The draft's text before the word it fired at (all of it when it did not)."""
    threshold: float


def _draft_words(tokens: Tokens, state: FlareState, who: str,
                 reduce: Callable[[list[float]], float]
                 ) -> tuple[list[range], list[str], list[bool], list[float]]:
    spans = gate_logic.word_spans(tokens)
    words = gate_logic.word_texts(tokens, spans)
    stop = gate_logic.stopwords()
    content = [gate_logic.is_content(w, stop) for w in words]
    return spans, words, content, gate_logic.per_word(token_entropies(tokens, state, who),
                                                      spans, reduce)


def _kept(state: FlareState, tokens: Tokens, spans: list[range], at: int | None) -> str:
    draft = str(state.get("step", {}).get("draft", ""))
    if at is None:
        return draft
    return draft[:tokens[spans[at][0]][2]]


def etc_check(tokens: Tokens, state: FlareState, ctx: FlareContext) -> WordFire:
    """ETC over a draft: each word's entropy (the max over its tokens, as the authors' code
    merges them), the trend of the content words' entropies, and the first word whose smoothed
    Δ²H is above etc_threshold. A plain FlareContext runs it with EtcContext's defaults."""
    from activerag.nodes.gated.context import EtcContext

    threshold = float(getattr(ctx, "etc_threshold", EtcContext.etc_threshold))
    spans, words, content, ents = _draft_words(tokens, state, "the etc trigger", max)
    trend = gate_logic.entropy_trend(ents, content,
                                     float(getattr(ctx, "etc_alpha", EtcContext.etc_alpha)))
    at = gate_logic.etc_fires_at(trend.smoothed, threshold,
                                 bool(getattr(ctx, "etc_absolute", EtcContext.etc_absolute)))
    return WordFire(at, words, content, trend.smoothed, ents, _kept(state, tokens, spans, at),
                    threshold)


def dragin_check(tokens: Tokens, state: FlareState, ctx: FlareContext) -> WordFire:
    """DRAGIN-lite's RIND over a draft: each word's entropy (the mean over its tokens, as the
    authors' code merges them) where it is a content word, and the first above
    dragin_threshold. A plain FlareContext runs it with DraginContext's defaults."""
    from activerag.nodes.gated.context import DraginContext

    threshold = float(getattr(ctx, "dragin_threshold", DraginContext.dragin_threshold))
    spans, words, content, ents = _draft_words(tokens, state, "the dragin_lite trigger",
                                               gate_logic.mean)
    scores = gate_logic.rind_lite(ents, content)
    at = gate_logic.first_above(scores, threshold)
    values: list[float | None] = [s if c else None for s, c in zip(scores, content, strict=True)]
    return WordFire(at, words, content, values, ents, _kept(state, tokens, spans, at), threshold)


@register("etc")
def etc(tokens: Tokens, state: FlareState, ctx: FlareContext) -> bool:
    """ETC (Li et al. 2026): fire when the draft's word entropies rise sharply."""
    return etc_check(tokens, state, ctx).at is not None


@register("dragin_lite")
def dragin_lite(tokens: Tokens, state: FlareState, ctx: FlareContext) -> bool:
    """DRAGIN-lite: fire when a content word's entropy is above dragin_threshold."""
    return dragin_check(tokens, state, ctx).at is not None


@measures(etc)
def _etc_measure(tokens: Tokens, state: FlareState, ctx: FlareContext) -> dict[str, Any]:
    return _word_measure(etc_check(tokens, state, ctx), "smoothed second difference of entropy")


@measures(dragin_lite)
def _dragin_measure(tokens: Tokens, state: FlareState, ctx: FlareContext) -> dict[str, Any]:
    return _word_measure(dragin_check(tokens, state, ctx), "content-word entropy")


def _word_measure(fire: WordFire, what: str) -> dict[str, Any]:
    compared = [v for v in fire.values if v is not None]
    return {"measure": f"{what} (fires above the threshold, at a word)",
            "value": fire.values[fire.at] if fire.at is not None else max(compared,
                                                                          default=None),
            "threshold": fire.threshold, "word": None if fire.at is None else fire.words[fire.at],
            "fire": fire.at is not None}


def token_entropies(tokens: Tokens, state: FlareState, who: str) -> list[float]:
    """Each token's entropy in nats over its top-20 alternatives, the mass they leave out one
    more outcome (`entropy`); a position that came without alternatives counts its own token
    alone. NoLogprobs, naming WHO, when the tokens came without any."""
    tops = list(state.get("step", {}).get("tops") or [])
    if tokens and len(tops) != len(tokens):
        raise NoLogprobs(f"{who} reads each token's top-20 logprobs and the text came without "
                         "them; it needs the vLLM client, which asks for them when it is the "
                         "run's trigger or estimator")
    return [entropy(top) if top else entropy((math.log(max(p, 1e-12)),))
            for (_, p, _), top in zip(tokens, tops, strict=True)]


# Thresholds fixed before any run: each estimator's median over 40 2Wiki training questions
# answered by the default model without documents (docs/gates.md, "The thresholds";
# results/gate_thresholds.json), rounded to three decimals.
@register_estimator("entropy_mean", 0.391, top_logprobs=20)
def entropy_mean(tokens: Tokens, state: FlareState, ctx: object = None) -> float | None:
    """Mean token entropy (nats) of the answer."""
    if not tokens:
        return None
    return gate_logic.mean_entropy(token_entropies(tokens, state, "the entropy_mean estimator"))


@register_estimator("entropy_max", 2.080, top_logprobs=20)
def entropy_max(tokens: Tokens, state: FlareState, ctx: object = None) -> float | None:
    """Max token entropy (nats) of the answer."""
    if not tokens:
        return None
    return gate_logic.max_entropy(token_entropies(tokens, state, "the entropy_max estimator"))


@register_estimator("perplexity", 0.217)
def log_perplexity(tokens: Tokens, state: FlareState, ctx: object = None) -> float | None:
    """The mean negative log-probability of the answer's tokens (LM-Polygraph's Perplexity)."""
    if not tokens:
        return None
    return gate_logic.perplexity([math.log(max(p, 1e-12)) for _, p, _ in tokens])


@register_estimator("lexsim", 0.434, above=False, samples=True)
def lexsim(tokens: Tokens, state: FlareState, ctx: object = None) -> float | None:
    """Lex-Similarity of the answers sampled for the question (step["samples"])."""
    samples = state.get("step", {}).get("samples")
    if samples is None:
        raise NoLogprobs("the lexsim estimator compares answers sampled for the question and "
                         "this step has none; the gated graph (graphs/gated.py) draws them")
    return gate_logic.lex_similarity(samples)
