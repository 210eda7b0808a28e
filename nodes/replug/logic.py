"""Pure decisions of REPLUG (Shi et al. 2023): document weights, the mixture of next-token
distributions known only by their top entries, answer votes, the text each decided token
adds, and bits per byte."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from activerag.answers import normalize

# One document's view of one position: the top tokens (id -> natural-log probability).
Top = Mapping[int, float]


def doc_weights(scores: Sequence[float], tau: float) -> list[float]:
    """REPLUG Eq. 2: λ(d, x) = softmax over the retrieved documents of s(d, x) / τ."""
    if not scores:
        return []
    if tau <= 0:
        raise ValueError(f"tau must be positive, got {tau}")
    top = max(scores)
    exps = [math.exp((s - top) / tau) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def logsumexp(values: Sequence[float]) -> float:
    """log Σ e^v, stable; -inf for no values."""
    finite = [v for v in values if v != -math.inf]
    if not finite:
        return -math.inf
    top = max(finite)
    return top + math.log(sum(math.exp(v - top) for v in finite))


def mixture_logprob(logprobs: Sequence[float], weights: Sequence[float]) -> float:
    """log Σ_d λ_d p_d(y): the ensemble's log-probability of one token (Eq. 2)."""
    return logsumexp([math.log(w) + lp for w, lp in zip(weights, logprobs, strict=True)
                      if w > 0])


@dataclass(frozen=True)
class Choice:
    """The ensemble's token at one position, and how sure the top-k view makes it."""

    token: int
    low: float
    """Lower bound of its mixture probability (what the documents' top entries show)."""
    high: float
    """Upper bound of its mixture probability."""
    rival_high: float
    """The highest upper bound of any other token, seen or unseen."""

    @property
    def certified(self) -> bool:
        """No other token can have a higher mixture probability: the choice is exact."""
        return self.low >= self.rival_high


def choose(tops: Sequence[Top], weights: Sequence[float]) -> Choice:
    """REPLUG Eq. 2 at one position from each document's top-N next-token log-probabilities.

    A token outside a document's top N has at most min(that document's N-th probability,
    the mass its top N leave), so each token gets a lower bound (the documents that list it)
    and an upper bound (plus that cap for the documents that do not). The choice is the
    token with the highest lower bound; it is certified when its lower bound reaches every
    other token's upper bound, a token no document lists included.
    """
    if not tops or len(tops) != len(weights):
        raise ValueError("choose needs one top-N view per weighted document")
    caps = []
    for top in tops:
        if not top:
            raise ValueError("a document's view of a position is empty")
        probs = [math.exp(lp) for lp in top.values()]
        caps.append(min(min(probs), max(0.0, 1.0 - sum(probs))))
    low: dict[int, float] = {}
    for top, weight in zip(tops, weights, strict=True):
        for token, lp in top.items():
            low[token] = low.get(token, 0.0) + weight * math.exp(lp)
    views = list(zip(tops, weights, caps, strict=True))
    missing_cap = {token: sum(w * cap for top, w, cap in views if token not in top)
                   for token in low}
    unseen = sum(w * cap for _, w, cap in views)
    # ties go to the smaller id, so the choice never depends on dictionary order
    best = min(low, key=lambda t: (-low[t], t))
    rival = max([unseen, *(low[t] + missing_cap[t] for t in low if t != best)])
    return Choice(best, low[best], low[best] + missing_cap[best], rival)


def vote_scores(answers: Sequence[str], doc_weights_: Sequence[float],
                mean_logprobs: Sequence[float]) -> dict[str, float]:
    """The released REPLUG code's answer-level rule: each document's greedy answer weighs
    λ_d · exp(its mean token log-probability); weights add up per normalised answer, in the
    order the answers come. An output with no answer ("") is no candidate: the released code
    votes on answers, and pooled, the outputs that never answer would outvote one that does."""
    totals: dict[str, float] = {}
    for answer, weight, mean_lp in zip(answers, doc_weights_, mean_logprobs, strict=True):
        if answer.strip():
            key = normalize(answer)
            totals[key] = totals.get(key, 0.0) + weight * math.exp(mean_lp)
    return totals


def best_answer(scores: Mapping[str, float]) -> str | None:
    """The key with the highest score, the first of a tie; None when there is none."""
    keys = list(scores)
    return max(keys, key=lambda k: (scores[k], -keys.index(k))) if keys else None


def vote(answers: Sequence[str], doc_weights_: Sequence[float],
         mean_logprobs: Sequence[float]) -> str:
    """The answer vote_scores picks, as its first document spelled it; "" when no output
    has an answer."""
    best = best_answer(vote_scores(answers, doc_weights_, mean_logprobs))
    return next((a for a in answers if a.strip() and normalize(a) == best), "")


def top_weighted(weights: Sequence[float]) -> int:
    """The index of the highest weight, the first of a tie."""
    if not weights:
        raise ValueError("no weights to choose from")
    return max(range(len(weights)), key=lambda i: (weights[i], -i))


def emitted_texts(decoded: Sequence[str]) -> list[str]:
    """The text each token adds, from DECODED: the decoded texts of successive prefixes of
    the output, DECODED[0] before the first token and DECODED[i] after the i-th.

    Decoding the whole prefix joins the bytes of a character that the tokenizer split over
    tokens (one token alone decodes to U+FFFD). A prefix that ends inside a character decodes
    to a trailing U+FFFD; that text is held back, and the token that completes the character
    adds it.
    """
    stable = [text.rstrip("\ufffd") for text in decoded]
    return [after[len(before):] for before, after in pairwise(stable)]


def bits_per_byte(token_logprobs: Sequence[float], text: str) -> float:
    """−Σ log2 p(y_t) over the UTF-8 bytes of TEXT (the Pile's bits per byte, Table 1)."""
    n_bytes = len(text.encode("utf-8"))
    if n_bytes == 0:
        raise ValueError("bits per byte of an empty text")
    return -sum(token_logprobs) / math.log(2) / n_bytes


@dataclass(frozen=True)
class Decided:
    """The tokens one round of look-ahead decides, with what the ensemble knew of each."""

    tokens: list[int]
    low: list[float]
    """Lower bound of each token's mixture probability."""
    certified: list[bool]


def decide_round(proposals: Sequence[Sequence[tuple[int, Top]]],
                 weights: Sequence[float]) -> Decided:
    """Eq. 2 along the documents' greedy look-aheads, as far as they stay valid.

    PROPOSALS[d] is document d's greedy continuation of the shared prefix: (its token, its
    top-N) per position. Position t's distributions are all conditioned on the same prefix
    only while every document's own tokens before t equal the tokens chosen; so the round
    decides positions in order and stops after the first one where some document's own
    token differs from the mixture's choice (or where a look-ahead ends). With one position
    per proposal this is Eq. 2 token by token; with more, the same tokens in fewer requests.
    """
    tokens: list[int] = []
    low: list[float] = []
    certified: list[bool] = []
    length = min((len(p) for p in proposals), default=0)
    for t in range(length):
        choice = choose([p[t][1] for p in proposals], weights)
        tokens.append(choice.token)
        low.append(choice.low)
        certified.append(choice.certified)
        if any(p[t][0] != choice.token for p in proposals):
            break
    return Decided(tokens, low, certified)


def document_keep(prompt_tokens: int, document_tokens: int, window: int,
                  reserve: int) -> int | None:
    """How many of a document's DOCUMENT_TOKENS to keep so that its PROMPT_TOKENS-token prompt
    leaves RESERVE tokens of a WINDOW-token context for the answer; None: it fits whole.

    Raises ValueError when the prompt would not fit even with the document left out.
    """
    room = window - reserve
    if prompt_tokens <= room:
        return None
    keep = document_tokens - (prompt_tokens - room)
    if keep < 1:
        raise ValueError(f"a {prompt_tokens}-token prompt with {reserve} tokens for the answer "
                         f"does not fit a {window}-token context even without its document")
    return keep
