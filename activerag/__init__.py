"""activerag: forward-looking retrieval-augmented generation as composable LangGraph graphs."""

__version__ = "0.1.0"
