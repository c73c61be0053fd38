"""Prompt assembly, citation checks, the context budget, and `ask` against an Ollama stand-in."""
from __future__ import annotations

import json
import re
import subprocess
import uuid
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

from rag import generate
from rag.chunking import count_tokens
from rag.llms import Message
from rag.store import Hit
from tests.conftest import PYTHON, ROOT, wipe
from tests.docgen import make_pdf


def hit(name: str, pages: tuple[int, ...], content: str, score: float = 0.5) -> Hit:
    return Hit(id=uuid.uuid4(), content=content, metadata={"original_filename": name, "pages": list(pages)},
               score=score)


SOURCES = generate.number_sources([
    hit("report.pdf", (3,), "Revenue rose eleven percent."),
    hit("notes.md", (1, 2), "The board approved a dividend."),
])


def test_sources_are_numbered_with_file_and_pages() -> None:
    assert [s.label for s in SOURCES] == ["[1] report.pdf p. 3", "[2] notes.md pp. 1-2"]
    text = generate.format_sources(SOURCES)
    assert text.index("[1] report.pdf p. 3\nRevenue rose") < text.index("[2] notes.md pp. 1-2\nThe board")


def test_system_prompt_comes_first_then_history_then_question() -> None:
    history = [Message("user", "earlier"), Message("assistant", "reply")]
    messages = generate.build_messages("How much did revenue rise?", SOURCES, history=history)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0].content.startswith(generate.SYSTEM_PROMPT_EN.split("{sources}")[0])
    assert "[1] report.pdf p. 3" in messages[0].content and messages[-1].content == "How much did revenue rise?"


def test_chinese_question_gets_chinese_prompt_and_custom_template_keeps_sources() -> None:
    zh = generate.build_messages("收入增长了多少？", SOURCES)
    assert zh[0].content.startswith("你是一个严谨的助手")
    custom = generate.build_messages("q", SOURCES, system_template="Be brief.")
    assert custom[0].content.startswith("Be brief.") and "[2] notes.md" in custom[0].content


@pytest.mark.parametrize(
    ("answer", "cited", "unknown", "uncited"),
    [
        ("Revenue rose [1]. A dividend [2].", (1, 2), (), False),
        ("Both [1][2], again [2, 1].", (1, 2), (), False),
        ("收入增长【1】，分红【2、3】。", (1, 2), (3,), False),
        ("It rose [7].", (), (7,), False),
        ("No markers at all.", (), (), True),
    ],
)
def test_citation_check(answer: str, cited: tuple, unknown: tuple, uncited: bool) -> None:
    check = generate.check_citations(answer, SOURCES)
    assert (check.cited, check.unknown, check.uncited) == (cited, unknown, uncited)


def test_marker_spans_cover_the_markers() -> None:
    answer = "Rose [1] and [2, 3]."
    assert [(answer[a:b], n) for a, b, n in generate.marker_spans(answer)] == [("[1]", (1,)), ("[2, 3]", (2, 3))]


def test_context_budget_adds_up_and_warns() -> None:
    messages = generate.build_messages("How much?", SOURCES, history=[Message("user", "one two three")])
    budget = generate.context_budget(messages, SOURCES, 4096)
    assert budget.sources == count_tokens(generate.format_sources(SOURCES))
    assert budget.history == count_tokens("one two three") and budget.question == count_tokens("How much?")
    assert budget.system + budget.sources == count_tokens(messages[0].content)
    assert budget.fits
    tight = generate.context_budget(messages, SOURCES, budget.used + 10, reserve=512)
    assert not tight.fits and tight.share > 1


def test_rewrite_prompt_and_cleanup() -> None:
    history = [Message("user", "What is HNSW?"), Message("assistant", "A graph index.")]
    [msg] = generate.rewrite_messages(history, "And how fast is it?")
    assert "User: What is HNSW?" in msg.content and "Last question: And how fast is it?" in msg.content
    assert generate.clean_rewrite('"How fast is HNSW search?"\nextra', "x") == "How fast is HNSW search?"
    assert generate.clean_rewrite("  \n", "fallback") == "fallback"


def test_conversation_markdown_lists_sources() -> None:
    md = generate.conversation_markdown([("Q1?", "A1 [1].", SOURCES)], "ollama:m")
    assert "## 1. Q1?" in md and "A1 [1]." in md and "- [1] report.pdf p. 3 (score 0.500" in md


def ndjson(*chunks: dict) -> str:
    return "".join(json.dumps(c) + "\n" for c in chunks)


def test_ask_cli_against_ollama_stand_in(tmp_path: Path, cli_env: dict[str, str], pg_uri: str,
                                         httpserver: HTTPServer) -> None:
    """A real ingest, then `ask`: the request carries the numbered sources; citations point at chunks."""
    wipe(pg_uri)
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(make_pdf(["Quarterly report. Revenue rose eleven percent on subscriptions.",
                              "The board approved a dividend of 42 cents per share."]))
    ingest = subprocess.run([PYTHON, "-m", "rag", "ingest", str(pdf), "--kb", "fin", "--strategy", "token",
                             "--chunk-size", "12"], cwd=ROOT, env=cli_env, capture_output=True, text=True,
                            timeout=240)
    assert ingest.returncode == 0, ingest.stderr
    seen: list[dict] = []

    def chat_handler(request):  # noqa: ANN001 - werkzeug request
        seen.append(request.get_json())
        body = ndjson(
            {"model": "qwen2.5:7b-instruct", "message": {"role": "assistant", "content": "Revenue rose eleven "},
             "done": False},
            {"model": "qwen2.5:7b-instruct", "message": {"role": "assistant", "content": "percent [1]. See [9]."},
             "done": False},
            {"model": "qwen2.5:7b-instruct", "message": {"role": "assistant", "content": ""}, "done": True,
             "done_reason": "stop", "total_duration": 900000000, "load_duration": 100000000,
             "prompt_eval_count": 120, "prompt_eval_duration": 300000000, "eval_count": 8,
             "eval_duration": 400000000},
        )
        return Response(body, content_type="application/x-ndjson")

    httpserver.expect_request("/api/chat", method="POST").respond_with_handler(chat_handler)
    env = dict(cli_env, OLLAMA_HOST=httpserver.url_for("/").rstrip("/"))
    proc = subprocess.run([PYTHON, "-m", "rag", "ask", "How much did revenue rise?", "--kb", "fin",
                           "--model", "qwen2.5:7b-instruct", "--top-k", "3", "--json"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["answer"] == "Revenue rose eleven percent [1]. See [9]."
    assert result["model"] == "ollama:qwen2.5:7b-instruct"
    assert result["unknown_citations"] == [9]
    [citation] = result["citations"]
    assert citation["n"] == 1 and citation["original_filename"] == "report.pdf"
    [request] = seen
    assert request["model"] == "qwen2.5:7b-instruct" and request["stream"] is True
    roles = [m["role"] for m in request["messages"]]
    assert roles == ["system", "user"]
    system = request["messages"][0]["content"]
    assert "[1] report.pdf p" in system and "[2] report.pdf p" in system
    first_source = system.split("[1] report.pdf", 1)[1].split("\n[2]", 1)[0]
    chunk = subprocess.run([PYTHON, "-c", f"import psycopg; c=psycopg.connect({pg_uri!r}); "
                            f"print(c.execute(\"select content from vector_store where id = %s\", "
                            f"({citation['chunk_id']!r},)).fetchone()[0])"],
                           capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert chunk.stdout.strip() and chunk.stdout.strip() in first_source


def test_attribution_cites_the_source_a_sentence_comes_from() -> None:
    answer = "Revenue rose eleven percent. The board approved a dividend! Something else entirely"
    cited = generate.attribute_citations(answer, SOURCES)
    assert cited == "Revenue rose eleven percent [1]. The board approved a dividend [2]! Something else entirely"
    assert generate.attribute_citations("Already cited [2].", SOURCES) == "Already cited [2]."
    assert generate.attribute_citations(answer, []) == answer


@pytest.mark.skipif(not __import__("rag.llms", fromlist=["LocalChatModel"]).LocalChatModel.available()[0],
                    reason="the embedded model (llama-cpp-python + gemma3 GGUF) is not installed")
def test_embedded_model_answers_over_an_ingested_pdf(tmp_path: Path, cli_env: dict[str, str], pg_uri: str) -> None:
    """`ask --json` with the embedded base model; its (attributed) citations name real chunks."""
    wipe(pg_uri)
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(make_pdf(["Quarterly report. Revenue grew by twelve percent in 2023, driven by subscriptions.",
                              "The board approved a dividend of 42 cents per share."]))
    subprocess.run([PYTHON, "-m", "rag", "ingest", str(pdf), "--kb", "fin", "--strategy", "token",
                    "--chunk-size", "20"], cwd=ROOT, env=cli_env, check=True, capture_output=True, timeout=240)
    proc = subprocess.run([PYTHON, "-m", "rag", "ask", "How much did revenue grow in 2023?", "--kb", "fin",
                           "--model", "local", "--json"], cwd=ROOT, env=cli_env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    # llama.cpp's own log lines go to logging, not straight onto the terminal.
    assert not re.search(r"^(llama|ggml)\w*:", proc.stderr, re.MULTILINE), proc.stderr
    result = json.loads(proc.stdout)
    assert result["model"] == "local:gemma3-270m"
    assert "twelve" in result["answer"].lower() or "12" in result["answer"]
    assert result["citations"], result
    import psycopg

    with psycopg.connect(pg_uri) as conn:
        for citation in result["citations"]:
            row = conn.execute("SELECT metadata->>'original_filename' FROM vector_store WHERE id = %s",
                               (citation["chunk_id"],)).fetchone()
            assert row == (citation["original_filename"],)
