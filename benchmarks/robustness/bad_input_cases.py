"""The bad inputs of benchmarks/robustness/bad_inputs.py: each case's CLI arguments, the files it
starts from and what it must have done, and the stand-in server (MODELS) that lists one model
and refuses every other request."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from activerag.demo import DEMO_CORPUS

QUESTION = "In which city was the founder of Daeselin Company born?"
STORE_ROWS = 20
"""Demo corpus rows in the store every store-using case starts from (BM25 only)."""
INGEST_EXPECTED = ("store/bm25/", "store/punkt.json", "store/manifest.json")
"""What a successful ingest rewrites in place: the BM25 index, Punkt, the manifest."""


Arg = str | bytes


@dataclass
class Case:
    name: str
    args: Callable[[Path, str], list[Arg]]
    """The CLI's arguments, given the case folder and a URL nothing listens on."""
    prepare: Callable[[Path], None] | None = None
    env: dict[str, str] = field(default_factory=dict)
    store: bool = False
    """Start from a copy of the small store, in the case folder's store/."""
    rewrites: tuple[str, ...] = ()
    """Paths (prefixes, relative to the case folder) a successful run may rewrite."""
    outside: tuple[str, ...] = ()
    """Paths outside the case folder that the case names, watched too."""
    check: Callable[[Path, subprocess.CompletedProcess[bytes]], str] | None = None
    """What the case must have done beyond not failing: "" when it did, else the loss."""
    skip: str = ""
    """Why the case is not run ("": it is)."""




# -- inputs ------------------------------------------------------------------------------------

def jsonl(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


GOOD_ROWS = [{"title": "Quorvel Harbour", "text": "Quorvel Harbour is a port town in Sivania."},
             {"title": "Mirelda Vance", "text": "Mirelda Vance was born in Quorvel Harbour."}]


def write(name: str, data: str | bytes) -> Callable[[Path], None]:
    def prepare(d: Path) -> None:
        path = d / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")
    return prepare


def long_text(words: int) -> str:
    lines = [json.loads(x)["text"] for x in DEMO_CORPUS.read_text().splitlines() if x.strip()]
    out: list[str] = []
    while len(out) < words:
        out += " ".join(lines).split()
    return " ".join(out[:words]) + "\n"


def added_good_rows(d: Path, proc: subprocess.CompletedProcess[bytes]) -> str:
    """The ingest must have added the good rows (and counted what it skipped)."""
    out = proc.stdout.decode(errors="replace")
    added = re.search(r"added (\d+) to BM25", out)
    if proc.returncode != 0 or not added:
        return f"the {len(GOOD_ROWS)} good rows were not added"
    if int(added.group(1)) != len(GOOD_ROWS):
        return f"{added.group(1)} of the {len(GOOD_ROWS)} good rows added"
    if "skipped 1" not in out:
        return "the bad row was not counted"
    return ""


# -- the cases ---------------------------------------------------------------------------------

def ask(*extra: Arg, question: Arg = QUESTION, store: str = "d/store",
        models: bool = False) -> Callable[[Path, str], list[Arg]]:
    """`ask`; "d/" in a path means the case folder; MODELS: the stand-in, not DOWN."""
    def args(d: Path, down: str) -> list[Arg]:
        url = MODELS.url if models else down
        return ["ask", question, *inside(d, "--store", store), "--base-url", url,
                *inside(d, *extra)]
    return args


def inside(d: Path, *args: Arg) -> list[Arg]:
    return [str(d / a[2:]) if isinstance(a, str) and a.startswith("d/") else a for a in args]


def fb(*extra: Arg) -> Callable[[Path, str], list[Arg]]:
    """`ask` with FB-RAG's long-context baseline, both its endpoints down."""
    return lambda d, down: [*ask(*extra)(d, down), "--method", "long_context",
                            "--strong-url", down, "--light-url", down]


def ingest(name: str, *extra: str) -> Callable[[Path, str], list[Arg]]:
    return lambda d, down: ["ingest", str(d / name), "--store", str(d / "store"), "--no-dense",
                            *extra]


def evaluate(*extra: str, dataset: str = "demo", n: str = "2",
             methods: str = "none") -> Callable[[Path, str], list[Arg]]:
    return lambda d, down: ["eval", "--dataset", str(d / dataset) if dataset != "demo"
                            else dataset, "--methods", methods, "--n", n,
                            "--run", str(d / "run"), "--store", str(d / "store"),
                            "--base-url", down, *extra]


def cases(overlong_url: str) -> list[Case]:
    good = write("good.jsonl", jsonl(GOOD_ROWS))
    surrogate = write("surrogate.jsonl", jsonl(GOOD_ROWS[:1]) + '{"title": "Bad", "text": '
                      '"a lone \\ud800 surrogate"}\n' + jsonl(GOOD_ROWS[1:]))
    nested = write("nested.jsonl", jsonl(GOOD_ROWS[:1]) + "[" * 100_000 + "]" * 100_000
                   + "\n" + jsonl(GOOD_ROWS[1:]))
    latin1 = write("latin1.jsonl", '{"title": "Café Olmo", "text": "Café Olmo is in Tafox."}\n'
                   .encode("latin-1"))
    csv = write("corpus.csv", "title,text\n" + "".join(f'{r["title"]},"{r["text"]}"\n'
                                                         for r in GOOD_ROWS))
    upper = write("CORPUS.JSONL", jsonl(GOOD_ROWS))
    demo_row = json.loads(DEMO_CORPUS.parent.joinpath("demo_questions.jsonl").read_text()
                          .splitlines()[0])
    dup = write("dup.jsonl", jsonl([demo_row, {**demo_row, "question": "Who founded it?"}]))
    titles = write("titles.jsonl", jsonl([{**demo_row, "gold_titles": "Daeselin Company"}]))

    def garbage(d: Path) -> None:
        (d / "threads.sqlite").write_bytes(b"this is not a SQLite database\n" * 64)

    def binary(d: Path) -> None:
        (d / "context.bin").write_bytes(bytes(range(256)) * 16)

    def folder(d: Path) -> None:
        (d / "context-dir").mkdir()
        (d / "context-dir" / "a.txt").write_text("Sivania's capital is Tafox.\n")

    def empty_store(d: Path) -> None:
        (d / "empty-store").mkdir()

    def empty_run(d: Path) -> None:
        (d / "empty-run").mkdir()

    ingest_ok = {"store": True, "rewrites": INGEST_EXPECTED}
    return [
        Case("question: empty", ask(question=""), store=True),
        Case("question: blanks", ask(question="   "), store=True),
        Case("question: zero-width only", ask(question="\u200b\u200c"), store=True),
        Case("question: invalid UTF-8 byte in argv", ask(question=b"caf\xe9?"), store=True),
        Case("question: unknown method", ask("--method", "flair"), store=True),
        Case("question: method typo", ask("--method", "flare_explict"), store=True),
        Case("setting: --theta nan", ask("--theta", "nan"), store=True),
        Case("setting: --theta 2", ask("--theta", "2"), store=True),
        Case("setting: --k 0", ask("--k", "0"), store=True),
        Case("setting: --k -3", ask("--k", "-3"), store=True),
        Case("setting: --max-answer-tokens 0", ask("--max-answer-tokens", "0"), store=True),
        Case("setting: ACTIVERAG_PORT=abc", ask(), env={"ACTIVERAG_PORT": "abc"}, store=True),
        Case("setting: ACTIVERAG_LM_TIMEOUT=abc", ask(), env={"ACTIVERAG_LM_TIMEOUT": "abc"},
             store=True),
        Case("file: --context-file binary", fb("--context-file", "d/context.bin"), binary),
        Case("file: --context-file a folder", fb("--context-file", "d/context-dir"), folder),
        Case("file: --context-file missing", fb("--context-file", "d/no-such.txt")),
        Case("file: --html into a missing folder", ask("--html", "d/no-such-dir/run.html"),
             store=True),
        Case("store: does not exist", ask(store="/nonexistent", models=True),
             outside=("/nonexistent",)),
        Case("store: empty folder", ask(store="d/empty-store", models=True), empty_store),
        Case("ingest: non-UTF-8 corpus", ingest("latin1.jsonl"), latin1, **ingest_ok),
        Case("ingest: lone surrogate row among good rows", ingest("surrogate.jsonl"), surrogate,
             check=added_good_rows, **ingest_ok),
        Case("ingest: deeply nested JSON row among good rows", ingest("nested.jsonl"), nested,
             check=added_good_rows, **ingest_ok),
        Case("ingest: --max-words 0", ingest("good.jsonl", "--max-words", "0"), good,
             **ingest_ok),
        Case("ingest: --max-words -5", ingest("good.jsonl", "--max-words", "-5"), good,
             **ingest_ok),
        Case("ingest: corpus.csv", ingest("corpus.csv"), csv, **ingest_ok),
        Case("ingest: CORPUS.JSONL (capital extension)", ingest("CORPUS.JSONL"), upper,
             **ingest_ok),
        Case("eval: --concurrency 0", evaluate("--concurrency", "0"), store=True),
        Case("eval: --n 0", evaluate(n="0"), store=True),
        Case("eval: --n -1", evaluate(n="-1"), store=True),
        Case("eval: dataset with two rows of one id", evaluate(dataset="dup.jsonl"), dup,
             store=True),
        Case("eval: gold_titles a string", evaluate(dataset="titles.jsonl"), titles, store=True),
        Case("eval: --rescore a folder with no run",
             lambda d, down: ["eval", "--rescore", str(d / "empty-run")], empty_run),
        Case("eval: --methods flair", evaluate(methods="flair"), store=True),
        Case("server: down (`--base-url` of a port nothing listens on)", ask(), store=True),
        Case("server: `serve --model llama-70b`", lambda d, down: ["serve", "--model",
                                                                    "llama-70b"]),
        Case("server: overlong prompt (20,000-word context, long_context, the running server)",
             lambda d, down: ["ask", QUESTION, "--method", "long_context", "--context-file",
                              str(d / "long.txt"), "--strong-url", overlong_url or "URL",
                              "--light-url",
                              down, "--answer-tokens", "8"],
             write("long.txt", long_text(20_000)),
             skip="" if overlong_url else
             "not run: the reader cuts the prompt in the middle to fit the window "
             "(nodes/fb_rag/steps.py `fit`), so this sends the shared CPU server a ~4,000-token "
             "prefill, "
             "more than one short request; run it with --overlong-url URL"),
        Case("checkpoints: garbage file (not SQLite)",
             ask("--thread", "t", "--checkpoints", "d/threads.sqlite", models=True), garbage,
             store=True),
    ]


class Models(BaseHTTPRequestHandler):
    """A stand-in endpoint: GET /v1/models lists one model, anything else is refused (503)."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.rstrip("/").endswith("/v1/models"):
            self.reply(200, {"object": "list", "data": [
                {"id": "stand-in", "object": "model", "max_model_len": 4096}]})
        else:
            self.refuse()

    def do_POST(self) -> None:  # noqa: N802
        self.refuse()

    def refuse(self) -> None:
        self.reply(503, {"error": {"message": "bad_inputs.py's stand-in only lists models",
                                   "type": "ServiceUnavailable", "code": 503}})

    def reply(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class StandIn:
    """The Models endpoint on a free loopback port, in a thread, while the script runs."""

    def __init__(self) -> None:
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None, "the stand-in is not started"
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def start(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Models)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def vouch(self, home: Path) -> None:
        """Write HOME/probes.json as if the CLI had probed the stand-in and found every ability
        of a vLLM server, so that a case pointed at it gets past the ability check (which
        would be refused by its 503s) to the input it is about."""
        from activerag.serving.probe_requests import ABILITIES, TOPS, Abilities

        found = Abilities(self.url, "stand-in", frozenset(ABILITIES), max(TOPS), 4096,
                          probed_at=time.time()).as_json()
        home.mkdir(parents=True, exist_ok=True)
        (home / "probes.json").write_text(json.dumps(
            {f"{self.url} ": found, f"{self.url} stand-in": found}))


MODELS = StandIn()

