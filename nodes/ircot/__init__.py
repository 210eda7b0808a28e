"""IRCoT (Trivedi et al. 2023): a chain of thought written one sentence at a time, each
sentence the query whose paragraphs join all those collected; a reader answers over them. A
method family in a folder of its own: context.py, state.py, prompts.py (its layout and
exemplars), logic.py (pure), steps.py (its nodes), methods.py; its wiring is graphs/ircot.py,
its page docs/ircot.md."""
