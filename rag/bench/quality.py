"""Whether the embedded model's answers cite the right source, on the 24-question retrieval set
(rag/evaluation/data); retrieval quality itself is `rag.bench.retrieval`."""
from __future__ import annotations

import random

from rag.bench.report import Report
from rag.evaluation.datasets import retrieval_set
from rag.store import Hit


def bench_answers(report: Report, quick: bool) -> None:
    """The embedded base model's answers on the retrieval question set: each question with its
    passage and two others as numbered sources, greedy decoding; does the answer's first citation
    (after attribute_citations) name the passage? With the worked example vs without it."""
    import uuid as _uuid

    from rag import generate, llms
    from rag.llms import LocalChatModel, completion_prompt
    from rag.llms.stream import fold

    report.section("Embedded model: first citation names the right source (worked example vs none)")
    ok, reason = LocalChatModel.available()
    if not ok:
        report.line(f"skipped: {reason}")
        return
    data = retrieval_set()
    model = LocalChatModel()
    by_key = {p.key: p for p in data.passages + data.distractors}
    rng = random.Random(5)
    questions = data.questions[::2] if quick else data.questions
    right = {"with the example": 0, "without": 0}
    for q in questions:
        passages = [by_key[q.passage], *rng.sample([p for p in by_key.values() if p.key != q.passage], 2)]
        rng.shuffle(passages)
        sources = generate.number_sources([
            Hit(id=_uuid.uuid4(), content=p.text, score=1.0,
                metadata={"original_filename": f"{p.key}.pdf", "pages": [1], "knowledge": "bench"})
            for p in passages])
        expected = next(s.n for s in sources if s.hit.original_filename == f"{q.passage}.pdf")
        messages = generate.build_messages(q.question, sources)
        for label, example in (("with the example", llms.citation_example(messages)), ("without", None)):
            # The model's own generation path (its stop sequences, penalty and token limit), greedy.
            answer = fold(list(model.complete(completion_prompt(messages, example), 0.0))).text
            cited = generate.citation_numbers(generate.attribute_citations(answer, sources))
            right[label] += bool(cited) and cited[0] == expected
    report.line(f"{len(questions)} questions: " + ", ".join(f"{label} {n}/{len(questions)}" for label, n in right.items()))
