"""Issue #37's table 4: REPLUG on 2Wiki with the 1.5B reader on llama.cpp, its Table 3 shape
(no retrieval, the top document, the 10 documents concatenated, the released code's answer
vote and the token-level ensemble, agree mode), one run folder a method, on the questions all
five finished; each published claim judged as on the default model's table
(results/2wiki-replug-n100.md), and the 0.5B's numbers beside the 1.5B's on the same questions.

Run from the repository root:

    python results/t4_15b.py   # results/2wiki-replug-n100-15b.{md,json,png}, -scores.json
"""

from after_flare_tables import REPLUG_CLAIMS
from tables_15b import judged_beside, one_run_a_method

NAME = "2wiki-replug-n100-15b"
METHODS = ["none", "single_k1", "single_k10", "replug_vote", "replug"]

if __name__ == "__main__":
    one_run_a_method(NAME, "2wiki-replug-15b", METHODS, 100,
                     "REPLUG on 2WikiMultihopQA (Table 3's shape), the 1.5B reader on llama.cpp: "
                     "the paper's exemplars without documents, BM25 k=10 over the 2Wiki corpus, "
                     "answers capped at 128 tokens; p: paired bootstrap against none",
                     "2WikiMultihopQA, REPLUG",
                     judged_beside(REPLUG_CLAIMS, "2wiki-replug-n100-scores.json", METHODS,
                                   "REPLUG on 2Wiki"))
