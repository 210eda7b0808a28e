"""SeaKR-lite (after Yao et al. 2025's self-aware re-ranking): a host method (FLARE, IRCoT)
whose every retrieval keeps, from a larger pool, the documents under which a short
pseudo-generation is least uncertain. A method family in a folder of its own: context.py,
logic.py (pure scoring), steps.py (the reranking retrieve node), methods.py; its wiring is
graphs/seakr.py, its page docs/seakr.md."""
