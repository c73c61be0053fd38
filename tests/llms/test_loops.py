"""The loop guard (rag.llms.loops): a repeating generation is ended and its repeats cut."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rag.llms.loops import LoopGuard, guard_loops
from rag.llms.stream import fold
from rag.llms.types import GenerationStats, StreamEvent


def test_a_looping_stream_is_ended_and_closed_and_keeps_one_copy() -> None:
    sent: list[str] = []
    closed: list[bool] = []

    def model() -> Iterator[StreamEvent]:  # a model that would loop for ever
        try:
            while True:
                for word in ["A", "trace", "tree", "is", "a", "sequence", "of", "nested", "traces."]:
                    sent.append(word)
                    yield StreamEvent("content", word + " ")
        finally:
            closed.append(True)

    events = list(guard_loops(model()))
    folded = fold(events)
    assert folded.text == "A trace tree is a sequence of nested traces." and folded.looped
    assert closed == [True]  # the model's stream was closed: its generation ends
    assert len(sent) < 40
    assert events[-1] == StreamEvent("done", stats=GenerationStats(done_reason="loop"))


@pytest.mark.parametrize("piece", [1, 7, 1000])
def test_chinese_loops_are_found_however_the_stream_is_cut(piece: int) -> None:
    text = "贾宝玉是贾母的孙子，他住在大观园里。" * 5
    events = [StreamEvent("content", text[i : i + piece]) for i in range(0, len(text), piece)]
    folded = fold(list(guard_loops(iter(events))))
    assert folded.looped and folded.text == "贾宝玉是贾母的孙子，他住在大观园里。"


def test_a_long_name_said_in_three_sentences_is_no_loop() -> None:
    answer = (
        "中华人民共和国国务院发布了通知。报道说中华人民共和国国务院很重视此事。最后，中华人民共和国国务院表示感谢。"
    )
    folded = fold(list(guard_loops(iter([StreamEvent("content", answer)]))))
    assert folded.text == answer and not folded.looped


def test_answers_that_repeat_words_but_do_not_loop_pass_whole() -> None:
    answer = (
        "The warranty covers parts [1]. The warranty covers labour [1]. The warranty does not cover damage "
        "[2].\n\n| part | covered |\n| --- | --- |\n| screen | yes |\n| battery | yes |\n| case | yes |"
    )
    events = [StreamEvent("content", answer[i : i + 7]) for i in range(0, len(answer), 7)]
    events.append(StreamEvent("done", stats=GenerationStats(done_reason="stop")))
    folded = fold(list(guard_loops(iter(events))))
    assert folded.text == answer and not folded.looped and folded.stats.done_reason == "stop"


def test_a_word_split_across_pieces_is_one_token() -> None:
    guard = LoopGuard(n=3, times=2)
    assert guard.feed("alpha be") is None
    assert guard.feed("ta gamma alpha ") is None  # "be"+"ta" is one word: no run repeats yet
    assert guard.feed("beta gamma ") == len("alpha beta gamma ")
