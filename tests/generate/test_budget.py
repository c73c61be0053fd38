"""The context budget and fitting the prompt to the window (rag.generate.budget)."""
from __future__ import annotations

import uuid

from rag import generate
from rag.chunking import count_tokens
from rag.llms import Message
from rag.store import Hit
from tests.generate.samples import SOURCES


def test_context_budget_adds_up_and_warns() -> None:
    messages = generate.build_messages("How much?", SOURCES, history=[Message("user", "one two three")])
    budget = generate.context_budget(messages, SOURCES, 4096)
    assert budget.sources == count_tokens(generate.format_sources(SOURCES))
    assert budget.history == count_tokens("one two three") and budget.question == count_tokens("How much?")
    assert budget.system + budget.sources == count_tokens(messages[0].content)
    assert budget.fits
    tight = generate.context_budget(messages, SOURCES, budget.used + 10, reserve=512)
    assert not tight.fits and tight.share > 1


def test_old_exchanges_are_left_out_when_the_prompt_would_not_fit() -> None:
    sources = generate.number_sources([])
    history = [Message("user", "first question " * 40), Message("assistant", "first answer " * 40),
               Message("user", "second question"), Message("assistant", "second answer")]
    messages, budget, dropped = generate.fit_prompt("third?", sources, None, history, limit=700, reserve=512)
    assert dropped == 1 and budget.fits
    assert [m.content for m in messages[1:]] == ["second question", "second answer", "third?"]
    _, budget, dropped = generate.fit_prompt("third?", sources, None, history, limit=100, reserve=512)
    assert dropped == 2 and not budget.fits  # nothing left to leave out: the page warns


def test_the_budget_counts_the_worked_example_the_embedded_model_is_given() -> None:
    from rag.llms import CITATION_EXAMPLE_EN

    hit = Hit(id=uuid.uuid4(), content="Revenue grew eleven percent.", score=1.0,
              metadata={"original_filename": "report.pdf", "pages": [2]})
    sources = generate.number_sources([hit])
    _, ollama_budget, _ = generate.fit_prompt("How much did revenue grow?", sources, None, [], limit=4096)
    _, local_budget, _ = generate.fit_prompt("How much did revenue grow?", sources, None, [], limit=4096,
                                             embedded=True)
    assert local_budget.system == ollama_budget.system + count_tokens(CITATION_EXAMPLE_EN)
    assert (local_budget.sources, local_budget.question) == (ollama_budget.sources, ollama_budget.question)
