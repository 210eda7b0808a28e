"""FB-RAG's registry rows, with its baselines over the same chunks, and its CLI flag group (read
by graphs/registry.py and the CLI; no graph is imported here)."""

from __future__ import annotations

from activerag.method_record import TEXT, Family, FlagGroup, Method
from activerag.nodes.fb_rag.context import FBRagContext

# The reader fits its prompt with /tokenize; the light sampler asks n samples in one request.
_READ = TEXT | {"tokenize"}
_SAMPLE = _READ | {"light.completions", "light.n", "light.n_5"}  # K = 5 unless the run says
_FB = FBRagContext  # a short name for the rows below


def _row(name: str, graph: str, summary: str, needs: frozenset[str] = _READ,
         overrides: dict[str, float] | None = None, kind: str | None = None) -> Method:
    return Method(name, f"fb_rag:{graph}", _FB, overrides or {}, "FB-RAG", summary,
                  "fb_rag:build_baseline_graph" if kind else "fb_rag:build_fb_rag_graph",
                  needs=needs, build_args={"kind": kind} if kind else {})


FAMILY = Family(
    name="FB-RAG",
    line="Chawla et al. 2025: a light LM's samples rank a long context's chunks, a strong LM "
         "reads the best; with its baselines (FBRagContext)",
    methods=(
        _row("fb_rag", "graph", "Ours-F: the light LM's samples rank the chunks; the strong LM "
             "reads the best", _SAMPLE),
        _row("fb_rag_fb", "graph", "Ours-FB: η_B = η_F = 0.5", _SAMPLE,
             {"eta_b": 0.5, "eta_f": 0.5}),
        _row("long_context", "long_context_graph", "reads the whole context",
             kind="long_context"),
        _row("vanilla_rag", "vanilla_rag_graph", "reads the question's best chunks, best first",
             kind="vanilla_rag"),
        _row("op_rag", "op_rag_graph", "reads the question's best chunks in the context's order",
             kind="op_rag"),
        _row("self_route", "self_route_graph", 'OP-RAG whose reader may answer "unanswerable", '
             "then the whole context", kind="self_route"),
    ),
    groups=(FlagGroup(
        "FB-RAG", "FBRagContext: fb_rag, fb_rag_fb, long_context, vanilla_rag, op_rag, "
                  "self_route, and the app's route for a question with --context-file",
        (FBRagContext,),
        renamed=(("base_url", "--strong-url"), ("model", "--strong-model"),
                 ("prompt_format", "--strong-format"), ("light_base_url", "--light-url"),
                 ("light_prompt_format", "--light-format"),
                 ("max_answer_tokens", "--answer-tokens"), ("k", "--fb-k"),
                 ("retriever", "--fb-retriever"),
                 ("query_encoder", "--fb-query-encoder"), ("scale", "--fb-scale")),
        unread=("prompt_set", "exemplar_retrieval")),),
)
