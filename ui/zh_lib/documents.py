"""简体中文 of the messages rag.documents, rag.ingest and rag.chunking make as `rag.text.Text`.

The words the Upload page already translates for itself stay in ui/zh.py: the stages (parse, chunk,
embed, store), the statuses (stored, replaced, unchanged, failed, stopped), the presets' names.
"""
from __future__ import annotations

ZH: dict[str, str] = {
    "its text ({chars} million characters by page {page}) is absurdly larger than the file ({size} KB): the pages repeat one content stream (a crafted or broken {kind}); refused": "读出的文本（到第 {page} 页已有 {chars} 百万字符）远远超过文件本身（{size} KB）：各页重复同一个内容流（构造的或损坏的 {kind}）；已拒绝",
    # -- rag.documents.loading: which files are read, and why one cannot be
    "PDF, EPUB, XPS, Word (.docx), PowerPoint (.pptx), Excel (.xlsx, .xls), web pages (.html, .htm), CSV, TXT and Markdown":
        "PDF、EPUB、XPS、Word（.docx）、PowerPoint（.pptx）、Excel（.xlsx、.xls）、网页（.html、.htm）、CSV、TXT 和 Markdown",
    "cannot read the file ({cause})": "无法读取文件（{cause}）",
    "empty file (0 bytes)": "空文件（0 字节）",
    "no text (the file is blank)": "没有文字（文件是空白的）",
    "no extractable text: its pages hold neither text nor a scanned page image": "没有可提取的文字：页面上既没有文字，也没有扫描的页面图像",
    "no extractable text: its pages are scanned images and no OCR engine is installed ({hint})":
        "没有可提取的文字：页面是扫描图像，而且没有安装 OCR 引擎（{hint}）",
    "no text: OCR found none on its scanned pages": "没有文字：OCR 在扫描页面上没有识别出文字",
    "no text: the {kind} file holds no text (only images, or nothing)": "没有文字：这个 {kind} 文件不含文字（只有图片，或什么都没有）",
    "not an Excel 97-2003 file (no OLE header); is the extension wrong?": "不是 Excel 97-2003 文件（没有 OLE 文件头）；扩展名是不是错了？",
    "the {kind} file is too large to read in memory": "这个 {kind} 文件太大，无法在内存中读取",
    "password-protected {kind} file: remove the password and try again": "{kind} 文件受密码保护：请去掉密码后重试",
    "corrupt or unreadable {kind} file: {cause}": "{kind} 文件已损坏或无法读取：{cause}",
    "password-protected {kind} file: remove the password (File › Info › Protect) and save it again":
        "{kind} 文件受密码保护：请去掉密码（文件 › 信息 › 保护）后重新保存",
    "an old binary Office file ({old}) named .{ext}: save it as .{ext} in {kind} first":
        "这是旧的二进制 Office 文件（{old}），却以 .{ext} 命名：请先在 {kind} 中另存为 .{ext}",
    "an old binary Office file ({old}) named .{ext}: save it as .{ext} in {kind} first, or rename it to .xls":
        "这是旧的二进制 Office 文件（{old}），却以 .{ext} 命名：请先在 {kind} 中另存为 .{ext}，或把它重命名为 .xls",
    "not a {kind} file (its content is not a ZIP archive); is the extension wrong?":
        "不是 {kind} 文件（其内容不是 ZIP 压缩包）；扩展名是不是错了？",
    "not an {kind} file (its content is not a ZIP archive); is the extension wrong?":
        "不是 {kind} 文件（其内容不是 ZIP 压缩包）；扩展名是不是错了？",
    "truncated or damaged {kind} file (its ZIP archive cannot be read); the file is incomplete":
        "{kind} 文件被截断或已损坏（无法读取其 ZIP 压缩包）；文件不完整",
    "damaged {kind} file: its part {part} is corrupt": "{kind} 文件已损坏：其中的部件 {part} 已损坏",
    "not a {kind} file: a ZIP archive without the {part} part every .{ext} has":
        "不是 {kind} 文件：这个 ZIP 压缩包缺少每个 .{ext} 都有的 {part} 部件",
    "not an {kind} file: a ZIP archive without the {part} part every .{ext} has":
        "不是 {kind} 文件：这个 ZIP 压缩包缺少每个 .{ext} 都有的 {part} 部件",
    "(no extension)": "（无扩展名）",
    "unsupported file type '{extension}' (supported: {types})": "不支持的文件类型“{extension}”（支持：{types}）",
    "not a PDF file (its content does not start with %PDF-); is the extension wrong?":
        "不是 PDF 文件（其内容不是以 %PDF- 开头）；扩展名是不是错了？",
    "truncated PDF (no end-of-file marker); the file is incomplete": "PDF 被截断（没有文件结束标记）；文件不完整",
    # -- rag.documents.text and rag.documents.web: decoding
    "not UTF-8 or UTF-16 text (invalid byte 0x{byte} at offset {offset}); save it as UTF-8":
        "不是 UTF-8 或 UTF-16 文本（偏移 {offset} 处有无效字节 0x{byte}）；请另存为 UTF-8",
    "cannot tell the web page's text encoding (not UTF-8, none declared)": "无法确定网页的文字编码（不是 UTF-8，也没有声明编码）",
    # -- rag.documents.ocr
    "install Tesseract to read scanned pages: `apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim` (make run and make test do it as root)":
        "安装 Tesseract 即可读取扫描页面：`apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim`（以 root 运行 make run 和 make test 时会自动安装）",
    "no OCR engine": "没有 OCR 引擎",
    # -- rag.documents.mupdf: PDF, EPUB, XPS
    "password-protected {kind}: remove the password and try again": "{kind} 受密码保护：请去掉密码后重试",
    "corrupt or unreadable {kind}: it has no pages": "{kind} 已损坏或无法读取：它没有任何页面",
    "corrupt or unreadable {kind}: {cause}": "{kind} 已损坏或无法读取：{cause}",
    "corrupt or unreadable {kind}: page {page}: {cause}": "{kind} 已损坏或无法读取：第 {page} 页：{cause}",
    "OCR of page {page} of {total}": "OCR 识别第 {page} 页（共 {total} 页）",
    "page {page} of {total}": "第 {page} 页（共 {total} 页）",
    "OCR of page {page} failed: {cause}": "第 {page} 页的 OCR 识别失败：{cause}",
    "MuPDF repaired a damaged xref; some text may be missing or out of order": "MuPDF 修复了损坏的 xref；部分文字可能缺失或顺序错乱",
    "{n} page is scanned images and no OCR engine is installed: {hint}.": "{n} 页是扫描图像，而且没有安装 OCR 引擎：{hint}。",
    "{n} pages are scanned images and no OCR engine is installed: {hint}.": "{n} 页是扫描图像，而且没有安装 OCR 引擎：{hint}。",
    "MuPDF{ocr}{tables}": "MuPDF{ocr}{tables}",
    " + {engine} OCR on {n} page": " + {engine} OCR（{n} 页）",
    " + {engine} OCR on {n} pages": " + {engine} OCR（{n} 页）",
    " ({n} table as rows)": "（{n} 个表格按行读取）",
    " ({n} tables as rows)": "（{n} 个表格按行读取）",
    # -- rag.ingest.pipeline: stages, results and the knowledge base's name
    "reading pages": "正在读取页面",
    "{n} pages": "{n} 页",
    "{n} chunks": "{n} 个分块",
    "{done}/{total} chunks embedded": "已嵌入 {done}/{total} 个分块",
    "writing": "正在写入",
    "no chunks: every piece was shorter than the minimum chunk length to embed": "没有分块：每个片段都短于嵌入的最短长度",
    "the knowledge base name is empty: give it a name such as 'finance'": "知识库名称为空：请起一个名字，例如“finance”",
    "the knowledge base name is {n} characters long; 200 at most": "知识库名称有 {n} 个字符；最多 200 个",
    "{filename}: {status}: {reason}": "{filename}：{status}：{reason}",
    "{filename}: {status}": "{filename}：{status}",
    "{filename}: {status} ({pages} pages, {chunks} chunks)": "{filename}：{status}（{pages} 页，{chunks} 个分块）",
    "not started": "未开始",
    "stopped during {stage}: nothing of it was stored": "在{stage}阶段停止：这个文件没有任何内容被保存",
    "{reason}; the version stored before is kept": "{reason}；之前保存的版本仍然保留",
    "unexpected error: {error}": "意外错误：{error}",
    # -- rag.ingest.preview: advice, warnings, blockers and the expected time
    "{extension} files are not read: open it in {program}, save it as {target} (File › Save As) and upload that.":
        "不读取 {extension} 文件：请在 {program} 中打开，另存为 {target}（文件 › 另存为）后上传。",
    "the browser": "浏览器",
    "only {types} files are read: convert it to one of them and upload that.": "只读取 {types} 文件：请把它转换成其中一种格式后上传。",
    "Page {pages} has no extractable text: nothing there will be searchable.": "第 {pages} 页没有可提取的文字：那里的内容都无法检索。",
    "Pages {pages} have no extractable text: nothing there will be searchable.": "第 {pages} 页没有可提取的文字：那里的内容都无法检索。",
    "No chunks: every piece is shorter than the minimum length to embed ({chars} chars); ingesting it will fail. Lower that setting.":
        "没有分块：每个片段都短于嵌入的最短长度（{chars} 个字符）；导入会失败。请调低这项设置。",
    "the text read from the file already holds it (a broken encoding or extraction): check the file, or convert it to UTF-8 text first":
        "从文件读出的文字本身就含有它（编码或提取有问题）：请检查文件，或先把它转换为 UTF-8 文本",
    "the `{strategy}` strategy cut inside a character that cl100k spreads over several tokens: choose `spring`, which keeps every character whole":
        "`{strategy}` 策略在一个被 cl100k 拆成多个词元的字符中间切开了：请选择 `spring`，它会保持每个字符完整",
    "{n} chunk (# {chunks}) holds the replacement character � (U+FFFD) instead of a real character, and would be stored, searched and exported so: {why}.":
        "{n} 个分块（# {chunks}）含有替换字符 �（U+FFFD）而不是真正的字符，并会照此保存、检索和导出：{why}。",
    "{n} chunks (# {chunks}) hold the replacement character � (U+FFFD) instead of a real character, and would be stored, searched and exported so: {why}.":
        "{n} 个分块（# {chunks}）含有替换字符 �（U+FFFD）而不是真正的字符，并会照此保存、检索和导出：{why}。",
    "{n} chunk is longer than the {max} tokens the embedder reads (largest {largest}): their ends would be ignored when embedding. Lower the chunk size.":
        "{n} 个分块超过了嵌入模型能读取的 {max} 个词元（最大的有 {largest} 个）：嵌入时其结尾会被忽略。请调小分块大小。",
    "{n} chunks are longer than the {max} tokens the embedder reads (largest {largest}): their ends would be ignored when embedding. Lower the chunk size.":
        "{n} 个分块超过了嵌入模型能读取的 {max} 个词元（最大的有 {largest} 个）：嵌入时其结尾会被忽略。请调小分块大小。",
    "The last chunk holds {tokens} tokens: the maximum number of chunks ({max}) was reached and the rest became one chunk.":
        "最后一个分块有 {tokens} 个词元：已达到分块数上限（{max}），剩下的文字都并入了这一个分块。",
    "the knowledge base was built with another embedder": "这个知识库是用另一个嵌入模型构建的",
    "'{kb}' was built with `{built}`, but this app would embed with `{embedder}`: mixing the two vector spaces would make search meaningless, so ingesting is refused. Set RAG_EMBEDDER=auto (or RAG_EMBEDDER={built}) and restart, or ingest into another knowledge base.":
        "“{kb}”是用 `{built}` 构建的，但本应用会用 `{embedder}` 做嵌入：混用两个向量空间会让检索失去意义，因此拒绝导入。请设置 RAG_EMBEDDER=auto（或 RAG_EMBEDDER={built}）并重启，或导入到另一个知识库。",
    "Ollama is not reachable": "无法连接 Ollama",
    "This knowledge base embeds with Ollama (`{model}`), which is not reachable at {host}: start it with `ollama serve` before ingesting.":
        "这个知识库用 Ollama（`{model}`）做嵌入，但无法在 {host} 连接到它：导入前请用 `ollama serve` 启动它。",
    "Ollama lacks {model}": "Ollama 缺少 {model}",
    "Ollama has no `{model}`: run `ollama pull {model}` before ingesting.": "Ollama 中没有 `{model}`：导入前请运行 `ollama pull {model}`。",
    "{n} s": "{n} 秒",
    "{n} min": "{n} 分钟",
    "{n} h": "{n} 小时",
    "Embedding {chunks} chunk with {embedder} should take about {duration} on this machine.":
        "在这台机器上用 {embedder} 嵌入 {chunks} 个分块大约需要 {duration}。",
    "Embedding {chunks} chunks with {embedder} should take about {duration} on this machine.":
        "在这台机器上用 {embedder} 嵌入 {chunks} 个分块大约需要 {duration}。",
    # -- rag.ingest.sync: a knowledge base kept in step with a folder
    "{folder}: not a folder (give the folder to keep the knowledge base in step with)": "{folder}：不是文件夹（请给出知识库要与之保持同步的文件夹）",
    "synced {folder} into '{knowledge}': {counts}": "已把 {folder} 同步到“{knowledge}”：{counts}",
    "would sync {folder} into '{knowledge}': {counts}": "将把 {folder} 同步到“{knowledge}”：{counts}",
    "{new} new, {replaced} replaced, {unchanged} unchanged, {deleted} deleted, {failed} failed":
        "新增 {new}，替换 {replaced}，未变 {unchanged}，删除 {deleted}，失败 {failed}",
    "{new} new, {replaced} replaced, {unchanged} unchanged, {deleted} deleted, {failed} failed, {kept} missing kept (--delete-missing removes them)":
        "新增 {new}，替换 {replaced}，未变 {unchanged}，删除 {deleted}，失败 {failed}，保留 {kept} 个已缺失的文档（--delete-missing 会删除它们）",
    "{name}: deleted (its file is gone)": "{name}：已删除（它的文件已不存在）",
    "{name}: missing from the folder, kept": "{name}：文件夹中已没有，已保留",
    "{name}: would be stored": "{name}：将被保存",
    "{name}: would be replaced (changed)": "{name}：将被替换（已改动）",
    "{name}: would be deleted (its file is gone)": "{name}：将被删除（它的文件已不存在）",
    "{name}: missing, would be kept": "{name}：已缺失，将被保留",
    # -- rag.chunking.settings: invalid settings and the summary of a setting
    "unknown chunking strategy {strategy} (choose one of: {choices})": "未知的分块策略 {strategy}（请从以下选择：{choices}）",
    "chunk_size must be at least 1 token, got {value}": "chunk_size 至少为 1 个词元，实际为 {value}",
    "chunk_overlap must not be negative, got {value}": "chunk_overlap 不能为负数，实际为 {value}",
    "chunk_overlap ({overlap}) must be smaller than chunk_size ({size})": "chunk_overlap（{overlap}）必须小于 chunk_size（{size}）",
    "{name} must not be negative, got {value}": "{name} 不能为负数，实际为 {value}",
    "max_num_chunks must be at least 1, got {value}": "max_num_chunks 至少为 1，实际为 {value}",
    "unknown settings": "未知设置",
    "{strategy} {size} tokens / {chars} chars": "{strategy} {size} 个词元 / {chars} 个字符",
    "{strategy} {size} / {overlap} tokens": "{strategy} {size} / {overlap} 个词元",
    "Spring AI splitter, {size} tokens, cut after a separator beyond {chars} chars":
        "Spring AI 分块器，{size} 个词元，在 {chars} 个字符之后的分隔符处切分",
    "Spring AI splitter, exact, {size} tokens, cut after a separator beyond {chars} chars":
        "Spring AI 分块器（精确版），{size} 个词元，在 {chars} 个字符之后的分隔符处切分",
    "token windows of {size} tokens, {overlap} overlap": "{size} 个词元的词元窗口，重叠 {overlap}",
    "recursive, {size} tokens, {overlap} overlap": "递归，{size} 个词元，重叠 {overlap}",
    "{preset} ({text})": "{preset}（{text}）",
}
