"""A small MCP host written with pydantic-ai (see ../README.md)."""
