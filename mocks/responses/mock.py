"""`MockResponses` (the mock model on a real port) and `responses_router` (the same service
as a respx router for in-process httpx clients of the OpenAI APIs).

Strategy: both front the one `ResponsesService`, so an in-process client and an
out-of-process one meet the same model, script and journal. The port is served by the
mocks' one HTTP server (`LoopServer`, shared with the MCP mock): the same strict request
parser and bounds (`HttpLimits`), a thousand connections without a thread each, and a
`close()` that returns whoever is still connected. An SSE answer goes out as chunked
transfer encoding, one chunk per event.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mcp_host_conformance.mocks._http import ChunkedBody, HttpLimits, Request, write_response
from mcp_host_conformance.mocks.journal import Journal
from mcp_host_conformance.mocks.loop_server import Connection, LoopServer, ServedMock
from mcp_host_conformance.mocks.responses.script import Step
from mcp_host_conformance.mocks.responses.service import Answer, ResponsesService

if TYPE_CHECKING:  # respx and httpx load only when a router is made
    import respx

DEFAULT_ROUTER_BASE = "https://mock-responses.invalid/v1"


class MockResponses(ServedMock):
    """The mock model on a real port, speaking the Responses API, Chat Completions and the
    Anthropic Messages API. `url` (OpenAI), `anthropic_url`, `api_key`, `journal`,
    `script()`, `bind()`, `requests()`."""

    def __init__(self, api_key: str | None = None, limits: HttpLimits | None = None) -> None:
        self.service = ResponsesService(api_key=api_key)
        self.limits = limits or HttpLimits()

    def _new_server(self) -> LoopServer:
        return LoopServer(self._serve, self.service.journal, name="responses", limits=self.limits)

    async def _serve(self, request: Request, conn: Connection) -> bool:
        answer: Answer = self.service.handle(
            request.method, request.target, request.headers, request.body, conn.id
        )
        keep = request.keep_alive
        headers = list(answer.headers.items())
        if answer.events is None:
            write_response(conn.writer, answer.status, answer.body, headers, keep_alive=keep)
            return keep
        body = ChunkedBody(conn.writer)
        body.start(answer.status, headers, keep_alive=keep)
        for event in answer.events:
            await body.send(event)
        await body.end()
        return keep

    # facts ---------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._server is None or self._server.port is None:
            raise RuntimeError("MockResponses is not started; use start() or a with block")
        return self._server.port

    @property
    def url(self) -> str:
        """The OpenAI base URL (`OPENAI_BASE_URL`): `{url}/responses`, `{url}/chat/completions`."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        """The Anthropic base URL (`ANTHROPIC_BASE_URL`, no `/v1`): `{url}/v1/messages`."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def journal_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/__journal"

    @property
    def api_key(self) -> str:
        return self.service.api_key

    @property
    def journal(self) -> Journal:
        return self.service.journal

    # behaviour -----------------------------------------------------------------------
    def script(self, steps: Iterable[Step | dict[str, Any]] | None) -> None:
        self.service.script(steps)

    def marker_for(self, server: str, tool: str) -> str | None:
        """The marker of `server`'s tool `tool`, when `server` is bound to a mock."""
        return self.service.marker_for(server, tool)

    def bind(self, server: str, mock: Any) -> None:
        """The host knows `mock` (anything with a `marker_token`, or the token itself) as
        `server`: scripted calls to `server` find its tools by their markers."""
        self.service.bind(server, mock if isinstance(mock, str) else mock.marker_token)

    def reset(self) -> None:
        self.service.reset()

    def requests(self) -> list[Any]:
        return self.service.requests()


def responses_router(
    model: MockResponses | ResponsesService, base_url: str | None = None
) -> respx.MockRouter:
    """A respx router answering `{base_url}/responses` and `{base_url}/chat/completions`
    (an OpenAI base URL, ending in `/v1`) with `model`'s logic and journal.

    `base_url` defaults to the model's own URL when it is started, else a name that never
    resolves. Use it as `with responses_router(model, url) as router:` or pass
    `transport=httpx.MockTransport(router.handler)` to a client.
    """
    import httpx
    import respx

    service = model.service if isinstance(model, MockResponses) else model
    if base_url is None:
        base_url = (
            model.url if isinstance(model, MockResponses) and model._server else DEFAULT_ROUTER_BASE
        )
    base = httpx.URL(base_url.rstrip("/"))
    router = respx.MockRouter(base_url=str(base), assert_all_called=False)

    def answer(request: httpx.Request) -> httpx.Response:
        rest = request.url.path[len(base.path) :]
        headers = {k.lower(): v for k, v in request.headers.multi_items()}
        reply: Answer = service.handle(
            request.method, "/v1" + rest, headers, request.read(), "respx"
        )
        return httpx.Response(reply.status, headers=reply.headers, content=reply.content())

    router.route().mock(side_effect=answer)
    return router
