"""Requests named to llama-server's slots, many at once from several processes, are each
answered from their own prompt (serving/slots.py). A real llama-server started as `activerag
serve` starts it (SmolLM2's GGUF, 4 slots, its own port, stopped by its own process id), and
benchmarks/robustness/crosstalk.py's workload: 3 processes x 2 requests at once, each prompt
asking for a code word of its own.

With llama-server's prompt cache in host memory on (its default `--cache-ram 8192`), the same
workload crossed 5 and 8 of 120 answers into other requests' words; served with
`--cache-ram 0`, as activerag serves, none (results/crosstalk.md).
"""

from collections.abc import Iterator

import pytest

from activerag.serving import server, slots
from activerag.serving.catalogue import FAST_MODEL
from activerag.testing import processes as realprocs
from benchmarks.robustness import crosstalk

pytestmark = pytest.mark.integration
REQUESTS = 30
"""Each process's requests: 90 in all, about 2 minutes on 2 cores."""


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with realprocs.own_server(None, FAST_MODEL, 2048,
                              launch=server.Launch("llama.cpp", parallel=4)) as base:
        yield base


def test_requests_named_to_slots_at_once_are_answered_from_their_own_prompts(url):
    assert slots.safe_to_name(url)  # the client names slots on the server activerag started
    verdict = crosstalk.run(url, processes=3, concurrency=2, requests=REQUESTS, seed=7)
    assert verdict["named"] == [True] * 3  # every worker's client named slots
    assert verdict["crossed"] == 0, verdict["crossings"]
    assert verdict["right"] >= 0.8 * 3 * REQUESTS, verdict["wrongs"]  # the model repeats words
