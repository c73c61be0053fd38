"""A chat model asked, yes or no, whether a passage supports a sentence: the optional second opinion.

The claim check (rag.generate.claims) is deterministic and costs milliseconds; a model reads a
paraphrase the way a person does, and so can catch what the rules miss (on the labelled set: "GET is
identical to HEAD except that..." with the two methods swapped). It costs a model call per cited
sentence, so it is off unless a caller passes `model_judge(model)` as `check_grounding(judge=...)`,
and it can only take a green badge away, never give one (a model that says yes to everything changes
nothing). Meant for a GPU-served Ollama model; the embedded CPU models are too slow and too small to
be asked this.
"""

from __future__ import annotations

import re

from rag.generate.citations import Judge
from rag.generate.sentences import MARKER
from rag.llms.types import ChatModel, Message
from rag.scripts import language_of

SYSTEM_EN = (
    "You check citations. Given a passage and a sentence, say whether the passage states what the "
    "sentence says: the same people, the same relation between them, the same numbers, the same "
    "negation. Answer with one word: yes or no."
)
SYSTEM_ZH = (
    "你负责核对引用。给定一段资料和一句话，判断资料是否说了这句话所说的内容："
    "同样的人物、同样的关系、同样的数字、同样的肯定或否定。只回答一个字：是或否。"
)
QUESTION_EN = "Passage:\n{passage}\n\nSentence:\n{sentence}\n\nDoes the passage support the sentence? Answer yes or no."
QUESTION_ZH = "资料：\n{passage}\n\n句子：\n{sentence}\n\n资料是否支持这句话？只回答“是”或“否”。"

_YES = re.compile(r"(?:yes|true|supported|是|对|支持)", re.IGNORECASE)
_NO = re.compile(r"(?:no|false|not|否|不)", re.IGNORECASE)
_LEAD = re.compile(r"^[\s*#>\"'“「『(（:：-]+")
_DECIDED = 8
"""Characters of the answer read before the stream is closed: the verdict is the first word."""


def judge_messages(sentence: str, passage: str) -> list[Message]:
    """The two messages the model is asked with, in the sentence's language."""
    sentence = " ".join(MARKER.sub(" ", sentence).split())
    zh = language_of(sentence) == "zh"
    question = (QUESTION_ZH if zh else QUESTION_EN).format(passage=passage.strip(), sentence=sentence)
    return [Message("system", SYSTEM_ZH if zh else SYSTEM_EN), Message("user", question)]


def verdict(reply: str) -> bool | None:
    """True for a reply that opens with yes (是), False for no (否/不), None for anything else."""
    head = _LEAD.sub("", reply)
    if _NO.match(head):
        return False
    if _YES.match(head):
        return True
    return None


def ask_model(model: ChatModel, sentence: str, passage: str) -> bool | None:
    """Whether `model` says `passage` supports `sentence`; None when its reply is neither yes nor no.

    Greedy, and the stream is closed as soon as the first word is in (a thinking model's thinking is
    not read)."""
    reply = ""
    events = model.stream(judge_messages(sentence, passage), temperature=0.0)
    try:
        for event in events:
            if event.kind == "content":
                reply += event.text
                if len(reply.strip()) >= _DECIDED:
                    break
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()
    return verdict(reply)


def model_judge(model: ChatModel) -> Judge:
    """A `check_grounding(judge=...)` that asks `model`."""
    return lambda sentence, passage: ask_model(model, sentence, passage)
