"""Hostile Office files (issue 33): ZIP bombs refused by their declared sizes before a byte is unpacked, a part
that unpacks to more than it declares read no further, entity attacks refused in words, and what such files
must not do to the process (memory) or the knowledge base (nothing stored)."""

from __future__ import annotations

import io
import multiprocessing
import random
import re
import resource
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

import pytest

from rag.chunking import ChunkSettings
from rag.documents import load_bytes
from rag.documents.loading import MAX_RATIO, MAX_TREE_XML_BYTES, MAX_UNPACKED_BYTES
from rag.embeddings.local import LocalEmbedder
from rag.ingest import ingest_bytes
from tests.docgen import make_docx, make_pptx, make_xlsx, make_zip_bomb
from tests.documents.reasons import reason_of

_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
DOCX_HEAD = f'<?xml version="1.0" encoding="UTF-8"?><w:document {_W}><w:body>'
DOCX_TAIL = "</w:body></w:document>"
SHEET_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
)
SHEET_TAIL = "</sheetData></worksheet>"


def word_bomb(unpacked: int, *, declared: int | None = None) -> bytes:
    """The .docx of issue 33: a document.xml of millions of one-letter paragraphs."""
    unit = "<w:p><w:r><w:t>x</w:t></w:r></w:p>"
    return make_zip_bomb(make_docx(["x"]), "word/document.xml", DOCX_HEAD, unit, DOCX_TAIL, unpacked, declared=declared)


def excel_bomb(unpacked: int) -> bytes:
    """The .xlsx of issue 33: a sheet of millions of identical cells."""
    unit = '<row><c t="n"><v>1</v></c><c t="n"><v>1</v></c><c t="n"><v>1</v></c></row>'
    return make_zip_bomb(make_xlsx(), "xl/worksheets/sheet1.xml", SHEET_HEAD, unit, SHEET_TAIL, unpacked)


def word_of_varied_paragraphs(unpacked: int) -> bytes:
    """A .docx whose document.xml compresses only ~30 to 1 (no bomb by its ratio) but is too big to parse."""
    pick = random.Random(33)
    unit = "".join(
        f"<w:p><w:r><w:t>Paragraph {pick.randrange(10)} of part {pick.randrange(10)}</w:t></w:r></w:p>"
        for _ in range(20_000)
    )
    return make_zip_bomb(make_docx(["x"]), "word/document.xml", DOCX_HEAD, unit, DOCX_TAIL, unpacked)


def _refused_measured(data: bytes, filename: str) -> tuple[str, int, int, str]:
    """In a process of its own: the reason, the peak of Python allocations, how far resident memory grew, and the
    biggest allocations (for the failure message). The file is refused once before the measured refusal: the first
    one imports the reader's modules lazily and fills their caches, tens of MB in CI's fresh clone (75 MB once)
    that say nothing of the file. A refusal that unpacks the file allocates it again on the second."""
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    reason_of(data, filename)
    tracemalloc.start(8)
    try:
        reason = reason_of(data, filename)
        _, peak = tracemalloc.get_traced_memory()
        top = tracemalloc.take_snapshot().statistics("filename")[:5]
    finally:
        tracemalloc.stop()
    biggest = "; ".join(f"{stat.traceback[0].filename}: {stat.size / 1e6:.1f} MB" for stat in top)
    return reason, peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before, biggest


def refused_within_bounds(data: bytes, filename: str) -> str:
    """The reason `data` is refused with, checked to be refused without unpacking it: under 64 MB of Python
    allocations at the peak (tracemalloc) and under 256 MB more resident memory than the process ever had
    (ru_maxrss: the high-water mark, so this only catches a load that went far above it). Unpacked, these
    files take gigabytes (issue 33: past 6 GB). Measured in a fresh process: tracemalloc counts every thread's
    allocations, and in the whole suite a thread left by an earlier test once added 68 MB to a 1 MB refusal."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        reason, peak, grown, biggest = pool.submit(_refused_measured, data, filename).result(timeout=120)
    assert peak < 64 << 20, f"{peak / 1e6:.0f} MB allocated to refuse {filename} (held at the end: {biggest})"
    assert grown < 256 << 10, f"resident memory grew {grown / 1e3:.0f} MB to refuse {filename}"
    assert "\n" not in reason and "corrupt" not in reason
    return reason


def test_a_docx_that_unpacks_to_gigabytes_is_refused_by_its_declared_size() -> None:
    bomb = word_bomb(2_200_000_000)
    assert len(bomb) < 8 << 20  # 6.5 MB, as issue 33's 6.4 MB
    assert refused_within_bounds(bomb, "x.docx") == "unpacks to 2.2 GB: over the limit of 1 GB"
    assert MAX_UNPACKED_BYTES == 1_000_000_000


def test_a_part_that_unpacks_hundreds_of_times_its_size_is_refused_by_its_ratio() -> None:
    reason = refused_within_bounds(excel_bomb(600_000_000), "cells.xlsx")
    match = re.fullmatch(
        r"its part xl/worksheets/sheet1\.xml unpacks to (\d+) MB from ([\d.]+) (?:KB|MB) \(([\d,]+) times\): "
        r"over the limit of (\d+) times",
        reason,
    )
    assert match, reason
    assert int(match[1]) in range(590, 601) and int(match[3].replace(",", "")) > 200 and int(match[4]) == MAX_RATIO


def test_a_docx_with_more_xml_than_can_be_parsed_in_memory_is_refused() -> None:
    data = word_of_varied_paragraphs(MAX_TREE_XML_BYTES + 20_000_000)
    assert len(data) < 16 << 20
    reason = refused_within_bounds(data, "long.docx")
    assert re.fullmatch(r"its XML unpacks to 2\d\d MB: over the limit of 200 MB that can be read in memory", reason)


def test_a_part_that_unpacks_to_more_than_it_declares_is_read_no_further() -> None:
    # It declares 1 MB and holds 2.2 GB: zipfile's read() inflated all 2.2 GB before cutting it to 1 MB.
    liar = word_bomb(2_200_000_000, declared=1_000_000)
    assert refused_within_bounds(liar, "liar.docx") == (
        "its part word/document.xml unpacks to more than the 1 MB it declares"
    )


def _lol(root: str) -> str:
    """A billion-laughs DTD: ten levels of ten references, 10^9 'lol's from under 1 KB."""
    entities = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    return f'<!DOCTYPE {root} [<!ENTITY l0 "lol">{entities}]>'


def _with_part(base: bytes, part: str, change: Callable[[str], str]) -> bytes:
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(base)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info.filename)
            target.writestr(info.filename, change(data.decode()).encode() if info.filename == part else data)
    return out.getvalue()


def _declared(xml: str, dtd: str, old: str, new: str) -> str:
    """`xml` with `dtd` after its XML declaration and `old` text replaced by `new`."""
    end = xml.index("?>") + 2 if xml.startswith("<?xml") else 0
    return xml[:end] + dtd + xml[end:].replace(old, new, 1)


@pytest.mark.parametrize(
    ("make", "part", "old", "filename", "reason"),
    [
        (
            lambda: make_docx(["Hello there"]),
            "word/document.xml",
            "Hello there",
            "laughs.docx",
            'refused: its XML entities expand to far more text than the file holds (a "billion laughs")',
        ),
        (
            make_pptx,
            "ppt/slides/slide1.xml",
            "Quarterly review",
            "laughs.pptx",
            'refused: its XML entities expand to far more text than the file holds (a "billion laughs")',
        ),
        (
            make_xlsx,
            "xl/worksheets/sheet1.xml",
            "Falcon X",
            "laughs.xlsx",
            "refused: its XML declares entities, which Office never writes (an XML entity attack)",
        ),
    ],
)
def test_a_billion_laughs_is_refused_saying_so(make, part: str, old: str, filename: str, reason: str) -> None:
    data = _with_part(make(), part, lambda xml: _declared(xml, _lol("x"), old, "&l9;"))
    assert refused_within_bounds(data, filename) == reason


def test_a_docx_entity_reference_keeps_the_text_after_it_and_an_external_one_is_not_fetched() -> None:
    dtd = '<!DOCTYPE w:document [<!ENTITY co "ACME Corp"><!ENTITY x SYSTEM "file:///etc/hostname">]>'
    data = _with_part(
        make_docx(["Hello CO world, from X here", "Second paragraph"]),
        "word/document.xml",
        lambda xml: _declared(xml, dtd, "CO", "&co;").replace("X here", "&x; here"),
    )
    doc = load_bytes(data, "entities.docx")
    assert doc.pages[0].text == "Hello ACME Corp world, from &x; here\n\nSecond paragraph"


def test_xlrd_warnings_do_not_reach_stdout(capfd: pytest.CaptureFixture[str]) -> None:
    import xlwt

    book = xlwt.Workbook()
    book.add_sheet("Inventory").write(0, 0, "SKU-6678")
    out = io.BytesIO()
    book.save(out)
    # Trailing bytes: xlrd says "WARNING *** file size (...) not 512 + multiple of sector size (512)".
    doc = load_bytes(out.getvalue() + b"\0" * 100, "padded.xls")
    assert "SKU-6678" in doc.text
    printed = capfd.readouterr()
    assert printed.out == "" and "WARNING" not in printed.err


def test_a_bomb_ingested_stores_nothing(store) -> None:
    result = ingest_bytes(
        store, LocalEmbedder(), word_bomb(2_200_000_000), "x.docx", "bombs", ChunkSettings(chunk_size=120)
    )
    assert result.status == "failed" and result.reason == "unpacks to 2.2 GB: over the limit of 1 GB"
    assert result.line() == "x.docx: failed: unpacks to 2.2 GB: over the limit of 1 GB"
    assert store.list_documents("bombs") == [] and store.get_knowledge_base("bombs") is None
