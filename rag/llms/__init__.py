"""Chat models: Ollama over HTTP, or a small GGUF model running in-process through llama-cpp-python.

Every model streams `StreamEvent`s: `thinking` and `content` pieces as they are generated, then one
`done` event with the generation's statistics (the embedded model, which answers one question at a
time, first yields `queue` events with the question's place in line, rag.llms.fifo). Setting the
caller's `stop_event` ends a generation at once (the HTTP stream is closed, llama.cpp stops being
iterated) and still yields a final `done` whose `done_reason` is "stopped". Every failure is a
ModelError whose message is one line a user can act on; a failure of `stream()` is a
`GenerationError` (a ModelError) that keeps the text produced so far in `partial` (empty when it
failed before the first word), so a UI can keep what was shown.

Modules: types (the vocabulary), stream (the background runner, the fold, the loop guard), counting
(tokens as the model counts them), prompting (the base model's prompt), telemetry (the phases of a
generation on a timeline, which the GPU sampler reads), gguf and local (llama.cpp),
choice and resolve (which model), ollama/ (the only HTTP client of Ollama). The vocabulary is
imported here; the models on first use, so that importing this package (as the CLI does) loads no
HTTP client and no llama.cpp.
"""

from __future__ import annotations

from rag.errors import GenerationError, ModelError
from rag.lazy import lazy_exports
from rag.llms.ollama.names import SUGGESTED_OLLAMA_MODEL
from rag.llms.prompting import (
    CITATION_EXAMPLE_EN,
    CITATION_EXAMPLE_ZH,
    PROMPT_STOP,
    asks_in_chinese,
    citation_example,
    completion_prompt,
)
from rag.llms.types import ChatModel, GenerationStats, LoadedModel, Message, StreamEvent

_LAZY = {
    "LocalChatModel": "rag.llms.local",
    "QwenChatModel": "rag.llms.local",
    "embedded_chat_model": "rag.llms.local",
    "LOCAL_PACKAGES": "rag.llms.local",
    "preload_embedded_model": "rag.llms.local",
    "TokenCounter": "rag.llms.counting",
    "CL100K": "rag.llms.counting",
    "token_counter": "rag.llms.counting",
    "GGUF_PACKAGE": "rag.llms.gguf",
    "local_gguf_path": "rag.llms.gguf",
    "resolve_chat_model": "rag.llms.resolve",
    "OllamaChatModel": "rag.llms.ollama.chat",
    "DEFAULT_OLLAMA_NUM_CTX": "rag.llms.ollama.chat",
    "list_ollama_chat_models": "rag.llms.ollama.admin",
    "ollama_loaded_models": "rag.llms.ollama.admin",
    "pull_model": "rag.llms.ollama.admin",
    "PullProgress": "rag.llms.ollama.admin",
}

__all__ = [
    "CITATION_EXAMPLE_EN",
    "CITATION_EXAMPLE_ZH",
    "PROMPT_STOP",
    "SUGGESTED_OLLAMA_MODEL",
    "ChatModel",
    "GenerationError",
    "GenerationStats",
    "LoadedModel",
    "Message",
    "ModelError",
    "StreamEvent",
    "asks_in_chinese",
    "citation_example",
    "completion_prompt",
    *_LAZY,
]


__getattr__ = lazy_exports(__name__, _LAZY)
