"""Does a question depend on the conversation before it? And did a rewrite add the model's guess?

Rewriting every question that has a history spoiled standalone ones: "Which method must a server
support besides GET?" came back as "GET, POST" and was answered "POST" (asked in a new conversation:
HEAD). So only a question that cannot be understood alone is rewritten: one that points back (EN
pronouns and demonstratives, ZH 它/他/她/这/那/其/该…), one that is an ellipsis ("and in 2024?",
"what about Java?", "贾政呢？", "还有呢？") or one too short to stand alone ("Why?", "几岁？").

A rewrite is a query, not an answer: a word it adds that is found neither in the question nor in the
conversation came from the model, not from the user ("贾政的长女叫王熙凤。", "…:80"), and searching it
would search the model's guess. `added_words` finds them, so such a rewrite is refused.
Both rules are plain text rules: deterministic, microseconds, the same in every language the app
speaks (the tests list the questions each rule was written for).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rag.generate.figures import ZH_KIND_WORDS
from rag.generate.sentences import CLOSERS, MARKER
from rag.generate.support import HAN_FUNCTION, HAN_POINTING
from rag.scripts import CJK

_EN_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?|\d+(?:[.,:]\d+)*%?")
_CJK_RUN = re.compile(f"[{CJK}]+")
_CJK_CHAR = re.compile(f"[{CJK}]")

# -- English
_POINTING = frozenset(
    "it its itself they them their theirs themselves he him his himself she her hers herself "
    "this these those former latter".split()
)
"""Words that point back to something said before (a question about "it" is about the last answer)."""
_THAT = re.compile(r"\bthat(?:\s+[A-Za-z]+){0,2}\s*[?.!]*$|\bthat\s+(?:one|ones)\b", re.IGNORECASE)
""""that" points back near the end of a question ("Why is that?", "Where was that race held?") or before
"one"; followed by a clause it is a conjunction ("Is it true that the server must support HEAD?")."""
_DUMMY_IT = re.compile(
    r"\bit\s+(?:(?:is|was|be)\s+)?(?:true|possible|necessary|required|allowed|okay|ok|better|worse|"
    r"safe|normal|common|important|mandatory|recommended|worth|takes?|costs?)\b",
    re.IGNORECASE,
)
"""An "it" that stands for nothing said before: "Is it true that …", "How long does it take to …"."""
_EN_ELLIPSIS = re.compile(
    r"^\s*(?:and|but|so|then|also|or|what about|how about|what else|why not|how come|same for|"
    r"tell me more|more about|go on|continue|elaborate|explain (?:that|this|it|more|why)|"
    r"which one|the other|the first one|the second one|the last one|anything else|any other|"
    r"in what way|is that|was that|are those|were those|really)\b",
    re.IGNORECASE,
)
_QUESTION_WORDS = frozenset(
    "what who whom whose which where when why how is are was were do does did can could "
    "should would will may might must has have had".split()
)
_EN_FUNCTION = frozenset(
    """
a an the of in on at to for from by with about as into than then and or but if so not no nor be been being am is
are was were do does did done has have had having can could should would will shall may might must what who whom
whose which where when why how there here any some all each every more most much many other else too very just
only also such same one ones i me my we us our you your please tell show give explain describe know say said
""".split()
)

# -- Chinese
_ZH_POINTING = re.compile(
    r"它|(?<!其)他|她|(?<![极尤与])其(?![实他余次])|(?<!应)该(?=[\u4e00-\u9fff])|(?<![因如彼])此(?!外)|这|"
    r"那|上述|前者|后者|对方|二者|两者"
)
"""Pronouns and demonstratives: 它/他/她(们) (not 其他), 其/其中 (not 其实/尤其/极其/与其/其他/其余/其次),
该公司 (not 应该), 此人 (not 因此/如此/彼此/此外), 这/那…, 上述, 前者/后者."""
_ZH_ELLIPSIS = re.compile(r"^\s*(?:还有|另外|此外|然后|而且|并且|也|同样|具体|详细|接着|继续|所以|但是|可是|不过)")
"""Openings that go on from the last answer ("还有呢？", "另外一个是什么？"); "为什么…" and "怎么…" open
whole questions too ("为什么天空是蓝色的？"), so only the length rule takes a bare "为什么？"."""
_ZH_NO_SUBJECT = re.compile(
    r"^\s*(?:最(?![先初早后晚近终末]?[一二两三四五六七八九十几首]+[位个座名任次本条只家部届种间批群][^是在有叫被于为的，。？?])|"
    r"是(?!否)|在哪|在什么|有多少|有几|位于|建于|成立于|出生于|属于|来自|又|还|曾|被)"
)
"""A Chinese question that opens with its verb or an adverb has left its subject to the conversation
("最早是谁建造的？", "是谁写的？", "位于哪个城市？"); one that opens with 谁/什么/为什么 names it after them.
最 followed by a number, its measure word and a noun names its subject ("最后一位守塔人是谁？", taken for a
follow-up in the Chromium walk); "最后一次是什么时候？" does not."""
_ZH_TAIL = re.compile(r"呢\s*[?？。.!！]*\s*$")
_ZH_SHORT = 6
"""A question of this many Chinese characters or fewer that ends in 呢 is an ellipsis ("贾政呢？",
"第二个呢？"); a longer one is a whole question said softly ("林黛玉的父亲是谁呢？")."""
_ZH_ALONE = 3
"""A question of this many Chinese characters or fewer stands alone only rarely ("为什么？", "几岁？")."""


def _en_words(text: str) -> list[str]:
    return [w.lower() for w in _EN_WORD.findall(text)]


def _cjk_chars(text: str) -> str:
    return "".join(_CJK_CHAR.findall(text))


_NAME = re.compile(r"(?<=[A-Za-z0-9,;:)] )[A-Z][a-z]+(?:[ -][A-Z][a-z]+)*")
"""A capitalised name inside an English question (not its first word, which any word may be)."""


def names_its_subject(question: str, earlier: Iterable[str] = ()) -> bool:
    """Whether `question` names whom its opening phrase's pronouns point to: a name nothing `earlier` in the
    conversation writes, after a comma that follows every pronoun before it ("At her 80th birthday party, why did
    Thelma keep looking at a gentleman?" asked after questions about Ellen was taken for a follow-up in a Chromium
    walk, and searched with the questions about Ellen before it). Not "Why did she choose Englishtown?", whose "she"
    is someone the conversation named."""
    said = " ".join(earlier)
    for name in _NAME.finditer(question):
        if name.group().lower() in _POINTING or re.search(rf"\b{re.escape(name.group())}\b", said):
            continue
        head, tail = question[: name.start()], question[name.end() :]
        pointing = [m.end() for m in _EN_WORD.finditer(head) if m.group().lower() in _POINTING]
        # "…, what did Mary say to her?": a "her" after the name is someone else, whom the opening's "she" is too.
        others = [w for w in _en_words(tail) if w in _OBJECTS]
        return bool(pointing) and head.rfind(",") > pointing[-1] and not others
    return False


_OBJECTS = frozenset("him her them".split())


def depends_on_conversation(question: str, earlier: Iterable[str] = ()) -> bool:
    """Whether `question` needs the conversation before it (`earlier`: its messages' texts) to be understood (and so
    a rewrite)."""
    text = MARKER.sub(" ", question).strip()
    han = _cjk_chars(text)
    words = _en_words(text)
    if not han and not words:
        return True  # "?", "…": nothing to search
    if han:
        if _ZH_POINTING.search(text) or _ZH_ELLIPSIS.search(text) or _ZH_NO_SUBJECT.search(text):
            return True
        if _ZH_TAIL.search(text) and len(han) <= _ZH_SHORT:
            return True
        if len(han) <= _ZH_ALONE and not any(w not in _EN_FUNCTION for w in words):
            return True
    if words and len(han) < len(words):  # mostly English
        if _EN_ELLIPSIS.search(text) or _THAT.search(text):
            return True
        content = [w for w in words if w not in _EN_FUNCTION]
        dummy = len(_DUMMY_IT.findall(text))  # so many of the "it"s stand for nothing (the first ones, say)
        pointing: list[int] = []
        for i, word in enumerate(words):
            if word == "it" and dummy:
                dummy -= 1
            elif word in _POINTING:
                pointing.append(i)
        # "When was it built?", "What does the server do with it?" point back; in "How does HTTP
        # handle caching when it is disabled?" the "it" has its noun before it in the question.
        if pointing and (len(content) <= 3 or pointing[0] < len(words) / 2):
            return not names_its_subject(text, earlier)
        if not content:
            return True  # "Why?", "How so?"
        if len(content) == 1 and (content[0][0].isdigit() or words[0] not in _QUESTION_WORDS):
            return True  # "In 2024?", "Java?" (but "What is HNSW?" stands alone)
    return False


# Words a standalone query may add without adding a claim: they ask, they do not answer.
_QUERY_WORDS_EN = frozenset(
    """
information info detail details explain explanation describe description meaning mean means definition define
example examples list name names named called call year years date time type kind purpose reason role
question query regarding concerning according
""".split()
)
_QUERY_WORDS_ZH = (
    "叫什么",
    "叫做",
    "名叫",
    "是什么",
    "什么",
    "哪些",
    "哪个",
    "哪一",
    "哪里",
    "多少",
    "为什么",
    "怎么",
    "如何",
    "是谁",
    "谁",
    # Asking words of their own, said in other words by a rewrite: "华西医院何时建？" for "它是什么时候建的？"
    # was refused as adding "何时建" (a walk).
    "何时",
    "何地",
    "何处",
    "何人",
    "几时",
    "哪儿",
    "多久",
    "年份",
    "时间",
    "日期",
    "地点",
    "名字",
    "名称",
    "原因",
    "意思",
    "含义",
    "内容",
    "信息",
    "介绍",
    "详细",
    "具体",
    "关于",
    "有关",
    "相关",
    "问题",
)
_ZH_FUNCTION = HAN_FUNCTION | frozenset("吗呢吧啊有")
"""The support check's function characters, and the particles that end a question."""


def _en_key(word: str) -> str:
    """How English words are compared: numbers whole, words by their first four letters ("growth" meets
    "grow"; five letters missed it and refused "Revenue growth in 2024?" after "How much did revenue grow?")."""
    return word if word[0].isdigit() else word[:4]


def _en_known(texts: Iterable[str]) -> set[str]:
    return {_en_key(w) for text in texts for w in _en_words(text)}


_ASKS_FOR_EN = {
    "heav": "weight",
    "weig": "weight",
    "big": "size",
    "larg": "size",
    "smal": "size",
    "long": "length duration",
    "tall": "height",
    "high": "height",
    "wide": "width",
    "deep": "depth",
    "old": "age",
    "far": "distance",
    "fast": "speed",
    "quic": "speed",
    "expe": "price cost",
    "chea": "price cost",
    "cost": "price",
    "pric": "cost",
    "much": "price cost amount",
    "many": "number count",
    "ofte": "frequency",
    "wher": "location place",
}
"""The noun a question's word asks for (by its first four letters, `_en_key`): a rewrite of "How heavy is it?" as
"What is the weight of Model 5?" says it in other words, and a Chromium walk saw "weight" refused as the model's
own guess."""
_ASKS_FOR_ZH = {
    "多重": "重量 weight",
    "多沉": "重量 weight",
    "多少钱": "价格 售价 价钱 费用 price cost",
    "多贵": "价格 售价 价钱 price cost",
    "多大": "大小 尺寸 面积 规模 年龄 size age",
    "几岁": "年龄 age",
    "多长": "长度 时长 length duration",
    "多高": "高度 height",
    "多宽": "宽度 width",
    "多深": "深度 depth",
    "多远": "距离 distance",
    "多快": "速度 speed",
    "多久": "时间 期限 时长 duration",
}
"""The same in Chinese: "它有多重？" rewritten "…的重量是多少？" keeps its question (the walk's was taken for the
question before it asked again); with the English nouns, for a Chinese follow-up in an English conversation
rewritten in English ("它有多重？" after questions on Model 5: "Model 5 weight?", `rewrite.other_script`)."""


def asked_for(question: str) -> str:
    """The nouns `question`'s words ask for ("weight" of "How heavy is it?", 重量 of "它有多重？"), as one text."""
    words = [
        _ASKS_FOR_EN[key] for key in dict.fromkeys(map(_en_key, _en_words(question.lower()))) if key in _ASKS_FOR_EN
    ]
    words += [nouns for phrase, nouns in _ASKS_FOR_ZH.items() if phrase in question]
    return " ".join(words)


def added_words(rewrite: str, question: str, history: Iterable[str]) -> list[str]:
    """The words of `rewrite` found neither in `question` nor in the `history` texts, nor among the nouns the question
    asks for (`asked_for`): the model's own (English words compared by their first four letters, so "servers"
    meets "server"; numbers whole; Chinese as character pairs, a pair that only joins two known words being no new
    word)."""
    said = [question, *history, asked_for(question)]
    added: list[str] = []
    known_en = _en_known(said)
    stripped = MARKER.sub(" ", rewrite)
    for word in _en_words(stripped):
        if word in _EN_FUNCTION or word in _QUERY_WORDS_EN:
            continue
        if _en_key(word) not in known_en and word not in added:
            added.append(word)
    for phrase in _QUERY_WORDS_ZH:
        stripped = stripped.replace(phrase, " ")
    known_text = "\n".join(said)
    known_chars = set(_cjk_chars(known_text))
    for run in _CJK_RUN.findall(stripped):
        for word in _new_in_run(run, known_text, known_chars):
            if word not in added:
                added.append(word)
    return added


def _new_in_run(run: str, known_text: str, known_chars: set[str]) -> list[str]:
    """The new words of a run of Chinese characters: a run of character pairs never said that holds a
    character never said ("王熙凤" where nobody named her, "贾赦") or is two pairs or longer ("熙凤" said
    only as "王熙" and "凤姐"); one lone pair of said characters is the seam between two said words
    ("故宫哪一年": "宫哪")."""

    def new(c: str) -> bool:
        return c not in known_chars and c not in _ZH_FUNCTION

    unknown = [run[i : i + 2] not in known_text and not set(run[i : i + 2]) & _ZH_FUNCTION for i in range(len(run) - 1)]
    words: list[str] = []
    covered: set[int] = set()
    start = None
    for i, flag in enumerate([*unknown, False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            word = run[start : i + 1]
            if i - start >= 2 or any(new(c) for c in word):
                # Shown without a character it shares with a said pair at either end: "手机" of "手机重量" where
                # 重量 was said, not "手机重".
                first = start + (start > 0 and i - start >= 2 and not new(run[start]))
                last = i - (i < len(run) - 1 and i - first >= 2 and not new(run[i]))
                words.append(run[first : last + 1])
                covered.update(range(start, i + 1))
            start = None
    # A new character between function characters ("的赦是") is in no pair that is checked.
    words += [c for i, c in enumerate(run) if new(c) and i not in covered]
    return words


KEPT = 0.5
"""The share of the question's own words a rewrite must keep: Qwen 1.5B rewrote "What does it return?"
as "HEAD" and "她的母亲是谁？" as "贾母" (its answers, and 贾母 a wrong one) from words of the conversation."""


def _asked_terms(text: str) -> set[str]:
    """What a question asks about in its own words: English words (by `_en_key`) and Chinese character pairs,
    without function words, pointing words and the words that only ask (citation markers left out)."""
    text = MARKER.sub(" ", text)
    terms = {
        _en_key(w) for w in _en_words(text) if w not in _EN_FUNCTION and w not in _POINTING and w not in _QUERY_WORDS_EN
    }
    for phrase in _QUERY_WORDS_ZH:
        text = text.replace(phrase, " ")
    skip = _ZH_FUNCTION | HAN_POINTING
    for run in _CJK_RUN.findall(text):
        terms.update(run[i : i + 2] for i in range(len(run) - 1) if not set(run[i : i + 2]) & skip)
    return terms


def asks_only(question: str) -> bool:
    """Whether `question` asks without a word of its own ("Why?", "How so?", "Why is that?", "为什么会这样？"): it asks
    about what the answer before it said. One that points at a person or a thing ("Where is it?", "它在哪里？") asks
    about that."""
    if _asked_terms(question) - {"that"} or _ZH_PERSONAL.search(question):
        return False
    return not any(word in _POINTING - _DEMONSTRATIVES for word in _en_words(MARKER.sub(" ", question)))


ABOUT_THE_LAST = 0.5
"""The share of its own words a rewrite of a question asking without words of its own ("Why?") takes from the
exchange before it."""


def about_another_exchange(rewrite: str, question: str, last: str) -> bool:
    """Whether `rewrite`, made of a question asking without words of its own ("why?", `asks_only`), asks about
    something else than the exchange before it (`last`: that question, what it was searched with and what its answer
    said with a source): fewer than `ABOUT_THE_LAST` of the rewrite's own words are there. A Chromium walk saw
    "why?" after "What do people do on Red Wednesday in Iran?" rewritten "Why did Thelma keep looking at a
    gentleman?" (a question two turns before), and after an answer that ran on, uncited, into the next passage,
    "Why is the Quebec Winter Carnival popular?": both searched, the passage on Red Wednesday left out."""
    if not asks_only(question):
        return False
    own = _asked_terms(rewrite)
    if not own:
        return False
    known, text = _asked_terms(last), last.lower()
    return sum(term in known or term in text for term in own) < ABOUT_THE_LAST * len(own)


def states_answer(rewrite: str, question: str) -> bool:
    """Whether `rewrite` is a statement where `question` asks (it asks with a question word; the rewrite has none, nor
    a question mark, and ends as a sentence does): the model answered ("1959年陈布雷住过美庐别墅。" for "1959年谁在
    那里住过？", a walk: searched, and the answer named whom the model had guessed). A query in keywords ("美庐别墅
    建成年份") ends with no full stop."""
    if not _asking_words(question) or _ASKING.search(rewrite):
        return False
    return rewrite.rstrip().rstrip(CLOSERS).endswith(_SENTENCE_ENDS)


_SENTENCE_ENDS = (".", "。", "!", "！")


_DEMONSTRATIVES = frozenset("this these those".split())
"""Pointing words that may point at what an answer said ("Why is this?")."""


_ASKING = re.compile(
    r"[?？]|\b(?:what|who|whom|whose|which|when|where|why|how)\b|谁|什么|哪|何|几|多少|吗|怎|是否", re.IGNORECASE
)


def keeps_question(rewrite: str, question: str) -> bool:
    """Whether `rewrite` still asks what `question` asks: it asks something itself ("美庐别墅的名称由何而来？"
    for "它是怎么得名的？" says it in other words), or it holds at least KEPT of the question's own words (a
    question of no such words, "Why?", has nothing to lose)."""
    if _ASKING.search(rewrite):
        return True
    asked = _asked_terms(question)
    if not asked:
        return True
    kept = _asked_terms(rewrite)
    # A pair may come back split by the words the rewrite put in ("年建成" -> "故宫建成年份"): look in its text too.
    found = sum(term in kept or term in rewrite.lower() for term in asked)
    return found >= KEPT * len(asked)


# What a question asks for, by the words it asks with; a rewrite may ask the same by a noun ("故宫建成年份" for
# "它是哪一年建成的？").
_KINDS: tuple[tuple[str, re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (kind, re.compile(asks, re.IGNORECASE), re.compile(nouns, re.IGNORECASE))
    for kind, asks, nouns in (
        (
            "time",
            r"什么时候|何时|哪一?年|哪一天|几月|几号|几点|\bwhen\b|\bwhat (?:year|date|time|day|month)\b",
            r"时间|时候|年份|年代|日期|年|\b(?:year|date|time|when)\b",
        ),
        ("place", r"哪里|哪儿|何处|何地|在哪|\bwhere\b", r"地点|位置|地址|地方|所在|哪|\b(?:location|place|address)\b"),
        ("person", r"谁|何人|\bwho(?:m|se)?\b", r"人|者|\b(?:person|people|name|who)\b"),
        (
            "amount",
            r"多少|几(?:个|位|次|种|件|岁|名|天)|\bhow (?:many|much|old)\b",
            r"数量|数目|多少|几|\b(?:number|amount|count|how many|how much)\b",
        ),
    )
)


def _asked_kinds(question: str) -> set[str]:
    """The kinds of thing `question` asks for by its asking words (`_KINDS`: "time", "place", "person", "amount")."""
    return {kind for kind, asks, _nouns in _KINDS if asks.search(question)}


def asks_another_kind(rewrite: str, question: str) -> bool:
    """Whether `rewrite` asks for another kind of thing than `question` (a time, a place, a person, an amount) and
    names none of it: a walk's "它是什么时候建的？" after "华西医院的前身是什么？" was rewritten "华西协合大学的前身是
    什么？", the question before it asked of its answer (its words all said, so nothing else refused it). A rewrite
    that asks nothing (an answer, a guess) is left to the checks that say so."""
    asked = _asked_kinds(question)
    if not asked or not _ASKING.search(rewrite):
        return False
    return not any(asks.search(rewrite) or nouns.search(rewrite) for kind, asks, nouns in _KINDS if kind in asked)


REPEATED = 2 / 3
"""The share of an earlier question's own words a rewrite holding none of the follow-up's is that question."""


def repeats_earlier(rewrite: str, question: str, earlier: Iterable[str]) -> bool:
    """Whether `rewrite` is one of the `earlier` questions asked again rather than `question` made whole:
    the same question words, none of the question's own added. The conversation bench saw Qwen 1.5B
    rewrite "How did they get there?" and "Back to the hurdler: what stopped him …?" both as the
    question before them, "When did the first people come to Hawaii?", and "那她的父亲呢？" as "元皇后是哪位
    帝王的皇后？"; the answers then answered the earlier question."""
    said = _asked_terms(rewrite)
    own = _asked_terms(question) | _asked_terms(asked_for(question))  # "重量" is "多重"'s, "weight" "heavy"'s
    asks = _asking_words(rewrite)
    for before in earlier:
        asked = _asked_terms(before)
        # It holds the earlier question's words (made whole: "…come there?" as "…come to Hawaii?") and
        # none of the words this question adds, and asks the same way: "Who built the Harbour Lighthouse?"
        # for "Who built it?" after "When was the Harbour Lighthouse built?" is the follow-up made whole
        # (a walk in Chromium saw it refused before the asking words were compared).
        # Asked another way, it is that question still where it adds nothing of its own and leaves out what this
        # one adds: "How heavy is it?" after "What does Model 3 cost?" rewritten "How much does the Model 3 cost?".
        if (
            asked
            and len(said & asked) >= REPEATED * len(asked)
            and not said & (own - asked)
            and (asks == _asking_words(before) or (own - asked and not said - asked))
        ):
            return True
    return False


_FIGURE = re.compile(r"\d{5,}|\d[.,:]\d|\d%")
"""A number that is an amount, a price or a share (a separator, a percent sign, five digits or more), not a year
or a count ("2023", "5")."""


def states_figure(rewrite: str, question: str, asked: Iterable[str]) -> list[str]:
    """The figures of `rewrite` when it asks nothing (no question word, no question mark) and holds figures the
    user never said (in `question` or the `asked` texts: earlier questions and what they were searched with):
    the figure came from an answer, so the rewrite states the answer rather than asks. The Chromium walk saw
    Qwen 1.5B rewrite "And Model 5?" as "Model 5 costs $21,000.00." (the figure of the answer before, which
    `added_words` lets pass because the conversation said it): searching it searches the answer. Where the
    question asks for a time or an amount, any number counts, a year too: "它是哪一年建成的？" rewritten
    "它建成于1959年。" (a year nobody said; a Chromium walk, session 38) states its answer."""
    if _ASKING.search(rewrite):
        return []
    said = {w for text in (question, *asked) for w in _en_words(MARKER.sub(" ", text))}
    asks_number = bool(_asked_kinds(question) & {"time", "amount"})
    figure = re.compile(r"\d") if asks_number else _FIGURE
    return [w for w in dict.fromkeys(_en_words(MARKER.sub(" ", rewrite))) if figure.search(w) and w not in said]


_ZH_PERSONAL = re.compile(r"它|(?<!其)他(?![人])|她")
_EN_PERSONAL = frozenset("it its itself they them their themselves he him his himself she her herself".split())


def keeps_pointing(rewrite: str, question: str) -> bool:
    """Whether `rewrite` points back as often as `question` does (它/他/她, it/he/she/they…): the model put in
    nothing they refer to, so it is no more standalone than the question. A walk saw "它是哪一年建成的？"
    rewritten "它建成于哪一年？" and used: searched together with the question it adds nothing, where the question
    before it names the subject."""

    def pointing(text: str) -> int:
        text = MARKER.sub(" ", text)
        english = sum(w in _EN_PERSONAL for w in _en_words(text)) - len(_DUMMY_IT.findall(text))  # "does it take"
        return len(_ZH_PERSONAL.findall(text)) + english

    asked = pointing(question)
    # A pronoun after the name the rewrite puts in as its subject points to it: "What did Ellen Rema do after finishing
    # all her courses?" for "And what did she do after that?" was refused (a Chromium walk). Only there: "After
    # Englishtown, what did she do after that?" names a place, and its "she" is the question's.
    named = _SUBJECT.match(rewrite)
    if named is not None and named.group(1) in question:
        named = None
    return asked > 0 and pointing(rewrite if named is None else rewrite[: named.start(1)]) >= asked


_SUBJECT = re.compile(
    r"\s*(?i:what|why|how|when|where|which|who(?:m)?)(?:\s+[a-z]+)?\s+(?i:did|does|do|is|was|were|are|has|had|have|"
    r"will|would|can|could)\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b"
)
"""A question's subject as a name after its question word and auxiliary ("What did Ellen Rema …", "How many years did
Ellen …")."""


_NUMBERED = re.compile(r"\b([A-Za-z][A-Za-z-]+)\s+(\d{1,4}[A-Za-z]?)\b")
"""A thing named by a word and a number: "Model 5", "Phase 2", "version 3b"."""
_ZH_NAMED = re.compile(f"({'|'.join(ZH_KIND_WORDS)})\\s*(\\d{{1,4}}[A-Za-z]?)(?![.,:]?\\d)")
"""A thing named in Chinese by a word that names one of a kind and a number ("型号5", "方案 2"), not an amount
("售价18,500元", "重量80公斤")."""


_ORDER_WORDS = re.compile(
    r"\b(?:first|second|third|last|previous|earlier|former|latter|other|next|before|each|both|all)\b", re.IGNORECASE
)


_ZH_ORDER_WORDS = re.compile(r"第|另|其[他它余]|[上下前后][一者]|们|两|每|所有|各|哪[个款些种]|都")
"""The Chinese for "the second", "the other", "the one before", "they", "both", "each", "all", "which one": a
question with one of them asks of more than one thing ("它们有什么区别？") or of another one."""


def _points_back(question: str) -> bool:
    """Whether `question` only points back at what it asks of: it names no number of its own and no order ("the
    first", "the other"; 第二个, 另一款, 它们)."""
    return not (re.search(r"\d", question) or _ORDER_WORDS.search(question) or _ZH_ORDER_WORDS.search(question))


def _numbered(text: str) -> list[tuple[str, str]]:
    found = [(w.lower(), n.lower()) for w, n in _NUMBERED.findall(text) if w.lower() not in _EN_FUNCTION]
    return found + [(w, n.lower()) for w, n in _ZH_NAMED.findall(text)]


def latest_numbered(rewrite: str, question: str, history: Sequence[str]) -> str:
    """`rewrite` with each thing it names by a number ("Model 4") that the question does not name set to the number
    the conversation named last for that word ("Model 5"), where the question only points back ("How heavy is
    it?": no number, no "first"/"other"/"last" of its own) and the last message naming the word names one number.
    Two walks asked "How much does Model 4 cost?", "And Model 5?", "What is the warranty?", "How heavy is it?"
    and Qwen 1.5B rewrote the last as "What is the weight of Model 4?": "it" is the thing spoken of last."""
    if not _points_back(question):
        return rewrite
    out = rewrite
    for word, number in dict.fromkeys(_numbered(rewrite)):
        for text in reversed(history):
            named = {n for w, n in _numbered(text) if w == word}
            if named:
                if len(named) == 1 and number not in named:
                    (latest,) = named
                    # "Model 4" is a word, a space and a number; "型号4" has no space and no word boundary inside.
                    pattern = (
                        rf"\b({re.escape(word)})(\s+){re.escape(number)}\b"
                        if word.isascii()
                        else rf"({re.escape(word)})(\s*){re.escape(number)}(?![0-9A-Za-z])"
                    )
                    out = re.sub(pattern, rf"\g<1>\g<2>{latest}", out, flags=re.IGNORECASE)
                break
    return out


_NAMED = re.compile(r"\b([A-Z][A-Za-z-]+)\s+(\d{1,4}[A-Za-z]?)\b(?![.,:]\d)")
"""A thing named by a capitalised word and a number ("Model 5", "Phase 2"), not an amount ("costs 18,500")."""


def named_things(text: str) -> dict[tuple[str, str], str]:
    """The things `text` names by a capitalised word and a number ("Model 5"), or by a Chinese word that names one
    of a kind and a number ("型号5"), by their lowercase parts."""
    named = {(w.lower(), n.lower()): f"{w} {n}" for w, n in _NAMED.findall(text) if w.lower() not in _EN_FUNCTION}
    named.update(((w, n.lower()), f"{w}{n}") for w, n in _ZH_NAMED.findall(text))
    return named


def last_named(question: str, earlier: Sequence[tuple[str, str]]) -> str:
    """The thing the latest earlier question naming one named by a word and a number ("Model 5"), where `question`
    only points back (no number, no "first"/"other"/"last") and that question names one such thing; "" otherwise.
    `earlier`: each earlier question, oldest first, as asked and as searched ("" when not known); the words asked
    count first ("And Model 5?"), the search where they name none ("And the next one?" searched as "How much does
    Model 5 cost?"). A refused rewrite's search adds it: the walk's "How heavy is it?" after "What is the
    warranty?" was searched with the warranty question alone and answered for another model."""
    if not _points_back(question):
        return ""
    for asked, searched in reversed(earlier):
        named = named_things(asked) or named_things(searched)
        if named:
            return next(iter(named.values())) if len(named) == 1 else ""
    return ""


def _asking_words(text: str) -> set[str]:
    """The words a question asks with ("who", "when", 谁, 哪…), without its question mark."""
    return {m.lower() for m in _ASKING.findall(MARKER.sub(" ", text))} - {"?", "？"}
