"""benchmarks/cost/stop_holdback.compare: the tokens a change saved, paired by question, and
whether it changed an answer, over the questions both runs finished."""

from benchmarks.cost.stop_holdback import compare


def row(qid: str, generated: int, kept: int, answer: str = "Kelmor.") -> dict:
    return {"id": qid, "method": "flare", "answer": answer, "em": 1.0, "f1": 1.0,
            "generated_tokens": generated, "answer_tokens": kept, "sentences": 2,
            "retrieved_sentences": 1, "retrieval_steps": 1, "lm_calls": 3, "seconds": 1.0}


def test_the_saving_is_paired_on_the_questions_both_runs_finished():
    before = {"a": row("a", 30, 10), "b": row("b", 24, 12), "c": row("c", 99, 1)}
    after = {"a": row("a", 26, 10), "b": row("b", 20, 12, "Vedria.")}
    lines = compare(before, after, ("old", "new"))
    assert lines[2].startswith("| old | 2 | 2.455 ") and "| 1.600 | 0.500 |" in lines[2]
    assert lines[3].startswith("| new | 2 | 2.091 ")
    assert "saved a question (old - new): 4.00 [4.00, 4.00]" in lines[5]
    assert "8 over 2 questions and 4 sentences" in lines[5]
    assert lines[6] == "- The same answer text on 1 of 2 questions."
