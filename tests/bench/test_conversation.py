"""benchmarks/conversation.py: the sequences' data file, how a wrong answer is traced to the stage that
lost it and how answers are counted (hand-made turns, no model), and one small run of the harness
with a scripted chat model on a real PostgreSQL with the fast embedder."""

from __future__ import annotations

import io
import json
import re
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from benchmarks import conversation as bench
from benchmarks.conversation import (
    ALONE,
    CONVERSATION,
    CUT,
    MISREAD,
    NO_ANSWER,
    NOT_RETRIEVED,
    BenchQuestion,
    Conversation,
    Outcome,
)
from benchmarks.report import Report
from rag import generate
from rag.evaluation.normalise import normalise
from rag.evaluation.sets import EVAL_DIR, eval_set
from rag.generate import Turn
from rag.llms import GenerationStats, Message, StreamEvent
from rag.settings import Settings
from rag.store import Hit, Store

# --- the data file ------------------------------------------------------------------------------


def test_the_data_file_is_well_formed() -> None:
    conversations = bench.load_conversations()
    assert {c.language for c in conversations} == {"zh", "en"}
    for language, name in (("zh", "zh_cmrc_trial"), ("en", "en_race")):
        ours = [c for c in conversations if c.language == language]
        assert len(ours) >= 4 and {c.set for c in ours} == {name}
    qids = {}
    for name in ("zh_cmrc_trial", "en_race"):
        rows = [json.loads(line) for line in (EVAL_DIR / f"{name}.questions.jsonl").read_text("utf-8").splitlines()]
        qids[name] = {r["qid"]: str(r["pid"]) for r in rows}
    for c in conversations:
        assert 6 <= len(c.questions) <= 8, c.id
        kinds = [q.follow_up for q in c.questions]
        assert not kinds[0] and any(kinds) and kinds.count(False) >= 2, f"{c.id}: mix both kinds"
        passages = {p.key: normalise(p.text) for p in eval_set(c.set).passages}
        for q in c.questions:
            assert q.pid in passages and q.answers
            assert any(normalise(a) in passages[q.pid] for a in q.answers), f"{c.id}: {q.text} has no answer in {q.pid}"
            assert not bench.holds_gold(q.text, q.answers), f"{c.id}: {q.text} holds its own answer"
            if q.follow_up:
                assert q.standalone != q.text
                assert not bench.holds_gold(q.standalone, q.answers), q.standalone
            else:
                assert q.standalone == q.text
            if q.qid:
                assert qids[c.set].get(q.qid) == q.pid, f"{q.qid} is not a question of {q.pid}"
    quick = bench.for_run(conversations, quick=True)
    assert [c.language for c in quick] == ["zh", "en"]
    assert all(len(c.questions) == 4 and {q.follow_up for q in c.questions} == {True, False} for c in quick)
    assert [len(c.questions) for c in bench.for_run(conversations, quick=False)] == [
        len(c.questions) for c in conversations
    ]


def test_each_knowledge_base_holds_the_gold_passages_and_the_same_distractors_every_run() -> None:
    c = bench.load_conversations()[0]
    passages = bench.knowledge_passages(c)
    keys = [p.key for p in passages]
    assert len(keys) == bench.KB_PASSAGES == len(set(keys)) and keys[: len(c.pids)] == list(c.pids)
    assert [p.key for p in bench.knowledge_passages(c)] == keys


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"id": "a", "language": "fr", "set": "en_race", "questions": []}',
            "conversations.jsonl line 1: 'language' must be one of zh, en, got 'fr'",
        ),
        (
            '{"id": "a", "language": "en", "set": "en_race", "questions": [{"question": "why?", "follow_up": true, '
            '"pid": "343fe00e", "answers": ["foot"]}]}',
            "conversations.jsonl line 1 question 1: a follow-up needs its 'standalone' form, got None",
        ),
        (
            '{"id": "a", "language": "en", "set": "en_race", "questions": [{"question": "Who?", "follow_up": false, '
            '"pid": "nope", "answers": ["x"]}]}',
            "conversations.jsonl line 1 question 1: 'pid' 'nope' is not a passage of the set",
        ),
        (
            '{"id": "a", "language": "en", "set": "en_race", "questions": [{"question": "Who?", "follow_up": false, '
            '"pid": "343fe00e", "answers": []}]}',
            "conversations.jsonl line 1 question 1: 'answers' must be a non-empty list of non-empty texts, got []",
        ),
    ],
)
def test_a_bad_line_is_refused_with_where_and_what(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "conversations.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        bench.load_conversations(path)
    assert str(caught.value) == message


# --- judging and counting hand-made turns -------------------------------------------------------

GOLD = "TRIAL_491"
VILLA = (
    "美庐别墅始建于1903年，由英国人西伊勋爵建造。1933年8月8日，蒋中正和宋美龄夫妇入住。"
    "1948年8月，蒋中正在院内的一块巨石上题刻“美庐”二字，这幢别墅由此得名。"
)
TOWER = "广州北回归线标志塔的塔身为直立火箭形，高23.5米，暗示北回归线的纬度值。"
LAKE = "赛里木湖，古称“净海”，位于中国新疆博尔塔拉州博乐市境内的北天山山脉中。"
EXTENSION = "1935年，别墅扩建了二层。"
EXTENDED = "1935年，别墅扩建了二层 [1]。"
"""A year the villa was built on, not the year it was built: held, cited, about building, and wrong."""
QUESTION = BenchQuestion("它是哪一年建成的？", True, GOLD, ("1903",), "美庐别墅是哪一年建成的？")


def hit(pid: str, text: str) -> Hit:
    return Hit(id=uuid.uuid4(), content=text, metadata={"original_filename": pid, "pages": [1]}, score=0.5)


def turn(
    answer: str,
    sources: Sequence[Hit] = (),
    left_out: Sequence[Hit] = (),
    *,
    parts: dict[str, str] | None = None,
    question: str = QUESTION.text,
    query: str | None = None,
    problem: str = "",
) -> Turn:
    numbered = generate.number_sources([*sources, *left_out])
    given = tuple(
        s
        if not parts or s.hit.original_filename not in parts
        else generate.Source(s.n, s.hit, parts[s.hit.original_filename])
        for s in numbered[: len(sources)]
    )
    return Turn(
        id="t",
        question=question,
        query=query or question,
        sources=given,
        left_out=tuple(numbered[len(sources) :]),
        answer=answer,
        problem=problem,
        model="ollama:scripted",
    )


def test_a_wrong_answer_is_traced_to_the_stage_that_lost_it() -> None:
    assert bench.stage_of(turn("不知道。", [hit("TRIAL_690", TOWER), hit("TRIAL_839", LAKE)]), QUESTION) == (
        NOT_RETRIEVED,
        "not among the 2 found",
    )
    assert bench.stage_of(
        turn("不知道。", [hit("TRIAL_690", TOWER)], [hit("TRIAL_839", LAKE), hit(GOLD, VILLA)]), QUESTION
    ) == (CUT, "found as [3] of 3, left out of the prompt")
    part = "…1948年8月，蒋中正在院内的一块巨石上题刻“美庐”二字，这幢别墅由此得名。"
    assert bench.stage_of(
        turn("不知道。", [hit("TRIAL_690", TOWER), hit(GOLD, VILLA)], parts={GOLD: part}), QUESTION
    ) == (CUT, "[2] given in part, without the answer")
    with_answer = "美庐别墅始建于1903年，由英国人西伊勋爵建造。…"
    assert bench.stage_of(turn("不知道。", [hit(GOLD, VILLA)], parts={GOLD: with_answer}), QUESTION) == (
        MISREAD,
        "[1] in the prompt (in part)",
    )
    assert bench.stage_of(turn("1948年。", [hit("TRIAL_690", TOWER), hit(GOLD, VILLA)]), QUESTION) == (
        MISREAD,
        "[2] in the prompt",
    )
    assert bench.stage_of(turn("", problem="Search failed: no knowledge base named 'x'"), QUESTION) == (
        NO_ANSWER,
        "Search failed: no knowledge base named 'x'",
    )


def judged(
    t: Turn,
    question: BenchQuestion = QUESTION,
    *,
    language: str = "zh",
    condition: str = CONVERSATION,
    ranks: list[str] | None = None,
) -> Outcome:
    def rank(searched: Turn) -> int | None:
        if ranks is not None:
            ranks.append(searched.query)
        return 12

    return bench.judge(t, question, conversation="c", language=language, condition=condition, first_word=2.0, rank=rank)


def test_judging_right_cited_green_and_green_but_wrong() -> None:
    asked: list[str] = []
    right = judged(turn("美庐别墅始建于1903年 [2]。", [hit("TRIAL_690", TOWER), hit(GOLD, VILLA)]), ranks=asked)
    assert (right.right, right.cites_gold, right.green, right.stage, right.rank) == (True, True, True, "", None)
    assert asked == [], "a right answer needs no deeper search"
    # Copied from the gold passage and cited, a year built, but not the year asked: the badge is green all the same.
    green_wrong = judged(turn(EXTENDED, [hit(GOLD, VILLA + EXTENSION)], query=QUESTION.standalone), ranks=asked)
    assert (green_wrong.right, green_wrong.cites_gold, green_wrong.green) == (False, True, True)
    assert (green_wrong.stage, green_wrong.rank) == (MISREAD, 12) and asked == [QUESTION.standalone]
    # A sentence of it that says nothing of building is not green (rag.generate.asked).
    moved_in = judged(turn("1933年8月8日，蒋中正和宋美龄夫妇入住 [1]。", [hit(GOLD, VILLA)], query=QUESTION.standalone))
    assert (moved_in.right, moved_in.cites_gold, moved_in.green) == (False, True, False)
    uncited = judged(turn("美庐别墅建于1903年。", [hit(GOLD, VILLA)]))
    assert (uncited.right, uncited.cites_gold, uncited.green) == (True, False, False)
    elsewhere = judged(turn("美庐别墅始建于1903年 [1]。", [hit("TRIAL_690", TOWER), hit(GOLD, VILLA)]))
    assert (elsewhere.right, elsewhere.cites_gold, elsewhere.green) == (True, False, False)
    attributed = judged(
        Turn(
            id="t",
            question=QUESTION.text,
            query=QUESTION.text,
            answer="始建于1903年 [1]。",
            sources=tuple(generate.number_sources([hit(GOLD, VILLA)])),
            attributed=True,
        )
    )
    assert (attributed.right, attributed.cites_gold, attributed.green) == (True, False, False)
    failed = judged(turn("", [hit(GOLD, VILLA)], problem="No answer: no chat model is available."))
    assert (failed.right, failed.stage, failed.rank) == (False, NO_ANSWER, None)


def test_english_gold_is_matched_as_the_answers_bench_matches_it() -> None:
    assert bench.holds_gold("It was THE PICKWICK  Papers [1].", ("The Pickwick Papers.",))
    assert bench.holds_gold("Sun Haiping noticed it.", ("His coach Sun Haiping", "Sun Haiping"))
    assert not bench.holds_gold("His coach noticed it.", ("Sun Haiping",))
    assert bench.holds_gold("二十一岁", ("二十一", "21")) and bench.holds_gold("２１岁", ("21",))  # NFKC


def test_counts_per_language_and_condition_keep_standalone_questions_and_follow_ups_apart() -> None:
    standalone = BenchQuestion("美庐别墅在哪里？", False, GOLD, ("牯岭",), "美庐别墅在哪里？")
    rewritten = dict(query="美庐别墅是哪一年建成的？")
    outcomes = [
        judged(
            turn("位于庐山牯岭东谷 [1]。", [hit(GOLD, VILLA + "位于庐山牯岭东谷。")], question=standalone.text),
            standalone,
        ),
        judged(turn("始建于1903年 [1]。", [hit(GOLD, VILLA)], **rewritten)),
        judged(turn(EXTENDED, [hit(GOLD, VILLA + EXTENSION)], **rewritten)),
        judged(turn("不知道。", [hit("TRIAL_690", TOWER)])),
        judged(turn("始建于1903年 [1]。", [hit(GOLD, VILLA)], question=QUESTION.standalone), condition=ALONE),
    ]
    outcomes[1] = Outcome(**{**outcomes[1].__dict__, "first_word": 4.0})
    kinds = bench.by_kind(outcomes, "zh", CONVERSATION)
    assert kinds["standalone"] == bench.Counts(1, 1, 1, 0, 0, {}, (2.0,), right_green=1)
    assert kinds["follow-up"] == bench.Counts(
        3, 1, 2, 1, 2, {MISREAD: 1, NOT_RETRIEVED: 1}, (4.0, 2.0, 2.0), right_green=1
    )
    assert bench.by_kind(outcomes, "zh", ALONE)["follow-up"] == bench.Counts(1, 1, 1, 0, 0, {}, (2.0,), right_green=1)
    assert bench.summary_lines(outcomes) == [
        "zh, in one conversation: standalone 1/1 right, gold cited 1/1, green but wrong 0, right and green 1/1, "
        "rewritten 0/1; follow-ups 1/3 right, gold cited 2/3, green but wrong 1, right and green 1/1, rewritten 2/3 "
        "(wrong: not retrieved 1, misread 1); first word p50 2.0 s, max 4.0 s",
        "zh, alone: standalone 0/0 right, gold cited 0/0, green but wrong 0, right and green 0/0, rewritten 0/0; "
        "follow-ups (their standalone form) 1/1 right, gold cited 1/1, green but wrong 0, right and green 1/1, "
        "rewritten 0/1; "
        "first word p50 2.0 s, max 2.0 s",
    ]
    rows = bench.wrong_rows(outcomes)
    assert rows[2:] == [
        "| zh | in one conversation | follow-up | 它是哪一年建成的？ | 美庐别墅是哪一年建成的？ | misread | 12 "
        f"| [1] in the prompt | green | {EXTENDED} |",
        "| zh | in one conversation | follow-up | 它是哪一年建成的？ | (as asked) | not retrieved | 12 "
        "| not among the 1 found | - | 不知道。 |",
    ]
    assert bench.wrong_rows(outcomes[:2]) == []


# --- one small run with a scripted model ----------------------------------------------------------

SOURCE = re.compile(r"^\[(\d+)\] (\S+)[^\n]*\n(.*?)(?=\n\n\[\d+\] |\Z)", re.MULTILINE | re.DOTALL)


class ScriptedChat:
    """A ChatModel that rewrites and answers as told, by the question it is asked.

    `rewrites` maps a follow-up to the query it is rewritten into (unlisted: the question as is);
    `answers` maps a question to how it is answered: "right" (the first gold answer, citing the gold
    passage when the prompt holds it, else "not found"), "green" (a sentence copied from the first
    other passage in the prompt, one with a figure where it has one, cited: a wrong answer the badge calls
    grounded) or "wrong"."""

    name = "ollama:scripted"
    supports_tools = False
    supports_thinking = False

    def __init__(self, golds: dict[str, BenchQuestion], answers: dict[str, str], rewrites: dict[str, str]) -> None:
        self.golds, self.answers, self.rewrites = golds, answers, rewrites
        self.calls: list[list[Message]] = []
        self._lock = threading.Lock()

    def context_length(self) -> int:
        return 32768  # every source fits: nothing is cut by packing

    def stream(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.2,
        num_ctx: int | None = None,
        think: bool | None = None,
        stop_event: Any = None,
    ) -> Iterator[StreamEvent]:
        with self._lock:
            self.calls.append(list(messages))
        if messages[0].role != "system":  # the rewrite's prompt: the conversation, then the question
            asked = self.question_in(messages[-1].content)
            text = self.rewrites.get(asked, asked)
        else:
            text = self._answer(messages[-1].content, messages[0].content)
        yield StreamEvent("content", text)
        yield StreamEvent("done", stats=GenerationStats(done_reason="stop", eval_count=len(text)))

    def question_in(self, prompt: str) -> str:
        """The question a rewrite prompt ends with: of the known questions, the one it holds last."""
        return max((q for q in self.golds if q in prompt), key=lambda q: prompt.rfind(q) + len(q))

    def _answer(self, question: str, system: str) -> str:
        gold = self.golds[question]
        sources = [(int(n), pid, text.strip()) for n, pid, text in SOURCE.findall(system)]
        how = self.answers[question]
        if how == "right":
            n = next((n for n, pid, _ in sources if pid == gold.pid), None)
            return f"{gold.answers[0]} [{n}]." if n is not None else "I cannot find it in the knowledge base."
        if how == "green":
            n, _, text = next(s for s in sources if s[1] != gold.pid)
            sentences = [s for s in re.split(r"(?<=[。.!?！？])", text) if s.strip()]
            # One with a figure: asked one ("塔身高多少米？"), an answer without any is not green.
            sentence = next((s for s in sentences if re.search(r"\d", s)), sentences[0]).strip().rstrip("。.")
            return f"{sentence} [{n}]。"
        return "I cannot find it in the knowledge base."


def scripted_conversations() -> tuple[Conversation, Conversation]:
    """Two conversations whose follow-ups point back plainly (它, his, "And …"): any rule rewrites them."""
    Q = BenchQuestion
    zh = Conversation(
        "zh-test",
        "zh",
        "zh_cmrc_trial",
        (
            Q("美庐别墅在哪里？", False, "TRIAL_491", ("牯岭东谷",), "美庐别墅在哪里？"),
            Q("它是哪一年建成的？", True, "TRIAL_491", ("1903",), "美庐别墅是哪一年建成的？"),
            Q(
                "广州北回归线标志塔的塔身高多少米？",
                False,
                "TRIAL_690",
                ("23.5",),
                "广州北回归线标志塔的塔身高多少米？",
            ),
            Q("它是什么时候建成的？", True, "TRIAL_690", ("1985",), "广州北回归线标志塔是什么时候建成的？"),
        ),
    )
    en = Conversation(
        "en-test",
        "en",
        "en_race",
        (
            Q(
                "What was Liu Xiang encouraged to train at first?",
                False,
                "343fe00e",
                ("high jump",),
                "What was Liu Xiang encouraged to train at first?",
            ),
            Q(
                "Who noticed his ability in hurdling?",
                True,
                "343fe00e",
                ("Sun Haiping",),
                "Who noticed Liu Xiang's ability in hurdling?",
            ),
            Q("What's Hawaii famous for?", False, "3fdcc869", ("beautiful beaches",), "What's Hawaii famous for?"),
            Q(
                "And when did the first people come?",
                True,
                "3fdcc869",
                ("two thousand years",),
                "When did the first people come to Hawaii?",
            ),
        ),
    )
    return zh, en


def test_a_small_run_counts_the_scripted_answers(store: Store, pg_uri: str, settings: Settings) -> None:
    zh, en = scripted_conversations()
    zq, eq = zh.questions, en.questions
    golds = {q.text: q for q in (*zq, *eq)} | {q.standalone: q for q in (*zq, *eq)}
    # Every answer right (when the prompt holds the gold passage), but: the tower's height is answered
    # with a sentence of another passage, cited (green but wrong, in both conditions), and in one
    # conversation "Who noticed his ability…" is answered "not found" although the prompt holds it.
    answers = {text: "right" for text in golds} | {zq[2].text: "green", eq[1].text: "wrong"}
    rewrites = {q.text: q.standalone for q in (*zq, *eq) if q.follow_up}
    model = ScriptedChat(golds, answers, rewrites)
    out = io.StringIO()

    outcomes = bench.bench_conversation(Report(out), pg_uri, settings, quick=True, model=model, conversations=[zh, en])

    assert len(outcomes) == 16 and all(o.first_word is not None and o.first_word >= 0 for o in outcomes)
    figures = {
        (lang, cond, kind): (c.asked, c.right, c.cites_gold, c.green_but_wrong, c.rewritten, c.stages)
        for lang in ("zh", "en")
        for cond in (CONVERSATION, ALONE)
        for kind, c in bench.by_kind(outcomes, lang, cond).items()
    }
    assert figures == {
        ("zh", CONVERSATION, "standalone"): (2, 1, 1, 1, 0, {MISREAD: 1}),
        ("zh", CONVERSATION, "follow-up"): (2, 2, 2, 0, 2, {}),
        ("zh", ALONE, "standalone"): (2, 1, 1, 1, 0, {MISREAD: 1}),
        ("zh", ALONE, "follow-up"): (2, 2, 2, 0, 0, {}),
        ("en", CONVERSATION, "standalone"): (2, 2, 2, 0, 0, {}),
        ("en", CONVERSATION, "follow-up"): (2, 1, 1, 0, 2, {MISREAD: 1}),
        ("en", ALONE, "standalone"): (2, 2, 2, 0, 0, {}),
        ("en", ALONE, "follow-up"): (2, 2, 2, 0, 0, {}),
    }
    wrong = [o for o in outcomes if not o.right]
    assert [(o.question.text, o.condition) for o in wrong] == [
        (zq[2].text, CONVERSATION),
        (zq[2].text, ALONE),
        (eq[1].text, CONVERSATION),
    ]
    # Each wrong answer's gold passage was looked for again, deeper: it was in the prompt, so it is found.
    assert all(o.rank is not None for o in wrong)
    assert [o.turn.query for o in wrong] == [zq[2].text, zq[2].text, eq[1].standalone]
    # In one conversation each turn carries the ones before it: the rewrite of Q2 saw Q1 and its answer,
    # and Q4 was answered after the three exchanges before it. Alone, a prompt holds one question.
    rewrites_seen = [model.question_in(c[-1].content) for c in model.calls if c[0].role == "user"]
    assert rewrites_seen == [zq[1].text, zq[3].text, eq[1].text, eq[3].text]
    rewrite_q2 = next(c for c in model.calls if c[0].role == "user")
    assert f"User: {zq[0].text}" in rewrite_q2[-1].content and "Assistant: 牯岭东谷 [" in rewrite_q2[-1].content
    answer_q4 = next(c for c in model.calls if c[-1].content == zq[3].text)
    assert [m.content for m in answer_q4 if m.role == "user"] == [q.text for q in zq]
    alone_q4 = next(c for c in model.calls if c[-1].content == zq[3].standalone)
    assert [m.role for m in alone_q4] == ["system", "user"]
    report = out.getvalue()
    assert "model ollama:scripted, embedder local:wordllama-l2_supercat-256 (the fast one, in --quick)" in report
    assert "Wrong answers (3):" in report
    for line in bench.summary_lines(outcomes):
        assert line in report
