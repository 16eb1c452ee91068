"""OAuth as a run meets it: the official MCP conformance framework's auth scenarios driven
through the adapter (`official_client`, OAUTH-1), an OAuth-protected mock (`server`), the
headless stand-in for a browser (`browser`), and the watch on what a host asks a browser to
open (`browser_watch`, CRED-6).

May import every room below it.
"""
