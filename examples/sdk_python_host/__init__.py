"""A minimal MCP host built on the official `mcp` Python SDK client, with its defaults.

It exists to be pointed at by the conformance suite (see README.md), not to be used.
"""
