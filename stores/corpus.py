"""A corpus on disk: BM25 and Chroma stores over the same passages, plus trained Punkt."""

from __future__ import annotations

import json
import shlex
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from langchain_core.documents import Document
from tqdm import tqdm

from activerag.errors import CorpusError
from activerag.sentences import MIN_TRAINING_WORDS, SentenceSplitter, save_punkt, train_punkt
from activerag.stores.base import Store, StoreRetriever
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import FORMATS, ReadReport, check_max_words, read_corpus

RetrieverKind = Literal["bm25", "chroma"]


@dataclass
class IngestReport:
    """What `ingest` did."""

    rows: int
    passages: int
    added_bm25: int
    added_chroma: int
    skipped: int
    problems: list[str]
    total: int
    splitter: str = ""
    """How this store's sentences are split, when the ingest (re)decided it."""

    def summary(self) -> str:
        lines = [f"read {self.rows} rows into {self.passages} passages; added "
                 f"{self.added_bm25} to BM25 and {self.added_chroma} to Chroma; "
                 f"store now holds {self.total} passages"]
        if self.splitter:
            lines.append(f"sentences: {self.splitter}")
        if self.skipped:
            lines.append(f"skipped {self.skipped} malformed or non-UTF-8 rows, e.g.:")
            lines += [f"  {p}" for p in self.problems[:5]]
        return "\n".join(lines)


class Corpus:
    """The stores under one folder: bm25/, chroma/, punkt.json."""

    def __init__(self, path: Path, chroma_url: str | None = None) -> None:
        self.path = path
        self.chroma_url = chroma_url
        self.bm25 = BM25Store(path / "bm25")
        self._chroma: Store | None = None
        self._splitter: SentenceSplitter | None = None
        self._encoded: dict[str, Store] = {}
        # Graphs reach these through asyncio.to_thread: concurrent first uses build one each.
        self._chroma_lock = threading.Lock()
        self._splitter_lock = threading.Lock()

    @property
    def chroma(self) -> Store:
        """The dense store, opened on first use (loading the embedding model costs seconds)."""
        if self._chroma is None:
            with self._chroma_lock:
                if self._chroma is None:
                    from activerag.stores.chroma import ChromaStore

                    self._chroma = ChromaStore(
                        None if self.chroma_url else self.path / "chroma", url=self.chroma_url)
        return self._chroma

    @property
    def punkt_file(self) -> Path:
        return self.path / "punkt.json"

    def splitter(self) -> SentenceSplitter:
        """Punkt trained on this corpus, or the untrained fallback before any ingest.

        Loaded once (every sentence-bounded LM call asks for it); an ingest that retrains
        Punkt drops it.
        """
        splitter = self._splitter
        if splitter is None:
            with self._splitter_lock:
                splitter = self._splitter
                if splitter is None:
                    splitter = self._splitter = SentenceSplitter.from_file(self.punkt_file)
        return splitter

    def retriever(self, kind: RetrieverKind = "bm25", k: int = 2,
                  query_encoder: str = "") -> StoreRetriever:
        """A LangChain retriever over one of the stores; QUERY_ENCODER (a folder) searches the
        dense store with a trained query tower instead of the collection's own encoder."""
        if len(self.bm25) == 0:
            folder = shlex.quote(str(self.path))
            state = "does not exist" if not self.path.exists() else "holds no corpus"
            raise CorpusError(f"the store folder {self.path} {state}; fill it with `activerag "
                              f"ingest CORPUS --store {folder}` (or `activerag ingest --demo "
                              f"--store {folder}`), or name another store with --store")
        if query_encoder:
            if kind != "chroma":
                raise CorpusError("a query encoder searches the dense store; add "
                                  "--retriever chroma (or drop --query-encoder)")
            return StoreRetriever(store=self.encoded(query_encoder), k=k)
        store: Store = self.bm25 if kind == "bm25" else self.chroma
        return StoreRetriever(store=store, k=k)

    def encoded(self, query_encoder: str) -> Store:
        """The dense store searched with the query encoder in folder QUERY_ENCODER (loaded once)."""
        from activerag.stores.query_encoder import EncodedQueryStore, QueryEncoder

        with self._chroma_lock:
            store = self._encoded.get(query_encoder)
        if store is None:
            chroma = self.chroma
            store = EncodedQueryStore(chroma, QueryEncoder(Path(query_encoder)))  # type: ignore[arg-type]
            with self._chroma_lock:
                store = self._encoded.setdefault(query_encoder, store)
        return store

    def ingest(self, source: Path, dense: bool = True, max_words: int = 120,
               batch: int = 512, progress: bool = True,
               punkt_min_words: int = MIN_TRAINING_WORDS) -> IngestReport:
        """Read SOURCE into both stores (new passages only) and retrain Punkt on the corpus once
        it holds PUNKT_MIN_WORDS words (below that, the untrained splitter)."""
        check_max_words(max_words)
        report = ReadReport()
        docs: list[Document] = []
        bar = tqdm(desc=f"ingest {source.name}", unit=" passages", disable=not progress,
                   file=sys.stderr)
        added_bm25 = added_chroma = passages = 0
        try:  # an error is printed below the bar, not on its line
            for doc in read_corpus(source, max_words, report):
                docs.append(doc)
                passages += 1
                bar.update(1)
                if len(docs) >= batch:
                    a, b = self._add(docs, dense)
                    added_bm25, added_chroma = added_bm25 + a, added_chroma + b
                    docs = []
            a, b = self._add(docs, dense)
            added_bm25, added_chroma = added_bm25 + a, added_chroma + b
        finally:
            bar.close()
        if passages == 0:
            raise CorpusError(
                f"{source} holds no usable passages ({report.skipped} malformed or non-UTF-8 rows"
                + (f", e.g. {report.problems[0]}" if report.problems else "")
                + f"); {FORMATS}"
            )
        self.path.mkdir(parents=True, exist_ok=True)
        if added_bm25 or not self.bm25.indexed:
            if progress:
                print(f"building the BM25 index of {len(self.bm25)} passages", file=sys.stderr)
            self.bm25.build_index()
        splitter = ""
        if added_bm25 or self.punkt_file.exists():  # (a store from before the minimum: redo)
            splitter = self._train_splitter(punkt_min_words, retrain=bool(added_bm25))
        self._write_manifest()
        return IngestReport(report.rows, passages, added_bm25, added_chroma, report.skipped,
                            report.problems, len(self.bm25), splitter)

    def _train_splitter(self, min_words: int, retrain: bool) -> str:
        """Train Punkt on the whole corpus if it is large enough, else drop what was learned."""
        words = sum(len(d.page_content.split()) for d in self.bm25.docs)
        trained = words >= min_words
        if trained == self.punkt_file.exists() and not retrain:
            return ""
        punkt = train_punkt(d.page_content for d in self.bm25.docs) if trained else None
        with self._splitter_lock:
            if punkt is not None:
                save_punkt(punkt, self.punkt_file)
            else:
                self.punkt_file.unlink(missing_ok=True)
            self._splitter = None
        if trained:
            return f"Punkt trained on the corpus's {words:,} words"
        return (f"untrained Punkt and common abbreviations: the corpus's {words:,} words are too "
                f"few for Punkt to learn from (it is trained from {min_words:,})")

    def _add(self, docs: list[Document], dense: bool) -> tuple[int, int]:
        if not docs:
            return 0, 0
        return self.bm25.add(docs), (self.chroma.add(docs) if dense else 0)

    def _write_manifest(self) -> None:
        (self.path / "manifest.json").write_text(json.dumps(
            {"passages": len(self.bm25), "chroma": self._chroma is not None}, indent=1))
