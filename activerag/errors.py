"""Errors that say what went wrong and what to do about it."""


class ActiveRagError(RuntimeError):
    """Base class: every message names the cause and the fix."""


class LMServerUnreachable(ActiveRagError):
    """The OpenAI-compatible server did not answer."""


class NoLogprobs(ActiveRagError):
    """The server answered without token log-probabilities."""


class ModelMismatch(ActiveRagError):
    """The requested model is not the one the server serves."""


class PromptTooLong(ActiveRagError):
    """The prompt does not fit the model's context window."""


class CorpusError(ActiveRagError):
    """The corpus is empty, missing or malformed."""


class ModelFileMissing(ActiveRagError):
    """A model file or directory that is needed does not exist."""


class EmptyQuestion(ActiveRagError, ValueError):
    """The question is empty."""


class UnknownTrigger(ActiveRagError, ValueError):
    """A retrieval trigger name that nothing registered."""


class SettingError(ActiveRagError, ValueError):
    """A setting (a run's context field, an ACTIVERAG_ variable) outside what it allows."""
