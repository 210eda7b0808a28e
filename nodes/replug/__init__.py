"""REPLUG (Shi et al. 2023): the retrieved documents' next-token distributions ensembled, with
its Table 3 baselines. A method family in a folder of its own: context.py (ReplugContext),
state.py, logic.py (pure decisions), tokens.py (rounds over token ids), steps.py (the nodes),
answers.py (the answer-level ensembles), flare_replug.py (FLARE's regeneration by the
ensemble), methods.py (the registry rows); its wiring is graphs/replug.py, its page
docs/replug.md."""
