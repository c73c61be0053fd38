"""The knowledge base as MCP tools (server) and other MCP servers' tools for the agent (client)."""
