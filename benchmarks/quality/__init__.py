"""Studies beside the evaluation harness: FB-RAG's ceilings, the gates' thresholds, REPLUG as
a language model, how often a chat model calls a tool."""
