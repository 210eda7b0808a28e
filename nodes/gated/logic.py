"""Pure decisions of the uncertainty gates, ETC and DRAGIN-lite, over numbers and words.

Uncertainty-gated single retrieval (Moskvoretskii et al. 2025, "Adaptive Retrieval without
Self-Knowledge?"; its estimators are LM-Polygraph's, as the released code s-nlp/AdaRAGUE UC/
runs them): mean and max token entropy, perplexity (as LM-Polygraph computes it, the mean
negative log-probability) and Lex-Similarity (the mean ROUGE-L F-measure over every pair of
sampled answers).

ETC (Li et al., AAAI 2026, "Modeling Uncertainty Trends for Timely Retrieval in Dynamic RAG",
§Method): the entropy of each content word, its first and second differences, dynamically
smoothed; retrieval fires at the first word whose smoothed second difference is above a
threshold. Where the paper leaves a detail open, the authors' code (WisdomShell/ETC,
generate.py) decides, and the docstrings say so.

DRAGIN-lite (after Su et al. 2024, DRAGIN, §3.1 RIND and §3.2 QFS): a word's score is its
entropy H_i times RIND's stopword indicator s_i, without RIND's attention term a_max(i); the
query words are the generated words of highest surprisal instead of those QFS's attention
picks.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from activerag.nodes.loop_logic import word_key, word_starts

TokenProb = tuple[str, float, int]

BUILT_IN_STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each either few for
from further had has have having he her here hers herself him himself his how i if in into is
it its itself just may me might more most must my myself neither no nor not now of off on once
only or other our ours ourselves out over own same shall she should so some such than that the
their theirs them themselves then there these they this those through to too under until up
upon us very was we were what when where whether which while who whom whose why will with
would yet you your yours yourself yourselves
""".split())
"""English function words written here (articles, pronouns, prepositions, conjunctions,
auxiliaries, a few adverbs), used when NLTK's stopword list is not installed."""


@functools.cache
def stopwords() -> frozenset[str]:
    """NLTK's English stopword list when its corpus is already on the machine (activerag
    ships none and never fetches it), else BUILT_IN_STOPWORDS."""
    try:
        from nltk.corpus import stopwords as nltk_stopwords

        return frozenset(w.lower() for w in nltk_stopwords.words("english"))
    except LookupError:
        return BUILT_IN_STOPWORDS


def is_content(word: str, stop: frozenset[str]) -> bool:
    """Whether WORD carries content: a letter or digit, and not a stopword (DRAGIN's s_i)."""
    key = word_key(word)
    return any(c.isalnum() for c in key) and key not in stop


# --- Moskvoretskii et al. 2025: the estimators of a whole answer -----------------------------


def mean_entropy(entropies: Sequence[float]) -> float:
    """Mean token entropy (LM-Polygraph's MeanTokenEntropy); 0.0 for no tokens."""
    return sum(entropies) / len(entropies) if entropies else 0.0


def max_entropy(entropies: Sequence[float]) -> float:
    """Max token entropy (the paper's MaxTokenEntropy); 0.0 for no tokens."""
    return max(entropies, default=0.0)


def perplexity(logprobs: Sequence[float]) -> float:
    """LM-Polygraph's Perplexity, which the paper ran: the mean negative log-probability of the
    answer's tokens (the log of the perplexity); 0.0 for no tokens."""
    return -sum(logprobs) / len(logprobs) if logprobs else 0.0


_LEX_TOKEN = re.compile(r"[a-z0-9]+")


@functools.cache
def _stem(word: str) -> str:
    from nltk.stem.porter import PorterStemmer

    return str(PorterStemmer().stem(word))


def lex_tokens(text: str) -> list[str]:
    """TEXT as ROUGE-L compares it: lower-cased runs of letters and digits, those longer than 3
    characters Porter-stemmed (as rouge-score does with use_stemmer, LM-Polygraph's setting)."""
    return [_stem(t) if len(t) > 3 else t for t in _LEX_TOKEN.findall(text.lower())]


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of A and B."""
    row = [0] * (len(b) + 1)
    for x in a:
        diagonal = 0
        for j, y in enumerate(b, 1):
            diagonal, row[j] = row[j], diagonal + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def rouge_l(a: str, b: str) -> float:
    """ROUGE-L F-measure of two texts (symmetric); 0.0 when either has no token."""
    x, y = lex_tokens(a), lex_tokens(b)
    common = lcs_length(x, y)
    if not common:
        return 0.0
    precision, recall = common / len(y), common / len(x)
    return 2 * precision * recall / (precision + recall)


def lex_similarity(texts: Sequence[str]) -> float:
    """Lex-Similarity: the mean ROUGE-L F-measure over every pair of TEXTS (LM-Polygraph's
    LexicalSimilarity, whose uncertainty is this with a minus sign). Needs two texts or more."""
    if len(texts) < 2:
        raise ValueError(f"Lex-Similarity compares samples pairwise; got {len(texts)}")
    pairs = [(i, j) for i in range(len(texts)) for j in range(i + 1, len(texts))]
    return sum(rouge_l(texts[i], texts[j]) for i, j in pairs) / len(pairs)


# --- words, as ETC and DRAGIN score them -----------------------------------------------------


def word_spans(tokens: Sequence[TokenProb]) -> list[range]:
    """The token index ranges of the words of TOKENS: a word starts at the first token and at
    each token that starts with whitespace (punctuation joins the word before it)."""
    starts = [i for i, first in enumerate(word_starts(tokens)) if first]
    return [range(a, b) for a, b in zip(starts, [*starts[1:], len(tokens)], strict=True)]


def word_texts(tokens: Sequence[TokenProb], spans: Sequence[range]) -> list[str]:
    """The text of each word of TOKENS, without surrounding whitespace."""
    return ["".join(tokens[i][0] for i in span).strip() for span in spans]


def per_word(values: Sequence[float], spans: Sequence[range],
             reduce: Callable[[list[float]], float]) -> list[float]:
    """One value per word: REDUCE over its tokens' VALUES (ETC: max, DRAGIN: the mean)."""
    return [reduce([values[i] for i in span]) for span in spans]


def mean(values: list[float]) -> float:
    """The mean of a word's token values (DRAGIN's code merges a word's tokens so)."""
    return sum(values) / len(values)


# --- ETC (Li et al. 2026) ----------------------------------------------------------------------


@dataclass(frozen=True)
class Trend:
    """ETC's trend of each word's entropy (None where a word has none: a function word, or too
    few content words before it)."""

    first: list[float | None]
    """ΔH: the word's entropy less that of the content word before it."""
    second: list[float | None]
    """Δ²H: its ΔH less the ΔH before it."""
    smoothed: list[float | None]
    """M: Δ²H dynamically smoothed."""


def entropy_trend(entropies: Sequence[float], content: Sequence[bool],
                  alpha: float = 0.9) -> Trend:
    """ETC's first and second differences of the content words' entropies, and their dynamic
    smoothing (the paper's method section; its details as the authors' generate.py does them):

    - ΔH_i = H_i - H_j, j the nearest content word before content word i;
    - Δ²H_i = ΔH_i - ΔH_j, j the nearest word before i that has a ΔH;
    - M_i = a·Δ²H_i + (1 - a)·Δ²H_prev, with a = ALPHA + (1 - ALPHA)·w,
      w = |Δ²H_prev - E| / (|Δ²H_i - E| + |Δ²H_prev - E|), E the mean of the Δ²H so far
      (this one included) and Δ²H_prev the raw previous Δ²H (0 before the first), as the code
      keeps it; w = 1 where both distances are 0 (the code divides 0 by 0 there).
    """
    n = len(entropies)
    first: list[float | None] = [None] * n
    second: list[float | None] = [None] * n
    smoothed: list[float | None] = [None] * n
    last_content: int | None = None
    last_first: float | None = None
    for i in range(n):
        if not content[i]:
            continue
        if last_content is not None:
            first[i] = entropies[i] - entropies[last_content]
        last_content = i
        d1 = first[i]
        if d1 is None:
            continue
        if last_first is not None:
            second[i] = d1 - last_first
        last_first = d1
    total, count, previous = 0.0, 0, 0.0
    for i, d2 in enumerate(second):
        if d2 is None:
            continue
        total, count = total + d2, count + 1
        expected = total / count
        near, far = abs(d2 - expected), abs(previous - expected)
        w = far / (near + far) if near + far > 0 else 1.0
        a = alpha + (1.0 - alpha) * w
        smoothed[i] = a * d2 + (1.0 - a) * previous
        previous = d2
    return Trend(first, second, smoothed)


def etc_fires_at(smoothed: Sequence[float | None], threshold: float,
                 absolute: bool = False) -> int | None:
    """The first word whose smoothed Δ²H is above THRESHOLD (ABSOLUTE: its magnitude, the
    code's thres_abs), None if none is. RIND's attention weight, by which the authors' code
    multiplies it, is taken as its mean over the sentence, 1."""
    for i, m in enumerate(smoothed):
        if m is not None and (abs(m) if absolute else m) > threshold:
            return i
    return None


# --- DRAGIN-lite (after Su et al. 2024) --------------------------------------------------------


def rind_lite(entropies: Sequence[float], content: Sequence[bool]) -> list[float]:
    """Each word's RIND score without attention: H_i · s_i, RIND's H_i · a_max(i) · s_i with
    a_max(i) at its mean, 1 (the authors' code normalises a sentence's attention to mean 1)."""
    return [h if c else 0.0 for h, c in zip(entropies, content, strict=True)]


def first_above(scores: Sequence[float], threshold: float) -> int | None:
    """The first word whose score is above THRESHOLD (RIND fires there), None if none is."""
    return next((i for i, s in enumerate(scores) if s > threshold), None)


def surprising_words(words: Sequence[str], surprisals: Sequence[float],
                     content: Sequence[bool], n: int) -> list[str]:
    """The N content words of highest surprisal (the earlier first among equals), in their
    order in the text: QFS's top-n selection (§3.2) with surprisal in place of attention."""
    ranked = sorted((i for i in range(len(words)) if content[i]),
                    key=lambda i: (-surprisals[i], i))
    return [words[i] for i in sorted(ranked[:max(0, n)])]


def join_query(question: str, words: Sequence[str]) -> str:
    """The query: the question, then the chosen words."""
    return " ".join([question.strip(), *words]).strip()


def surprisal(prob: float) -> float:
    """-ln p of a token (a probability of 0 counted as 1e-12)."""
    return -math.log(max(prob, 1e-12))
