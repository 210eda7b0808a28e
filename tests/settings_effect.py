"""The machinery of the setting-effect test (tests/test_settings_take_effect.py): which context
fields a run reads, the changed value of each field, and what a run shows from outside.

A run is a method's graph from the registry under a context whose base_url is a fake vLLM
(tests/fake_backends.py: every reply the same words at p 0.78) and whose store is a few
passages; what it shows is every completion request's body and the graph's output, less its
timings. The fields it reads are found by running it under a subclass of its context that
notes each field read by code outside the dataclass machinery and the context's checks.
"""

from __future__ import annotations

import json
import sys
from dataclasses import fields, is_dataclass
from types import NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from activerag.context import ServingContext

CHANGED: dict[str, Any] = {
    "theta": 0.5, "beta": 0.9, "k": 3, "max_answer_tokens": 18, "max_sentence_tokens": 4,
    "max_question_tokens": 3, "window_tokens": 4, "query_tokens": 3, "max_sentences": 1,
    "span_merge_gap": 0, "search_bias": 1.0, "search_ban_tokens": 1, "trigger_n": 3,
    "top_logprobs": 7, "tau": 0.5, "lookahead": 1, "seed": 7, "temperature": 0.5,
    "top_p": 0.5, "top_k": 5, "samples": 2, "sample_tokens": 3, "eta_b": 0.5, "eta_f": 0.5,
    "chunk_words": 8, "read_words": 16, "recall_words": 8, "scale": 2.0,
    "gate_threshold": 10.0, "lexsim_samples": 3, "lexsim_temperature": 0.5,
    "etc_threshold": -1.0, "etc_alpha": 0.5, "dragin_threshold": 0.0, "dragin_query_words": 0,
    "ircot_max_paragraphs": 1, "ircot_max_steps": 1, "ircot_distractors": 0,
    "rerank_pool": 9, "rerank_tokens": 2, "min_confidence": 0.99,
    "estimator": ["perplexity", "entropy_max"], "ircot_shots": 0,
    "prompt_set": "paper", "exemplar_retrieval": True, "trigger": "entropy",
    "model": "another-model", "light_model": "another-model",
}
"""The changed value of a field where the rule in `changed` would not show it (a number whose
effect needs a larger step, a field whose default is None, a string); a list: the first that
is not the default."""

UNTRACKED_CALLERS = ("__post_init__", "_check", "at_least", "refuse", "finite_floats",
                     "within_deployment", "__eq__", "__repr__", "__hash__",
                     "_replace", "replace", "asdict", "_asdict_inner", "astuple", "__init__",
                     "deepcopy", "_deepcopy_dict", "_reconstruct", "__reduce_ex__", "copy")
"""Functions whose reading of a field is not the method using it: the dataclass machinery and
the context's own checks."""
COMPREHENSIONS = ("<dictcomp>", "<listcomp>", "<setcomp>", "<genexpr>")
"""A comprehension that getattr()s fields copies a context into another (a composite method
handing its strategies their settings): the strategies' own runs are where those are read."""


def field_type(cls: type, name: str) -> tuple[Any, ...]:
    kind = get_type_hints(cls)[name]
    return get_args(kind) if get_origin(kind) in (Union, UnionType) else (kind,)


def changed(cls: type, name: str, default: Any) -> Any:
    """A value of field NAME of CLS other than DEFAULT, meant to show an effect."""
    given = CHANGED.get(name)
    for value in given if isinstance(given, list) else [given] if name in CHANGED else []:
        if value != default:
            return value
    kinds = [t for t in field_type(cls, name) if t is not NoneType]
    kind = kinds[0]
    if kind is bool:
        return not default
    if get_origin(kind) is Literal:
        return next(v for v in get_args(kind) if v != default)
    if kind is int and isinstance(default, int):
        return default + 1
    if kind is float and isinstance(default, float):
        return default / 2 if default else 0.5
    raise LookupError(f"no changed value for {cls.__name__}.{name} (default {default!r}): "
                      "give one in CHANGED")


def tracked(ctx: Any, reads: set[str]) -> Any:
    """CTX as an instance of a subclass that adds to READS each field a method reads."""
    cls = type(ctx)
    names = {f.name for f in fields(cls)}

    def __getattribute__(self: Any, name: str) -> Any:  # noqa: N807
        if name in names:
            caller = sys._getframe(1).f_code
            copying = caller.co_name in COMPREHENSIONS and "getattr" in caller.co_names
            if not copying and caller.co_name not in UNTRACKED_CALLERS and \
                    "dataclasses" not in caller.co_filename:
                reads.add(name)
        return object.__getattribute__(self, name)

    sub = type(cls.__name__, (cls,), {"__getattribute__": __getattribute__})
    return sub(**{f.name: getattr(ctx, f.name) for f in fields(cls) if f.init})


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items()
                if "seconds" not in k and k not in ("timings",)}
    if isinstance(value, list | tuple):
        return [_without_timings(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        return _without_timings({f.name: getattr(value, f.name) for f in fields(value)})
    if hasattr(value, "page_content"):  # a Document
        return {"text": value.page_content, "meta": _without_timings(dict(value.metadata))}
    return value


def shown(requests: list[tuple[str, dict[str, Any]]], out: dict[str, Any]) -> str:
    """What a run shows: its completion requests' bodies (in a fixed order: a graph may send
    them concurrently) and its output without timings, as one canonical string."""
    bodies = sorted(json.dumps(body, sort_keys=True, default=str)
                    for path, body in requests if path.endswith("completions"))
    return json.dumps({"requests": bodies, "out": _without_timings(out)}, sort_keys=True,
                      default=str)


def settable(ctx: ServingContext) -> list[str]:
    """The fields of CTX's class that a run flag sets (the CLI's flags are made from them)."""
    from activerag.cli.flags import FLAGS

    return sorted({f.field for f in FLAGS if type(ctx) in f.contexts} - {"base_url"})
