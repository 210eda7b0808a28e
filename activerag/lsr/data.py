"""LSR's questions and passages: the training questions kept apart from every evaluation
question, the LM task's passage halves, and the gold-title recall of a retriever."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any

from activerag.demo import load_demo_questions
from activerag.evaluation.datasets import Example, hotpotqa, twowiki, twowiki500
from activerag.evaluation.metrics import normalize

HELD_OUT_2WIKI = 500
"""The first 500 questions of the 1,000-question 2Wiki file are evaluation questions (every
`activerag eval --dataset 2wiki --n N` with N <= 500 draws from them); LSR trains on the rest."""


def question_key(question: str) -> str:
    """A question as the held-out check compares it: normalised (case, punctuation, articles)."""
    return normalize(question)


def evaluation_questions() -> set[str]:
    """Normalised texts of every question an evaluation here may use: the held-out head of
    2Wiki-1000, 2Wiki-500, HotpotQA dev and test, and the demo questions."""
    texts = [e.question for e in twowiki()[:HELD_OUT_2WIKI]]
    texts += [e.question for e in twowiki500()]
    for split in ("dev", "test"):
        texts += [e.question for e in hotpotqa(split)]
    texts += [q["question"] for q in load_demo_questions()]
    return {question_key(t) for t in texts}


def training_examples(n: int | None = None, seed: int = 0) -> list[Example]:
    """2Wiki-1000 questions after the held-out head, minus any whose normalised text is an
    evaluation question or repeats an earlier one; shuffled with SEED, the first N."""
    held_out = evaluation_questions()
    seen: set[str] = set()
    out = []
    for e in twowiki()[HELD_OUT_2WIKI:]:
        key = question_key(e.question)
        if key in held_out or key in seen or not e.answers or not e.answers[0].strip():
            continue
        seen.add(key)
        out.append(e)
    random.Random(seed).shuffle(out)
    return out[:n] if n else out


def halves(text: str) -> tuple[str, str]:
    """A passage cut in two at its middle word (the LM task's x and y)."""
    words = text.split()
    half = len(words) // 2
    return " ".join(words[:half]), " ".join(words[half:])


def lm_split(docs: Sequence[Any], held_out: int = 40, seed: int = 0, min_words: int = 60
             ) -> tuple[list[Any], list[Example]]:
    """The LM experiment's passages and the LM task's training examples from the same corpus.

    The evaluated passages are HELD_OUT seeded picks among those of MIN_WORDS words or more
    (what benchmarks/replug_lm.py scores); training uses the other long passages whose title
    none of them has, x its first half and y its second, in a seeded order.
    """
    candidates = [d for d in docs if len(d.page_content.split()) >= min_words]
    evaluated = random.Random(seed).sample(candidates, min(held_out, len(candidates)))
    titles = {d.metadata.get("title", "") for d in evaluated}
    train = []
    for d in candidates:
        title = d.metadata.get("title", "")
        if title in titles:
            continue
        x, y = halves(d.page_content)
        train.append(Example(d.id or x[:40], x, [y], [title]))
    random.Random(seed + 1).shuffle(train)
    return evaluated, train


def overlap(train: Iterable[Example], test: Iterable[Example]) -> int:
    """How many TEST questions share a normalised text with a TRAIN question."""
    keys = {question_key(e.question) for e in train}
    return sum(1 for e in test if question_key(e.question) in keys)


def title_recall(titles: Sequence[str], gold: Sequence[str]) -> float:
    """Share of GOLD titles among TITLES (0 when there is no gold title)."""
    if not gold:
        return 0.0
    have = set(titles)
    return sum(1 for g in set(gold) if g in have) / len(set(gold))


def recall_at(store: Any, examples: Sequence[Example], ks: Sequence[int],
              encoder: Any = None) -> dict[int, list[float]]:
    """Gold-title recall@k of each example for each k, searching with ENCODER's vectors (a
    QueryEncoder) or the collection's own encoder."""
    top = max(ks)
    if encoder is None:
        hits = [[d.metadata.get("title", "") for d, _ in store.search(e.question, top)]
                for e in examples]
    else:
        vectors = encoder.encode([e.question for e in examples])
        hits = [[d.metadata.get("title", "") for d, _, _ in row]
                for row in store.search_vectors(vectors, top)]
    return {k: [title_recall(h[:k], e.gold_titles) for h, e in zip(hits, examples, strict=True)]
            for k in ks}
