"""`web_search`: a tool backed by a search-enabled sub-model ("LLM as search tool", as the seed runs it).

No search API: the query goes to a second model on an OpenAI-compatible endpoint
(`RAG_WEB_SEARCH_URL` + `/chat/completions`) with the vendor's private body flag merged in at the
top level (`RAG_WEB_SEARCH_EXTRA_BODY`, default `{"enable_search": true}` for Qwen / DashScope),
under a system prompt that makes it a search assistant. Plain HTTP on purpose: frameworks drop
vendor fields. Its reply is parsed into items with URLs, which the chat shows as web sources.

Failure never blocks the answer: a timeout, an error status or a reply that cannot be read gives
the model "web search is unavailable right now; answer from the local knowledge and say so" (in
the language of the query), and the turn a warning. The API key goes into the Authorization
header and nowhere else: not into a log line, an exception text or anything the model reads.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from rag.agent.tools import ToolOutput, compact
from rag.scripts import language_of
from rag.text import Text

if TYPE_CHECKING:
    from rag.settings import Settings

log = logging.getLogger(__name__)

WEB_SOURCE = "web"
NAME = "web_search"
MAX_ITEMS = 8

SEARCH_SYSTEM_PROMPT = (
    "You are a web search assistant. Search the web for the user's query and report what you found. "
    "Trust official sources first (government, regulators, courts, standards bodies, the organisation "
    "itself), then reputable media. Reply with a JSON array only, one object per result: "
    '{"summary": "what the page says about the query, in one or two sentences", "site": "the site\'s name", '
    '"url": "the full URL", "date": "the publication date as YYYY-MM-DD, or empty"}. '
    "If nothing official or reliable was found, reply [] and nothing else. Never invent a source, a URL "
    "or a date. Write the summaries in the language of the query."
)
UNAVAILABLE = {
    "en": "Web search is unavailable right now; answer from the local knowledge and say so.",
    "zh": "网络搜索暂时不可用；请根据本地知识回答，并说明这一点。",
}
NOTHING_FOUND = {
    "en": "The web search found no official or reliable source for this query.",
    "zh": "网络搜索没有找到关于这个问题的官方或可靠来源。",
}
_URL = re.compile(r"https?://[^\s<>\"')\]]+")
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class WebItem:
    url: str
    summary: str = ""
    site: str = ""
    date: str = ""

    @property
    def title(self) -> str:
        return self.site or re.sub(r"^https?://(www\.)?", "", self.url).split("/", 1)[0]


def parse_items(reply: str) -> list[WebItem]:
    """The results in the sub-model's reply: its JSON array (bare or in a ```json fence), or else
    one item per line that holds a URL. Items without an http(s) URL are dropped."""
    text = reply.strip()
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1)] if fenced else []
    start, end = text.find("["), text.rfind("]")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            data = data.get("results") or data.get("items") or []
        if isinstance(data, list):
            parsed = [_item(entry) for entry in data if isinstance(entry, Mapping)]
            return [item for item in parsed if item is not None][:MAX_ITEMS]
    items = []
    for line in text.splitlines():
        found = _URL.search(line)
        if found:
            summary = (line[: found.start()] + line[found.end() :]).strip(" -–—:|*•\t")
            items.append(WebItem(found.group(0).rstrip(".,;"), summary))
    return items[:MAX_ITEMS]


def _item(entry: Mapping[str, Any]) -> WebItem | None:
    url = str(entry.get("url") or entry.get("link") or "").strip()
    if not _URL.fullmatch(url):
        return None
    return WebItem(
        url,
        " ".join(str(entry.get("summary") or entry.get("snippet") or "").split()),
        str(entry.get("site") or entry.get("source") or "").strip(),
        str(entry.get("date") or "").strip(),
    )


class WebSearchTool:
    """The `web_search` AgentTool; `available()` says whether the environment configures it."""

    name = NAME
    source = WEB_SOURCE
    read_only = True
    description = (
        "Search the web (through a search-enabled model) for recent or public information that "
        "the knowledge base does not hold: laws, regulations, news, official announcements. "
        "Returns results with a summary, the site, the URL and the date."
    )
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to search the web for, in the user's language"}
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def __init__(
        self, url: str, model: str, api_key: str | None, extra_body: Mapping[str, Any], timeout: float = 30.0
    ) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self._api_key = api_key
        self.extra_body = dict(extra_body)
        self.timeout = timeout

    def __repr__(self) -> str:  # never the key
        return f"WebSearchTool(url={self.url!r}, model={self.model!r})"

    @classmethod
    def from_settings(cls, settings: Settings) -> WebSearchTool | None:
        if not settings.web_search_url:
            return None
        return cls(
            settings.web_search_url,
            settings.web_search_model,
            settings.web_search_api_key,
            settings.extra_body(),
            settings.web_search_timeout,
        )

    def request_body(self, query: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": SEARCH_SYSTEM_PROMPT}, {"role": "user", "content": query}],
            "stream": False,
        }
        body.update(self.extra_body)  # at the top level, where the vendor reads its flags
        return body

    def call(self, arguments: Mapping[str, Any], timeout: float) -> ToolOutput:
        query = str(arguments.get("query") or "").strip()
        language = language_of(query)
        if not query:
            return ToolOutput("Error: give the query to search the web for.", is_error=True)
        reply, problem = self._ask(query, min(timeout, self.timeout))
        if problem:
            log.warning("web search unavailable: %s", problem)
            return ToolOutput(UNAVAILABLE[language], data={"query": query, "items": [], "unavailable": problem})
        items = parse_items(reply)
        data = {"query": query, "items": [asdict(i) for i in items], "unavailable": None}
        if not items:
            return ToolOutput(NOTHING_FOUND[language], data=data)
        return ToolOutput(compact({"query": query, "results": data["items"]}), data=data)

    def _ask(self, query: str, timeout: float) -> tuple[str, str]:
        """(the sub-model's reply, '') or ('', why it failed in a few words without any secret)."""
        import httpx

        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        try:
            response = httpx.post(
                f"{self.url}/chat/completions", json=self.request_body(query), headers=headers, timeout=timeout
            )
        except httpx.TimeoutException:
            return "", Text("no answer within {seconds} s", seconds=f"{timeout:g}")
        except httpx.HTTPError as exc:
            return "", Text("cannot reach the search endpoint ({error})", error=type(exc).__name__)
        if response.status_code != 200:
            return "", Text("the search endpoint answered HTTP {status}", status=response.status_code)
        try:
            payload = response.json()
            content = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            return "", Text("the search endpoint's reply is not an OpenAI chat completion")
        if not isinstance(content, str):
            return "", Text("the search endpoint's reply has no text")
        return content, ""
