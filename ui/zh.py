"""简体中文: the Chinese of every message id the translated pages pass to `ui.i18n._` (the English text)."""
from __future__ import annotations

ZH: dict[str, str] = {
    # -- the app and its navigation
    "Upload & preview": "上传与预览",
    "Chunk Lab": "分块实验室",
    "Chat": "对话",
    "GPU monitor": "GPU 监控",
    "Tools": "工具",
    "Status": "状态",
    "Database": "数据库",
    "Model server": "模型服务",
    "Embedder": "嵌入模型",
    "GPU": "GPU",
    # -- chat: model
    "Model": "模型",
    "Ollama's chat models and the embedded one. Type another Ollama model's name to pull it.":
        "Ollama 的对话模型和内置模型。输入另一个 Ollama 模型的名称即可下载它。",
    "Pulling {name}…": "正在下载 {name}…",
    "Pulled {name}": "已下载 {name}",
    "Pull": "下载",
    "Pull {name}": "下载 {name}",
    "Download the model into Ollama (POST /api/pull); this can take minutes.":
        "把模型下载到 Ollama（POST /api/pull），可能需要几分钟。",
    "In use: **{model}** · context window {tokens} tokens ({note})": "正在使用：**{model}** · 上下文窗口 {tokens} 个词元（{note}）",
    "num_ctx set below": "由下方的 num_ctx 设定",
    "fixed when the embedded model is loaded": "内置模型加载时确定",
    "from Ollama": "由 Ollama 提供",
    "assumed: Ollama did not say": "推定值：Ollama 未提供",
    "No model in use.": "没有可用的模型。",
    # -- chat: conversations
    "Conversations": "对话记录",
    "New conversation": "新对话",
    "Past conversations": "以往的对话",
    "Open one…": "打开一个…",
    "Open": "打开",
    "None yet: each answer is saved, and a conversation shows here after its first one.":
        "还没有：每个回答都会保存，对话在第一个回答之后出现在这里。",
    "Conversations are kept in the database, which is not available.": "对话保存在数据库中，而数据库现在不可用。",
    "The conversation cannot be opened: {error}": "无法打开这个对话：{error}",
    "The conversation was not deleted: {error}": "对话没有被删除：{error}",
    "This conversation: {turns}, started {date}.": "当前对话：{turns}，开始于 {date}。",
    "Title": "标题",
    "Rename": "重命名",
    "Export as Markdown": "导出为 Markdown",
    "Export as JSON": "导出为 JSON",
    "Every turn's record: question, query, route, sources with chunk ids and ranks, answer, model, timings":
        "每一轮的完整记录：问题、检索语句、路由、来源（含分块 ID 与排名）、回答、模型、耗时",
    "I understand that '{title}' and its {turns} will be deleted": "我明白“{title}”及其 {turns}将被删除",
    "Delete this conversation": "删除这个对话",
    "This turn was not saved: {error}": "这一轮没有保存：{error}",
    "Start afresh; this one stays under Conversations in the sidebar.": "重新开始；当前对话仍保存在侧边栏的“对话记录”中。",
    "The questions, answers and the sources of each answer.": "问题、回答以及每个回答的来源。",
    "{turns} in this session": "本次会话共 {turns}",
    "Earlier in this conversation ({exchanges}, summarised)": "此前的对话（{exchanges}，已摘要）",
    # -- chat: retrieval and generation settings
    "Knowledge bases": "知识库",
    "Choose knowledge bases": "选择知识库",
    "The `knowledge` tags to search; each is searched with the embedder it was built with.":
        "要检索的 `knowledge` 标签；每个知识库都用构建它时的嵌入模型检索。",
    "No knowledge bases yet: ingest documents on the Upload page first.": "还没有知识库：请先在上传页面导入文档。",
    "Agent mode needs a model with tool calling.": "智能体模式需要支持工具调用的模型。",
    "Agent mode (tools)": "智能体模式（工具）",
    "Route": "路由",
    "Routes": "路由",
    "{name} · {tools} · budget {budget}": "{name} · {tools} · 预算 {budget}",
    "no tools": "无工具",
    "auto (greetings get no tools, the rest the default route)": "自动（问候不使用工具，其余走默认路由）",
    "Which tools the agent gets and how many calls it may make in a turn (routes.toml; see the Tools page).":
        "智能体可用哪些工具，以及每轮最多调用几次（routes.toml；见“工具”页面）。",
    "Retrieval": "检索",
    "Search mode": "检索方式",
    "Vector": "向量",
    "Keyword": "关键词",
    "Hybrid": "混合",
    "Vector: meaning (embeddings). Keyword: BM25 on the words (Chinese too). Hybrid: both, fused by reciprocal rank.":
        "向量：按语义（嵌入）。关键词：按词语的 BM25（也适用于中文）。混合：两者结合，按倒数排名融合。",
    "How many passages are searched for. As many as fit the model's window go into the prompt, best first (the last one in part); the rest are listed as left out.":
        "检索多少段落。能放进模型窗口的按相关度依次放入提示（最后一段可能只放一部分）；其余的列为未放入。",
    "Minimum similarity": "最低相似度",
    "Cosine similarity a vector hit needs (also inside hybrid); 0 = no minimum. Keyword hits are kept on their own merit.":
        "向量命中需要达到的余弦相似度（混合检索中也适用）；0 表示不设下限。关键词命中按其自身得分保留。",
    "Filter": "过滤条件",
    "Spring AI filter expression over the metadata: ==, !=, <, >=, in [...], nin, &&, ||, NOT, parentheses.":
        "作用于元数据的 Spring AI 过滤表达式：==、!=、<、>=、in [...]、nin、&&、||、NOT、括号。",
    "Rewrite follow-up questions": "改写追问",
    "Before searching, the model turns a follow-up ('and in 2023?') into a standalone query; the query searched is shown with the answer.":
        "检索前，模型把追问（如“那 2023 年呢？”）改写成独立的检索语句；实际检索的语句会随回答显示。",
    "Generation": "生成",
    "Temperature": "温度",
    "Think (reasoning models)": "思考（推理模型）",
    "Reasoning models such as deepseek-r1 or qwen3 think before answering; the thinking is shown in a collapsed block.":
        "deepseek-r1、qwen3 等推理模型会先思考再回答；思考过程显示在折叠块中。",
    "The model in use does not think aloud.": "当前模型不输出思考过程。",
    "Context window (num_ctx)": "上下文窗口（num_ctx）",
    "Tokens Ollama loads the model with; 0 keeps the model's own setting. A larger window needs more memory.":
        "Ollama 加载模型时使用的词元数；0 表示沿用模型自身的设置。窗口越大占用内存越多。",
    "System prompt": "系统提示词",
    "`{sources}` is replaced by the numbered sources (they are appended when it is missing).":
        "`{sources}` 会被替换为编号的来源（若提示词中没有它，来源会附加在末尾）。",
    "English default": "英文默认",
    "Chinese default": "中文默认",
    "Edited: used as is.": "已编辑：按原样使用。",
    "A default: the English or Chinese one is used to match the question's language.": "默认提示词：根据问题的语言使用英文或中文版本。",
    # -- chat: sources
    "knowledge base **{kb}** · chunk {chunk}": "知识库 **{kb}** · 分块 {chunk}",
    " · read by OCR (confidence {confidence}%)": " · 由 OCR 识别（置信度 {confidence}%）",
    "Show the whole chunk": "显示完整分块",
    "The model was given the part shown (it fits its window)": "模型得到的是显示的这一部分（以适应它的窗口）",
    "Given to the model in part: the sentences that best match the question.": "只把部分内容给了模型：与问题最匹配的句子。",
    "This passage's document was deleted or replaced after this answer: the text above is what the answer was written from, kept with the conversation.":
        "这段内容所在的文档在此回答之后被删除或替换：上面的文字是回答当时依据的内容，随对话一起保存。",
    "Show the page with the passage highlighted": "显示该页并高亮这段内容",
    "Page": "页",
    "Page {number}": "第 {number} 页",
    "Page {number} of {file}": "{file} 第 {number} 页",
    "{file} has no page images (or is no longer stored): the passage is shown above.": "{file} 没有页面图像（或已不再保存）：段落内容见上方。",
    "{file}, page {number}": "{file}，第 {number} 页",
    " (the passage could not be located on the page)": "（无法在页面上定位这段内容）",
    "Searched for: *{query}*": "检索语句：*{query}*",
    "No passage was found: the answer has no sources. Check the knowledge bases, the filter and the minimum similarity.":
        "没有找到段落：回答没有来源。请检查知识库、过滤条件和最低相似度。",
    "found by the agent": "由智能体找到",
    "{mode} search in {kbs}": "在 {kbs} 中{mode}检索",
    "Found but not given to the model (no room left for them in its prompt): ": "已找到但未交给模型（提示中已无空间）：",
    "found by web search": "由网络搜索找到",
    # -- chat: budget and statistics
    "Context: {total} of {limit} tokens ({share}) · {model}": "上下文：{total} / {limit} 个词元（{share}）· {model}",
    "system {system} · sources {sources} · ": "系统 {system} · 来源 {sources} · ",
    "summary {n} · ": "摘要 {n} · ",
    "history {history} · question {question} · kept for the answer {reserve} ({counted})":
        "历史 {history} · 问题 {question} · 为回答预留 {reserve}（{counted}）",
    "The prompt ({used} tokens, plus {reserve} for the answer) is larger than the model's {limit}-token window: the model would lose the start of it (the instructions and the first sources). Lower top-k, clear the conversation, or raise num_ctx.":
        "提示（{used} 个词元，另需 {reserve} 个留给回答）超过了模型 {limit} 个词元的窗口：模型会丢失开头部分（指令和最前面的来源）。请调低 top-k、开始新对话或调高 num_ctx。",
    "{n} tokens": "{n} 个词元",
    "prompt {n} tokens": "提示 {n} 个词元",
    # -- chat: the answer
    "Route **{route}** ({reason}) · {tools} · budget {budget}": "路由 **{route}**（{reason}）· {tools} · 预算 {budget}",
    "chosen by you": "由你选择",
    "small talk: no tools needed": "闲聊：无需工具",
    "the default route": "默认路由",
    "Thinking": "思考过程",
    "(the model wrote nothing)": "（模型没有输出）",
    "(stopped before the first word)": "（在第一个字之前就停止了）",
    " The part above arrived before the failure.": " 上面的部分是在出错之前收到的。",
    "stopped": "已停止",
    "repetition cut": "已截断重复",
    "cites {k} of {sources}": "引用了 {sources}中的 {k} 个",
    "matched to sources, not cited by the model": "事后匹配到来源，并非模型自己引用",
    "uncited": "无引用",
    "{k} of {sentences} not supported by the sources": "{sentences}中有 {k} 句没有来源支持",
    "{sources} not supporting the sentence citing it": "{sources}不支持引用它的句子",
    "{markers} pointing at no source": "{markers}指向不存在的来源",
    " points at no source (this answer had {n}): the claim there is not backed by a passage shown here.":
        " 指向不存在的来源（此回答共有 {n} 个来源）：那里的说法没有这里显示的段落支持。",
    " point at no source (this answer had {n}): the claims there are not backed by a passage shown here.":
        " 指向不存在的来源（此回答共有 {n} 个来源）：那些说法没有这里显示的段落支持。",
    "The answer cites no source: check it against the sources before trusting it.": "回答没有引用任何来源：请先对照来源核实再采信。",
    "no source": "无来源",
    "Blue [n]: the cited source holds the sentence's words (checked word by word, not its meaning) · orange [n ?]: it does not · grey ≈ n: matched to a source afterwards, not cited by the model · grey n: too short to check · ⚠ no source: no passage holds the sentence's words · red ⚠ n: no such source.":
        "蓝色 [n]：被引用的来源包含这句话的词语（逐词核对，不核对含义）· 橙色 [n ?]：不包含 · 灰色 ≈ n：事后匹配到来源，并非模型引用 · 灰色 n：太短无法核对 · ⚠ 无来源：没有段落包含这句话的词语 · 红色 ⚠ n：不存在这个来源。",
    " · deleted since": " · 已被删除",
    "Its document was deleted or replaced after this answer: the card shows the text the answer was written from":
        "它所在的文档在此回答之后被删除或替换：卡片中显示的是回答当时依据的文字",
    "Open this source and its page": "打开这个来源及其页面",
    " (it does not support the sentence citing it)": "（它不支持引用它的句子）",
    # -- chat: the live answer
    "Stop": "停止",
    "Stopping…": "正在停止…",
    "{model} is writing… {s} s": "{model} 正在写… {s} 秒",
    "{model} is thinking… {s} s": "{model} 正在思考… {s} 秒",
    "Waiting for {model}… {s} s (loading a model can take a while)": "正在等待 {model}… {s} 秒（加载模型可能需要一些时间）",
    "End the answer now; what was written so far is kept.": "立即结束回答；已写出的部分会保留。",
    "Stop after the current model request or tool call.": "在当前的模型请求或工具调用之后停止。",
    "Working…": "正在处理…",
    "Done": "完成",
    # -- chat: the page
    "Answers from your knowledge bases with numbered citations: click a citation to see the passage on its page. The sources are shown before the answer is written.":
        "基于知识库的回答，带编号引用：点击引用即可查看它在页面上的原文。来源会在回答写出之前显示。",
    "Ask about your documents (English or 中文)…": "就你的文档提问（中文或 English）…",
    "Ask a question below. Choose the knowledge bases and the model in the sidebar.": "在下方提问。在侧边栏选择知识库和模型。",
}
