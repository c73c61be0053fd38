"""Quality on the retrieval question set (rag/evaluation/data): hit@k per search mode, and whether the
embedded model's answers cite the right source."""
from __future__ import annotations

import random

from rag.bench.report import Report
from rag.evaluation.datasets import retrieval_set
from rag.settings import Settings
from rag.store import Hit, Store


def bench_retrieval(report: Report, uri: str, settings: Settings) -> None:
    """hit@5 per search mode on the retrieval question set (English + Chinese)."""
    import dataclasses

    from rag import retrieve
    from rag.chunking import Chunk

    data = retrieval_set()
    passages = data.passages + data.distractors
    local = dataclasses.replace(settings, database_url=uri)
    embedder = retrieve.embedder_named_or_default(local)
    report.section(f"Retrieval quality per search mode ({len(data.questions)} questions, "
                   f"{len(passages)} passages, embedder {embedder.name})")
    store = Store(uri)
    try:
        for p in passages:
            store.write_document(knowledge="bench-eval", embedder=embedder.name, dimension=embedder.dimension,
                                 chunk_settings={}, filename=p.key, path=None, data=p.text.encode(),
                                 sha256=p.key, page_count=1, chunks=[Chunk(0, p.text, 1, 0, len(p.text), (1,))],
                                 embeddings=embedder.embed([p.text]))
        questions = [(q.question, q.passage) for q in data.questions]
        quality = {m: retrieve.mode_quality(store, local, "bench-eval", questions, mode=m)
                   for m in retrieve.MODES}
        for mode, q in quality.items():
            report.line(f"{mode:8} hit@1 {q.hit_at_1:.3f}  hit@5 {q.hit_at_5:.3f}  MRR {q.mrr:.3f}")
        best = max(quality["vector"].hit_at_5, quality["keyword"].hit_at_5)
        report.line(f"hybrid hit@5 vs the better single mode: {quality['hybrid'].hit_at_5:.3f} vs {best:.3f} "
                    f"({'met' if quality['hybrid'].hit_at_5 >= best else 'NOT met'})")
    finally:
        store.close()


def bench_answers(report: Report, quick: bool) -> None:
    """The embedded base model's answers on the retrieval question set: each question with its
    passage and two others as numbered sources, greedy decoding; does the answer's first citation
    (after attribute_citations) name the passage? With the worked example vs without it."""
    import uuid as _uuid

    from rag import generate, llms
    from rag.llms import LocalChatModel, completion_prompt

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
            answer = "".join(e.text for e in model._generate(completion_prompt(messages, example), 0.0, None)
                             if e.kind == "content")
            cited = generate.citation_numbers(generate.attribute_citations(answer, sources))
            right[label] += bool(cited) and cited[0] == expected
    report.line(f"{len(questions)} questions: " + ", ".join(f"{label} {n}/{len(questions)}" for label, n in right.items()))
