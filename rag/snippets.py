"""Chunk settings as code to paste elsewhere: the `rag` Python API and Spring AI's TokenTextSplitter."""

from __future__ import annotations

from rag.chunking import SPRING_DEFAULT, ChunkSettings, is_spring

_JAVA_INT_MAX = 2_147_483_647


def python_snippet(settings: ChunkSettings, filename: str = "report.pdf") -> str:
    """Python that chunks `filename` with `settings` through this project's `rag` package."""
    fields = settings.as_dict()
    body = "".join(f"    {name}={value!r},\n" for name, value in fields.items())
    return (
        "from rag.chunking import ChunkSettings, split, stats\n"
        "from rag.documents import load_path\n"
        "\n"
        f"settings = ChunkSettings(\n{body})\n"
        f"document = load_path({filename!r})  # any kind the app reads: PDF, Word, web page, text…\n"
        "chunk_set = split(document.text, settings, document.pages_for_span)\n"
        "summary = stats(chunk_set)\n"
        'print(f"{summary.count} chunks, {summary.mean_tokens:.0f} tokens on average, "\n'
        '      f"{chunk_set.dropped} dropped as too short")\n'
        "for chunk in chunk_set.chunks[:3]:\n"
        "    print(chunk.index, chunk.pages, chunk.tokens, repr(chunk.text[:60]))\n"
    )


def spring_snippet(settings: ChunkSettings) -> str:
    """Java for Spring AI's TokenTextSplitter with `settings`, or the closest it can do."""
    lines = ["import org.springframework.ai.transformer.splitter.TokenTextSplitter;", ""]
    min_chars = settings.min_chunk_size_chars
    if is_spring(settings.strategy):
        if settings == SPRING_DEFAULT:
            lines.append("// These are TokenTextSplitter's defaults: new TokenTextSplitter() does the same.")
    else:
        lines.append("// Spring AI's TokenTextSplitter has no overlap and no recursive mode:")
        if settings.strategy == "token":
            lines.append(f"// the closest to token windows of {settings.chunk_size} tokens is a splitter that")
            lines.append("// never cuts at a sentence end (the minimum can never be reached).")
            min_chars = _JAVA_INT_MAX
        else:
            # The recursive splitter ends a chunk at a boundary in its second half; a token is
            # about four characters, so half a window is about two characters per token.
            min_chars = settings.chunk_size * 2
            lines.append(f"// the closest cuts each {settings.chunk_size}-token window after its last . ? ! or")
            lines.append(f"// newline beyond ~{min_chars} characters (about half the window).")
        if settings.chunk_overlap:
            lines.append(
                f"// The {settings.chunk_overlap}-token overlap is lost; measure the difference in the Chunk Lab."
            )
    min_chars_java = "Integer.MAX_VALUE" if min_chars >= _JAVA_INT_MAX else str(min_chars)
    keep = "true" if settings.keep_separator or not is_spring(settings.strategy) else "false"
    lines += [
        "TokenTextSplitter splitter = TokenTextSplitter.builder()",
        f"        .withChunkSize({settings.chunk_size})",
        f"        .withMinChunkSizeChars({min_chars_java})",
        f"        .withMinChunkLengthToEmbed({settings.min_chunk_length_to_embed})",
        f"        .withMaxNumChunks({settings.max_num_chunks})",
        f"        .withKeepSeparator({keep})",
        "        .build();",
        "List<Document> chunks = splitter.apply(documents);",
    ]
    return "\n".join(lines) + "\n"
