"""The adaptive app: FB-RAG for a question that brings its own long context; else single-time
retrieval, then FLARE when single's answer is unsure. A family in a folder of its own:
context.py (AppContext, which holds FB-RAG's), state.py, steps.py (routing, confidence),
methods.py (its registry row and flag group, listed after every other family's); its wiring
is graphs/app.py."""
