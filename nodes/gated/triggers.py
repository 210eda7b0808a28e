"""Word-level triggers of the look-ahead graphs: ETC (Li et al. 2026) and DRAGIN-lite.

Each walks the draft's words once (`etc_check`, `dragin_check`: where it fires and why, a
`WordFire`), fires at the first word past its threshold, and keeps the draft's text before
that word. Their arithmetic is logic.py's; `register` and `measures` (nodes/
triggers.py) make them the triggers "etc" and "dragin_lite", whose measure also carries the
decision, so that the gate walks the draft once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from activerag.context import FlareContext
from activerag.nodes.gated import logic as gate_logic
from activerag.nodes.triggers import Tokens, measures, register, token_entropies
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


@register("etc", top_logprobs=20)
def etc(tokens: Tokens, state: FlareState, ctx: FlareContext) -> bool:
    """ETC (Li et al. 2026): fire when the draft's word entropies rise sharply."""
    return etc_check(tokens, state, ctx).at is not None


@register("dragin_lite", top_logprobs=20)
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
