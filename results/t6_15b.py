"""Issue #37's table 6: the FLARE family on 2Wiki with the 1.5B reader on llama.cpp, the default
model's settings (results/2wiki-family-n100.md: paper exemplars with their retrieved documents,
BM25 k=2, θ=0.8, β=0.4, answers capped at 128 tokens), one run folder a method, on the questions
all of them finished; FLARE's own claims judged as on the default model's table, and the 0.5B's
numbers beside the 1.5B's on the same questions.

Run from the repository root:

    python results/t6_15b.py   # results/2wiki-family-n100-15b.{md,json,png}, -scores.json
"""

from after_flare_tables import FAMILY_CLAIMS
from tables_15b import judged_beside, one_run_a_method

NAME = "2wiki-family-n100-15b"
METHODS = ["flare", "none", "single", "previous_window", "previous_sentence", "next_sentence",
           "self_ask", "flare_instruct", "flare_explicit", "flare_combined"]

if __name__ == "__main__":
    one_run_a_method(NAME, "2wiki-family-15b", METHODS, 100,
                     "The FLARE family on 2WikiMultihopQA, the 1.5B reader on llama.cpp: paper "
                     "exemplars with their retrieved documents, BM25 k=2, θ=0.8, β=0.4, answers "
                     "capped at 128 tokens; p: paired bootstrap against flare",
                     "2WikiMultihopQA, the FLARE family",
                     judged_beside(FAMILY_CLAIMS, "2wiki-family-n100-scores.json", METHODS,
                                   "The FLARE family on 2Wiki"))
