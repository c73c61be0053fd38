# The Streamlit app. docker-compose.yml builds it and gives it DATABASE_URL and OLLAMA_HOST.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Dependencies first, so that editing the code does not reinstall them.
COPY requirements.txt ./
RUN pip install -r requirements.txt

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
