"""Agent mode: a loop over Ollama's tool calling, with one tool budget shared by every tool in a turn.

The model gets the knowledge-base search tool (called in-process) and the tools of the configured MCP
servers. Each round sends the conversation with the tools to POST /api/chat; when the answer holds
`tool_calls`, each call is checked and run and its result goes back as a `tool` message; the loop
ends when the model answers without tool calls.

Each call is checked before anything runs: an unknown tool, arguments that are not a JSON object or
do not match the tool's JSON schema (jsonschema), a tool that fails or times out: the error is the
tool's result, for the model to read and correct, and the turn goes on. The budget (default 6 calls
per turn, all tools together) works like the seed project's ToolBudget: past it a call is refused
with an instruction to answer from what was found; after 3 refused calls the loop stops and asks the
model for its answer, without tools.

The /api/chat request is made with httpx rather than the ollama client: the client's typed `Tool`
model keeps only type/description/enum/items of each parameter, dropping `anyOf`, `default`,
`minimum`, nested `properties`..., which MCP tools' schemas rely on.
"""
from __future__ import annotations

import concurrent.futures
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import httpx
import jsonschema

from rag.errors import ModelError, RagError
from rag.errors import one_line
from rag.llms.ollama.errors import missing_model_message, not_reachable_message

if TYPE_CHECKING:
    from rag.mcp.client import McpManager, ToolInfo
    from rag.mcp.server import KnowledgeBaseTools

log = logging.getLogger(__name__)

DEFAULT_TOOL_BUDGET = 6
HARD_STOP_AFTER_REFUSALS = 3
DEFAULT_MAX_ROUNDS = 12
"""A last guard for a model that keeps sending calls that do not run (unknown tools, bad arguments)."""
DEFAULT_TOOL_TIMEOUT = 60.0
SUGGESTED_TOOL_MODEL = "qwen2.5:7b-instruct"
KB_SOURCE = "knowledge base"

STEP_STATUSES = ("ok", "error", "invalid", "refused")

DEFAULT_SYSTEM = (
    "You are a careful research assistant with tools. {search}"
    "You may make at most {budget} tool calls in this turn, all tools together: use precise "
    "arguments and stop calling tools once you have enough. If the tools find nothing relevant, say so "
    "instead of guessing. Answer in the language of the question."
)
_SEARCH_HINT = (
    "To answer questions about the user's documents, call search_knowledge_base first and base the "
    "answer on the passages it returns, citing the file name and pages of each fact, e.g. "
    "(report.pdf, p. 3). Other tools may help with other tasks. "
)
FINAL_INSTRUCTION = (
    "Stop calling tools now. Write the complete answer to the question from the information already "
    "found above, citing file names and pages."
)


def refusal_text(tool: str, budget: int, refused: int, hard_after: int = HARD_STOP_AFTER_REFUSALS) -> str:
    """What a call past the budget returns instead of running (the seed's ToolBudget wording)."""
    if refused >= hard_after:
        return (f"[MANDATORY] Tool calls refused {refused} times: the budget of {budget} tool calls for "
                f"this turn is spent. Stop calling tools immediately and write the complete answer from "
                f"the information already found.")
    return (f"Tool budget used up ({budget} of {budget} tool calls this turn): do not call {tool} or any "
            f"other tool again; answer from the information already found.")


# ------------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class ToolOutput:
    text: str
    """What the model reads."""
    is_error: bool = False
    data: Mapping[str, Any] | None = None
    """The structured result, when the tool gave one (e.g. search hits, for citations)."""


class AgentTool(Protocol):
    """A tool the model may call. `call` may raise (RagError, anything): the agent reports it."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> Mapping[str, Any]:
        """JSON schema of the arguments (an object schema)."""
        ...

    @property
    def source(self) -> str:
        """'knowledge base' or the MCP server's name (shown with each step)."""
        ...

    def call(self, arguments: Mapping[str, Any], timeout: float) -> ToolOutput: ...


@dataclass(frozen=True)
class Step:
    """One tool call of a turn, as a page shows it."""

    index: int
    """1-based, in the order the calls were made."""
    round: int
    """The model request (1-based) that asked for it."""
    name: str
    arguments: Mapping[str, Any]
    result: str
    """Exactly what the model got back."""
    duration: float
    """Seconds spent checking and running the call."""
    status: str
    """'ok'; 'error' (the tool failed or timed out); 'invalid' (unknown tool, bad arguments);
    'refused' (past the budget)."""
    source: str = ""
    data: Mapping[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class AgentResult:
    answer: str
    steps: tuple[Step, ...]
    stop_reason: str
    """'answered' (no more tool calls), 'budget' (3 refused calls), 'max_rounds' or 'stopped'."""
    rounds: int
    """Requests made to the model."""
    calls_used: int
    """Tool calls that ran (out of the budget)."""
    budget: int
    refused: int
    thinking: str = ""
    messages: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)
    """The conversation as sent to the model, tool calls and results included."""


class ToolBudget:
    """Tool calls allowed in one turn, shared by every tool; thread-safe."""

    def __init__(self, max_calls: int = DEFAULT_TOOL_BUDGET) -> None:
        if max_calls < 0:
            raise ValueError(f"the tool budget must be 0 or more, got {max_calls}")
        self.max_calls = max_calls
        self._used = 0
        self._refused = 0
        self._lock = threading.Lock()

    def try_acquire(self) -> bool:
        with self._lock:
            if self._used < self.max_calls:
                self._used += 1
                return True
            self._refused += 1
            return False

    @property
    def used(self) -> int:
        return self._used

    @property
    def refused(self) -> int:
        return self._refused

    @property
    def remaining(self) -> int:
        return max(0, self.max_calls - self._used)


# ------------------------------------------------------------------------------------------------
# Tools


def _compact(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


class KnowledgeBaseSearchTool:
    """`search_knowledge_base`, called in-process (the same function and schema as the MCP tool)."""

    name = "search_knowledge_base"
    source = KB_SOURCE

    def __init__(self, tools: KnowledgeBaseTools, knowledge_bases: Sequence[str] = ()) -> None:
        self._tools = tools
        self.knowledge_bases = tuple(dict.fromkeys(knowledge_bases))
        schema = json.loads(json.dumps(tools.input_schema(self.name)))
        if self.knowledge_bases:
            schema["properties"]["knowledge_base"]["enum"] = list(self.knowledge_bases)
        self.parameters: Mapping[str, Any] = schema
        description = tools.description(self.name)
        if self.knowledge_bases:
            description += " Knowledge bases: " + ", ".join(self.knowledge_bases) + "."
        self.description = description

    def call(self, arguments: Mapping[str, Any], timeout: float) -> ToolOutput:
        result = self._tools.search_knowledge_base(**arguments)
        data = result.model_dump()
        if not result.hits:
            return ToolOutput(f"No passages found in {result.knowledge_base!r} for {result.query!r}.", data=data)
        return ToolOutput(_compact(data), data=data)


class McpTool:
    """A tool of a running MCP server, called through the manager."""

    def __init__(self, manager: McpManager, info: ToolInfo, name: str | None = None) -> None:
        self._manager = manager
        self.info = info
        self.name = name or info.name
        self.description = info.description or f"Tool {info.name} of the MCP server {info.server}."
        self.parameters: Mapping[str, Any] = info.input_schema or {"type": "object", "properties": {}}
        self.source = info.server

    def call(self, arguments: Mapping[str, Any], timeout: float) -> ToolOutput:
        result = self._manager.call_tool(self.info.server, self.info.name, arguments, timeout=timeout)
        structured = dict(result.structured) if isinstance(result.structured, Mapping) else None
        text = result.text
        if structured is not None and not result.is_error:
            text = _compact(structured)
        return ToolOutput(text, is_error=result.is_error, data=structured)


def build_tools(
    kb_tools: KnowledgeBaseTools | None,
    knowledge_bases: Sequence[str] = (),
    manager: McpManager | None = None,
) -> list[AgentTool]:
    """The knowledge-base search tool (if `kb_tools`) and every running MCP server's tools.

    Names stay as the servers give them; a name already taken (by our search tool or an earlier
    server) becomes '<server>__<tool>'."""
    from rag.mcp.client import qualified_name

    tools: list[AgentTool] = []
    if kb_tools is not None:
        tools.append(KnowledgeBaseSearchTool(kb_tools, knowledge_bases))
    if manager is not None:
        taken = {t.name for t in tools}
        for info in manager.tools():
            name = info.name if info.name not in taken else qualified_name(info.server, info.name)
            taken.add(name)
            tools.append(McpTool(manager, info, name))
    return tools


def ollama_tool_spec(tool: AgentTool) -> dict[str, Any]:
    """The tool as Ollama's /api/chat `tools` entry (the full JSON schema, untouched)."""
    parameters = dict(tool.parameters) if tool.parameters else {}
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    return {"type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": parameters}}


# ------------------------------------------------------------------------------------------------
# Availability


def agent_available(model: Any, settings: Any = None) -> tuple[bool, str]:
    """Whether `model` (a ChatModel, or a name such as 'ollama:qwen2.5:7b-instruct' or 'local') can
    run agent mode, and why (a sentence to show next to a disabled toggle)."""
    from rag import llms

    name = model if isinstance(model, str) else getattr(model, "name", str(model))
    if name == "local" or name.startswith("local:") or isinstance(model, llms.LocalChatModel):
        return False, (f"The embedded base model ({llms.LocalChatModel.NAME}) cannot call tools: agent mode "
                       f"needs an Ollama model with tool calling, e.g. 'ollama pull {SUGGESTED_TOOL_MODEL}'")
    if isinstance(model, str):
        from rag.settings import get_settings

        settings = settings or get_settings()
        model = llms.OllamaChatModel(settings.ollama_host, name.removeprefix("ollama:"),
                                       timeout=settings.ollama_timeout)
    show = getattr(model, "show", None)
    if show is None:
        ok = bool(getattr(model, "supports_tools", False))
        return ok, f"{name} supports tool calling" if ok else f"{name} cannot call tools"
    try:
        shown = show()
    except ModelError as exc:
        return False, f"Cannot tell whether {name} can call tools: {exc}"
    capabilities = list(shown.capabilities) if shown.capabilities is not None else None
    if capabilities is None:  # Ollama before 0.6.4: the template tells
        ok = ".Tools" in (shown.template or "")
        capabilities = ["tools"] if ok else []
    if "tools" in capabilities:
        return True, f"{name} supports tool calling"
    listed = ", ".join(capabilities) or "none listed"
    return False, (f"{name} has no tool calling (its capabilities: {listed}): choose an Ollama model with "
                   f"tools, e.g. {SUGGESTED_TOOL_MODEL}")


# ------------------------------------------------------------------------------------------------
# Ollama /api/chat with tools


class OllamaToolChat:
    """Non-streamed POST /api/chat with `tools`; errors are one-line ModelErrors."""

    def __init__(self, host: str, model: str, *, timeout: float = 120.0) -> None:
        self.host = host.rstrip("/")
        self.model = model.removeprefix("ollama:").strip()
        if not self.model:
            raise ModelError("No Ollama model given for agent mode: choose one with tool calling")
        self.timeout = timeout

    def chat(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None,
             options: Mapping[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages), "stream": False,
                                "options": dict(options)}
        if tools:
            body["tools"] = list(tools)
        url = f"{self.host}/api/chat"
        try:
            with httpx.Client(timeout=self.timeout) as client:
                response = client.post(url, json=body)
        except httpx.TimeoutException as exc:
            raise ModelError(f"Ollama at {self.host} gave no answer within {self.timeout:g} s: if it is loading "
                             f"the model, try again or raise RAG_OLLAMA_TIMEOUT") from exc
        except httpx.TransportError as exc:
            detail = one_line(str(exc), None) or type(exc).__name__
            raise ModelError(not_reachable_message(self.host, detail)) from exc
        if response.status_code != 200:
            raise self._http_error(response)
        try:
            data = response.json()
        except ValueError as exc:
            raise ModelError(f"{self.host} did not answer /api/chat like Ollama does (not JSON): "
                             f"check OLLAMA_HOST") from exc
        if not isinstance(data, dict) or not isinstance(data.get("message"), dict):
            raise ModelError(f"{self.host} did not answer /api/chat like Ollama does (no message): "
                             f"check OLLAMA_HOST")
        if data.get("error"):
            raise ModelError(f"Ollama failed with '{self.model}': {one_line(str(data['error']), None)}")
        return data

    def _http_error(self, response: httpx.Response) -> ModelError:
        try:
            text = str(response.json().get("error", ""))
        except ValueError:
            text = response.text
        text = " ".join(text.split())[:300] or f"HTTP {response.status_code}"
        low = text.lower()
        if response.status_code == 404 and "model" in low:
            return ModelError(missing_model_message(self.model))
        if "does not support tools" in low:
            return ModelError(f"'{self.model}' does not support tool calling: choose a model with tools, "
                              f"e.g. {SUGGESTED_TOOL_MODEL}")
        return ModelError(f"Ollama could not answer with '{self.model}' (HTTP {response.status_code}): {text}")


# ------------------------------------------------------------------------------------------------
# The loop


class Agent:
    """Runs turns of agent mode. One instance may serve many turns (each gets a fresh budget)."""

    def __init__(
        self,
        host: str,
        model: str,
        tools: Sequence[AgentTool],
        *,
        budget: int = DEFAULT_TOOL_BUDGET,
        hard_stop_after: int = HARD_STOP_AFTER_REFUSALS,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
        timeout: float = 120.0,
        temperature: float = 0.2,
        num_ctx: int | None = None,
        system: str | None = DEFAULT_SYSTEM,
    ) -> None:
        if budget < 0:
            raise ValueError(f"the tool budget must be 0 or more, got {budget}")
        if hard_stop_after < 1:
            raise ValueError(f"hard_stop_after must be at least 1, got {hard_stop_after}")
        if max_rounds < 1:
            raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")
        names = [t.name for t in tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"two tools share the name {duplicates[0]!r}: give each tool its own name")
        self.chat = OllamaToolChat(host, model, timeout=timeout)
        self.tools = {t.name: t for t in tools}
        self.budget = budget
        self.hard_stop_after = hard_stop_after
        self.max_rounds = max_rounds
        self.tool_timeout = tool_timeout
        self.options: dict[str, Any] = {"temperature": temperature}
        if num_ctx is not None:
            self.options["num_ctx"] = num_ctx
        self.system = system
        self._validators: dict[str, Any] = {}
        for tool in tools:
            self._validators[tool.name] = _validator(tool)

    @classmethod
    def for_model(cls, chat_model: Any, tools: Sequence[AgentTool], **kwargs: Any) -> Agent:
        """From an OllamaChatModel (rag.llms); ModelError with the reason when it cannot call tools."""
        host = getattr(chat_model, "host", None)
        name = getattr(chat_model, "model", None)
        if host is None or name is None:
            ok, reason = agent_available(chat_model)
            raise ModelError(reason)
        return cls(host, name, tools, **kwargs)

    @property
    def tool_specs(self) -> list[dict[str, Any]]:
        return [ollama_tool_spec(t) for t in self.tools.values()]

    def run(
        self,
        question: str,
        *,
        history: Sequence[Any] = (),
        on_step: Callable[[Step], None] | None = None,
        stop_event: threading.Event | None = None,
    ) -> AgentResult:
        """One turn; `on_step` sees each tool call as soon as it is done."""
        for event in self.events(question, history=history, stop_event=stop_event):
            if isinstance(event, AgentResult):
                return event
            if on_step is not None:
                on_step(event)
        raise RuntimeError("the agent loop ended without a result")  # pragma: no cover - events() always ends so

    def events(
        self,
        question: str,
        *,
        history: Sequence[Any] = (),
        stop_event: threading.Event | None = None,
    ) -> Iterator[Step | AgentResult]:
        """One turn as a stream: each Step as it completes, then the AgentResult (always last).

        Raises ModelError when the model cannot be reached or refuses the request."""
        if not question or not question.strip():
            raise ValueError("the question is empty")
        messages: list[dict[str, Any]] = []
        if self.system:
            search = _SEARCH_HINT if KnowledgeBaseSearchTool.name in self.tools else ""
            messages.append({"role": "system", "content": self.system.format(budget=self.budget, search=search)})
        messages.extend(_history_messages(history))
        messages.append({"role": "user", "content": question})
        budget = ToolBudget(self.budget)
        specs = self.tool_specs
        steps: list[Step] = []
        thinking: list[str] = []
        rounds = 0
        executor = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="agent-tool")

        def result(answer: str, reason: str) -> AgentResult:
            return AgentResult(answer=answer.strip(), steps=tuple(steps), stop_reason=reason, rounds=rounds,
                               calls_used=budget.used, budget=self.budget, refused=budget.refused,
                               thinking="\n\n".join(thinking), messages=tuple(messages))

        def final_answer(reason: str) -> AgentResult:
            nonlocal rounds
            messages.append({"role": "user", "content": FINAL_INSTRUCTION})
            rounds += 1
            reply = self.chat.chat(messages, None, self.options)["message"]
            if reply.get("thinking"):
                thinking.append(str(reply["thinking"]))
            content = str(reply.get("content") or "")
            messages.append({"role": "assistant", "content": content})
            return result(content, reason)

        try:
            while True:
                if stop_event is not None and stop_event.is_set():
                    yield result("", "stopped")
                    return
                if rounds >= self.max_rounds:
                    yield final_answer("max_rounds")
                    return
                rounds += 1
                reply = self.chat.chat(messages, specs or None, self.options)["message"]
                if reply.get("thinking"):
                    thinking.append(str(reply["thinking"]))
                calls = reply.get("tool_calls") or []
                if isinstance(calls, Mapping):
                    calls = [calls]
                content = str(reply.get("content") or "")
                if not calls:
                    messages.append({"role": "assistant", "content": content})
                    yield result(content, "answered")
                    return
                assistant: dict[str, Any] = {"role": "assistant", "content": content,
                                             "tool_calls": [_echo_call(c) for c in calls]}
                messages.append(assistant)
                for call in calls:
                    if stop_event is not None and stop_event.is_set():
                        break
                    step = self._execute(call, len(steps) + 1, rounds, budget, executor)
                    steps.append(step)
                    tool_message: dict[str, Any] = {"role": "tool", "tool_name": step.name, "content": step.result}
                    if isinstance(call, Mapping) and call.get("id"):
                        tool_message["tool_call_id"] = call["id"]
                    messages.append(tool_message)
                    yield step
                if budget.refused >= self.hard_stop_after:
                    yield final_answer("budget")
                    return
        finally:
            executor.shutdown(wait=False, cancel_futures=True)

    def _execute(
        self,
        call: Any,
        index: int,
        round_: int,
        budget: ToolBudget,
        executor: concurrent.futures.Executor,
    ) -> Step:
        started = time.perf_counter()
        function = call.get("function") if isinstance(call, Mapping) else None
        function = function if isinstance(function, Mapping) else {}
        name = str(function.get("name") or "")
        raw = function.get("arguments", {})

        def step(result: str, status: str, arguments: Any = None, source: str = "",
                 data: Mapping[str, Any] | None = None) -> Step:
            args = arguments if isinstance(arguments, Mapping) else ({} if arguments is None else {"_raw": arguments})
            return Step(index=index, round=round_, name=name, arguments=dict(args), result=result,
                        duration=time.perf_counter() - started, status=status, source=source, data=data)

        if budget.used >= budget.max_calls:
            budget.try_acquire()  # counts the refusal
            return step(refusal_text(name or "tools", budget.max_calls, budget.refused, self.hard_stop_after),
                        "refused", raw)
        tool = self.tools.get(name)
        if tool is None:
            available = ", ".join(self.tools) or "none"
            what = f"unknown tool {name!r}" if name else "a tool call without a tool name"
            return step(f"Error: {what}. Available tools: {available}.", "invalid", raw)
        arguments, problem = _parse_arguments(raw)
        if problem:
            return step(f"Error: the arguments of {name} {problem}. Call it again with a JSON object matching "
                        f"its schema: {_compact(tool.parameters)}", "invalid", raw, tool.source)
        problem = _schema_problems(self._validators.get(name), arguments)
        if problem:
            return step(f"Error: invalid arguments for {name}: {problem}. Expected arguments: "
                        f"{_compact(tool.parameters)}", "invalid", arguments, tool.source)
        if not budget.try_acquire():  # pragma: no cover - another thread took the last call
            return step(refusal_text(name, budget.max_calls, budget.refused, self.hard_stop_after),
                        "refused", arguments, tool.source)
        future = executor.submit(tool.call, arguments, self.tool_timeout)
        try:
            output = future.result(timeout=self.tool_timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return step(f"Error: {name} did not finish within {self.tool_timeout:g} s.", "error", arguments,
                        tool.source)
        except RagError as exc:
            return step(f"Error: {exc}", "error", arguments, tool.source)
        except Exception as exc:  # noqa: BLE001 - a failing tool must not break the turn
            log.warning("tool %s failed", name, exc_info=True)
            detail = " ".join(str(exc).split())[:300]
            return step(f"Error: {name} failed ({type(exc).__name__}{': ' + detail if detail else ''}).",
                        "error", arguments, tool.source)
        text = output.text if not output.is_error or output.text.startswith("Error") else f"Error: {output.text}"
        return step(text, "error" if output.is_error else "ok", arguments, tool.source, output.data)


def _echo_call(call: Any) -> Any:
    """A tool call as sent back in the conversation: Ollama wants the arguments as an object."""
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        return call
    function = dict(call["function"])
    arguments, problem = _parse_arguments(function.get("arguments"))
    function["arguments"] = arguments if not problem else {}
    return {**call, "function": function}


def _validator(tool: AgentTool) -> Any:
    return _validator_for(dict(tool.parameters or {}), tool.name)


def _validator_for(schema: dict[str, Any], name: str) -> Any:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        log.warning("tool %s has an invalid input schema (%s): its arguments are not checked", name, exc.message)
        return None
    return cls(schema)


def _parse_arguments(raw: Any) -> tuple[dict[str, Any], str]:
    if raw is None:
        return {}, ""
    if isinstance(raw, str):
        if not raw.strip():
            return {}, ""
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            return {}, f"are not valid JSON ({exc})"
    if not isinstance(raw, Mapping):
        return {}, f"must be a JSON object, not {type(raw).__name__}"
    return dict(raw), ""


def validate_arguments(schema: Mapping[str, Any], arguments: Any) -> str:
    """'' when `arguments` (a mapping, or JSON text) fit `schema`, else the problems in one line."""
    parsed, problem = _parse_arguments(arguments)
    if problem:
        return f"the arguments {problem}"
    return _schema_problems(_validator_for(dict(schema or {}), "arguments"), parsed)


def _schema_problems(validator: Any, arguments: Mapping[str, Any]) -> str:
    if validator is None:
        return ""
    errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.absolute_path))
    problems = []
    for error in errors[:5]:
        where = ".".join(str(p) for p in error.absolute_path)
        problems.append(f"{where}: {error.message}" if where else error.message)
    return "; ".join(problems)


def _history_messages(history: Sequence[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in history:
        if isinstance(item, Mapping):
            role, content = item.get("role"), item.get("content")
        else:
            role, content = getattr(item, "role", None), getattr(item, "content", None)
        if role not in ("system", "user", "assistant") or content is None:
            raise ValueError(f"history items need a role (system, user, assistant) and content, got {item!r}")
        out.append({"role": role, "content": str(content)})
    return out
