"""Serving the LMs: the vLLM server's lifecycle, its replicas, and the clients that talk to it
(sentence-level `lm`, token-level `token_lm`, the on-disk response `cache`)."""

import sys


def say(msg: str) -> None:
    """One line of a long serving step's progress (a download, a build, a start), on stderr."""
    print(f"[activerag] {msg}", file=sys.stderr, flush=True)
