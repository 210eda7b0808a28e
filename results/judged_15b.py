"""Issue #37's tables 4 and 6 with the 1.5B reader on llama.cpp, one run folder a method, on the
questions all of a table's runs finished; each published claim judged as on the default model's
table, and the 0.5B's numbers beside the 1.5B's on the same questions.

- replug (table 4): REPLUG on 2Wiki in its Table 3 shape (no retrieval, the top document, the
  10 documents concatenated, the released code's answer vote, the token-level ensemble in agree
  mode), the default model's settings (results/2wiki-replug-n100.md).
- family (table 6): the FLARE family on 2Wiki, the default model's settings
  (results/2wiki-family-n100.md); FLARE's own claims.
- after (table 3 on 2Wiki): IRCoT and the two entropy gates beside table 6's none, single and
  FLARE (their run folders), the default model's settings (results/2wiki-after-flare-n100.md);
  the claims of the papers after FLARE among these methods.

Run from the repository root (results/run_all.sh has the runs' commands):

    python results/judged_15b.py          # both tables whose runs exist
    python results/judged_15b.py replug   # results/2wiki-replug-n100-15b.{md,json,png,-scores.json}
    python results/judged_15b.py family   # results/2wiki-family-n100-15b.*
    python results/judged_15b.py after    # results/2wiki-after-flare-n100-15b.*
"""

import sys
from typing import Any, NamedTuple

from after_flare_tables import CLAIMS, FAMILY_CLAIMS, REPLUG_CLAIMS
from per_method_15b import judged_beside, one_run_a_method


class Judged(NamedTuple):
    name: str
    folder: str
    """runs/FOLDER-<method>: one run folder a method."""
    methods: list[str]
    """The first is the one every p is against."""
    title: str
    plot_title: str
    claims: list[Any]
    small_scores: str
    """The default model's committed per-question scores on these questions."""
    shared: str = ""
    """An example of a request two of the methods share (the note on seconds), or ""."""
    elsewhere: dict[str, str] | None = None
    """The methods another table ran: method -> its run folder."""
    note: str = ""
    """What to know of the default model's numbers beside these, or ""."""


AFTER = ["none", "single", "flare", "ircot", "gate_entropy_max", "gate_entropy_mean", "flare_etc",
         "dragin_lite", "adaptive_rag_prompt"]
"""Table 3 on 2Wiki's methods, all 100 questions each (ETC, DRAGIN-lite and Adaptive-RAG's
prompted router joined them in issue #58; SeaKR-lite was not run on 2Wiki at 1.5B)."""


TABLES = {
    "replug": Judged(
        "2wiki-replug-n100-15b", "2wiki-replug-15b",
        ["none", "single_k1", "single_k10", "replug_vote", "replug"],
        "REPLUG on 2WikiMultihopQA (Table 3's shape), the 1.5B reader on llama.cpp: the paper's "
        "exemplars without documents, BM25 k=10 over the 2Wiki corpus, answers capped at 128 "
        "tokens; p: paired sign-flip test against none",
        "2WikiMultihopQA, REPLUG", REPLUG_CLAIMS, "2wiki-replug-n100-scores.json",
        "single_k1's answer is replug_vote's first document's"),
    "family": Judged(
        "2wiki-family-n100-15b", "2wiki-family-15b",
        ["flare", "none", "single", "previous_window", "previous_sentence", "next_sentence",
         "self_ask", "flare_instruct", "flare_explicit", "flare_combined"],
        "The FLARE family on 2WikiMultihopQA, the 1.5B reader on llama.cpp: paper exemplars with "
        "their retrieved documents, BM25 k=2, θ=0.8, β=0.4, answers capped at 128 tokens; p: "
        "paired sign-flip test against flare",
        "2WikiMultihopQA, the FLARE family", FAMILY_CLAIMS, "2wiki-family-n100-scores.json"),
    "after": Judged(
        "2wiki-after-flare-n100-15b", "2wiki-t3-15b", AFTER,
        "2WikiMultihopQA after FLARE (table 3: IRCoT and the entropy gates), the 1.5B reader "
        "on llama.cpp: paper exemplars, BM25 over the 2Wiki corpus, k=2, answers capped at 128 "
        "tokens, each method scored by its authors' rule; p: paired sign-flip test against none",
        "2WikiMultihopQA, after FLARE",
        [c for c in (c._replace(method="adaptive_rag_prompt") if c.method == "adaptive_rag"
                     else c for c in CLAIMS) if {c.method, c.against} <= set(AFTER)],
        "2wiki-after-flare-n100-scores.json",
        "the mean-entropy gate's requests were the max-entropy gate's",
        {m: f"2wiki-family-15b-{m}" for m in ("none", "single", "flare")},
        "The default model's IRCoT was scored before issue #37 by FLARE's rule (no \"answer "
        "is\": 0); the 1.5B's f1_flare_rule column gives that rule for comparison."),
}


def judged(table: Judged) -> None:
    one_run_a_method(table.name, table.folder, table.methods, 100, table.title,
                     table.plot_title, judged_beside(table.claims, table.small_scores,
                                                     table.methods, table.plot_title,
                                                     table.shared, table.note),
                     table.elsewhere)


if __name__ == "__main__":
    unknown = [a for a in sys.argv[1:] if a not in TABLES]
    if unknown:
        raise SystemExit(f"no table {', '.join(unknown)}; the tables: {', '.join(TABLES)}")
    for key in sys.argv[1:] or list(TABLES):
        judged(TABLES[key])
