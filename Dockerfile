# The Streamlit app. docker-compose.yml builds it and gives it DATABASE_URL and OLLAMA_HOST.
#
# Two stages: llama-cpp-python (the embedded chat model, used when Ollama is unreachable) is
# published as source only and compiles llama.cpp on install, which needs a C++ toolchain that the
# running image should not carry.

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
# The runtime lock (exact versions and hashes, compiled from pyproject.toml by `make lock`): no test or
# benchmark package. The app runs from /app, the source, so the project itself needs no install.
COPY requirements.txt /tmp/requirements.txt
# llama.cpp picks the build machine's CPU features by default; a portable build runs anywhere.
RUN python -m venv /opt/venv \
    && CMAKE_ARGS="-DGGML_NATIVE=OFF" /opt/venv/bin/pip install -r /tmp/requirements.txt

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH
# llama.cpp is linked against OpenMP's runtime, which the slim image lacks; scanned pages are read by
# Tesseract (English and Simplified Chinese), as `make run` installs it outside Docker.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libgomp1 tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/venv /opt/venv

WORKDIR /app
# A non-root user owning only what it writes: /data (RAG_DATA_DIR).
RUN useradd --create-home --uid 10001 --user-group app \
    && mkdir -p /data \
    && chown app:app /data
COPY --chown=app:app . .

USER app
ENV RAG_DATA_DIR=/data
EXPOSE 8501

# The slim image has no curl: Python asks Streamlit's own health endpoint.
HEALTHCHECK --interval=15s --timeout=5s --start-period=40s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://localhost:8501/_stcore/health', timeout=4).status == 200 else 1)"]

CMD ["streamlit", "run", "app.py", "--server.address", "0.0.0.0", "--server.port", "8501", "--server.headless", "true"]
