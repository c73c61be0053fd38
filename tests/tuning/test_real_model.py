"""One passage through the real embedded model (as tests/llms/test_qwen.py runs it): its reply is read
and judged as the stand-ins' are. ~15 s on 2 quiet cores, a minute when they are busy."""

from __future__ import annotations

from rag.llms.local import embedded_chat_model
from rag.tuning import checks, generate_questions
from tests.tuning.samples import english_document


def test_the_embedded_model_writes_a_question_in_the_two_line_format() -> None:
    document = english_document(3)
    result = generate_questions(document, embedded_chat_model(), 1)
    assert result.passages == 1 and not result.stopped
    assert result.dropped[checks.NO_REPLY] == 0 and result.dropped[checks.FAILED] == 0
    for q in result.questions:
        assert document[q.start : q.end] == q.answer and q.language == "en"
