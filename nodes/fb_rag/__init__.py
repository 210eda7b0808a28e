"""FB-RAG (Chawla et al. 2025): a light LM's rationales and answers rank a long context's
chunks, and a strong LM reads the best; with OP-RAG, vanilla RAG, long context and self-route as
its baselines. Its code in one folder: state.py, logic.py (pure scoring and selection),
prompts.py, parts.py (the two LMs), steps.py (the nodes); its wiring is graphs/fb_rag.py, its
page docs/fb_rag.md. Its context, FBRagContext, is still activerag.context's: the app's
context holds one and the CLI builds both."""
