"""A small, real terminal MCP host that follows every host-side rule."""
