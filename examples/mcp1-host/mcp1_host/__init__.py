"""A minimal MCP host on the `mcp` Python SDK 1.x, tested from its own virtual environment."""
