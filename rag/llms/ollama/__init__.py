"""Ollama: the only code that speaks HTTP to an Ollama server."""
