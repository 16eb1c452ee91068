"""A well-behaved HTTP mock served by the `mcp` SDK itself (low-level `Server`).

Strategy: the socket-level `HttpMock` is what the suite relies on, because it must also
misbehave; this variant shows the same tools through the SDK's own Streamable HTTP
stack (`Server.streamable_http_app` under uvicorn), so a host can be checked against a
server nobody here wrote the protocol of. It answers from the same pure functions as
`HttpMock` (`mcp_host_conformance.mocks._rpc`), parsed into the SDK's types, so it can
only serve specs the SDK accepts: no misbehaviour, object schemas only. A pure ASGI
middleware journals every request the same way `HttpMock` does.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import Any

from mcp_host_conformance.mocks import _rpc
from mcp_host_conformance.mocks.admin import AdminAnswer, admin_answer
from mcp_host_conformance.mocks.journal import Entry, Journal, rpc_entry
from mcp_host_conformance.mocks.json_input import JsonInputError, read_json
from mcp_host_conformance.mocks.spec import ServerSpec, new_marker_token, with_markers

START_TIMEOUT = 10.0


class _JournalMiddleware:
    def __init__(self, app: Any, journal: Journal) -> None:
        self.app = app
        self.journal = journal
        self.requests = itertools.count(1)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        admin = admin_answer(scope["method"], scope["path"], self.journal)
        if admin is not None:
            await self._admin(admin, send)
            return
        received = []
        body = b""
        while True:
            message = await receive()
            received.append(message)
            body += message.get("body", b"")
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        client = scope.get("client") or ("?", 0)
        connection = f"{client[0]}:{client[1]}"
        path = scope["path"] + (
            ("?" + scope["query_string"].decode()) if scope.get("query_string") else ""
        )
        self.journal.record(
            Entry(
                kind="http",
                http_method=scope["method"],
                path=path,
                headers=headers,
                body_size=len(body),
                connection=connection,
            )
        )
        self._journal_rpc(body, headers, connection)
        replay = iter(received)

        async def replayed() -> Any:
            return next(replay, None) or await receive()

        await self.app(scope, replayed, send)

    async def _admin(self, admin: AdminAnswer, send: Any) -> None:
        headers = [(k.encode(), v.encode()) for k, v in admin.headers]
        headers.append((b"content-length", str(len(admin.body)).encode()))
        await send({"type": "http.response.start", "status": admin.status, "headers": headers})
        await send({"type": "http.response.body", "body": admin.body})

    def _journal_rpc(self, body: bytes, headers: dict[str, str], connection: str) -> None:
        try:
            payload = read_json(body) if body else None
        except JsonInputError as exc:
            self.journal.record(
                rpc_entry(
                    body,
                    "unreadable",
                    error=str(exc),
                    body_size=len(body),
                    headers=headers,
                    connection=connection,
                )
            )
            return
        if payload is None:
            return
        for message in payload if isinstance(payload, list) else [payload]:
            kind, _ = _rpc.classify(message)
            self.journal.record(
                rpc_entry(
                    message, kind, body_size=len(body), headers=headers, connection=connection
                )
            )


def build_server(spec: ServerSpec) -> Any:
    """The SDK low-level `Server` answering `spec`'s tools."""
    from mcp import types
    from mcp.server.lowlevel.server import Server
    from mcp.shared.exceptions import MCPError

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        asked = params.model_dump(by_alias=True, exclude_none=True) if params else None
        listed = _rpc.list_tools_result(spec.tools, spec.page_size, asked)
        if isinstance(listed, str):
            raise MCPError(_rpc.INVALID_PARAMS, listed)
        return types.ListToolsResult.model_validate(listed)

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        tool = spec.tool(params.name)
        if tool is None:
            raise MCPError(_rpc.INVALID_PARAMS, f"Unknown tool: {params.name}")
        called = _rpc.call_tool_result(tool, dict(params.arguments or {}))
        if isinstance(called, tuple):
            raise MCPError(*called)
        return types.CallToolResult.model_validate(called)

    return Server(
        spec.name,
        version=_rpc.SERVER_VERSION,
        instructions=spec.instructions,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


class SdkHttpMock:
    """`spec` served by the SDK's Streamable HTTP app at `url`; `journal` like HttpMock's."""

    def __init__(self, spec: ServerSpec) -> None:
        self.marker_token = new_marker_token()
        self.spec = with_markers(spec, self.marker_token)  # a marked copy
        self.journal = Journal()
        self.url: str | None = None
        self.port: int | None = None
        self.ca_file: str | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> SdkHttpMock:
        if self._thread is not None:
            return self
        import uvicorn

        app = build_server(self.spec).streamable_http_app(
            json_response=self.spec.response_mode == "json"
        )
        config = uvicorn.Config(
            _JournalMiddleware(app, self.journal),
            host="127.0.0.1",
            port=0,
            log_level="error",
            lifespan="on",
        )
        ready = threading.Event()

        class _Server(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets)
                ready.set()

        self._server = _Server(config)
        self._thread = threading.Thread(
            target=self._run, name=f"SdkHttpMock-{self.spec.name}", daemon=True
        )
        self._thread.start()
        if not ready.wait(START_TIMEOUT) or not self._server.servers:
            self.close()
            raise RuntimeError(f"SDK HTTP mock {self.spec.name!r} did not start")
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        return self

    def _run(self) -> None:
        asyncio.run(self._server.serve())

    def close(self) -> None:
        if self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(START_TIMEOUT)
        self._thread = None

    def __enter__(self) -> SdkHttpMock:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
