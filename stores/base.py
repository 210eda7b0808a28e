"""What every store offers, and the LangChain retriever over any of them."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever


@runtime_checkable
class Store(Protocol):
    """A persistent collection of passages that can be searched."""

    def add(self, docs: list[Document]) -> int:
        """Add documents not already present (by id); return how many were new."""
        ...

    def search(self, query: str, k: int) -> list[tuple[Document, float]]:
        """The K best documents for QUERY with their scores, best first."""
        ...

    def __len__(self) -> int: ...


class StoreRetriever(BaseRetriever):
    """A LangChain retriever over a Store; each Document carries its score in metadata."""

    store: Store
    k: int = 2

    model_config = {"arbitrary_types_allowed": True}

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        out = []
        for doc, score in self.store.search(query, self.k):
            out.append(Document(page_content=doc.page_content, id=doc.id,
                                metadata={**doc.metadata, "score": score}))
        return out
