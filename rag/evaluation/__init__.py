"""Retrieval checks for chunk settings: which setting puts the right passage at the top?

The user gives a few questions, each with the passage of the document that answers it.
For every chunk setting the document's chunks are embedded (once per distinct text, via
`EmbeddingCache`) and ranked by cosine similarity against each question, in memory; the
rank of the chunk holding the expected passage gives hit@k and the mean reciprocal rank.
Nothing is written to the database.

Modules: `questions` (CSV and table input), `cache` (embeddings), `normalise` and `targets`
(where the expected passage is), `ranking` (evaluate, report), `datasets` (the data in `data/`).
`quality` measures a search mode on the real store instead (hit@k and MRR through `rag.retrieve.search`,
for `rag eval` and the retrieval benchmark); it needs the store, so it is imported on its own.
"""

from __future__ import annotations

from rag.evaluation.cache import CacheStats, EmbeddingCache
from rag.evaluation.datasets import QA, Passage, RetrievalSet, Sample, retrieval_set, sample
from rag.evaluation.normalise import NormalisedText, excerpt, normalise
from rag.evaluation.questions import MAX_QUESTIONS, Question, parse_questions_csv, questions_from_rows
from rag.evaluation.ranking import (
    DEFAULT_KS,
    EvaluationReport,
    QuestionResult,
    SettingResult,
    best_label,
    describe,
    evaluate,
)
from rag.evaluation.targets import Targets, find_targets, target_chunks

__all__ = [
    "DEFAULT_KS",
    "MAX_QUESTIONS",
    "QA",
    "CacheStats",
    "EmbeddingCache",
    "EvaluationReport",
    "NormalisedText",
    "Passage",
    "Question",
    "QuestionResult",
    "RetrievalSet",
    "Sample",
    "SettingResult",
    "Targets",
    "best_label",
    "describe",
    "evaluate",
    "excerpt",
    "find_targets",
    "normalise",
    "parse_questions_csv",
    "questions_from_rows",
    "retrieval_set",
    "sample",
    "target_chunks",
]
