"""web_search through a search-enabled sub-model, against an OpenAI-compatible stand-in
(pytest-httpserver): the exact request, the replies it can get (results, 500, a timeout, garbage),
the key kept out of everything but the Authorization header; the routes; and the agent loop
with both kinds of source."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from rag.agent import Agent, KnowledgeBaseSearchTool, refusal_text
from rag.agent.routes import CHIT_CHAT, DEFAULT, DEFAULT_ROUTES, EXPERT, Route, is_small_talk, load_routes, pick_route
from rag.agent.websearch import (
    NOTHING_FOUND,
    SEARCH_SYSTEM_PROMPT,
    UNAVAILABLE,
    WebItem,
    WebSearchTool,
    language_of,
    parse_items,
)
from rag.errors import RagError
from rag.generate.agent_turn import web_sources
from rag.generate.kb_tools import KnowledgeBaseTools
from rag.settings import Settings
from tests.agent.test_agent import KB, MODEL, bodies, call, handbook, host_of, reply, script  # noqa: F401

KEY = "sk-test-7f3c9a1b2e"
SEARCH_MODEL = "qwen-plus"
RESULTS = [
    {
        "summary": "The State Council published the revised Labour Contract Law on 1 July 2024.",
        "site": "gov.cn",
        "url": "https://www.gov.cn/zhengce/2024-07/01/content_123.htm",
        "date": "2024-07-01",
    },
    {
        "summary": "A commentary on the revision.",
        "site": "Xinhua",
        "url": "https://www.news.cn/legal/abc.htm",
        "date": "",
    },
]


def completion(content: str) -> dict[str, Any]:
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "model": SEARCH_MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }


@pytest.fixture
def search_server() -> Iterator[HTTPServer]:
    """A second stand-in (the first, `httpserver`, plays Ollama)."""
    server = HTTPServer()
    server.start()
    yield server
    server.clear()
    server.stop()


def tool_for(server: HTTPServer, timeout: float = 5.0, extra: dict[str, Any] | None = None) -> WebSearchTool:
    return WebSearchTool(
        server.url_for("/v1"), SEARCH_MODEL, KEY, {"enable_search": True} if extra is None else extra, timeout
    )


def test_the_request_is_the_seeds_body_with_the_key_in_the_header_only(search_server: HTTPServer) -> None:
    search_server.expect_request("/v1/chat/completions", method="POST").respond_with_json(
        completion("```json\n" + json.dumps(RESULTS, ensure_ascii=False) + "\n```")
    )
    tool = tool_for(search_server, extra={"enable_search": True, "search_options": {"forced_search": True}})
    output = tool.call({"query": "劳动合同法 修订 2024"}, timeout=10)
    ((request, _),) = search_server.log
    body = json.loads(request.get_data())
    assert body == {
        "model": SEARCH_MODEL,
        "messages": [
            {"role": "system", "content": SEARCH_SYSTEM_PROMPT},
            {"role": "user", "content": "劳动合同法 修订 2024"},
        ],
        "stream": False,
        "enable_search": True,  # merged at the top level, where DashScope reads it
        "search_options": {"forced_search": True},
    }
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert KEY not in request.get_data(as_text=True) and KEY not in request.full_path
    assert not output.is_error and output.data is not None and output.data["unavailable"] is None
    assert [i["url"] for i in output.data["items"]] == [r["url"] for r in RESULTS]
    assert json.loads(output.text)["results"][0]["site"] == "gov.cn"
    assert KEY not in output.text and KEY not in repr(tool)


def _slow(request: Request) -> Response:
    time.sleep(1.5)
    return Response(json.dumps(completion("[]")), content_type="application/json")


@pytest.mark.parametrize(
    ("respond", "problem"),
    [
        (lambda s: s.respond_with_data("upstream exploded", status=500), "the search endpoint answered HTTP 500"),
        (lambda s: s.respond_with_handler(_slow), "no answer within 0.5 s"),
        (
            lambda s: s.respond_with_data("<html>not json</html>", content_type="text/html"),
            "the search endpoint's reply is not an OpenAI chat completion",
        ),
        (
            lambda s: s.respond_with_json({"choices": []}),
            "the search endpoint's reply is not an OpenAI chat completion",
        ),
    ],
)
def test_a_failing_endpoint_gives_the_fallback_in_the_querys_language(
    search_server: HTTPServer, respond, problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    respond(search_server.expect_request("/v1/chat/completions", method="POST"))
    tool = tool_for(search_server, timeout=0.5)
    with caplog.at_level(logging.DEBUG):
        english = tool.call({"query": "labour law revision 2024"}, timeout=10)
        chinese = tool.call({"query": "劳动合同法今年修订了吗"}, timeout=10)
    assert english.text == UNAVAILABLE["en"] and chinese.text == UNAVAILABLE["zh"]
    assert not english.is_error  # the turn goes on: the model answers from the knowledge base
    assert english.data is not None and english.data["unavailable"] == problem
    assert KEY not in caplog.text and problem in caplog.text


def test_an_unreachable_endpoint_and_no_results(search_server: HTTPServer) -> None:
    dead = WebSearchTool(f"http://127.0.0.1:{_free_port()}/v1", SEARCH_MODEL, KEY, {}, 2.0)
    output = dead.call({"query": "anything"}, timeout=5)
    assert output.text == UNAVAILABLE["en"] and KEY not in json.dumps(output.data)
    assert output.data is not None and output.data["unavailable"].startswith("cannot reach the search endpoint")
    search_server.expect_request("/v1/chat/completions").respond_with_json(completion("[]"))
    none = tool_for(search_server).call({"query": "官方 文件"}, timeout=5)
    assert none.text == NOTHING_FOUND["zh"] and none.data is not None and none.data["items"] == []


def _free_port() -> int:
    from tests.conftest import dead_port

    return dead_port()


def test_replies_are_parsed_into_items_with_urls() -> None:
    assert parse_items(json.dumps(RESULTS))[0] == WebItem(
        RESULTS[0]["url"], RESULTS[0]["summary"], "gov.cn", "2024-07-01"
    )
    assert parse_items('Here you go: {"results": [{"link": "https://a.example/x", "snippet": "A"}]}') == [
        WebItem("https://a.example/x", "A")
    ]
    lines = "1. Official notice - https://www.gov.cn/a.htm\n2. No link here\n- https://b.example/page."
    assert [i.url for i in parse_items(lines)] == ["https://www.gov.cn/a.htm", "https://b.example/page"]
    assert parse_items('[{"url": "javascript:alert(1)", "summary": "x"}, {"summary": "no url"}]') == []
    assert WebItem("https://www.news.cn/legal/abc.htm").title == "news.cn"
    assert language_of("劳动合同法今年修订了吗") == "zh" and language_of("Is the 劳动法 new?") == "en"


def test_settings_configure_the_tool_and_never_show_the_key() -> None:
    settings = Settings.from_env(
        {
            "RAG_WEB_SEARCH_URL": "https://dashscope.example/compatible-mode/v1/",
            "RAG_WEB_SEARCH_MODEL": "qwen-plus",
            "RAG_WEB_SEARCH_API_KEY": KEY,
        }
    )
    tool = WebSearchTool.from_settings(settings)
    assert tool is not None and tool.url == "https://dashscope.example/compatible-mode/v1"
    assert tool.extra_body == {"enable_search": True}
    assert KEY not in repr(settings) and KEY not in repr(tool)
    assert WebSearchTool.from_settings(Settings.from_env({})) is None
    with pytest.raises(ValueError, match="RAG_WEB_SEARCH_EXTRA_BODY is not JSON"):
        Settings.from_env({"RAG_WEB_SEARCH_EXTRA_BODY": "{enable_search: true}"})


# -- routes -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "route", "reason"),
    [
        ("Hello!", CHIT_CHAT, "small talk: no tools needed"),
        ("thanks a lot", CHIT_CHAT, "small talk: no tools needed"),
        ("你好", CHIT_CHAT, "small talk: no tools needed"),
        ("谢谢！", CHIT_CHAT, "small talk: no tools needed"),
        (
            "Hello, when does the library close on Saturdays and who renews parking permits?",
            DEFAULT,
            "the default route",
        ),
        ("When does the library close?", DEFAULT, "the default route"),
        ("劳动合同法今年修订了吗？", DEFAULT, "the default route"),
    ],
)
def test_the_router_takes_small_talk_to_chit_chat_and_questions_to_the_default(
    question: str, route: str, reason: str
) -> None:
    choice = pick_route(question, DEFAULT_ROUTES)
    assert (choice.route.name, choice.reason) == (route, reason)


def test_routes_from_a_file_keywords_and_a_forced_route(tmp_path: Path) -> None:
    path = tmp_path / "routes.toml"
    path.write_text(
        '[routes.default]\ntools = ["search_knowledge_base"]\nbudget = 4\n\n'
        '[routes.expert]\ntools = ["*"]\nbudget = 12\nkeywords = ["in depth", "详细分析"]\n',
        encoding="utf-8",
    )
    routes = load_routes(path)
    assert [r.name for r in routes] == [DEFAULT, EXPERT]
    assert pick_route("Explain the permit rules in depth", routes).route.name == EXPERT
    assert pick_route("请详细分析这份合同", routes).reason == "the question holds '详细分析'"
    assert pick_route("Hi", routes).route.name == DEFAULT  # no chit-chat route in this file
    assert pick_route("Hi", routes, forced=EXPERT).reason == "chosen by you"
    with pytest.raises(RagError, match="no route named 'nope'"):
        pick_route("Hi", routes, forced="nope")
    assert load_routes(tmp_path / "missing.toml") == DEFAULT_ROUTES
    expert = routes[1]
    assert expert.offers("web_search") and expert.offers("any_mcp_tool") and not routes[0].offers("web_search")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[routes.default\n", "not valid TOML"),
        ("[routes.default]\nbudget = -1\n", "routes.default.budget must be a whole number from 0 to 100, got -1"),
        ('[routes.default]\ntools = "web_search"\n', "routes.default.tools must be a list"),
        ("[routes.expert]\nbudget = 12\n", "a route named 'default' is needed"),
    ],
)
def test_a_bad_routes_file_is_one_line_naming_it(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "routes.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RagError, match=message.replace("(", r"\(")) as caught:
        load_routes(path)
    assert str(caught.value).startswith(str(path))


def test_small_talk_is_short_and_starts_as_small_talk() -> None:
    assert is_small_talk("good morning :)") is False  # ':)' is not in the pattern: a question route then
    assert is_small_talk("How are you?") and not is_small_talk("How are the permits renewed?")


# -- the loop with both kinds of source ---------------------------------------------------------------


def test_the_default_route_searches_the_knowledge_base_and_the_web_then_refuses_past_its_budget(
    httpserver: HTTPServer,
    search_server: HTTPServer,
    handbook: KnowledgeBaseTools,  # noqa: F811 - the fixture imported above
) -> None:
    search_server.expect_request("/v1/chat/completions", method="POST").respond_with_json(
        completion(json.dumps(RESULTS, ensure_ascii=False))
    )
    answer = (
        "The library closes at nine on weekdays (notes.txt, p. 1); the revised law was published on "
        "1 July 2024 (gov.cn, https://www.gov.cn/zhengce/2024-07/01/content_123.htm)."
    )
    script(
        httpserver,
        reply("", call("search_knowledge_base", query="library closing time", knowledge_base=KB)),
        reply("", call("web_search", query="labour contract law revision 2024")),
        reply("", call("web_search", query="one more")),
        reply("", call("web_search", query="and another")),
        reply("", call("search_knowledge_base", query="again", knowledge_base=KB)),
        reply(answer),
    )
    tools = [KnowledgeBaseSearchTool(handbook, [KB]), tool_for(search_server)]
    route = next(r for r in DEFAULT_ROUTES if r.name == DEFAULT)
    agent = Agent(host_of(httpserver), MODEL, [t for t in tools if route.offers(t.name)], budget=2)
    result = agent.run("When does the library close, and what changed in labour law in 2024?")
    assert [s.status for s in result.steps] == ["ok", "ok", "refused", "refused", "refused"]
    assert result.stop_reason == "budget" and result.answer == answer
    assert result.steps[-1].result == refusal_text("search_knowledge_base", 2, 3)
    sent = bodies(httpserver)
    assert "call web_search and cite each web fact with its site and URL" in sent[0]["messages"][0]["content"]
    assert [t["function"]["name"] for t in sent[0]["tools"]] == ["search_knowledge_base", "web_search"]
    items, warning = web_sources(result.steps)
    assert [i.url for i in items] == [r["url"] for r in RESULTS] and warning == ""
    assert result.steps[0].data is not None and result.steps[0].data["hits"]  # the knowledge-base passages


def test_a_dead_search_endpoint_costs_one_warning_and_the_answer_still_comes(
    httpserver: HTTPServer, search_server: HTTPServer
) -> None:
    search_server.expect_request("/v1/chat/completions").respond_with_data("no", status=503)
    script(
        httpserver,
        reply("", call("web_search", query="labour law 2024")),
        reply("Web search is unavailable; from what I know locally, nothing changed."),
    )
    agent = Agent(host_of(httpserver), MODEL, [tool_for(search_server)], budget=6)
    result = agent.run("What changed in labour law in 2024?")
    assert result.stop_reason == "answered" and result.answer.startswith("Web search is unavailable")
    assert bodies(httpserver)[1]["messages"][-1] == {
        "role": "tool",
        "tool_name": "web_search",
        "content": UNAVAILABLE["en"],
    }
    items, warning = web_sources(result.steps)
    assert items == () and warning == (
        "Web search was unavailable (the search endpoint answered HTTP 503): the answer comes from the local knowledge."
    )


def test_the_chit_chat_route_offers_no_tool(httpserver: HTTPServer, search_server: HTTPServer) -> None:
    script(httpserver, reply("Hello! Ask me about your documents."))
    route = pick_route("Hello!", DEFAULT_ROUTES).route
    tools = [t for t in [tool_for(search_server)] if route.offers(t.name)]
    from rag.agent import NO_TOOLS_SYSTEM

    agent = Agent(host_of(httpserver), MODEL, tools, budget=route.budget, system=NO_TOOLS_SYSTEM)
    result = agent.run("Hello!")
    assert result.answer == "Hello! Ask me about your documents." and result.steps == ()
    (body,) = bodies(httpserver)
    assert "tools" not in body and body["messages"][0]["content"] == NO_TOOLS_SYSTEM
    assert search_server.log == []


def test_the_expert_route_offers_every_tool_with_its_budget() -> None:
    expert = next(r for r in DEFAULT_ROUTES if r.name == EXPERT)
    assert expert.budget == 12 and all(expert.offers(n) for n in ("search_knowledge_base", "web_search", "fetch"))
    assert Route("x", ("web_search",), 1).offers("web_search") and not Route("x", (), 0).offers("web_search")
