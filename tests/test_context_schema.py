"""Context fields carry their attribute docstrings into the JSON schema Studio renders."""

from dataclasses import dataclass

from pydantic import TypeAdapter

from activerag.context import FlareContext, ServingContext, documented
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.nodes.replug.context import ReplugContext


def _descriptions(cls: type) -> dict[str, str | None]:
    props = TypeAdapter(cls).json_schema()["properties"]
    return {name: prop.get("description") for name, prop in props.items()}


def test_every_context_field_has_its_docstring_as_description():
    for cls in (ServingContext, FlareContext, ReplugContext, FBRagContext):
        missing = [name for name, text in _descriptions(cls).items() if not text]
        assert not missing, (cls.__name__, missing)


def test_the_nearest_docstring_wins_and_lines_are_joined():
    flare, replug = _descriptions(FlareContext), _descriptions(ReplugContext)
    assert flare["k"] == "Documents retrieved per step (the paper's top-k for 2WikiMultihopQA)."
    assert replug["k"] == "Documents ensembled (the paper's top-10)."
    assert _descriptions(ServingContext)["k"] == "Documents retrieved per retrieval."
    assert flare["base_url"] == replug["base_url"] == (
        "OpenAI-compatible (vLLM) endpoint (default: where `activerag serve` serves the default "
        "model).")
    assert _descriptions(FBRagContext)["base_url"].startswith("The strong reader's endpoint")
    assert flare["keep_question_words"] == (
        "Implicit queries: never mask a word that occurs in the question x.")
    assert flare["max_sentences"] == ("Stop after this many accepted sentences (None: only "
                                      "max_answer_tokens caps the answer, the same cap for every "
                                      "method).")


def test_a_field_without_docstring_gets_no_description_and_metadata_is_kept():
    from dataclasses import field

    @documented
    @dataclass
    class Toy:
        a: int = 1
        """The a."""
        b: int = field(default=2, metadata={"title": "Bee"})
        c: int = 3
        """The
        c."""

    props = TypeAdapter(Toy).json_schema()["properties"]
    assert props["a"]["description"] == "The a."
    assert "description" not in props["b"] and props["b"]["title"] == "Bee"
    assert props["c"]["description"] == "The c."
