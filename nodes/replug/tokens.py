"""What REPLUG's nodes (Shi et al. 2023) do with a token-level LM: each document's prompt as
token ids that fit the served context, and one round of the token ensemble (Eq. 2): the
tokens it decides from the documents' look-aheads, the text they add, where the output ends."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.documents import Document

from activerag.errors import PromptTooLong
from activerag.nodes.prompts import ANSWER_STOPS
from activerag.nodes.replug.logic import Decided, decide_round, document_keep, emitted_texts
from activerag.serving.token_lm import Steps, TokenLM, context_window_of, cut_to_fit

# How the tokenizers of the served models write their special tokens (end of sequence or of a
# turn); the detokenizer leaves them in, and an empty piece is one too.
_SPECIAL = re.compile(r"|<\|[^|<>\s]+\|>|</s>|<eos>|<end_of_turn>")


async def fit_documents(lm: TokenLM, docs: Sequence[Document],
                        prompt_of: Callable[[Document], str], reserve: int,
                        ) -> tuple[list[Document], list[list[int]], list[str]]:
    """Each document's prompt as token ids, a document whose prompt leaves fewer than RESERVE
    tokens of the served context for the answer cut to fit (its head kept), and a note per cut.
    """
    prompts = list(await asyncio.gather(*[lm.tokenize(prompt_of(d)) for d in docs]))
    window = await context_window_of(lm)
    if not window:
        return list(docs), prompts, []
    room = window - reserve
    out, notes = list(docs), []
    for i, doc in enumerate(docs):
        if len(prompts[i]) <= room:  # fits: no need to tokenize the document alone
            continue
        ids = await lm.tokenize(doc.page_content)
        try:
            keep = document_keep(len(prompts[i]), len(ids), window, reserve)
        except ValueError as exc:
            raise PromptTooLong(f"{exc}; shorten the question or the exemplars, lower "
                                "max_answer_tokens, or serve the model with a larger "
                                "--max-model-len") from None
        assert keep is not None  # the prompt overflows, so the document is cut

        cuts: dict[int, Document] = {}

        async def head(n: int, doc: Document = doc, ids: list[int] = ids,
                       cuts: dict[int, Document] = cuts) -> str:
            cuts[n] = doc.model_copy(update={"page_content": await lm.detokenize(ids[:n])})
            return prompt_of(cuts[n])

        fitted = await cut_to_fit(lm, head, keep, room)
        if fitted is None:
            raise PromptTooLong(f"document {doc.id} could not be cut to fit the {window}-token "
                                "context; serve the model with a larger --max-model-len")
        _, prompts[i], keep = fitted
        out[i] = cuts[keep]
        notes.append(f"document {doc.id or doc.metadata.get('title', i)} cut from {len(ids)} to "
                     f"{keep} tokens to fit the {window}-token context with {reserve} tokens left "
                     "for the answer")
    return out, prompts, notes


def stop_at(text: str) -> int | None:
    """Where a blank line or a new "Question:" ends the answer, if one does."""
    hits = [text.find(stop) for stop in ANSWER_STOPS if stop in text]
    return min(hits) if hits else None


def proposal(doc: int, steps: Steps) -> dict[str, Any]:
    """A document's look-ahead as state holds it (ids and sorted top-N pairs)."""
    return {"doc": doc, "positions": [[p.token, sorted(p.top.items())] for p in steps.positions],
            "ended": steps.ended}


async def texts_of(lm: TokenLM, before: Sequence[int], new: Sequence[int]
                   ) -> tuple[list[str], list[bool]]:
    """The text each token of NEW adds to the output BEFORE (see emitted_texts), and whether
    the output decodes to an unfinished character after it."""
    decoded = await asyncio.gather(*[lm.detokenize([*before, *new[:n]])
                                     for n in range(len(new) + 1)])
    return emitted_texts(decoded), [text.endswith("\ufffd") for text in decoded[1:]]


async def decide(lm: TokenLM, proposals: Sequence[dict[str, Any]], weights: Sequence[float],
                 before: Sequence[int]) -> tuple[Decided, list[int], list[str], bool]:
    """One round's tokens after the output BEFORE (decide_round) with their texts, cut before
    the first token that ends the output: one a document ended its own output with, or any
    special token (a token that adds no text only because its character is unfinished is
    none)."""
    views = [[(tok, dict(top)) for tok, top in p["positions"]] for p in proposals]
    decided = decide_round(views, weights)
    ended = not decided.tokens or all(
        p["ended"] and len(p["positions"]) == len(decided.tokens) for p in proposals)
    pieces, unfinished = await texts_of(lm, before, decided.tokens)
    ends = {p["positions"][-1][0] for p in proposals if p["ended"] and p["positions"]}
    stops = [i for i, (t, piece, held) in enumerate(zip(decided.tokens, pieces, unfinished,
                                                        strict=True))
             if t in ends or (not held and _SPECIAL.fullmatch(piece))]
    if stops:
        return decided, decided.tokens[:stops[0]], pieces[:stops[0]], True
    return decided, decided.tokens, pieces, ended
