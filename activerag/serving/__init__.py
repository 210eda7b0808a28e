"""Serving the LMs: the vLLM server's lifecycle, its replicas, and the clients that talk to it
(sentence-level `lm`, token-level `token_lm`, the on-disk response `cache`)."""
