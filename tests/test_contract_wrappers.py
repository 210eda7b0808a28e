"""Every LM wrapper passes on all it is asked (issue #38): the response caches (CachedLM,
CachedSampler) and the replica set (Replicas) each wrap a recording LM, are called with a
distinct, non-default value for every parameter of the protocol method they stand in for,
and the wrapped LM must receive each value. The parameters come from the protocols
(activerag.serving.lm.LM, token_lm.Sampler and TokenLM), so a parameter added there and
dropped by a wrapper fails here."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from activerag.serving.cache import CachedLM, CachedSampler
from activerag.serving.generation import Generation
from activerag.serving.lm import LM
from activerag.serving.replicas import Replicas
from activerag.serving.token_lm import Sampler, Samples, TokenLM


def cut(text: str, final: bool) -> int | None:
    return None


cut.fingerprint = "a cut"  # type: ignore[attr-defined]

VALUES: dict[str, Any] = {
    "prompt": "Where was Alpha born?", "text": "Alpha", "max_tokens": 7, "cut": cut,
    "stop": ["\n\n"], "logit_bias": {5: -100.0}, "n": 3, "temperature": 0.7, "top_p": 0.9,
    "top_k": 11, "seed": 5, "separate": True, "ids": [7, 8], "continuation": [9],
    "top": 4,
}
"""A value for each protocol parameter, none of them its default."""


class Recording:
    """An LM, sampler and token LM that notes each call's arguments by parameter name."""

    model = "fake-model"

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def _note(self, method: str, **args: Any) -> None:
        self.calls.append((method, args))

    async def generate(self, prompt: str, **kw: Any) -> Generation:
        self._note("generate", prompt=prompt, **kw)
        return Generation(text="Gepu.", tokens=[], finished=True)

    async def token_ids(self, text: str) -> list[int]:
        self._note("token_ids", text=text)
        return [1]

    async def sample(self, prompt: str, n: int, max_tokens: int, **kw: Any) -> Samples:
        self._note("sample", prompt=prompt, n=n, max_tokens=max_tokens, **kw)
        return Samples(["Gepu"] * n, 3, n, 1)

    async def tokenize(self, text: str) -> list[int]:
        self._note("tokenize", text=text)
        return [1]

    async def detokenize(self, ids: Any) -> str:
        self._note("detokenize", ids=ids)
        return "x"


WRAPPERS: dict[str, tuple[Callable[[Recording, Path], Any], list[tuple[type, str]]]] = {
    "CachedLM": (lambda inner, tmp: CachedLM(inner, tmp / "cache.sqlite", served=[]),
                 [(LM, "generate"), (LM, "token_ids")]),
    "Replicas": (lambda inner, tmp: Replicas([inner]), [(LM, "generate"), (LM, "token_ids")]),
    "CachedSampler": (lambda inner, tmp: CachedSampler(inner, tmp / "cache.sqlite"),
                      [(Sampler, "sample"), (TokenLM, "tokenize"), (TokenLM, "detokenize")]),
}
"""Each wrapper, made around an LM, and the protocol methods it stands in for."""


def parameters(protocol: type, method: str) -> list[str]:
    return [p for p in inspect.signature(getattr(protocol, method)).parameters if p != "self"]


def call(obj: Any, protocol: type, method: str) -> dict[str, Any]:
    """Call METHOD of OBJ as PROTOCOL declares it, every parameter given; the values given."""
    sig = inspect.signature(getattr(protocol, method))
    args, kwargs, given = [], {}, {}
    for name, p in sig.parameters.items():
        if name == "self":
            continue
        assert name in VALUES, f"{protocol.__name__}.{method}({name}): give it a value above"
        given[name] = VALUES[name]
        if p.kind is p.KEYWORD_ONLY:
            kwargs[name] = VALUES[name]
        else:
            args.append(VALUES[name])
    asyncio.run(getattr(obj, method)(*args, **kwargs))
    return given


CASES = [(w, protocol, m) for w, (_, methods) in WRAPPERS.items() for protocol, m in methods]


@pytest.mark.parametrize(("wrapper", "protocol", "method"), CASES,
                         ids=[f"{w}.{m}" for w, _, m in CASES])
def test_a_wrapper_passes_every_argument_on_to_the_lm_it_wraps(tmp_path, wrapper, protocol,
                                                                method):
    inner = Recording()
    given = call(WRAPPERS[wrapper][0](inner, tmp_path), protocol, method)
    assert [m for m, _ in inner.calls] == [method], inner.calls
    got = inner.calls[0][1]
    lost = {k: v for k, v in given.items() if k not in got or (
        list(got[k]) if isinstance(got[k], tuple) else got[k]) != v}
    assert not lost, f"{wrapper}.{method} did not pass on {sorted(lost)} (got {got})"


def test_the_values_differ_from_every_default():
    for _, protocol, method in CASES:
        for name, p in inspect.signature(getattr(protocol, method)).parameters.items():
            assert p.default is p.empty or VALUES.get(name) != p.default, (method, name)
