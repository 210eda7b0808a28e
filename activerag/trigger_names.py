"""The names a run's `trigger` and `estimator` may take, known before any node is imported: the
shipped ones, and every name `activerag.nodes.triggers.register` and
`activerag.nodes.estimators.register_estimator` add.
The contexts refuse an unknown name when they are made (the LangGraph server takes a run's
context from any client); the triggers themselves live with the nodes, above this module."""

from __future__ import annotations

from collections.abc import Callable

from activerag.errors import UnknownTrigger

TRIGGERS: dict[str, Callable[..., bool] | None] = dict.fromkeys(
    ("min_prob", "mean_surprisal", "entropy", "never", "always", "every_n", "etc", "dragin_lite",
     "entropy_mean", "entropy_max", "perplexity"))
"""The one trigger registry: every name a context accepts, with the function that decides for it
(None until the module defining it is imported and registers it: nodes/triggers.py's own, and
each family folder's triggers.py, which graphs/base.py imports for every graph). A test keeps
the shipped names equal to what those modules register."""
ESTIMATORS: set[str] = {"entropy_mean", "entropy_max", "perplexity", "lexsim"}
"""The gates' estimator names, likewise."""
TOP_LOGPROBS: dict[str, int] = {"entropy": 20, "etc": 20, "dragin_lite": 20,
                                "entropy_mean": 20, "entropy_max": 20}
"""How many top logprobs per position each trigger needs the LM to return (1 if absent), so
that a client asks for them whichever trigger modules were imported: the shipped triggers'
here, once; a trigger registered since says its own (`register(name, top_logprobs=k)`)."""


def declare_estimator(name: str, top_logprobs: int = 1, trigger: bool = True) -> None:
    """Make NAME an estimator a context accepts, before its module registers it (a family
    folder's context.py declares the estimator its context names, so that the context is
    valid wherever it is made); TRIGGER: it reads the answer's own tokens, so that it is a
    trigger of the look-ahead graphs too, reading TOP_LOGPROBS alternatives per token."""
    ESTIMATORS.add(name)
    if trigger:
        TRIGGERS.setdefault(name, None)
        TOP_LOGPROBS[name] = max(TOP_LOGPROBS.get(name, 1), top_logprobs)


def check_trigger(name: str) -> None:
    """Refuse a trigger name nothing registered, listing the known ones."""
    if name not in TRIGGERS:
        raise UnknownTrigger(f"unknown trigger {name!r}; known: {', '.join(sorted(TRIGGERS))} "
                             "(register one with activerag.nodes.triggers.register)")


def check_estimator(name: str) -> None:
    """Refuse an estimator name nothing registered, listing the known ones."""
    if name not in ESTIMATORS:
        raise UnknownTrigger(f"unknown estimator {name!r}; known: "
                             f"{', '.join(sorted(ESTIMATORS))} (register one with "
                             "activerag.nodes.estimators.register_estimator)")
