"""Which llama-server slot a completion is sent to (serving/slots.py): the free slot whose last
prompt and reply share the longest start with the new prompt."""

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from activerag.serving import slots
from activerag.serving.slots import SlotBook, book_for, common_prefix

EXEMPLARS = "system: answer.\nQ: who founded Gepu Works?\nA: Thouthis. "


@given(st.text(alphabet="ab\u00e9", max_size=40), st.text(alphabet="ab\u00e9", max_size=40))
def test_common_prefix_is_the_longest_shared_start(a, b):
    assert common_prefix(a, b) == len(os.path.commonprefix([a, b]))


@pytest.mark.parametrize("a, b, n", [("", "abc", 0), ("abc", "abc", 3), ("abcd", "abxd", 2),
                                     ("ab", "abc", 2), ("x", "y", 0)])
def test_common_prefix_of_literal_pairs(a, b, n):
    assert common_prefix(a, b) == n


def test_a_question_s_next_request_goes_to_the_slot_holding_its_prompt():
    book = SlotBook(3, seed=0)
    assert book.choose(EXEMPLARS + "Q1") == 0  # every slot empty: the first in turn
    book.release(0, EXEMPLARS + "Q1 draft")
    assert book.choose(EXEMPLARS + "Q2") == 0  # the exemplars are held there only
    book.release(0, EXEMPLARS + "Q2 draft")
    assert book.choose(EXEMPLARS + "Q1 draft, then more") == 0


def test_a_slot_with_a_request_open_is_not_chosen_and_none_when_all_are_open():
    book = SlotBook(2, seed=0)
    assert book.choose(EXEMPLARS + "Q1") == 0
    assert book.choose(EXEMPLARS + "Q1") == 1  # slot 0 holds it, but its request is open
    assert book.choose(EXEMPLARS + "Q1") is None
    book.release(1, "")
    assert book.choose(EXEMPLARS + "Q1") == 1


def test_among_equal_starts_the_least_recently_used_slot_is_chosen():
    book = SlotBook(3, seed=0)
    for slot in (0, 1, 2):
        assert book.choose("same") == slot
    for slot in (1, 0, 2):
        book.release(slot, EXEMPLARS)
    # all hold the exemplars; slot 0 was chosen longest ago
    assert book.choose(EXEMPLARS + "Q") == 0
    assert book.choose(EXEMPLARS + "Q") == 1


def test_a_process_starts_at_its_own_turn_of_the_slots():
    assert SlotBook(4, seed=6).choose("x") == 2
    assert SlotBook(4, seed=3).choose("x") == 3
    assert SlotBook(4).choose("x") == os.getpid() % 4


def test_a_request_holds_its_slot_and_leaves_what_was_written_in_it():
    book = SlotBook(2, seed=0)
    with book.request("prompt ") as (slot, written):
        assert slot == 0 and book.open == [1, 0]
        written.append("reply")
    assert book.open == [0, 0] and book.held == ["prompt reply", ""]
    with pytest.raises(RuntimeError):
        with book.request("prompt reply and") as (slot, written):
            assert slot == 0
            raise RuntimeError("the server went away")
    assert book.open == [0, 0] and book.held == ["prompt reply and", ""]


def test_a_server_has_a_slot_at_least():
    with pytest.raises(ValueError, match="at least one slot"):
        SlotBook(0)


def test_books_are_kept_per_server_and_renewed_when_its_slot_count_changes():
    url = "http://127.0.0.1:1/v1"
    slots.forget(url)
    book = book_for(url, 3)
    assert book_for(url, 3) is book
    assert book_for("http://127.0.0.1:2/v1", 3) is not book
    assert len(book_for(url, 5).held) == 5
    renewed = book_for(url, 5)
    slots.forget(url)
    assert book_for(url, 5) is not renewed


@pytest.mark.parametrize("argv, off", [
    ([b"llama-server", b"--port", b"8801", b"--cache-ram", b"0"], True),
    ([b"llama-server", b"-cram", b"0", b"--port", b"8801"], True),
    ([b"llama-server", b"--cache-ram", b"0", b"--cache-ram", b"8192"], False),  # the last counts
    ([b"llama-server", b"--cache-ram", b"8192", b"-cram", b"0"], True),
    ([b"llama-server", b"--port", b"8801"], False),  # llama-server's default: 8 GiB
    ([b"llama-server", b"--cache-ram", b"-1"], False),
    ([b"llama-server", b"--port", b"0", b"--cache-ram"], False),
    ([b"llama-server", b"--cache-ram", b"0", b"--cache_ram", b"8192"], False),  # _ reads as -
    ([b"llama-server", b"--cache_ram", b"0"], True),
])
def test_the_prompt_cache_in_host_memory_is_off_only_at_cache_ram_0(argv, off):
    assert slots.cache_ram_off(argv) is off


def _proc(tmp_path, *cmdlines: list[str]):
    """A /proc of processes with these command lines."""
    for pid, argv in enumerate(cmdlines, start=100):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv)
                                                     + b"\0")
    (tmp_path / "self").mkdir()
    return tmp_path


def test_slots_are_named_only_on_a_local_llama_server_without_host_memory_cache(tmp_path):
    proc = _proc(tmp_path,
                 ["/bin/llama-server", "-m", "a.gguf", "--port", "8801", "--cache-ram", "0"],
                 ["/bin/llama-server", "-m", "b.gguf", "--port", "8802"],
                 ["/usr/bin/python", "serve.py", "--port", "8803", "--cache-ram", "0"])
    assert slots.safe_to_name("http://127.0.0.1:8801/v1", proc)
    assert slots.safe_to_name("http://localhost:8801/v1", proc)
    assert not slots.safe_to_name("http://127.0.0.1:8802/v1", proc)  # default cache: 8 GiB
    assert not slots.safe_to_name("http://127.0.0.1:8803/v1", proc)  # not llama-server
    assert not slots.safe_to_name("http://127.0.0.1:8804/v1", proc)  # no process on the port
    assert not slots.safe_to_name("http://10.0.0.5:8801/v1", proc)  # another machine's
    assert not slots.safe_to_name("http://127.0.0.1/v1", proc)  # no port said


def test_a_process_gone_or_named_in_other_bytes_is_passed_over(tmp_path):
    """A process may end between the listing and the read, and a command line need not be
    UTF-8: neither stops the search for the server behind the port."""
    (tmp_path / "100" / "cmdline").mkdir(parents=True)  # unreadable as a file
    (tmp_path / "101").mkdir()
    (tmp_path / "101" / "cmdline").write_bytes(b"/opt/\xff\xfe/tool\0--port\x008801\0")
    (tmp_path / "102").mkdir()
    (tmp_path / "102" / "cmdline").write_bytes(
        b"/bin/llama-server\0--port\x008801\0--cache-ram\x000\0")
    assert slots.safe_to_name("http://127.0.0.1:8801/v1", tmp_path)


def test_where_several_llama_servers_say_one_port_each_must_keep_the_cache_off(tmp_path):
    proc = _proc(tmp_path, ["/bin/llama-server", "--port", "8801", "--cache-ram", "0"],
                 ["/bin/llama-server", "--port", "8801"])
    assert not slots.safe_to_name("http://127.0.0.1:8801/v1", proc)


@pytest.mark.parametrize("name_slots, safe, named", [
    (True, False, True), (False, True, False), (None, True, True), (None, False, False)])
def test_slots_are_named_as_the_client_says_else_where_safe(monkeypatch, caplog, name_slots,
                                                            safe, named):
    url = "http://127.0.0.1:8801/v1"
    monkeypatch.setattr(slots, "safe_to_name", {url: safe}.__getitem__)  # asked of URL only
    with caplog.at_level("INFO", logger=slots.__name__):
        assert slots.naming(url, name_slots) is named
    said = [r.getMessage() for r in caplog.records]
    assert said == ([] if named or name_slots is False else [
        f"{url}: not naming llama-server's slots (not a server on this machine started with "
        "--cache-ram 0); the server chooses them"])
