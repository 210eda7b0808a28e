"""Adaptive-RAG (Jeong et al. 2024): a query-complexity classifier routes the question to no,
single-step or multi-step retrieval. A method family in a folder of its own: context.py,
logic.py (pure: the silver label, the logistic regression, the parse of the LM's reply),
router.py (the trained router and its embedder), steps.py (its nodes and state), methods.py;
its wiring is graphs/adaptive_rag.py, its page docs/adaptive_rag.md."""
