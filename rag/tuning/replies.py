"""The prompt that asks a chat model for one question about a passage, and the reading of its reply.

The model is asked for two lines, `Q: ...` and `A: ...` (`问：` / `答：` in Chinese), the answer copied
from the passage, and shown one example of them. Small models decorate them (`**Q:**`, `Question 1:`,
`答案：`, `回答：`, full-width colons, both on one line, a quoted answer, a full stop after it), so the reply
is read leniently and the answer is tried as written and without its quotes; an answer reworded all the
same is mapped to the passage's words by rag.tuning.checks.find_answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.llms.types import Message

PROMPT_EN = (
    "Read the passage and write one question that the passage answers, with its answer copied word for "
    "word from the passage: a short phrase of a few words, not a whole sentence. Copy the answer exactly as "
    "the passage writes it; do not reword it. The question must say what it asks about, so that someone who "
    "has not seen the passage understands it; do not put the answer in the question.\n"
    "Reply with exactly two lines and nothing else:\n"
    "Q: <the question>\n"
    "A: <the answer, copied from the passage>\n\n"
    'Example. For the passage "The Tayberry Bridge was opened in 1932 by the mayor of Kelso, Ruth Ainslie. '
    'It carries a single railway track across the River Tweed." you would reply:\n'
    "Q: Which river does the Tayberry Bridge cross?\n"
    "A: the River Tweed\n\n"
    "Passage:\n{passage}"
)
PROMPT_ZH = (
    "阅读下面的段落，提出一个该段落能够回答的问题，并从段落中原样摘抄答案：几个字的短语，不要整句。"
    "答案必须与段落原文一字不差，不要改写。"
    "问题要写明所问的对象，让没看过段落的人也能看懂；不要把答案写进问题里。\n"
    "严格按下面两行回答，不要写别的：\n"
    "问：<问题>\n"
    "答：<答案，从段落原文摘抄>\n\n"
    "例如，段落是“桃溪大桥于1932年由临江市市长林秀云主持通车，桥上铺有一条铁路，横跨青衣江。”，就回答：\n"
    "问：桃溪大桥横跨哪条江？\n"
    "答：青衣江\n\n"
    "段落：\n{passage}"
)
"""One example each (issue #30): without one, Qwen2.5-Coder-1.5B paraphrased the answer (3 of 6 English
questions dropped as not found in the bench's quick run) or wrote a statement with no answer line (2 of 6
Chinese). The example passage is on the example's line, so that "Passage:\n" / "段落：\n" still begins
the real one only."""

_COLON = r"\s*[:：]\s*"
_DECORATION = r"^[\s*#>\-\d.)]*"  # markdown bold, headings, list numbers before the label
_ANSWER_LABEL = r"(?:a|answer|答案?|回答|解答)"
_QUESTION = re.compile(_DECORATION + r"(?:q|question|问题?|提问)(?:\s*\d+)?\**" + _COLON + r"\**(.*)$", re.IGNORECASE)
_ANSWER = re.compile(_DECORATION + _ANSWER_LABEL + r"(?:\s*\d+)?\**" + _COLON + r"\**(.*)$", re.IGNORECASE)
_SAME_LINE = re.compile(r"(?<=[?？])[\s*]*" + _ANSWER_LABEL + r"\**" + _COLON + r"\**", re.IGNORECASE)
"""The answer after the question mark on the question's own line: "问：谁建的？答：李明远"."""
_QUOTES = "\"'`“”‘’「」『』*"
_TRAILING = ".。!！;；,，、 "


def question_messages(passage: str, language: str) -> list[Message]:
    """The prompt for one question about `passage`, in `language` ('zh' or 'en')."""
    template = PROMPT_ZH if language == "zh" else PROMPT_EN
    return [Message("user", template.format(passage=passage))]


@dataclass(frozen=True)
class Reply:
    question: str
    answer: str
    """As the model wrote it (quotes and all); `answer_candidates` gives what to look for."""


def parse_reply(text: str) -> Reply | None:
    """The first `Q:` line and the first `A:` line after it; None when either is missing or empty.

    A question written on the line after its label (`Q:` alone, then the question) is read too, and an
    answer on the question's line after its question mark."""
    lines = [line.strip() for line in text.splitlines()]
    question = answer = ""
    pending: str | None = None
    for line in lines:
        if not line:
            continue
        if pending == "q" and not _ANSWER.match(line):
            question, pending = line, None
            continue
        if pending == "a":
            answer = line
            break
        if not question and (m := _QUESTION.match(line)):
            question = m.group(1).strip()
            if (same := _SAME_LINE.search(question)) and question[same.end() :].strip():
                question, answer = question[: same.start()].strip(), question[same.end() :].strip()
                break
            pending = None if question else "q"
            continue
        if question and (m := _ANSWER.match(line)):
            answer = m.group(1).strip()
            if answer:
                break
            pending = "a"
    if not question:
        question, answer = _unlabelled(lines)
    question = question.strip(_QUOTES + " ")
    if not question or not answer or not asks(question):
        return None
    return Reply(question, answer)


_ASKING = re.compile(
    r"[?？]|什么|谁|哪|几|多少|多久|多大|多长|多高|多远|怎|如何|为何|为什么|何[时地处人种年]|是否|吗|呢|"
    r"^\s*(?:what|who|whom|whose|which|when|where|why|how|is|are|was|were|do|does|did|can|could|has|have|had|"
    r"will|would|should|in what|on what|at what|to what|for what|from what|by what|name)\b",
    re.IGNORECASE,
)


def asks(question: str) -> bool:
    """Whether the `Q:` line asks something (a question mark, or a question word): Qwen2.5-Coder-1.5B wrote a
    statement there ("问：耶利米是《圣经》中犹大国灭国前，最黑暗时的一位先知。", in the tune bench's 80 Chinese
    passages), which was kept as a question; such a reply holds no question and is asked again."""
    return bool(_ASKING.search(question))


def _unlabelled(lines: list[str]) -> tuple[str, str]:
    """A question written without its label, ending in a question mark, on the line before a labelled answer:
    "马来穿山甲的尾巴上有多少个鳞片？" then "答：30" (one of 39 Chinese replies in the tune bench)."""
    filled = [line for line in lines if line]
    for line, following in zip(filled, filled[1:], strict=False):
        if _QUESTION_END.search(line) and (m := _ANSWER.match(following)) and m.group(1).strip():
            return line, m.group(1).strip()
    return "", ""


ANSWER_PROMPT_EN = (
    "Passage:\n{passage}\n\nQuestion: {question}\n"
    "Copy the answer to the question word for word from the passage: a short phrase of a few words. "
    "Reply with the answer only."
)
ANSWER_PROMPT_ZH = "段落：\n{passage}\n\n问题：{question}\n从段落中原样摘抄这个问题的答案：几个字的短语。只写答案。"
"""Asked when a reply holds a question and no answer (`bare_question`): in the bench's first 16 Chinese passages,
Qwen2.5-Coder-1.5B wrote three questions alone ("莎莉公司总部设于哪里？") and stopped, each dropped as no reply."""

SENTENCE_PROMPT_EN = (
    "Write one question about the sentence below that asks with who, what, where, when, which or how many "
    "(not a yes-or-no question), ending with a question mark. Reply with the question only.\n"
    "Sentence:\n{sentence}"
)
SENTENCE_PROMPT_ZH = (
    "针对下面这句话提一个问题，用“谁”“什么”“哪里”“哪一年”“多少”之一提问，不要用“吗”，问句以问号结尾，只写问句。\n"
    "句子：\n{sentence}"
)
"""Asked after a reply that holds a statement instead of a question (`needs_retry`), about that statement
alone: Qwen2.5-Coder-1.5B copied a sentence of the passage as its question for 18 of the tune bench's 77
Chinese passages. Asked again with the passage and a reminder ("这不是问题。请提出一个……"), it wrote a question for
1 of the 18; asked about its own sentence with the question words named, for 17, of which 11 were kept (and
their answers asked for alone, `answer_messages`). Without "不要用“吗”" it wrote yes-or-no questions
("……的武将吗？"), answered "是"."""


def needs_retry(text: str) -> bool:
    """Whether a reply holds no question at all (neither `parse_reply`'s two lines nor a `bare_question`) but
    some text: a statement copied from the passage, to be asked about with `sentence_messages`."""
    return bool(text.strip()) and parse_reply(text) is None and bare_question(text) is None


def statement_of(text: str) -> str | None:
    """The statement a reply holds instead of a question: its first line that is not an answer line, without
    a `Q:` / `问：` label; None when there is none."""
    for line in text.splitlines():
        line = line.strip()
        if not line or _ANSWER.match(line):
            continue
        if m := _QUESTION.match(line):
            line = m.group(1).strip()
        line = line.strip(_QUOTES + " ")
        return line or None
    return None


def sentence_messages(sentence: str, language: str) -> list[Message]:
    """The prompt for one question about `sentence` alone (see `SENTENCE_PROMPT_ZH`)."""
    template = SENTENCE_PROMPT_ZH if language == "zh" else SENTENCE_PROMPT_EN
    return [Message("user", template.format(sentence=sentence))]


_QUESTION_END = re.compile(r"[?？]\s*$")


def bare_question(text: str) -> str | None:
    """The question of a reply that holds one and no answer: its first line, when it ends in a question mark
    (labelled `Q:` or not) and no answer line follows; None otherwise (a reply with an answer is read by
    `parse_reply`; a statement is no question)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or parse_reply(text) is not None or any(_ANSWER.match(line) for line in lines):
        return None
    first = lines[0]
    if m := _QUESTION.match(first):
        first = m.group(1).strip()
    first = first.strip(_QUOTES + " ")
    return first if _QUESTION_END.search(first) and len(first) > 3 else None


def answer_messages(passage: str, question: str, language: str) -> list[Message]:
    """The prompt asking for the answer to `question` alone (see `bare_question`)."""
    template = ANSWER_PROMPT_ZH if language == "zh" else ANSWER_PROMPT_EN
    return [Message("user", template.format(passage=passage, question=question))]


def parse_answer(text: str) -> str | None:
    """The answer of a reply to `answer_messages`: its first line, without an `A:` / `答：` label; None when empty."""
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if m := _ANSWER.match(line):
            line = m.group(1).strip()
        return line or None
    return None


def answer_candidates(answer: str) -> list[str]:
    """What to look for in the document, best first: the answer as written, without surrounding quotes and
    emphasis, without a trailing full stop or comma (the model ends its line with one; the passage may not)."""
    out = [answer.strip()]
    unquoted = answer.strip().strip(_QUOTES).strip()
    out.append(unquoted)
    out.append(unquoted.rstrip(_TRAILING).strip(_QUOTES).strip())
    return [a for a in dict.fromkeys(out) if a]


def reply_complete(text: str) -> bool:
    """Whether a reply streamed so far already holds a question and an answer line that has ended: the
    generation can stop (a small model goes on with a second question)."""
    reply = parse_reply(text)
    if reply is None:
        return False
    tail = text[text.rfind(reply.answer) + len(reply.answer) :] if reply.answer in text else ""
    return "\n" in tail
