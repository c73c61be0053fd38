"""Checking a tool call's arguments before anything runs: JSON object, and the tool's JSON schema.

A problem comes back as one line for the model to read and correct, never as an exception.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import jsonschema

if TYPE_CHECKING:
    from rag.agent.tools import AgentTool

log = logging.getLogger(__name__)


def validator(tool: AgentTool) -> Any:
    return validator_for(dict(tool.parameters or {}), tool.name)


def validator_for(schema: dict[str, Any], name: str) -> Any:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        log.warning("tool %s has an invalid input schema (%s): its arguments are not checked", name, exc.message)
        return None
    return cls(schema)


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str]:
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
    parsed, problem = parse_arguments(arguments)
    if problem:
        return f"the arguments {problem}"
    return schema_problems(validator_for(dict(schema or {}), "arguments"), parsed)


def schema_problems(validator: Any, arguments: Mapping[str, Any]) -> str:
    if validator is None:
        return ""
    errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.absolute_path))
    problems = []
    for error in errors[:5]:
        where = ".".join(str(p) for p in error.absolute_path)
        problems.append(f"{where}: {error.message}" if where else error.message)
    return "; ".join(problems)


def echo_call(call: Any) -> Any:
    """A tool call as sent back in the conversation: Ollama wants the arguments as an object."""
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        return call
    function = dict(call["function"])
    arguments, problem = parse_arguments(function.get("arguments"))
    function["arguments"] = arguments if not problem else {}
    return {**call, "function": function}
