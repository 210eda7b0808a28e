"""The uncertainty gates: Moskvoretskii et al. 2025's gated single retrieval (retrieve once when
the answer written without documents is unsure by an estimator), and ETC's entropy trend and
DRAGIN-lite as FLARE's gate. A method family in a folder of its own: context.py, logic.py
(pure: the estimators, the entropy trend, RIND without attention), triggers.py (ETC's and
DRAGIN-lite's triggers, which fire at a word), steps.py (its nodes), methods.py; its wiring
is graphs/gated.py, its page docs/gates.md. The margin gate (nodes/margin/) joins it."""
