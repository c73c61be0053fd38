"""Text for PostgreSQL full-text search that also works for Chinese.

PostgreSQL's parsers have no Chinese word segmentation (and the embedded server has neither
pg_trgm nor zhparser), so runs of CJK characters are indexed as overlapping character
bigrams: "检索质量" -> "检索 索质 质量". A query is turned into the same bigrams and matched
with OR, so any shared bigram counts and more shared bigrams rank higher.
"""
from __future__ import annotations

import re

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _bigrams(run: str) -> str:
    if len(run) == 1:
        return run
    return " ".join(run[i:i + 2] for i in range(len(run) - 1))


def search_text(content: str) -> str:
    """The text stored for indexing: CJK runs become bigrams, everything else is kept."""
    return _CJK.sub(lambda m: f" {_bigrams(m.group())} ", content)


def query_text(query: str) -> str:
    """A `websearch_to_tsquery` input that ORs every word and CJK bigram of the query.

    Only letters and digits survive, so no websearch operator (quotes, '-') can sneak in.
    """
    terms: list[str] = []
    for word in _WORD.findall(search_text(query)):
        if word.lower() != "or":
            terms.append(word)
    return " or ".join(dict.fromkeys(terms))
