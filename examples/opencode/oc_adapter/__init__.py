"""The conformance adapter for opencode (see ../README.md)."""
