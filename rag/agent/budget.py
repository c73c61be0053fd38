"""The tool budget of one turn, shared by every tool, and what a call past it gets instead of running.

It works like the seed project's ToolBudget: past the budget a call is refused with an instruction to
answer from what was found; after HARD_STOP_AFTER_REFUSALS refused calls the loop stops asking.
"""

from __future__ import annotations

import threading

DEFAULT_TOOL_BUDGET = 6
HARD_STOP_AFTER_REFUSALS = 3


def refusal_text(tool: str, budget: int, refused: int, hard_after: int = HARD_STOP_AFTER_REFUSALS) -> str:
    """What a call past the budget returns instead of running (the seed's ToolBudget wording)."""
    if refused >= hard_after:
        return (
            f"[MANDATORY] Tool calls refused {refused} times: the budget of {budget} tool calls for "
            f"this turn is spent. Stop calling tools immediately and write the complete answer from "
            f"the information already found."
        )
    return (
        f"Tool budget used up ({budget} of {budget} tool calls this turn): do not call {tool} or any "
        f"other tool again; answer from the information already found."
    )


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
