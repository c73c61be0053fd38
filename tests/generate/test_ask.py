"""`rag ask` through the CLI: a real ingest, then the same engine as the chat page (rag.generate.engine)."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.conftest import PYTHON, ROOT, wipe
from tests.docgen import make_pdf


def ndjson(*chunks: dict) -> str:
    return "".join(json.dumps(c) + "\n" for c in chunks)


def ingest_report(tmp_path: Path, cli_env: dict[str, str], pg_uri: str) -> None:
    """'fin' holding a two-page report in small chunks, ingested through the CLI into a wiped database."""
    wipe(pg_uri)
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(make_pdf(["Quarterly report. Revenue rose eleven percent on subscriptions.",
                              "The board approved a dividend of 42 cents per share."]))
    ingest = subprocess.run([PYTHON, "-m", "rag", "ingest", str(pdf), "--kb", "fin", "--strategy", "token",
                             "--chunk-size", "12"], cwd=ROOT, env=cli_env, capture_output=True, text=True,
                            timeout=240)
    assert ingest.returncode == 0, ingest.stderr


def test_ask_cli_against_ollama_stand_in(tmp_path: Path, cli_env: dict[str, str], pg_uri: str,
                                         httpserver: HTTPServer) -> None:
    """A real ingest, then `ask`: the request carries the numbered sources; citations point at chunks."""
    ingest_report(tmp_path, cli_env, pg_uri)
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


@pytest.mark.skipif(not __import__("rag.llms", fromlist=["LocalChatModel"]).LocalChatModel.available()[0],
                    reason="the embedded model (llama-cpp-python + gemma3 GGUF) is not installed")
def test_embedded_model_answers_over_an_ingested_pdf(tmp_path: Path, cli_env: dict[str, str], pg_uri: str) -> None:
    """`ask --json` with the default embedded model (Qwen2.5-Coder-1.5B): it cites by itself, and
    its citations name real chunks."""
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
    assert result["model"] == "local:qwen2.5-coder-1.5b"
    assert "twelve" in result["answer"].lower() or "12" in result["answer"]
    assert result["citations"], result
    import psycopg

    with psycopg.connect(pg_uri) as conn:
        for citation in result["citations"]:
            row = conn.execute("SELECT metadata->>'original_filename' FROM vector_store WHERE id = %s",
                               (citation["chunk_id"],)).fetchone()
            assert row == (citation["original_filename"],)


def test_ask_with_a_history_file_rewrites_the_follow_up_and_carries_the_conversation(
        tmp_path: Path, cli_env: dict[str, str], pg_uri: str, httpserver: HTTPServer) -> None:
    ingest_report(tmp_path, cli_env, pg_uri)
    seen: list[dict] = []

    def chat_handler(request: Request) -> Response:
        body = request.get_json()
        seen.append(body)
        rewriting = "Standalone query:" in body["messages"][-1]["content"]
        text = "What dividend did the board approve?" if rewriting else "A dividend of 42 cents [1]."
        return Response(ndjson({"model": "qwen2.5:7b-instruct", "message": {"role": "assistant", "content": text},
                                "done": False},
                               {"model": "qwen2.5:7b-instruct", "message": {"role": "assistant", "content": ""},
                                "done": True, "done_reason": "stop"}),
                        content_type="application/x-ndjson")

    httpserver.expect_request("/api/chat", method="POST").respond_with_handler(chat_handler)
    history = tmp_path / "history.json"
    history.write_text(json.dumps([{"role": "user", "content": "How much did revenue rise?"},
                                   {"role": "assistant", "content": "Revenue rose eleven percent [1]."}]))
    env = dict(cli_env, OLLAMA_HOST=httpserver.url_for("/").rstrip("/"))
    proc = subprocess.run([PYTHON, "-m", "rag", "ask", "And the dividend?", "--kb", "fin", "--model",
                           "qwen2.5:7b-instruct", "--history", str(history), "--json"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["answer"] == "A dividend of 42 cents [1]."
    assert "searched for: What dividend did the board approve?" in proc.stderr
    rewrite, answer = seen
    assert "User: How much did revenue rise?" in rewrite["messages"][0]["content"]
    assert [m["role"] for m in answer["messages"]] == ["system", "user", "assistant", "user"]
    assert answer["messages"][2]["content"] == "Revenue rose eleven percent [1]."

    history.write_text(json.dumps([{"role": "robot", "content": "hi"}]))
    bad = subprocess.run([PYTHON, "-m", "rag", "ask", "q", "--kb", "fin", "--model", "qwen2.5:7b-instruct",
                          "--history", str(history)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert bad.returncode == 2
    assert bad.stderr.strip() == f"error: {history}: message 1 needs a role 'user' or 'assistant' and a text content"
