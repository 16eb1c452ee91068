"""Conformance adapter for OpenAI Codex CLI through `codex app-server` (see README.md)."""
