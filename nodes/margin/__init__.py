"""The margin gate (after TARG, Wang et al. 2025): retrieve once, for the whole answer, when the
answer written without documents is unsure by the gap between its tokens' top two
alternatives. A method family in a folder of its own: context.py, logic.py, triggers.py,
methods.py; its wiring is graphs/margin.py, its page docs/margin.md."""
