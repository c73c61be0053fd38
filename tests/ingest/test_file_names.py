"""A file name's two Unicode spellings (issue 33): NFC (Windows, browsers) and NFD (macOS) name one document."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from rag.chunking import ChunkSettings
from rag.embeddings.local import LocalEmbedder
from rag.ingest import ingest_bytes, sync

SETTINGS = ChunkSettings(chunk_size=120, min_chunk_size_chars=0)
TEXT = ("The café on the harbour opens at seven and serves the fishermen first. " * 8).encode()
NFC = unicodedata.normalize("NFC", "café menu.txt")
NFD = unicodedata.normalize("NFD", "café menu.txt")


def test_the_nfd_and_nfc_spellings_of_a_name_are_one_document(store) -> None:
    assert NFC != NFD
    first = ingest_bytes(store, LocalEmbedder(), TEXT, NFD, "names", SETTINGS)
    again = ingest_bytes(store, LocalEmbedder(), TEXT, NFC, "names", SETTINGS)
    assert (first.status, again.status) == ("stored", "unchanged")
    assert [d.original_filename for d in store.list_documents("names")] == [NFC]


def test_a_synced_folder_with_an_nfd_name_is_unchanged_the_second_time(store, tmp_path: Path) -> None:
    (tmp_path / NFD).write_bytes(TEXT)
    first = sync(store, LocalEmbedder(), tmp_path, "names", SETTINGS, delete_missing=True)
    second = sync(store, LocalEmbedder(), tmp_path, "names", SETTINGS, delete_missing=True)
    assert [r.status for r in first.results] == ["stored"]
    assert [r.status for r in second.results] == ["unchanged"] and second.deleted == []
    assert [d.original_filename for d in store.list_documents("names")] == [NFC]
