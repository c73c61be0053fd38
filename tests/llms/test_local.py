"""The embedded model: the base-model prompt (rag.llms.prompting) and LocalChatModel on llama.cpp
(rag.llms.local, rag.llms.gguf). llama-cpp-python and the weights are in requirements.txt: where they are
missing or broken, the model tests fail with the reason (they are not skipped)."""

from __future__ import annotations

import ctypes
import threading
import time
import uuid

import pytest

from rag.errors import GenerationError
from rag.llms import LocalChatModel, Message, StreamEvent, completion_prompt, local_gguf_path
from tests.llms.test_models import QUESTION, collect

# --- the local model ----------------------------------------------------------------------------

LOCAL_OK, LOCAL_REASON = LocalChatModel.available()


@pytest.fixture
def _local_model_installed() -> None:
    assert LOCAL_OK, f"the embedded model is a required dependency but cannot run: {LOCAL_REASON}"


needs_local = pytest.mark.usefixtures("_local_model_installed")

GROUNDED = [
    Message(
        "system", "Answer the question using only the context below.\n\nContext:\nThe capital of Freedonia is Zubrowka."
    ),
    Message("user", QUESTION),
]


def test_completion_prompt_for_the_base_model() -> None:
    assert completion_prompt(GROUNDED + [Message("assistant", "Zubrowka."), Message("user", "And its size?")]) == (
        "Answer the question using only the context below.\n\n"
        "Context:\nThe capital of Freedonia is Zubrowka.\n\n"
        "Question: What is the capital of Freedonia?\nAnswer: Zubrowka.\n\n"
        "Question: And its size?\nAnswer:"
    )
    # Context pasted into the user message before its own 'Question:' line is left as it is.
    assert completion_prompt([Message("user", "Context: x\n\nQuestion: y?")]) == ("Context: x\n\nQuestion: y?\nAnswer:")


def test_a_grounded_prompt_for_the_base_model_starts_with_a_worked_example() -> None:
    from rag import generate
    from rag.llms import CITATION_EXAMPLE_EN, CITATION_EXAMPLE_ZH, citation_example
    from rag.store import Hit

    hit = Hit(
        id=uuid.uuid4(),
        content="The capital of Freedonia is Zubrowka.",
        score=1.0,
        metadata={"original_filename": "atlas.pdf", "pages": [3]},
    )
    GROUNDED = generate.build_messages(QUESTION, generate.number_sources([hit]))
    assert citation_example(GROUNDED) == CITATION_EXAMPLE_EN
    chinese = [GROUNDED[0], Message("user", "弗里多尼亚的首都是哪里？")]
    assert citation_example(chinese) == CITATION_EXAMPLE_ZH
    # The language of the last question counts, not of earlier turns.
    assert (
        citation_example(chinese + [Message("assistant", "Zubrowka [1]."), Message("user", "And its size?")])
        == CITATION_EXAMPLE_EN
    )
    assert citation_example([Message("user", "Explain how a GPU works.")]) is None  # no sources: no example
    # A prompt of another shape (its own 'Context:') is left alone.
    assert (
        citation_example([Message("system", "Context:\nThe capital is Zubrowka."), Message("user", QUESTION)]) is None
    )
    prompt = completion_prompt(GROUNDED, citation_example(GROUNDED))
    example, rest = prompt.split("\n\n---\n\n")
    assert example == "Example:\n\n" + CITATION_EXAMPLE_EN
    assert rest == completion_prompt(GROUNDED)
    # The example has the shape of the real prompt, which the model is to continue in kind.
    assert "\nQuestion: " in CITATION_EXAMPLE_EN and "\nAnswer: " in CITATION_EXAMPLE_EN
    assert CITATION_EXAMPLE_EN.startswith("Sources:\n[1] ") and CITATION_EXAMPLE_ZH.startswith("资料：\n[1] ")


def test_stop_sequences_end_an_answer_that_runs_on_into_new_sources() -> None:
    from rag.llms import PROMPT_STOP

    def cut(text: str) -> str:
        at = min((text.find(s) for s in PROMPT_STOP if s in text), default=len(text))
        return text[:at]

    assert cut("Revenue grew 12% [1].\n\n资料：\n[1] fake.pdf p. 2\n...") == "Revenue grew 12% [1]."
    assert cut("It is forty [3].\n\n[4] invented.pdf p. 1\nMore.") == "It is forty [3]."
    assert cut("Six months [2].\n\nSources:\n[1] x") == "Six months [2]."
    assert cut("Two years [1].\n---\nExample:") == "Two years [1]."
    assert cut("First [1].\nSecond line [2], for example: this.") == "First [1].\nSecond line [2], for example: this."


def test_local_availability_is_explained() -> None:
    ok, reason = LocalChatModel.available()
    assert (ok, reason) == (LOCAL_OK, LOCAL_REASON)
    assert ok == (reason == "")
    assert "\n" not in reason


@needs_local
def test_local_weights_come_from_the_wheel() -> None:
    path = local_gguf_path()
    assert path.name == "gemma-3-270m-q4_k_m.gguf" and path.stat().st_size == 253113024
    assert local_gguf_path() == path


@needs_local
def test_local_model_answers_a_grounded_question() -> None:
    model = LocalChatModel()

    _items, content, thinking, done = collect(model.stream(GROUNDED, temperature=0.0))

    assert "Zubrowka" in content, content
    assert thinking == ""
    assert content == content.strip() and "Question" not in content
    stats = done.stats
    assert stats is not None and stats.done_reason == "stop"
    assert stats.prompt_eval_count is not None and stats.prompt_eval_count > 20
    assert stats.eval_count is not None and 1 <= stats.eval_count < LocalChatModel.MAX_NEW_TOKENS
    assert stats.total_duration is not None and stats.total_duration > 0
    assert model.context_length() == 4096


@needs_local
def test_the_tokenizer_loaded_alone_is_let_go_once_the_model_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LocalChatModel, "_llm", None)  # as before the app's preload has finished
    monkeypatch.setattr(LocalChatModel, "_vocab", None)
    counter = LocalChatModel().token_counter()
    assert counter is not None
    counted = counter.text("The capital of Freedonia is Zubrowka.")
    assert LocalChatModel._vocab is not None and LocalChatModel._llm is None
    LocalChatModel._load()
    assert LocalChatModel._vocab is None and LocalChatModel._llm is not None
    assert counter.text("The capital of Freedonia is Zubrowka.") == counted


@needs_local
def test_the_kv_caches_keys_are_kept_in_eight_bits() -> None:
    import llama_cpp

    llm, _ = LocalChatModel._load()
    assert llm.context_params.type_k == llama_cpp.GGML_TYPE_Q8_0
    assert llm.context_params.type_v == llama_cpp.GGML_TYPE_F16  # 8-bit values would need flash attention


@needs_local
def test_saved_prompts_keep_one_row_of_logits_and_a_reloaded_one_still_answers() -> None:
    """llama-cpp-python's 512 x 262,144 logits buffer (512 MB, never filled: sampling runs in llama.cpp)
    was copied into every prompt the cache saved and written whole on a reload: an answer added ~2 GB."""
    model = LocalChatModel()
    first = collect(model.stream(GROUNDED, temperature=0.0))[1]
    llm = LocalChatModel._llm
    assert llm is not None and llm.scores.shape[0] == 1
    states = list(llm.cache.cache_state.values())
    assert states and all(state.scores.nbytes <= llm.scores.shape[1] * 4 for state in states)
    # Kept as llama.cpp wrote it (one copy; llama-cpp-python held three at once while saving).
    assert all(isinstance(state.llama_state, ctypes.Array) for state in states)
    collect(model.stream([Message("user", "Name a colour.")], temperature=0.0))  # another prompt in the KV cache
    loads: list[int] = []
    load = llm.load_state
    llm.load_state = lambda state: (loads.append(state.n_tokens), load(state))[-1]  # type: ignore[method-assign]
    try:
        again = collect(model.stream(GROUNDED, temperature=0.0))[1]  # the first prompt: from the cache
    finally:
        llm.load_state = load  # type: ignore[method-assign]
    assert loads and "Zubrowka" in again and again == first


@needs_local
def test_local_stop_sequences_end_the_answer() -> None:
    # After an earlier turn a base model goes on inventing 'Question: ... Answer: ...' pairs.
    messages = [
        Message(
            "system",
            "Answer the question using only the context below.\n\nContext:\n"
            "The capital of Freedonia is Zubrowka. Freedonia exports cheese and clocks.",
        ),
        Message("user", "What does Freedonia export?"),
        Message("assistant", "Cheese and clocks."),
        Message("user", QUESTION),
    ]

    _items, content, _, done = collect(LocalChatModel().stream(messages, temperature=0.0))

    assert "Zubrowka" in content, content
    assert "Question" not in content and "Answer" not in content
    assert done.stats is not None and done.stats.done_reason == "stop"
    assert done.stats.eval_count is not None and done.stats.eval_count < 40


@needs_local
def test_local_stop_event_stops_the_generation() -> None:
    model = LocalChatModel()
    stop = threading.Event()
    items: list[StreamEvent] = []

    for event in model.stream([Message("user", "Tell a long story.")], temperature=0.7, stop_event=stop):
        items.append(event)
        if sum(e.kind == "content" for e in items) == 3:
            stop.set()

    # No word after the stop, and the end says why. (That the end comes at once, without waiting for
    # llama.cpp's thread, is Runner.follow's: tests/llms/test_stream.py holds a producer and checks it.)
    # First its turn (no one in line: place 0, the prompt being read), then the words.
    assert [(e.kind, e.place) for e in items] == [("queue", 0)] + [("content", None)] * 3 + [("done", None)]
    stats = items[-1].stats
    assert stats is not None and stats.done_reason == "stopped"
    assert stats.eval_count is not None and stats.eval_count >= 3
    # llama.cpp is left at its next token, which frees the model for the next question.
    ticket = LocalChatModel._generation_lock.acquire(timeout=5)
    assert ticket is not None
    ticket.leave()


@needs_local
def test_a_question_waiting_for_the_model_is_told_its_place_and_a_stop_takes_it_out_of_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two sessions ahead (one answering, one waiting): the third question says '2nd', then '1st' as the
    line moves, and a Stop leaves the line without ever taking the model. Before, it waited silently for
    a plain lock and failed after 300 s."""
    lock = LocalChatModel._generation_lock
    answering, ahead = lock.enter(), lock.enter()
    stop = threading.Event()
    events: list[StreamEvent] = []
    try:
        for event in LocalChatModel().stream([Message("user", QUESTION)], temperature=0.0, stop_event=stop):
            events.append(event)
            if event.kind == "queue" and event.place == 2:
                ahead.leave()  # the one ahead was stopped: this one moves up
            elif event.kind == "queue" and event.place == 1:
                stop.set()  # Stop while first in line
        assert [(e.kind, e.place) for e in events] == [("queue", 2), ("queue", 1), ("done", None)]
        stats = events[-1].stats
        assert stats is not None and stats.done_reason == "stopped" and stats.eval_count == 0
        # It left the line (within one look, 0.1 s) and never held the model.
        deadline = time.monotonic() + 5
        while lock.waiting and time.monotonic() < deadline:
            time.sleep(0.01)
        assert lock.waiting == 0 and answering.holds
    finally:
        answering.leave()
        ahead.leave()

    # A line that does not move for QUEUE_STALL_SECONDS: the model is stuck, said in one line.
    monkeypatch.setattr(LocalChatModel, "QUEUE_STALL_SECONDS", 0.3)
    stuck = lock.enter()
    try:
        with pytest.raises(GenerationError, match="busy with another answer for 0 minutes without the line moving"):
            list(LocalChatModel().stream([Message("user", QUESTION)], temperature=0.0))
        assert lock.waiting == 0
    finally:
        stuck.leave()
