"""The public testing kit as its users meet it: the example in docs/testing.md and the one in
activerag.testing's docstring run as written and test what they say."""

import doctest
import re
from pathlib import Path

import activerag.testing
from activerag.context import FlareContext
from activerag.testing import ScriptedLM

DOCS = Path(__file__).resolve().parents[1] / "docs" / "testing.md"
SECTION = "## Testing your own trigger or node"
EXAMPLE_TESTS = ["test_an_unsure_last_token_retrieves_and_the_sentence_is_written_again",
                 "test_an_unsure_first_token_does_not_retrieve",
                 "test_my_query_node_searches_with_the_unsure_words"]


def docs_example() -> str:
    """The first Python block of the docs' section on testing one's own trigger or node."""
    text = DOCS.read_text()
    assert text.count(SECTION + "\n") == 1, f"docs/testing.md has no one {SECTION!r} section"
    section = text.split(SECTION + "\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```python\n(.*?)^```$", section, re.M | re.S)
    assert block is not None, f"{SECTION!r} holds no ```python block"
    return block.group(1)


async def test_the_docs_example_runs_and_its_tests_pass():
    namespace: dict = {"__name__": "docs_testing_example"}
    exec(compile(docs_example(), f"{DOCS}:{SECTION}", "exec"), namespace)
    made: list[ScriptedLM] = []

    class Recorded(ScriptedLM):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    namespace["ScriptedLM"] = Recorded  # the example's tests look the name up when they run
    assert [name for name in namespace if name.startswith("test_")] == EXAMPLE_TESTS
    for name in EXAMPLE_TESTS:
        await namespace[name]()
    # each test used every reply it scripted: 2 + 1 + 2 generations
    assert [len(lm.prompts) for lm in made] == [2, 1, 2]
    assert all(not lm.replies for lm in made)
    trigger, ctx = namespace["last_token_unsure"], FlareContext(theta=0.5)
    assert trigger([("Alpha", 0.9, 0), (" Gepu.", 0.2, 5)], {}, ctx) is True
    assert trigger([("Perhaps", 0.2, 0), (" Kelmor.", 0.9, 7)], {}, ctx) is False
    assert trigger([], {}, ctx) is False


def test_the_packages_docstring_example_runs():
    result = doctest.testmod(activerag.testing, report=True)
    assert result.attempted >= 8 and result.failed == 0
