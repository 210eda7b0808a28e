"""REPLUG's text from token ids, with a scripted LM whose tokens split characters into bytes
as byte-level BPE does: a token that holds part of a character means nothing alone."""

import math
import re

import pytest
from test_replug_graph import ByDocument, retriever, weights

from activerag.context import FlareContext
from activerag.graphs.replug import build_flare_replug_graph, build_replug_graph
from activerag.nodes.replug.context import ReplugContext
from activerag.sentences import SentenceSplitter
from activerag.testing.scripted import ScriptedLM, ends
from activerag.testing.scripted_tokens import EOS, Belief, ScriptedTokenLM

QUESTION = "Where was Alpha Beta born?"
DVORAK = "So the answer is Antonín Dvořák."


def byte_tokens(text: str) -> list[str]:
    """Words with their leading space, each character outside ASCII split into its UTF-8
    bytes (a byte is held as the surrogate that `surrogateescape` maps it to)."""
    out: list[str] = []
    for word in re.findall(r" ?[^ ]+| ", text):
        for run in re.findall(r"[\x00-\x7f]+|[^\x00-\x7f]", word):
            out.extend([run] if run.isascii() else [chr(0xDC00 + b) for b in run.encode()])
    return out


def test_byte_tokens_split_characters_into_bytes_and_keep_every_space():
    assert byte_tokens(" Dvořák.") == [" Dvo", "\udcc5", "\udc99", "\udcc3", "\udca1", "k."]
    assert byte_tokens("a  b ") == ["a", " ", " b", " "]


class ByteTokenLM(ScriptedTokenLM):
    """ScriptedTokenLM over byte_tokens; detokenize decodes the joined bytes as a real
    tokenizer does, so an incomplete character comes out as U+FFFD."""

    async def tokenize(self, text: str) -> list[int]:
        ids = [self._id(t) for t in byte_tokens(text)]
        marker = next((m for m in self.beliefs if m in text), None)
        if marker is not None:
            self._prompts[tuple(ids)] = marker
        return ids

    async def detokenize(self, ids) -> str:
        raw = "".join(self._token(i) for i in ids).encode("utf-8", "surrogateescape")
        return raw.decode("utf-8", "replace")


def spells(text: str, prob: float = 0.9, rival: str = " Gepu.") -> Belief:
    """A document that writes TEXT token by token (each at PROB, RIVAL next), then ends."""
    tokens = byte_tokens(text)

    def belief(answer: tuple[str, ...]) -> dict[str, float]:
        i = len(answer)
        token = tokens[i] if i < len(tokens) and tuple(tokens[:i]) == answer else EOS
        return {token: prob, rival: (1 - prob) / 2}

    return belief


async def test_byte_tokens_round_trip_and_a_lone_byte_decodes_to_a_replacement():
    lm = ByteTokenLM({})
    ids = await lm.tokenize(DVORAK)
    assert await lm.detokenize(ids) == DVORAK
    assert await lm.detokenize(ids[-3:-2]) == "\ufffd"


async def run(lm, **ctx):
    graph = build_replug_graph(token_lm=lm, retriever=retriever(), splitter=SentenceSplitter())
    return await graph.ainvoke({"question": QUESTION}, context=ReplugContext(k=2, **ctx))


@pytest.mark.parametrize("mode", ["token", "agree"])
async def test_characters_split_over_tokens_come_out_whole(mode):
    lm = ByteTokenLM({"Vesk": spells(DVORAK), "Ulm": spells(DVORAK)})
    out = await run(lm, ensemble=mode)
    assert out["answer"] == DVORAK
    [entry] = out["trace"]
    assert entry["sentence"] == DVORAK
    # a byte that starts a character gives no text; the byte that completes it gives it all
    pieces = [t for t, _ in entry["tokens"]]
    assert "".join(pieces) == DVORAK
    assert pieces[-6:] == [" Dvo", "", "ř", "", "á", "k."]
    assert out["answer_tokens"] == len(byte_tokens(DVORAK))


async def test_a_character_cut_by_the_round_is_completed_in_the_next():
    # agree with a look-ahead of 6 ends round 1 after " Anton" and the first byte of "í"
    lm = ByteTokenLM({"Vesk": spells(DVORAK), "Ulm": spells(DVORAK)})
    out = await run(lm, ensemble="agree", lookahead=6)
    assert [c["prompt"][-1] for c in lm.calls][2] == lm._id("\udcc3")
    assert out["answer"] == DVORAK


async def test_flare_replug_writes_characters_split_over_tokens_whole():
    draft = ScriptedLM([ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.2})])
    said = "Alpha Beta was born in Dvořák."
    token_lm = ByteTokenLM({"Vesk": spells(said), "Ulm": spells(said)})
    graph = build_flare_replug_graph(lm=draft, token_lm=token_lm, retriever=retriever(),
                                     splitter=SentenceSplitter())
    out = await graph.ainvoke({"question": QUESTION},
                              context=FlareContext(theta=0.5, initial_retrieval=False))
    assert out["answer"] == said


async def test_rescore_scores_the_text_as_generated_under_the_plain_format():
    # a plain prompt ends with "Answer:", so the model writes " So" with its leading space
    token_lm = ByteTokenLM({"Vesk": spells(" So the answer is Vesk."),
                            "Ulm": spells(" So the answer is Ulm.")})
    graph = build_replug_graph(
        token_lm=token_lm, retriever=retriever(), splitter=SentenceSplitter(),
        lm=ByDocument({"Vesk": ends(" So the answer is Vesk.", prob=0.5),
                            "Ulm": ends(" So the answer is Ulm.", prob=0.9)}))
    out = await graph.ainvoke({"question": QUESTION}, context=ReplugContext(
        k=2, ensemble="rescore", prompt_format="plain"))
    assert out["answer"] == "So the answer is Vesk."
    w_a, w_b = weights()
    scores = dict(out["trace"][0]["candidates"])
    assert scores["Vesk"] == pytest.approx(
        (4 * math.log(0.9) + math.log(w_a * 0.9 + w_b * 1e-9)) / 5)
