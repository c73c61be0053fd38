"""What an evaluation report says in words, for the Chunk Lab: settings whose hit@k cannot tell
rankings apart, a note per question and setting, and the pairs worth a closer look."""

from __future__ import annotations

from collections.abc import Callable

from rag.evaluation.ranking import EvaluationReport, QuestionResult, SettingResult
from rag.text import Text


def trivial(report: EvaluationReport) -> tuple[SettingResult, ...]:
    """Settings with no more chunks than the largest k: their hit@k is 100 % whatever the ranking."""
    return tuple(r for r in report.results if r.n_chunks <= report.ks[-1])


def question_notes(report: EvaluationReport, index: int, name: Callable[[str], str] = lambda label: label) -> list[str]:
    """Notes on question `index` across the settings (each named by `name(label)`): a passage split
    across chunks, one lying only in text no chunk kept, one not found in the document at all."""
    notes: list[str] = []
    for r in report.results:
        q = r.questions[index]
        if q.split and q.targets:
            notes.append(
                Text(
                    "{setting}: split across chunks, chunk {chunks} holds {coverage}",
                    setting=name(r.label),
                    chunks=", ".join(map(str, q.targets)),
                    coverage=f"{q.coverage:.0%}",
                )
            )
        elif q.found and not q.targets:
            notes.append(Text("{setting}: the passage is only in text no chunk kept", setting=name(r.label)))
    if not any(r.questions[index].found for r in report.results):
        approximate = any(r.questions[index].targets for r in report.results)
        notes.insert(
            0,
            Text("passage not found in the document (approximate match)")
            if approximate
            else Text("passage not found in the document"),
        )
    return notes


def misses(report: EvaluationReport) -> list[tuple[SettingResult, QuestionResult]]:
    """(setting, question) pairs where the passage was not ranked first although a chunk was."""
    return [(r, q) for r in report.results for q in r.questions if q.rank != 1 and q.top_index is not None]
