"""Peak RSS of the running app (`streamlit run app.py`, and any children) with one and with three browser
sessions open and used, against the server's idle baseline (issue 17).

The app runs as a user starts it, on the bench's scratch database, with no Ollama reachable: the embedded
defaults serve it (e5, or WordLlama where e5 cannot run, and the embedded chat model, preloaded). A small
knowledge base is ingested first through the library. Each session is a headless Chromium context driven
by Playwright: it opens the Upload page and its Library tab, then the Chat page, and asks a question of its own
that the embedded model answers; sessions two and three do the same side by side. A thread samples the RSS
every ~20 ms (`SAMPLE_SECONDS`). The goal is issue 32's: the RSS with three sessions under 1.5 GB, the chat
model's weights mapped from their file included (935 MB of the default Qwen GGUF's 1,066 once its token table
is handed back: rag.llms.residency). The app's own memory (RSS less the shared pages) is reported beside it.
The browser's own memory is not counted, nor PostgreSQL's (its server is not the app's child).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.report import Report

_ROOT = Path(__file__).resolve().parents[1]
GOAL_MB = 1500
KNOWLEDGE = "bench-sessions"
QUESTIONS = (
    "How much did revenue grow in 2023?",
    "Where will the new engineers work?",
    "What could delay the product launches?",
)
"""One a session: three users rarely ask the same thing (and an identical prompt is a hit in the model's
prompt cache, which would hide what a new one costs)."""
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""As tests/e2e/browser.py launches it (headless is Playwright's own flag)."""
_PAGES = (
    "Quarterly report. Revenue grew by twelve percent in 2023, driven by subscriptions. Operating costs "
    "fell slightly. The board approved a dividend of 42 cents per share.",
    "Outlook. Management expects steady growth and plans to hire forty engineers in Berlin. The search "
    "platform will move to PostgreSQL with pgvector and HNSW indexes.",
    "Risks. A slower market in Asia could delay two product launches. Currency swings cut revenue by one "
    "percent in the fourth quarter.",
)


def chromium_path() -> str | None:
    found = os.environ.get("CHROMIUM_PATH") or next((p for p in CHROMIUM_CANDIDATES if Path(p).exists()), None)
    return found or shutil.which("chromium")


def browser_missing() -> str | None:
    """Why no browser session can be driven here (one line), or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (make bench, or pip install -r requirements-bench.txt)"
    if chromium_path() is None:
        return "chromium is not installed (apt-get install chromium)"
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a server the bench starts)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tree_memory(pid: int) -> tuple[int, int]:
    """Resident bytes of process `pid` and all its descendants, and how many of them are shared pages
    (files mapped read-only, such as the GGUF model's weights and the libraries: the kernel drops and
    reads them again as it needs; (0, 0) once it is gone)."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0, 0
    total = shared = 0
    for proc in procs:
        try:
            info = proc.memory_info()
        except psutil.Error:
            continue
        total += info.rss
        shared += getattr(info, "shared", 0)  # Linux: RssFile + RssShmem
    return total, shared


def tree_rss(pid: int) -> int:
    """Resident bytes of process `pid` and all its descendants (0 once it is gone)."""
    return tree_memory(pid)[0]


SAMPLE_SECONDS = 0.02
"""How often the app's RSS is sampled: every 100 ms could miss a peak as short as the model's load (~1 s, of which
its token table stood mapped beside the buffers it makes for a fraction: rag.llms.residency)."""


class RssSampler:
    """Samples `tree_memory(pid)` every `interval` seconds on a thread: the peak RSS, and the peak of the
    app's own memory (RSS less the shared pages) with the shared pages at that sample."""

    def __init__(self, pid: int, interval: float = SAMPLE_SECONDS) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self.peak_own = 0
        self.shared_at_peak_own = 0
        self.last = 0
        self.samples = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)

    def start(self) -> RssSampler:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            rss, shared = tree_memory(self.pid)
            with self._lock:
                self.last = rss
                self.peak = max(self.peak, rss)
                if rss - shared > self.peak_own:
                    self.peak_own, self.shared_at_peak_own = rss - shared, shared
                self.samples += 1
            self._stop.wait(self.interval)

    def peak_mb(self) -> float:
        with self._lock:
            return self.peak / 2**20

    def own_mb(self) -> tuple[float, float]:
        """The peak of the app's own memory and the shared pages beside it, MB."""
        with self._lock:
            return self.peak_own / 2**20, self.shared_at_peak_own / 2**20

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


@dataclass
class Footprint:
    embedder: str = ""
    idle_mb: float = 0.0
    pages_mb: float = 0.0
    """The peak once the first session has opened Upload and the Library (the embedder and the store are
    loaded, the chat model's preload has started), before it opens the Chat."""
    one_mb: float = 0.0
    three_mb: float = 0.0
    three_own_mb: float = 0.0
    """The peak of the app's own memory (RSS less shared pages) with three sessions."""
    three_shared_mb: float = 0.0
    """Shared pages (the mapped model file, libraries) at that peak."""
    settled_mb: float = 0.0
    """The last sample, with the three sessions still open and idle."""
    seconds: dict[str, float] = field(default_factory=dict)
    answered: list[bool] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def per_extra_mb(self) -> float:
        return (self.three_mb - self.one_mb) / 2


def _stop_tree(proc: subprocess.Popen[bytes]) -> None:
    """Stop `proc` (terminate, then kill), and any child it left behind, each by its pid."""
    import psutil

    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        children = []
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    for child in children:
        try:
            child.kill()
        except psutil.Error:
            pass


@contextmanager
def running_app(env: dict[str, str], log_path: Path, timeout: float = 120) -> Iterator[tuple[str, int]]:
    """`streamlit run app.py` on a free port; yields its URL and pid once /_stcore/health answers."""
    import httpx

    port = free_port()
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "app.py",
                "--server.port",
                str(port),
                "--server.address",
                "127.0.0.1",
                "--server.headless",
                "true",
                "--browser.gatherUsageStats",
                "false",
            ],
            cwd=_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"streamlit exited with {proc.returncode}: {_tail(log_path)}")
                try:
                    if httpx.get(f"{url}/_stcore/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"streamlit did not become healthy in {timeout:.0f} s: {_tail(log_path)}")
                time.sleep(0.3)
            yield url, proc.pid
        finally:
            _stop_tree(proc)


def _tail(path: Path) -> str:
    lines = path.read_text(errors="replace").strip().splitlines()
    return " | ".join(lines[-3:])


def app_env(uri: str, data_dir: Path, embedder: str) -> dict[str, str]:
    """The app's environment: the scratch database, its own data folder, no Ollama (a port nothing
    listens on), the named local embedder, the embedded chat model preloaded (the default), no login."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_") and k not in ("DATABASE_URL", "OLLAMA_HOST")}
    env.update(
        DATABASE_URL=uri,
        RAG_DATA_DIR=str(data_dir),
        RAG_EMBEDDER=embedder,
        RAG_PRELOAD_MODEL="1",
        OLLAMA_HOST=f"http://127.0.0.1:{free_port()}",
        PYTHONPATH=str(_ROOT),
    )
    return env


def _knowledge_base(uri: str) -> str:
    """Ingest three short PDF pages into KNOWLEDGE with the app's default local embedder; its RAG_EMBEDDER name."""
    import pymupdf

    from rag.chunking import ChunkSettings
    from rag.embeddings import local_fallback_reason
    from rag.ingest import ingest_bytes
    from rag.store import Store

    if local_fallback_reason() is None:
        from rag.embeddings.e5 import E5Embedder

        embedder: Any = E5Embedder()
        name = "local:e5"
    else:
        from rag.embeddings.local import LocalEmbedder

        embedder = LocalEmbedder()
        name = "local:wordllama"
    doc = pymupdf.open()
    for text in _PAGES:
        doc.new_page().insert_textbox(pymupdf.Rect(50, 50, 545, 790), text, fontsize=11)
    data = doc.tobytes()
    doc.close()
    store = Store(uri)
    try:
        result = ingest_bytes(store, embedder, data, "quarterly-report.pdf", KNOWLEDGE, ChunkSettings())
    finally:
        store.close()
    if result.status == "failed":
        raise RuntimeError(f"the knowledge base was not ingested: {result.reason}")
    return name


# -- one browser session -----------------------------------------------------------------------------


def _wait_idle(page: Any, timeout: float = 180_000) -> None:
    """Streamlit shows its status widget while a script runs; wait until it is gone."""
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout)


class Session:
    """One browser context on the app, driven step by step (so that several can run side by side)."""

    def __init__(self, browser: Any, url: str) -> None:
        self.url = url
        self.context = browser.new_context(viewport={"width": 1440, "height": 1600})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def open_upload(self) -> None:
        self.page.goto(f"{self.url}/upload", wait_until="networkidle")
        self.page.get_by_text("Status").first.wait_for(timeout=180_000)
        _wait_idle(self.page)

    def open_library(self) -> None:
        library = self.page.locator("button:visible", has_text="Chunks as CSV").first
        for _ in range(5):  # a rerun still finishing can redraw the tabs: click until the Library shows
            self.page.get_by_role("tab", name="📚 Library").click()
            _wait_idle(self.page)
            try:
                library.wait_for(timeout=8_000)
                return
            except Exception:  # noqa: BLE001 - retried, then said
                continue
        self.errors.append("the Library tab did not show the knowledge base")

    def open_chat(self) -> None:
        self.page.goto(f"{self.url}/chat", wait_until="networkidle")
        self.page.locator('[data-testid="stChatInputTextArea"]').wait_for(timeout=180_000)
        _wait_idle(self.page)

    def ask(self, question: str) -> None:
        box = self.page.locator('[data-testid="stChatInputTextArea"]')
        box.fill(question)
        box.press("Enter")

    def answered(self, timeout: float = 600_000) -> bool:
        """Wait for the answer to be finished (the toolbar counts the turn); False on a timeout."""
        try:
            self.page.get_by_text("in this session").first.wait_for(timeout=timeout)
            _wait_idle(self.page)
            return True
        except Exception as exc:  # noqa: BLE001 - Playwright's timeout: reported, memory still measured
            self.errors.append(f"no answer: {str(exc).splitlines()[0]}")
            return False

    def close(self) -> None:
        try:
            self.context.close()
        except Exception:  # noqa: BLE001 - the browser may be gone already
            pass


def _use(
    sessions: list[Session], questions: tuple[str, ...], pages_open: Callable[[], None] = lambda: None
) -> list[bool]:
    """Each session opens Upload and its Library tab (then `pages_open` is called) and Chat, then all ask at
    once and wait for their answers."""
    for s in sessions:
        s.open_upload()
    for s in sessions:
        s.open_library()
    pages_open()
    for s in sessions:
        s.open_chat()
    for s, question in zip(sessions, questions):
        s.ask(question)
    return [s.answered() for s in sessions]


def measure(uri: str, *, launch: Callable[[Any], Any] | None = None, settle: float = 2.0) -> Footprint:
    """Start the app on `uri`, then drive one session, then two more, sampling the app's RSS throughout."""
    from playwright.sync_api import sync_playwright

    found = Footprint()
    with tempfile.TemporaryDirectory(prefix="rag-sessions-") as tmp:
        start = time.perf_counter()
        found.embedder = _knowledge_base(uri)
        found.seconds["ingest"] = time.perf_counter() - start
        env = app_env(uri, Path(tmp) / "data", found.embedder)
        with running_app(env, Path(tmp) / "streamlit.log") as (url, pid):
            sampler = RssSampler(pid).start()
            sessions: list[Session] = []
            try:
                time.sleep(settle)
                found.idle_mb = sampler.peak_mb()
                with sync_playwright() as pw:
                    path = chromium_path()
                    browser = (
                        launch(pw)
                        if launch
                        else pw.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
                    )
                    try:
                        start = time.perf_counter()
                        sessions.append(Session(browser, url))
                        found.answered += _use(
                            sessions[:1],
                            QUESTIONS[:1],
                            pages_open=lambda: setattr(found, "pages_mb", sampler.peak_mb()),
                        )
                        time.sleep(settle)
                        found.one_mb = sampler.peak_mb()
                        found.seconds["one"] = time.perf_counter() - start
                        start = time.perf_counter()
                        sessions += [Session(browser, url), Session(browser, url)]
                        found.answered += _use(sessions[1:], QUESTIONS[1:])
                        time.sleep(settle)
                        found.three_mb = sampler.peak_mb()
                        found.three_own_mb, found.three_shared_mb = sampler.own_mb()
                        found.settled_mb = sampler.last / 2**20
                        found.seconds["three"] = time.perf_counter() - start
                    finally:
                        for s in sessions:
                            found.problems += [f"session {sessions.index(s) + 1}: {e}" for e in s.errors]
                            s.close()
                        browser.close()
            finally:
                sampler.stop()
    return found


def bench_sessions(report: Report, uri: str, quick: bool) -> None:
    report.section(
        f"Peak RSS of the running app (streamlit run app.py): idle, one and three browser sessions "
        f"(goal < {GOAL_MB:,} MB with three)"
    )
    if quick:
        report.line("skipped in --quick: it starts the app and the embedded models and asks three questions (minutes)")
        return
    missing = browser_missing()
    if missing:
        report.line(f"skipped: {missing}")
        return
    try:
        f = measure(uri)
    except Exception as exc:  # noqa: BLE001 - a bench section says what failed and lets the others run
        report.line(f"failed: {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")
        return
    answered = f"{sum(f.answered)}/{len(f.answered)} answered"
    report.line(
        f"app on the scratch database, embedder {f.embedder}, the embedded chat model (preloaded), no "
        f"Ollama; each session opens Upload, its Library tab and Chat and asks a question of its own "
        f"({answered})"
    )
    every = f"{SAMPLE_SECONDS * 1000:.0f} ms"
    report.line(f"idle after start: {f.idle_mb:,.0f} MB RSS (server and children, sampled every {every})")
    report.line(
        f"peak with one session: {f.one_mb:,.0f} MB (+{f.one_mb - f.idle_mb:,.0f} MB over idle; "
        f"{f.pages_mb:,.0f} MB once Upload and Library were open, before the Chat; "
        f"{f.seconds.get('one', 0):.0f} s)"
    )
    met = f.three_mb < GOAL_MB
    report.line(
        f"peak with three sessions: {f.three_mb:,.0f} MB ({f.seconds.get('three', 0):.0f} s for the two more; "
        f"goal < {GOAL_MB:,} MB: {'met' if met else 'NOT met'})"
    )
    report.line(
        f"  of which the app's own memory: {f.three_own_mb:,.0f} MB at its peak, beside {f.three_shared_mb:,.0f} MB "
        f"of shared pages (the model's weights mapped from their file, libraries)"
    )
    report.line(
        f"per extra session: {f.per_extra_mb:,.0f} MB; {f.settled_mb:,.0f} MB at the end, the three "
        f"sessions open and idle"
    )
    for problem in f.problems:
        report.line(f"note: {problem}")
