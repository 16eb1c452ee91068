"""The conformance adapter for fast-agent (see ../README.md)."""
