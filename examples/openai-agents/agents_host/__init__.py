"""A small MCP host on the OpenAI Agents SDK with its defaults (see ../README.md)."""
