"""简体中文 of the messages rag.agent and rag.mcp make as `rag.text.Text`."""

from __future__ import annotations

ZH: dict[str, str] = {
    # -- rag.generate.kb_tools: the tools' descriptions, as the Tools page shows them (MCP clients read English)
    "List the knowledge bases that can be searched, with their number of documents and chunks.": "列出可以检索的知识库，以及每个知识库的文档数和块数。",
    "Search a knowledge base for the passages closest to a query (hybrid vector and keyword search).\n\nEach hit gives the file name, the pages and the passage text; cite the file and pages.": "在知识库中检索与查询最接近的段落（向量与关键词混合检索）。\n\n每条结果给出文件名、页码和段落文本；引用时请注明文件和页码。",
    "Read one stored passage in full, by the id a search returned.": "按检索返回的 id 读取一个存储段落的全文。",
    "Answer a question from a knowledge base: its passages are searched, the answer cites them as [n].\n\nThe same answer the chat page gives: follow-ups rewritten, the prompt fitted to the model's window.": "根据知识库回答问题：检索其中的段落，回答以 [n] 引用它们。\n\n与聊天页面给出的回答相同：追问会被改写，提示会按模型的上下文窗口裁剪。",
    "Parse, chunk, embed and store one file into a knowledge base (only from the allowed folders).": "把一个文件解析、分块、嵌入并存入知识库（只能来自允许的文件夹）。",
    "{what} Allowed folders: {roots}": "{what}允许的文件夹：{roots}",
    # -- rag.agent.routes: the default routes' purposes (the Tools page's table)
    "Greetings, thanks and small talk: answered without tools": "问候、致谢和闲聊：不用工具直接回答",
    "The knowledge base and the web": "知识库和网络",
    "Every tool, MCP servers' included, with a larger budget": "所有工具（包括 MCP 服务器的工具），预算更大",
    # -- rag.agent.routes (the fixed reasons "chosen by you", "small talk: no tools needed" and
    # "the default route" are in ui/zh.py: the chat page shows them too)
    "{path}: cannot read the routes ({error})": "{path}：无法读取路由（{error}）",
    "{path}: not valid TOML ({error})": "{path}：不是有效的 TOML（{error}）",
    "{path}: no [routes.NAME] tables (see routes.example.toml)": "{path}：没有 [routes.NAME] 表（参见 routes.example.toml）",
    "{path}: routes.{name} must be a table": "{path}：routes.{name} 必须是一个表",
    "{path}: routes.{name}.budget must be a whole number from 0 to 100, got {budget}": "{path}：routes.{name}.budget 必须是 0 到 100 之间的整数，实际为 {budget}",
    '{path}: routes.{name}.tools must be a list of tool names (or ["*"])': '{path}：routes.{name}.tools 必须是工具名称的列表（或 ["*"]）',
    "{path}: routes.{name}.keywords must be a list of words": "{path}：routes.{name}.keywords 必须是词语的列表",
    "{path}: a route named 'default' is needed (the one most questions take)": "{path}：需要一个名为 'default' 的路由（大多数问题走这条路由）",
    "no route named {route} (routes: {routes})": "没有名为 {route} 的路由（现有路由：{routes}）",
    "the question holds {keyword}": "问题中含有 {keyword}",
    # -- rag.agent.availability: why a model can (not) run agent mode
    "The embedded model ({model}) cannot call tools: agent mode needs an Ollama model with tool calling, "
    "e.g. 'ollama pull {suggested}'": "内置模型（{model}）不能调用工具：智能体模式需要一个支持工具调用的 Ollama 模型，例如 'ollama pull {suggested}'",
    "{model} supports tool calling": "{model} 支持工具调用",
    "{model} cannot call tools": "{model} 不能调用工具",
    "Cannot tell whether {model} can call tools: {error}": "无法判断 {model} 能否调用工具：{error}",
    "{model} has no tool calling (its capabilities: {capabilities}): choose an Ollama model with tools, e.g. {suggested}": "{model} 不支持工具调用（它的能力：{capabilities}）：请选择一个支持工具的 Ollama 模型，例如 {suggested}",
    "{model} has no tool calling (its capabilities: none listed): choose an Ollama model with tools, e.g. {suggested}": "{model} 不支持工具调用（它没有列出任何能力）：请选择一个支持工具的 Ollama 模型，例如 {suggested}",
    # -- rag.agent.websearch: why the web search was unavailable
    "no answer within {seconds} s": "{seconds} 秒内没有回应",
    "cannot reach the search endpoint ({error})": "无法连接搜索端点（{error}）",
    "the search endpoint answered HTTP {status}": "搜索端点返回了 HTTP {status}",
    "the search endpoint's reply is not an OpenAI chat completion": "搜索端点的回复不是 OpenAI 的 chat completion 格式",
    "the search endpoint's reply has no text": "搜索端点的回复中没有文本",
    # -- rag.agent.mcp_client: the config file
    "no MCP server named {name} in {path}": "{path} 中没有名为 {name} 的 MCP 服务器",
    "no MCP server named {name} in the config": "配置中没有名为 {name} 的 MCP 服务器",
    "No MCP servers configured: {env} points to {file}, which does not exist; copy mcp-servers.example.json to "
    "{config} and edit it (see docs/mcp.md)": "没有配置 MCP 服务器：`{env}` 指向的 `{file}` 不存在；请把 `mcp-servers.example.json` 复制为 `{config}` 并编辑它"
    "（参见 `docs/mcp.md`）",
    "No MCP servers configured: {file} does not exist; copy mcp-servers.example.json to {config} and edit it "
    "(see docs/mcp.md)": "没有配置 MCP 服务器：`{file}` 不存在；请把 `mcp-servers.example.json` 复制为 `{config}` 并编辑它（参见 `docs/mcp.md`）",
    "{file}: cannot read it ({error})": "{file}：无法读取（{error}）",
    "{file}: invalid JSON at line {line} column {column} ({error})": "{file}：第 {line} 行第 {column} 列的 JSON 无效（{error}）",
    "MCP config": "MCP 配置",
    '{where}: expected an object with "mcpServers", like {example}': '{where}：应为含有 "mcpServers" 的对象，例如 {example}',
    "{where}: server {name}": "{where}：服务器 {name}",
    "{where}: a server has an empty name": "{where}：有一个服务器的名称为空",
    '{server} must be an object with "command", "args" and "env"': '{server} 必须是含有 "command"、"args" 和 "env" 的对象',
    '{server}: only stdio servers ("command") are supported, not "url"': '{server}：只支持 stdio 服务器（"command"），不支持 "url"',
    '{server} needs a "command" (the program to start), e.g. "npx"': '{server} 需要一个 "command"（要启动的程序），例如 "npx"',
    '{server}: "args" must be a list of strings': '{server}："args" 必须是字符串列表',
    '{server}: "env" must map names to string values, e.g. {example}': '{server}："env" 必须把名称映射到字符串值，例如 {example}',
    '{server}: "cwd" must be a folder path': '{server}："cwd" 必须是文件夹路径',
    '{server}: "disabled" must be true or false': '{server}："disabled" 必须是 true 或 false',
    # -- rag.agent.mcp_client: the servers and their tools
    "no MCP server named {name} (configured: {known})": "没有名为 {name} 的 MCP 服务器（已配置：{known}）",
    "no MCP server named {name} (configured: none configured)": "没有名为 {name} 的 MCP 服务器（一个也没有配置）",
    "the MCP manager is closed": "MCP 管理器已关闭",
    "did not answer the MCP handshake within {seconds} s": "{seconds} 秒内没有响应 MCP 握手",
    "{error}; its stderr ends with: {line}": "{error}；它的 stderr 最后一行是：{line}",
    "MCP server {server} has no tool {name} (it has: {tools})": "MCP 服务器 {server} 没有工具 {name}（它有：{tools}）",
    "MCP server {server} has no tool {name} (it has: none)": "MCP 服务器 {server} 没有工具 {name}（它一个工具也没有）",
    "tool {name} of MCP server {server} did not answer within {seconds} s": "MCP 服务器 {server} 的工具 {name} 在 {seconds} 秒内没有回应",
    "{error} (MCP server {server})": "{error}（MCP 服务器 {server}）",
    "the server exited or closed its connection ({error})": "服务器已退出或关闭了连接（{error}）",
    "MCP server {server} exited or closed its connection: {error}": "MCP 服务器 {server} 已退出或关闭了连接：{error}",
    "calling {name} on MCP server {server} failed: {error}": "调用 MCP 服务器 {server} 上的 {name} 失败：{error}",
    "tool {name} did not answer within {seconds} s": "工具 {name} 在 {seconds} 秒内没有回应",
    "MCP server {server} failed to start: {error}": "MCP 服务器 {server} 启动失败：{error}",
    "MCP server {server} is starting, not running": "MCP 服务器 {server} 正在启动，尚未运行",
    "MCP server {server} is stopped, not running": "MCP 服务器 {server} 已停止，没有运行",
    "MCP server {server} is disabled, not running": "MCP 服务器 {server} 已停用，没有运行",
    "MCP server {server} is {state}, not running": "MCP 服务器 {server} 处于 {state} 状态，没有运行",
    'cannot start {command}: no such program (check "command" and PATH)': '无法启动 {command}：没有这个程序（请检查 "command" 和 PATH）',
    "cannot start {command}: permission denied": "无法启动 {command}：权限不足",
    "cannot start {command}: the folder {folder} does not exist": "无法启动 {command}：文件夹 {folder} 不存在",
    "stopped ({error})": "已停止（{error}）",
    "exited or broke the connection before the MCP handshake ({error})": "在 MCP 握手之前退出或断开了连接（{error}）",
}
