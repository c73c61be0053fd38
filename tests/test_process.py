"""Worker processes started under `streamlit run` do not run the app's page again (`rag.process.no_main_script`)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import ROOT


def test_workers_spawned_while_a_page_is_main_do_not_run_the_page(tmp_path: Path) -> None:
    """Streamlit runs a page as a `__main__` module with a `__file__` and no `__spec__`; multiprocessing's spawn
    runs such a script in each child it starts. The page here leaves a mark when it runs: the tokenizer's workers
    and the ingest's read-ahead worker must not leave one (they ran the whole app: its chat model, 1.4 GB)."""
    page = tmp_path / "page.py"
    mark = tmp_path / "ran"
    page.write_text(f"open({str(mark)!r}, 'a').write('ran\\n')\n")
    code = textwrap.dedent(f"""
        import sys, time, types
        from rag.chunking import cl100k
        from rag.ingest.readahead import ReadAhead

        main = types.ModuleType("__main__")  # as Streamlit's script runner makes it
        main.__file__ = {str(page)!r}
        sys.modules["__main__"] = main
        cl100k.usable_cores = lambda: 2
        cl100k.fast_allowed = False  # tiktoken's workers: gigatoken starts none
        assert cl100k.start_workers(wait=60), "the tokenizer's workers did not start"
        ahead = ReadAhead()
        key = ahead.submit(b"Harbour log. The keeper lit the lamp at dusk.", "log.txt")
        deadline = time.monotonic() + 60
        while ahead._begun.value < 1 and time.monotonic() < deadline:  # begun there, not parsed here
            time.sleep(0.01)
        outcome = ahead.take(key, lambda *told: None)
        ahead.close()
        assert outcome is not None and "keeper lit the lamp" in outcome.text, outcome
        assert sys.modules["__main__"] is main
        print("ok")
        """)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=str(tmp_path),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert not mark.exists(), f"a worker ran the page {mark.read_text().count('ran')} times"
