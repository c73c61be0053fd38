"""Chunk tuning helpers: questions generated from the user's own document, for the Chunk Lab to score
chunk settings on (issue #30).

Modules: passages (sentence-aligned windows, N spread over the document), replies (the prompt and the
reading of the model's two lines), checks (why a question is dropped), questions (the generation loop
and the conversion to rag.evaluation's questions), files (JSONL), timing (the estimate said beforehand),
runner (the Chunk Lab's background jobs and its question table's rules).
Their names are imported on first use (rag.lazy), so that importing one module of the package does not
import the others (rag.tuning.questions reaches rag.generate and rag.evaluation: ~2 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag.lazy import lazy_exports

if TYPE_CHECKING:
    from rag.tuning.files import dump_questions, load_questions
    from rag.tuning.questions import (
        GeneratedQuestion,
        GeneratedQuestions,
        Rejected,
        generate_questions,
        overlapping_chunks,
        to_questions,
    )
    from rag.tuning.runner import QuestionsJob, SweepJob, locate_rows, plan_sweep, read_question_file
    from rag.tuning.timing import estimate_seconds

_LAZY = {
    **dict.fromkeys(("dump_questions", "load_questions"), "rag.tuning.files"),
    **dict.fromkeys(
        (
            "GeneratedQuestion",
            "GeneratedQuestions",
            "Rejected",
            "generate_questions",
            "overlapping_chunks",
            "to_questions",
        ),
        "rag.tuning.questions",
    ),
    "estimate_seconds": "rag.tuning.timing",
    **dict.fromkeys(
        ("QuestionsJob", "SweepJob", "locate_rows", "plan_sweep", "read_question_file"), "rag.tuning.runner"
    ),
}
__getattr__ = lazy_exports(__name__, _LAZY)

__all__ = [
    "GeneratedQuestion",
    "GeneratedQuestions",
    "QuestionsJob",
    "Rejected",
    "SweepJob",
    "dump_questions",
    "estimate_seconds",
    "generate_questions",
    "load_questions",
    "locate_rows",
    "overlapping_chunks",
    "plan_sweep",
    "read_question_file",
    "to_questions",
]
