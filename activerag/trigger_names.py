"""The names a run's `trigger` and `estimator` may take, known before any node is imported: the
shipped ones, and every name `activerag.nodes.triggers.register` and
`activerag.nodes.estimators.register_estimator` add.
The contexts refuse an unknown name when they are made (the LangGraph server takes a run's
context from any client); the triggers themselves live with the nodes, above this module."""

from __future__ import annotations

from activerag.errors import UnknownTrigger

TRIGGERS: set[str] = {"min_prob", "mean_surprisal", "entropy", "never", "always", "every_n",
                      "etc", "dragin_lite", "entropy_mean", "entropy_max", "perplexity"}
"""The trigger names: those nodes/triggers.py and nodes/gated/triggers.py ship (a test keeps
this set equal to what they register), and those registered since."""
ESTIMATORS: set[str] = {"entropy_mean", "entropy_max", "perplexity", "lexsim"}
"""The gates' estimator names, likewise."""
TOP_LOGPROBS: dict[str, int] = {"entropy": 20, "etc": 20, "dragin_lite": 20,
                                "entropy_mean": 20, "entropy_max": 20}
"""How many top logprobs per position each trigger needs the LM to return (1 if absent), so
that a client asks for them whichever trigger modules were imported."""


def declare_estimator(name: str, top_logprobs: int = 1, trigger: bool = True) -> None:
    """Make NAME an estimator a context accepts, before its module registers it (a family
    folder's context.py declares the estimator its context names, so that the context is
    valid wherever it is made); TRIGGER: it reads the answer's own tokens, so that it is a
    trigger of the look-ahead graphs too, reading TOP_LOGPROBS alternatives per token."""
    ESTIMATORS.add(name)
    if trigger:
        TRIGGERS.add(name)
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
