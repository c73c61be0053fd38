"""The knowledge base served as MCP tools (`server`; `python -m rag.mcp.server`).

The tools it serves are `rag.generate.kb_tools`; the client of other MCP servers, whose tools the agent
calls, is `rag.agent.mcp_client`: the server builds on the chat engine, which builds on the agent."""
