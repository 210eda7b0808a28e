"""LSR's questions and passages: the training questions kept apart from every evaluation
question, the LM task's passage halves and its one split (kept with the encoder, checked by the
evaluation), and the gold-title recall of a retriever."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from activerag.answers import normalize
from activerag.demo import load_demo_questions
from activerag.errors import ActiveRagError
from activerag.evaluation.datasets import Example, hotpotqa, twowiki, twowiki500

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
    (what benchmarks/quality/replug_lm.py scores); training uses the other long passages whose title
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
        train.append(Example(lm_passage_id(d), x, [y], [title]))
    random.Random(seed + 1).shuffle(train)
    return evaluated, train


def lm_passage_id(doc: Any) -> str:
    """A passage's id in the LM task: its own, else the first 40 characters of its first half."""
    return str(doc.id or halves(doc.page_content)[0][:40])


@dataclass(frozen=True)
class LMSplit:
    """The LM task's split of a corpus (see lm_split): benchmarks/quality/replug_lm.py evaluates its
    held-out passages, `activerag train-retriever --task lm` trains on its pool, and the
    encoder keeps its record so that an evaluation can check the two apart."""

    held_out: int = 40
    seed: int = 0
    min_words: int = 60

    def of(self, docs: Sequence[Any]) -> tuple[list[Any], list[Example]]:
        """The evaluated passages of DOCS and the training pool."""
        return lm_split(docs, self.held_out, self.seed, self.min_words)

    def record(self, docs: Sequence[Any]) -> dict[str, Any]:
        """What an encoder trained on the pool keeps of the split (lsr.json's lm_split): its
        settings and the held-out passages' ids and titles."""
        evaluated = self.of(docs)[0]
        return {"held_out": self.held_out, "seed": self.seed, "min_words": self.min_words,
                "held_out_ids": [lm_passage_id(d) for d in evaluated],
                "held_out_titles": sorted({d.metadata.get("title", "") for d in evaluated})}


def in_training_pool(record: Mapping[str, Any], passages: Sequence[Any]) -> list[Any]:
    """The PASSAGES that the training pool of the split RECORD describes holds: long enough,
    not held out, and of no held-out title."""
    held, titles = set(record["held_out_ids"]), set(record["held_out_titles"])
    return [d for d in passages if len(d.page_content.split()) >= record["min_words"]
            and lm_passage_id(d) not in held and d.metadata.get("title", "") not in titles]


def encoder_split(encoder: Path, docs: Sequence[Any]) -> dict[str, Any] | None:
    """The LM-task split whose pool the query encoder in folder ENCODER trained on (None: it
    trained on questions, the QA task). An LM encoder from before the split was kept trained
    on the default LMSplit, whose record is taken from DOCS."""
    path = encoder / "lsr.json"
    if not path.exists():
        raise ActiveRagError(f"{path} is missing, so what the query encoder trained on is "
                             "unknown; point at a folder `activerag train-retriever` wrote")
    meta = json.loads(path.read_text())
    if meta.get("config", {}).get("task", "qa") != "lm":
        return None
    return dict(meta.get("lm_split") or LMSplit().record(docs))


def check_held_out(encoder: Path, passages: Sequence[Any], docs: Sequence[Any]) -> None:
    """Refuse to evaluate PASSAGES (of corpus DOCS) with the query encoder in folder ENCODER
    when its LM-task training pool holds any of them."""
    split = encoder_split(encoder, docs)
    if split is None:
        return
    seen = in_training_pool(split, passages)
    if seen:
        named = ", ".join(f"{lm_passage_id(d)} ({d.metadata.get('title', '')!r})"
                          for d in seen[:3])
        raise ActiveRagError(
            f"{len(seen)} of the {len(passages)} passages to evaluate lie in the training pool of "
            f"the query encoder in {encoder}, e.g. {named}: it held out only {split['held_out']} "
            f"passages, picked with seed {split['seed']}, and could train on any other passage "
            f"of {split['min_words']} words or more whose title none of them has; evaluate its "
            f"held-out passages (--n {split['held_out']} --seed {split['seed']})")


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
