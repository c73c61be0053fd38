"""Routes: which tools and how big a budget a question gets (the seed's `route-tools`).

Three routes by default: `chit-chat` (no tools, budget 0) for greetings, thanks and small talk;
`default` (the knowledge-base search and web search, budget 6); `expert` (every tool, MCP
servers' included, budget 12). A `routes.toml` (or RAG_ROUTES_FILE) replaces them:

    [routes.default]
    tools = ["search_knowledge_base", "web_search"]
    budget = 6
    description = "Questions about the documents, and what the web says"

    [routes.expert]
    tools = ["*"]            # every tool offered, MCP servers' included
    budget = 12
    keywords = ["in depth", "详细分析"]   # a question holding one of these takes this route

The router takes the rules first: a greeting, thanks or small talk (English and Chinese) goes to
`chit-chat`, a question holding a route's keyword to that route, everything else to `default`; the
user can force a route in the chat page or with `route=`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.errors import RagError
from rag.text import Text

CHIT_CHAT = "chit-chat"
DEFAULT = "default"
EXPERT = "expert"
ALL_TOOLS = "*"
AUTO = "auto"


@dataclass(frozen=True)
class Route:
    name: str
    tools: tuple[str, ...]
    """Tool names this route offers; '*' offers every tool."""
    budget: int
    description: str = ""
    keywords: tuple[str, ...] = ()

    def offers(self, tool_name: str) -> bool:
        return ALL_TOOLS in self.tools or tool_name in self.tools


DEFAULT_ROUTES: tuple[Route, ...] = (
    # Text: the Tools page shows them in the user's language (a routes.toml's own are shown as written).
    Route(CHIT_CHAT, (), 0, Text("Greetings, thanks and small talk: answered without tools")),
    Route(DEFAULT, ("search_knowledge_base", "web_search"), 6, Text("The knowledge base and the web")),
    Route(EXPERT, (ALL_TOOLS,), 12, Text("Every tool, MCP servers' included, with a larger budget")),
)


@dataclass(frozen=True)
class RouteChoice:
    route: Route
    reason: str
    """Why this route: 'chosen by you', 'a greeting', 'keyword "in depth"', 'the default'."""


_SMALL_TALK = re.compile(
    r"^\s*(?:(?:hi|hello|hey|good (?:morning|afternoon|evening)|thanks?|thank you|thx|cheers|bye|goodbye|"
    r"see you|how are you|who are you|what can you do|ok(?:ay)?|great|cool|nice)\b[\s\w,'!.?]{0,30}|"
    r"(?:你好|您好|嗨|哈喽|早上好|下午好|晚上好|谢谢|多谢|感谢|再见|拜拜|你是谁|你能做什么|好的|不错|厉害)[\s\S]{0,12})"
    r"[\s!！.。?？~～]*$",
    re.IGNORECASE,
)


def is_small_talk(question: str) -> bool:
    """A greeting, thanks or small talk, not a question about anything (short, and starting so)."""
    text = question.strip()
    return bool(text) and len(text) <= 60 and bool(_SMALL_TALK.match(text))


def load_routes(path: Path | None) -> tuple[Route, ...]:
    """The routes of `path` (a routes.toml), or the defaults when there is none. A file that does not
    parse, or a route without a valid budget, is a RagError naming the file and the route."""
    if path is None or not path.exists():
        return DEFAULT_ROUTES
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RagError(Text("{path}: cannot read the routes ({error})", path=str(path), error=str(exc))) from None
    except tomllib.TOMLDecodeError as exc:
        raise RagError(Text("{path}: not valid TOML ({error})", path=str(path), error=str(exc))) from None
    table = data.get("routes")
    if not isinstance(table, dict) or not table:
        raise RagError(Text("{path}: no [routes.NAME] tables (see routes.example.toml)", path=str(path)))
    routes = []
    for name, spec in table.items():
        if not isinstance(spec, dict):
            raise RagError(Text("{path}: routes.{name} must be a table", path=str(path), name=name))
        budget = spec.get("budget", 6)
        if not isinstance(budget, int) or isinstance(budget, bool) or not 0 <= budget <= 100:
            raise RagError(
                Text(
                    "{path}: routes.{name}.budget must be a whole number from 0 to 100, got {budget}",
                    path=str(path),
                    name=name,
                    budget=repr(budget),
                )
            )
        tools = spec.get("tools", [])
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise RagError(
                Text('{path}: routes.{name}.tools must be a list of tool names (or ["*"])', path=str(path), name=name)
            )
        keywords = spec.get("keywords", [])
        if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
            raise RagError(Text("{path}: routes.{name}.keywords must be a list of words", path=str(path), name=name))
        routes.append(
            Route(
                str(name),
                tuple(tools),
                budget,
                str(spec.get("description", "")),
                tuple(k.lower() for k in keywords if k.strip()),
            )
        )
    if not any(r.name == DEFAULT for r in routes):
        raise RagError(Text("{path}: a route named 'default' is needed (the one most questions take)", path=str(path)))
    return tuple(routes)


def pick_route(question: str, routes: Sequence[Route], forced: str | None = None) -> RouteChoice:
    """The route for a question: `forced` (a route name; 'auto' or None: the rules) if given, else a
    chit-chat route for small talk, a route whose keyword the question holds, else 'default'."""
    by_name = {r.name: r for r in routes}
    if forced and forced != AUTO:
        if forced not in by_name:
            raise RagError(
                Text("no route named {route} (routes: {routes})", route=repr(forced), routes=", ".join(by_name))
            )
        return RouteChoice(by_name[forced], Text("chosen by you"))
    if CHIT_CHAT in by_name and is_small_talk(question):
        return RouteChoice(by_name[CHIT_CHAT], Text("small talk: no tools needed"))
    lowered = question.lower()
    for route in routes:
        hit = next((k for k in route.keywords if k in lowered), None)
        if hit:
            return RouteChoice(route, Text("the question holds {keyword}", keyword=repr(hit)))
    return RouteChoice(by_name[DEFAULT], Text("the default route"))
