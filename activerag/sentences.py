"""Sentence splitting with NLTK Punkt, trained on the corpus (Punkt data cannot be downloaded)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nltk's package import loads scipy (seconds): only when a splitter is made
    from nltk.tokenize.punkt import PunktParameters

_LINE = re.compile(r"[^\n]+")
# "No." abbreviates "number" only before one ("No. 1"); "So the answer is no." ends a sentence,
# so "no" is no abbreviation to Punkt and a split between "No." and a digit is undone.
_NUMBER_SIGN = re.compile(r"\b[Nn]o\.$")
# Abbreviations every splitter knows, trained or not (Punkt stores them lower-case, no final dot).
COMMON_ABBREVIATIONS = frozenset(
    {"dr", "mr", "mrs", "ms", "prof", "st", "jr", "sr", "mt", "ft", "vs", "etc", "inc",
     "ltd", "co", "corp", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct",
     "nov", "dec", "u.s", "u.k", "e.g", "i.e", "a.m", "p.m", "approx", "est", "gen", "gov"}
)


# Punkt learns its abbreviations and collocations from counts, and a small corpus gives it too
# few: the shipped demo corpus (5,700 words of templated passages, "... About 661,000 people live
# there.") taught it "there", "long", "poet" and "toys" as abbreviations and "1690. About" as a
# collocation, so "... live there. So the answer is X." stayed one sentence. Below this many
# words a corpus is split by the untrained Punkt and COMMON_ABBREVIATIONS instead.
MIN_TRAINING_WORDS = 50_000


def train_punkt(texts: Iterable[str]) -> PunktParameters:
    """Learn Punkt parameters (abbreviations, collocations, sentence starters) from raw text."""
    from nltk.tokenize.punkt import PunktTrainer

    trainer = PunktTrainer()
    for text in texts:
        trainer.train(text, finalize=False)
    trainer.finalize_training()
    return trainer.get_params()


def save_punkt(params: PunktParameters, path: Path) -> None:
    """Persist Punkt parameters as JSON (no pickle)."""
    data = {
        "abbrev_types": sorted(params.abbrev_types),
        "collocations": sorted([list(c) for c in params.collocations]),
        "sent_starters": sorted(params.sent_starters),
        "ortho_context": dict(params.ortho_context),
    }
    path.write_text(json.dumps(data))


def load_punkt(path: Path) -> PunktParameters:
    """Read parameters written by save_punkt."""
    data = json.loads(path.read_text())
    from nltk.tokenize.punkt import PunktParameters

    params = PunktParameters()
    params.abbrev_types = set(data["abbrev_types"])
    params.collocations = {tuple(c) for c in data["collocations"]}
    params.sent_starters = set(data["sent_starters"])
    for word, flags in data["ortho_context"].items():
        params.ortho_context[word] = flags
    return params


class SentenceSplitter:
    """Split text into sentence spans: Punkt within each line, a line break always ends one."""

    def __init__(self, params: PunktParameters | None = None) -> None:
        from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

        params = params or PunktParameters()
        params.abbrev_types |= COMMON_ABBREVIATIONS
        self._punkt = PunktSentenceTokenizer(params)
        learned = [sorted(params.abbrev_types), sorted(map(list, params.collocations)),
                   sorted(params.sent_starters), sorted(params.ortho_context.items())]
        self.fingerprint = hashlib.sha256(json.dumps(learned).encode()).hexdigest()[:16]
        """Identifies the parameters (two splitters that agree on it split alike)."""

    @classmethod
    def from_file(cls, path: Path | None) -> SentenceSplitter:
        """Trained splitter if PATH exists, else the untrained Punkt fallback."""
        if path is not None and path.exists():
            return cls(load_punkt(path))
        return cls()

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans of the sentences in TEXT, without surrounding whitespace."""
        out: list[tuple[int, int]] = []
        for line in _LINE.finditer(text):
            base = line.start()
            for s, e in self._punkt.span_tokenize(line.group()):
                s, e = base + s, base + e
                if (out and out[-1][1] > base and text[s:s + 1].isdigit()
                        and _NUMBER_SIGN.search(text, 0, out[-1][1])):
                    out[-1] = (out[-1][0], e)
                else:
                    out.append((s, e))
        return out

    def split(self, text: str) -> list[str]:
        """The sentences of TEXT."""
        return [text[s:e] for s, e in self.spans(text)]

    def first_sentence_end(self, text: str, final: bool = False) -> int | None:
        """End offset of TEXT's first sentence once it is certainly complete.

        While generating (final=False) a sentence is complete only when another one has begun
        after it, which costs one token past the boundary but lets Punkt see the next word.
        """
        spans = self.spans(text)
        if len(spans) >= 2 or (spans and final):
            return spans[0][1]
        if spans and "\n" in text[spans[0][1]:]:
            return spans[0][1]
        return None
