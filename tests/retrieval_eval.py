"""A small question-answering set for measuring retrieval, in English and in Chinese.

Each question is answered by exactly one passage; questions paraphrase their passage
rather than quote it, so that keyword search cannot win on copied phrases alone.
Used by tests/test_retrieval_modes.py and by `python -m rag bench`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Passage:
    key: str
    text: str


@dataclass(frozen=True)
class QA:
    question: str
    passage: str
    """The key of the passage that answers it."""


PASSAGES: tuple[Passage, ...] = (
    Passage("gpu-docker", "Ollama running in Docker uses only the CPU unless the container is given the GPU. "
            "Install the NVIDIA Container Toolkit and add a device reservation with the nvidia driver and "
            "the gpu capability to the compose file, then check nvidia-smi inside the container."),
    Passage("vram", "A 7B parameter model quantised to 4 bits needs roughly 5 GB of video memory, plus the "
            "key-value cache, which grows with the context length. When VRAM runs out, Ollama offloads "
            "layers to system memory and generation slows down sharply."),
    Passage("hnsw", "pgvector's HNSW index builds a layered proximity graph. It answers approximate nearest "
            "neighbour queries quickly; the ef_search setting trades recall for speed, and iterative index "
            "scans keep filtered queries from returning too few rows."),
    Passage("chunk-size", "Larger chunks keep more context together but dilute the embedding, so a specific "
            "fact may rank lower; smaller chunks match precise questions better but can cut a sentence "
            "from the words that explain it. Overlap between neighbouring chunks softens those cuts."),
    Passage("spring-splitter", "Spring AI's TokenTextSplitter cuts the text into windows of 800 tokens by "
            "default and then shortens each window at its last period, question mark, exclamation mark "
            "or newline, provided that this separator lies beyond 350 characters."),
    Passage("dividend", "The board approved a quarterly dividend of 42 cents per share, payable in March, "
            "after revenue rose eleven percent year over year on subscription sales."),
    Passage("hiring", "The company plans to add forty engineers to its Berlin office next year to work on "
            "the search platform, while keeping overall headcount flat elsewhere."),
    Passage("rrf", "Reciprocal rank fusion merges several ranked lists by adding one over sixty plus the "
            "rank of each item in every list, so documents that appear near the top of both keyword and "
            "vector results rise to the top of the merged list."),
    Passage("mcp", "The Model Context Protocol lets an assistant discover tools offered by external servers, "
            "read their input schemas, and call them over standard input and output or over HTTP."),
    Passage("tool-budget", "To keep costs predictable, every retrieval tool shares one budget of six calls per "
            "turn; once it is spent, a tool answers with an instruction to reply from what was already found."),
    Passage("overtime", "Employees who work on a statutory public holiday must be paid at least three times "
            "their normal wage for those hours, according to the labour law."),
    Passage("probation", "A probation period may not exceed six months, and for contracts shorter than one "
            "year it may last at most one month."),
    Passage("zh-gpu", "在 Docker 中运行的 Ollama 默认只使用 CPU，推理速度很慢。需要安装 NVIDIA Container "
            "Toolkit，并在 compose 文件中为容器预留 GPU 设备，然后在容器里执行 nvidia-smi 检查显存占用。"),
    Passage("zh-pgvector", "PostgreSQL 的 pgvector 扩展可以存储向量，并通过余弦距离做相似度检索。"
            "建立 HNSW 索引之后，近似最近邻查询会快很多。"),
    Passage("zh-chunk", "文本切分时，块太大会稀释向量的语义，块太小又会把句子和上下文切开。"
            "相邻块之间保留一定重叠，可以减少这种割裂。"),
    Passage("zh-overtime", "劳动者在法定节假日加班的，用人单位应当支付不低于工资百分之三百的加班工资。"),
    Passage("zh-probation", "劳动合同期限三个月以上不满一年的，试用期不得超过一个月；"
            "三年以上固定期限的劳动合同，试用期不得超过六个月。"),
    Passage("zh-severance", "经济补偿按劳动者在本单位工作的年限，每满一年支付一个月工资的标准向劳动者支付；"
            "六个月以上不满一年的，按一年计算。"),
    Passage("zh-budget", "为了控制成本，每一轮对话中所有检索工具共享六次调用的预算，"
            "预算用完后工具会提示模型根据已有结果直接回答。"),
    Passage("zh-citation", "回答中的每个事实都要标注来源编号，例如 [1]，点击编号可以打开原文所在的页面，"
            "并高亮对应的段落。"),
    Passage("zh-revenue", "公司第三季度营业收入同比增长百分之十二，主要来自订阅业务，董事会批准了新的分红方案。"),
    Passage("zh-social-wage", "社会平均工资每年由统计部门公布，用于计算社保缴费基数和部分赔偿的上限。"),
)

# Near neighbours of the answers: same topics, other facts. They make ranking matter.
DISTRACTORS: tuple[Passage, ...] = (
    Passage("d-gpu-driver", "The NVIDIA driver on the host must be recent enough for the CUDA version inside "
            "the image; an old driver makes containers fail to start with a CUDA error."),
    Passage("d-gpu-wsl", "On Windows, Docker Desktop needs the WSL 2 backend and GPU support turned on in "
            "its settings before containers can see the graphics card."),
    Passage("d-cpu-threads", "When a model runs on the processor, generation speed depends mostly on memory "
            "bandwidth, and using more threads than physical cores rarely helps."),
    Passage("d-quant", "Quantisation stores weights with fewer bits; 8-bit keeps quality close to the "
            "original while 2-bit variants lose noticeably more accuracy."),
    Passage("d-ivfflat", "pgvector also offers IVFFlat indexes, which cluster vectors into lists and need "
            "the table to contain data before the index is built."),
    Passage("d-distance", "Cosine distance ignores vector length, inner product rewards it, and Euclidean "
            "distance measures the straight line between two points."),
    Passage("d-embed-batch", "Embedding requests can be batched; sending sixty-four texts per call to the "
            "embedding endpoint is much faster than sending them one by one."),
    Passage("d-recursive", "A recursive splitter tries paragraph breaks first, then sentence ends, then "
            "spaces, so that chunks end at natural boundaries whenever possible."),
    Passage("d-revenue-q2", "In the second quarter revenue was flat, while marketing spending rose and the "
            "company repurchased shares worth two million dollars."),
    Passage("d-office", "The Paris office will move to a larger building in the autumn; no new hiring is "
            "planned there this year."),
    Passage("d-bm25", "Full-text search ranks documents by how often and how close together the query words "
            "occur, which works well for names, codes and exact phrases."),
    Passage("d-agent-loop", "In agent mode the model keeps calling tools until it can answer without another "
            "call; each call and its result are shown as a step."),
    Passage("d-annual-leave", "Employees with more than ten years of service are entitled to ten days of paid "
            "annual leave."),
    Passage("d-notice", "Either party may end the contract during probation with three days' notice."),
    Passage("zh-d-driver", "宿主机上的 NVIDIA 驱动版本必须支持镜像里的 CUDA 版本，否则容器会因为 CUDA 错误而无法启动。"),
    Passage("zh-d-ivf", "pgvector 还提供 IVFFlat 索引，需要先导入数据再建立索引，召回率取决于探测的列表数量。"),
    Passage("zh-d-embed", "向量模型的输入长度有限，过长的文本块会被截断，后半部分的内容不会进入向量。"),
    Passage("zh-d-leave", "职工累计工作已满十年不满二十年的，年休假十天；已满二十年的，年休假十五天。"),
    Passage("zh-d-wage", "用人单位应当按月足额支付工资，不得克扣或者无故拖欠劳动者的工资。"),
    Passage("zh-d-termination", "劳动者提前三十日以书面形式通知用人单位，可以解除劳动合同；试用期内提前三日通知即可。"),
    Passage("zh-d-rerank", "检索结果可以再用重排序模型打分，把最相关的段落排到前面，但会增加响应时间。"),
    Passage("zh-d-q2", "公司第二季度营业收入与去年持平，销售费用上升，并回购了部分股份。"),
)

QUESTIONS: tuple[QA, ...] = (
    QA("Why is my model in a container so slow even though I have a graphics card?", "gpu-docker"),
    QA("How much GPU memory does a seven billion parameter model need?", "vram"),
    QA("What happens when the video memory is not enough for the model?", "vram"),
    QA("How does the approximate nearest neighbour index in pgvector work?", "hnsw"),
    QA("Which setting trades recall against speed in vector search?", "hnsw"),
    QA("What are the drawbacks of making text chunks very large?", "chunk-size"),
    QA("What does Spring's token splitter do with the 350 characters parameter?", "spring-splitter"),
    QA("How big is the payout to shareholders each quarter?", "dividend"),
    QA("How many people will be hired in Berlin?", "hiring"),
    QA("How are keyword and embedding rankings combined?", "rrf"),
    QA("How can an assistant find and call tools on other servers?", "mcp"),
    QA("How many tool calls may a single turn make?", "tool-budget"),
    QA("What pay is due for working on a public holiday?", "overtime"),
    QA("How long can the trial period of a one-year contract be?", "probation"),
    QA("为什么容器里的大模型跑得很慢，显卡没有用上？", "zh-gpu"),
    QA("怎么在 PostgreSQL 里做向量相似度搜索？", "zh-pgvector"),
    QA("切分文档时块的大小应该怎么选？", "zh-chunk"),
    QA("节假日加班工资怎么算？", "zh-overtime"),
    QA("合同期一年以内的试用期最长多久？", "zh-probation"),
    QA("离职的经济补偿怎么计算？", "zh-severance"),
    QA("一轮对话最多能调用几次检索工具？", "zh-budget"),
    QA("回答里的引用编号有什么用？", "zh-citation"),
    QA("第三季度收入增长了多少？", "zh-revenue"),
    QA("社平工资是做什么用的？", "zh-social-wage"),
)
