"""Non-ASCII text against a real llama-server (SmolLM2's GGUF, one slot, stopped by its own
process id): what its logprobs say about a character split over tokens, and what FLARE's gate
then sees.

llama-server keeps no logprob entry for a token whose bytes end inside a UTF-8 character
(tools/server/server-context.cpp, `process_token`: `slot.add_token` and the streamed chunk are
skipped while `validate_utf8` finds the text incomplete). The token that completes the character
gets the one entry: its `bytes` hold the whole character, but its id, logprob and alternatives
are its own. Tokens still unfinished when max_tokens runs out get no entry and, streamed, no
text.
"""

import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from activerag.context import FlareContext
from activerag.nodes import triggers
from activerag.serving import server
from activerag.serving.catalogue import FAST_MODEL
from activerag.serving.lm import VLLMClient
from activerag.testing import processes as realprocs

pytestmark = pytest.mark.integration
PROMPT = "Zürich, Genève, Köln, Kraków, Dvořák, 東京, 北京,"
MAX_TOKENS = 24


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with realprocs.own_server(None, FAST_MODEL, 1024,
                              launch=server.Launch("llama.cpp", parallel=1)) as base:
        yield base


def native(url: str, body: dict[str, Any]) -> dict[str, Any]:
    """A greedy /completion with one alternative per entry and the generated token ids."""
    resp = httpx.post(url.removesuffix("/v1") + "/completion", timeout=120,
                      json={"prompt": PROMPT, "temperature": 0, "n_probs": 1,
                            "return_tokens": True, **body})
    resp.raise_for_status()
    return dict(resp.json())


def test_a_split_character_is_one_entry_with_the_completing_tokens_logprob(url):
    """Fewer entries than tokens; an entry whose id is not the next generated one holds the
    bytes of the tokens before it, and its logprob is its own token's (its own alternative's),
    neither the lowest nor the product of the tokens it stands for."""
    out = native(url, {"n_predict": MAX_TOKENS})
    ids, entries = out["tokens"], out["completion_probabilities"]
    assert len(ids) == out["tokens_predicted"] == MAX_TOKENS > len(entries)
    at, merged = 0, 0
    for entry in entries:
        own = next(a for a in entry["top_logprobs"] if a["id"] == entry["id"])
        end = ids.index(entry["id"], at)
        whole, piece = bytes(entry["bytes"]), bytes(own["bytes"])
        whole.decode("utf-8")  # whole characters: raises on a fragment
        assert whole.endswith(piece) and entry["logprob"] == own["logprob"]
        if end > at:
            merged += 1
            assert len(whole) > len(piece)
        at = end + 1
    assert merged >= 1
    joined = b"".join(bytes(e["bytes"]) for e in entries).decode("utf-8")
    assert out["content"].startswith(joined)


async def test_min_prob_sees_only_the_token_that_completes_a_character(url):
    """The client makes one Token per entry, so the texts join into the generated text but a
    character split over tokens weighs in FLARE's gate at its last token's probability: the
    first token's, lower here, is lost, and a theta between the two does not fire."""
    gen = await VLLMClient(url).generate(PROMPT, max_tokens=MAX_TOKENS)
    assert "".join(t.text for t in gen.tokens) == gen.text and not gen.text.isascii()
    out = native(url, {"n_predict": MAX_TOKENS})
    ids, entries = out["tokens"], out["completion_probabilities"]
    assert [t.logprob for t in gen.tokens] == pytest.approx([e["logprob"] for e in entries])
    assert len(gen.tokens) < len(ids)
    assert gen.generated_tokens == len(ids)  # the cost counts every token, not the entries
    first = gen.tokens[0]
    assert entries[0]["id"] != ids[0], "the answer no longer opens with a split character"
    # the first half's probability: banned, another token is drawn, and the raw alternatives
    # at that position (taken before the bias) still show it
    banned = native(url, {"n_predict": 1, "n_probs": 5, "logit_bias": [[ids[0], False]]})
    alts = banned["completion_probabilities"][0]["top_logprobs"]
    lost = math.exp(next(a["logprob"] for a in alts if a["id"] == ids[0]))
    assert lost < first.prob
    ctx = FlareContext(theta=(lost + first.prob) / 2)
    draft = [(first.text, first.prob, first.start)]
    assert triggers.MEASURES[triggers.min_prob](draft, {}, ctx)["value"] == first.prob
    assert not triggers.min_prob(draft, {}, ctx)
    assert triggers.min_prob([(first.text, lost, first.start)], {}, ctx)
