"""`rag ask` through the CLI: a real ingest, then the same engine as the chat page (rag.generate.engine).

The commands run in this process (tests/clirun.py); only the run of the real embedded model keeps a process
of its own (see there)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import psycopg
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.clirun import rag
from tests.conftest import PYTHON, ROOT, wipe
from tests.docgen import make_pdf


def ndjson(*chunks: dict) -> str:
    return "".join(json.dumps(c) + "\n" for c in chunks)


def ingest_report(tmp_path: Path, pg_uri: str) -> None:
    """'fin' holding a two-page report in small chunks, ingested through the CLI into a wiped database."""
    wipe(pg_uri)
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(
        make_pdf(
            [
                "Quarterly report. Revenue rose eleven percent on subscriptions.",
                "The board approved a dividend of 42 cents per share.",
            ]
        )
    )
    ingest = rag(["ingest", str(pdf), "--kb", "fin", "--strategy", "token", "--chunk-size", "12"])
    assert ingest.returncode == 0, ingest.stderr


def use_ollama(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    """The CLI's Ollama is `host` (each run reads the settings afresh; monkeypatch restores the variable)."""
    monkeypatch.setenv("OLLAMA_HOST", host)


def test_ask_cli_against_ollama_stand_in(
    tmp_path: Path, pg_uri: str, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real ingest, then `ask`: the request carries the numbered sources; citations point at chunks."""
    ingest_report(tmp_path, pg_uri)
    seen: list[dict] = []

    def chat_handler(request):
        seen.append(request.get_json())
        body = ndjson(
            {
                "model": "qwen2.5:7b-instruct",
                "message": {"role": "assistant", "content": "Revenue rose eleven "},
                "done": False,
            },
            {
                "model": "qwen2.5:7b-instruct",
                "message": {"role": "assistant", "content": "percent [1]. See [9]."},
                "done": False,
            },
            {
                "model": "qwen2.5:7b-instruct",
                "message": {"role": "assistant", "content": ""},
                "done": True,
                "done_reason": "stop",
                "total_duration": 900000000,
                "load_duration": 100000000,
                "prompt_eval_count": 120,
                "prompt_eval_duration": 300000000,
                "eval_count": 8,
                "eval_duration": 400000000,
            },
        )
        return Response(body, content_type="application/x-ndjson")

    httpserver.expect_request("/api/chat", method="POST").respond_with_handler(chat_handler)
    use_ollama(monkeypatch, httpserver.url_for("/").rstrip("/"))
    proc = rag(
        ["ask", "How much did revenue rise?", "--kb", "fin", "--model", "qwen2.5:7b-instruct", "--top-k", "3", "--json"]
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["answer"] == "Revenue rose eleven percent [1]. See [9]."
    assert result["model"] == "ollama:qwen2.5:7b-instruct"
    assert result["unknown_citations"] == [9]
    [citation] = result["citations"]
    assert citation["n"] == 1 and citation["original_filename"] == "report.pdf" and citation["supported"] is True
    # The sentence citing [9] cites nothing that exists: the answer is not badged as grounded.
    assert [(s["text"], s["status"]) for s in result["sentences"]] == [
        ("Revenue rose eleven percent [1].", "cited"),
        ("See [9].", "not supported"),
    ]
    assert result["grounded"] is False and result["unsupported_sentences"] == 1
    [request] = seen
    assert request["model"] == "qwen2.5:7b-instruct" and request["stream"] is True
    roles = [m["role"] for m in request["messages"]]
    assert roles == ["system", "user"]
    system = request["messages"][0]["content"]
    assert "[1] report.pdf p" in system and "[2] report.pdf p" in system
    first_source = system.split("[1] report.pdf", 1)[1].split("\n[2]", 1)[0]
    with psycopg.connect(pg_uri) as conn:
        (content,) = conn.execute("SELECT content FROM vector_store WHERE id = %s", (citation["chunk_id"],)).fetchone()
    assert content.strip() and content.strip() in first_source


def test_the_default_settings_answer_in_english_and_in_chinese(
    tmp_path: Path, cli_env: dict[str, str], pg_uri: str
) -> None:
    """The real default end to end, with no Ollama: documents ingested with the default preset (800-token
    chunks), `ask` with the default top-k 8 and the default embedded model (Qwen2.5-Coder-1.5B). Eight
    such chunks are far more than its 4,096-token window: the prompt is packed, nothing is refused,
    the answers are right and cite the passage that says it."""
    from rag.evaluation.sets import eval_set
    from rag.llms import QwenChatModel

    assert QwenChatModel.available()[0], QwenChatModel.available()[1]  # it is in requirements.txt
    wipe(pg_uri)
    # Real text around the facts asked for: exam reading passages (en_race) and Wikipedia (CMRC).
    pages = [p.text for p in eval_set("en_race").passages[:24]]  # (each fits on a page: make_pdf checks)
    pages[14] += " Quarterly report. Revenue grew by twelve percent in 2023, driven by subscriptions."
    (tmp_path / "minutes.pdf").write_bytes(make_pdf(pages))
    chinese = [p.text for p in eval_set("zh_cmrc_trial").passages[:24]]
    chinese[14] += "甄士隐有一个女儿，乳名英莲，年方三岁。"
    (tmp_path / "红楼梦选段.txt").write_text("\n\n".join(chinese), encoding="utf-8")
    for name, kb in (("minutes.pdf", "minutes"), ("红楼梦选段.txt", "novel")):
        ingested = rag(["ingest", str(tmp_path / name), "--kb", kb])
        assert ingested.returncode == 0, ingested.stderr
    # `ask` in a process of its own: llama.cpp writes its log lines (checked below) onto file descriptor 2
    # itself, which no capture in this process sees; and the 1.1 GB model is not kept loaded in the tests.
    env = {k: v for k, v in cli_env.items() if k != "RAG_CHAT_MODEL"}
    for question, kb, expected, filename in (
        ("How much did revenue grow in 2023?", "minutes", ("twelve", "12"), "minutes.pdf"),
        ("甄士隐的女儿叫什么名字？", "novel", ("英莲",), "红楼梦选段.txt"),
    ):
        proc = subprocess.run(
            [PYTHON, "-m", "rag", "ask", question, "--kb", kb, "--temperature", "0", "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, proc.stderr
        # llama.cpp's own log lines go to logging, not straight onto the terminal.
        assert not re.search(r"^(llama|ggml)\w*:", proc.stderr, re.MULTILINE), proc.stderr
        result = json.loads(proc.stdout)
        assert result["model"] == "local:qwen2.5-coder-1.5b"
        assert any(word in result["answer"].lower() for word in expected), (result["answer"], proc.stderr)
        assert result["left_out"], "top-k 8 of 800-token chunks cannot all fit: some are left out and said"
        assert "left out so that the prompt fits" in proc.stderr and "in part" in proc.stderr
        cited = [c for c in result["citations"] if c["supported"]]
        assert cited and all(c["original_filename"] == filename for c in cited), result
        with psycopg.connect(pg_uri) as conn:
            for citation in cited:
                content = conn.execute(
                    "SELECT content FROM vector_store WHERE id = %s", (citation["chunk_id"],)
                ).fetchone()[0]
                assert any(word in content.lower() for word in expected)


def stream_of(*texts: str) -> str:
    return ndjson(
        *({"model": "m", "message": {"role": "assistant", "content": t}, "done": False} for t in texts),
        {
            "model": "m",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "eval_count": len(texts),
        },
    )


def test_ask_cuts_an_answer_that_loops(
    tmp_path: Path, pg_uri: str, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in repeats one sentence 40 times: the guard ends the stream at the third time and
    keeps one copy; --json says so."""
    ingest_report(tmp_path, pg_uri)
    sentence = "Revenue rose eleven percent on subscriptions this quarter [1]. "
    httpserver.expect_request("/api/chat", method="POST").respond_with_data(
        stream_of(*[w + " " for w in (sentence * 40).split()]), content_type="application/x-ndjson"
    )
    use_ollama(monkeypatch, httpserver.url_for("/").rstrip("/"))
    proc = rag(["ask", "How much did revenue rise?", "--kb", "fin", "--model", "m", "--json"])
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["answer"] == sentence.strip() and result["looped"] is True
    assert "began repeating itself" in proc.stderr


@pytest.mark.parametrize("failure", ["chat answers 500", "Ollama not reachable"])
def test_ask_json_prints_json_when_it_fails(
    tmp_path: Path, pg_uri: str, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    ingest_report(tmp_path, pg_uri)
    host = httpserver.url_for("/").rstrip("/")
    if failure == "chat answers 500":
        httpserver.expect_request("/api/chat", method="POST").respond_with_data("boom", status=500)
    else:
        import socket

        with socket.socket() as sock:  # a port nothing listens on once it is closed
            sock.bind(("127.0.0.1", 0))
            host = f"http://127.0.0.1:{sock.getsockname()[1]}"
    use_ollama(monkeypatch, host)
    proc = rag(["ask", "How much did revenue rise?", "--kb", "fin", "--model", "m", "--json"])
    assert proc.returncode == 2
    result = json.loads(proc.stdout)
    assert list(result) == ["error"] and result["error"]
    assert proc.stderr.startswith("error: ") and result["error"] in proc.stderr


def test_ask_continues_a_stored_conversation_and_conversations_lists_shows_exports_deletes(
    tmp_path: Path, pg_uri: str, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest_report(tmp_path, pg_uri)
    answers = iter(["Revenue rose eleven percent [1].", "A dividend of 42 cents [1]."])
    seen: list[dict] = []

    def chat_handler(request: Request) -> Response:
        body = request.get_json()
        seen.append(body)
        if "Standalone query:" in body["messages"][-1]["content"]:  # the follow-up's rewrite
            text = "How much did the dividend rise?"
        else:
            text = next(answers)
        return Response(
            ndjson(
                {"model": "m", "message": {"role": "assistant", "content": text}, "done": False},
                {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"},
            ),
            content_type="application/x-ndjson",
        )

    httpserver.expect_request("/api/chat", method="POST").respond_with_handler(chat_handler)
    use_ollama(monkeypatch, httpserver.url_for("/").rstrip("/"))

    first = rag(["ask", "How much did revenue rise?", "--kb", "fin", "--model", "m", "--conversation", "new"])
    assert first.returncode == 0, first.stderr
    cid = re.search(r"conversation: ([0-9a-f-]{36})", first.stderr).group(1)
    second = rag(["ask", "And the dividend?", "--kb", "fin", "--model", "m", "--conversation", cid, "--json"])
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["answer"] == "A dividend of 42 cents [1]."
    asked = [b for b in seen if "Standalone query:" not in b["messages"][-1]["content"]][-1]
    assert [m["role"] for m in asked["messages"]] == ["system", "user", "assistant", "user"]
    assert asked["messages"][1]["content"] == "How much did revenue rise?"  # the stored turn is the history

    listed = rag(["conversations", "list", "--json"])
    (row,) = json.loads(listed.stdout)
    assert (row["id"], row["title"], row["turns"], row["knowledge_bases"]) == (
        cid,
        "How much did revenue rise?",
        2,
        ["fin"],
    )
    shown = rag(["conversations", "show", cid]).stdout
    assert "1. How much did revenue rise?\nRevenue rose eleven percent [1]." in shown and "[1] report.pdf p" in shown
    exported = json.loads(rag(["conversations", "export", cid, "--format", "json"]).stdout)
    assert [t["question"] for t in exported["turns"]] == ["How much did revenue rise?", "And the dividend?"]
    assert exported["turns"][1]["query"] == "How much did the dividend rise?"
    assert rag(["conversations", "export", cid]).stdout.startswith("# How much did revenue rise?\n")
    bad = rag(["conversations", "show", "nope"])
    assert bad.returncode == 2 and "'nope' is not a conversation id" in bad.stderr
    assert rag(["conversations", "delete", cid]).stdout.strip() == f"deleted conversation {cid}"
    assert "no conversations yet" in rag(["conversations", "list"]).stdout
