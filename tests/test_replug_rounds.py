"""A REPLUG round's tokens are cut where the output ends (nodes/replug/tokens.decide): at a
special token the mixture chose, but not at a token that adds no text only because its
character is still unfinished (its bytes continue in the next token)."""

from collections.abc import Sequence

from activerag.nodes.replug.tokens import decide

PIECES = {1: b" Gepu", 2: b"<|im_end|>", 3: b"\xc3", 4: b"\xa9", 5: b" river"}
"""Token ids as bytes: 3 and 4 are the two halves of "é"."""


class BytesLM:
    async def detokenize(self, ids: Sequence[int]) -> str:
        return b"".join(PIECES[i] for i in ids).decode("utf-8", errors="replace")


def proposal(tokens: list[int], ended: bool = False) -> dict:
    return {"positions": [(t, [(t, -0.1)]) for t in tokens], "ended": ended}


async def test_a_special_token_the_mixture_chose_ends_the_output_before_it():
    _, kept, pieces, ended = await decide(BytesLM(), [proposal([1, 2, 5])], [1.0], [])
    assert (kept, pieces, ended) == ([1], [" Gepu"], True)


async def test_a_token_that_only_begins_a_character_does_not_end_the_output():
    _, kept, pieces, ended = await decide(BytesLM(), [proposal([3, 4, 5])], [1.0], [])
    assert (kept, pieces, ended) == ([3, 4, 5], ["", "é", " river"], False)
