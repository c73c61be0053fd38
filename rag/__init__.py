"""RAG Knowledge Lab library: everything testable without Streamlit."""

import os

# onnxruntime (e5's engine, pymupdf's layout model) records telemetry on Linux since 1.2x: a device id and
# an event queue for upload under ~/.cache/Microsoft/DeveloperTools/, written from its import on (535 events
# were found there after a day of this project's runs). Its opt-out must be in the environment before it is
# imported; nothing here sends anything anywhere. Set ORT_DISABLE_TELEMETRY=0 to let it.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
