"""REPLUG-LSR (Shi et al. 2023, §4): train the dense retriever's query tower from LM scores.

For a training question x with answer y, the current query encoder retrieves the top k passages
D' with cosine scores s(d, x). The retriever's distribution over them is

    P_R(d | x) = softmax_{D'}(s(d, x) / γ)                       (Eq. 3)

and the LM's is

    Q(d | x, y) = softmax_{D'}(score_LM(y | d ∘ x) / β)          (Eq. 4)

where score_LM is y's mean token log-probability under the served LM, prompted with the passage
and then the question (echo scoring). The loss is the batch mean of KL(P_R ‖ Q) (Eq. 5), with Q
a constant: only the query encoder learns. Passage embeddings stay as the collection stores them
(frozen document tower), so the trained encoder searches the same Chroma collection by
`query_embeddings` and nothing is re-indexed. The official code's loss (replug_lsr.py) differs
in four ways: its target is one passage's per-token log-probabilities instead of Q over the
passages; those log-probabilities are never reduced over the tokens; its KLDivLoss averages over
batch × k instead of the batch; and its argument order computes KL(Q ‖ P_R).
`direction="reverse"` gives that KL(Q ‖ P_R) for comparison, with the other three fixed.
"""

from activerag.lsr.data import (
    HELD_OUT_2WIKI,
    LMSplit,
    check_held_out,
    encoder_split,
    evaluation_questions,
    halves,
    in_training_pool,
    lm_passage_id,
    lm_split,
    overlap,
    question_key,
    recall_at,
    title_recall,
    training_examples,
)
from activerag.lsr.index import PassageIndex
from activerag.lsr.objective import (
    TEACHER_PROMPTS,
    LSRConfig,
    lm_score,
    lr_factor,
    lsr_loss,
    training_round,
)
from activerag.lsr.scores import ScoreCache, answer_logprobs
from activerag.lsr.trainer import Retrieved, Trainer, TrainReport

__all__ = [
    "HELD_OUT_2WIKI", "TEACHER_PROMPTS", "LMSplit", "LSRConfig", "PassageIndex", "Retrieved",
    "ScoreCache", "TrainReport", "Trainer", "answer_logprobs", "check_held_out",
    "encoder_split", "evaluation_questions", "halves", "in_training_pool", "lm_passage_id",
    "lm_split", "lm_score", "lr_factor", "lsr_loss", "overlap", "question_key",
    "recall_at", "title_recall", "training_examples", "training_round",
]
