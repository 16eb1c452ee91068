"""The mock OpenAI Responses service: a model that calls tools on cue.

Strategy: `MockResponses` is a real HTTP server on 127.0.0.1 (for any host, in any
language) and `responses_router` is a respx router (for in-process httpx clients); both
call the same `ResponsesService`, so they answer alike. What the model says comes from a
script of `Step`s (see `mcp_host_conformance.mocks.model_script`); with no script it
plays an autopilot that calls each offered MCP tool once and then answers in text. Every
request is journalled whole (headers and parsed body) before it is judged, so a case
sees what a host sent even when the service rejected it.

    with MockResponses() as model:
        model.script(
            [Step.call(server="docs", tool="query", arguments={"q": "x"}), Step.text("ok")]
        )
        ... point the host at model.url with model.api_key ...
        model.requests()   # the bodies it received

Standalone: `python -m mcp_host_conformance.mocks.responses [--script FILE]` prints one
JSON line with the url, key and journal URL, then serves until Ctrl-C / SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Iterable
from typing import Any

from mcp_host_conformance.mocks._responses_http import ThreadedHTTP
from mcp_host_conformance.mocks._responses_service import Answer, ResponsesService
from mcp_host_conformance.mocks._responses_wire import parse_sse
from mcp_host_conformance.mocks.journal import Journal
from mcp_host_conformance.mocks.model_script import (
    Step,
    function_call_outputs,
    function_calls,
    label,
    offered_mcp_tools,
    offered_tools,
    script_from_json,
)

__all__ = [
    "MockResponses",
    "ResponsesService",
    "Step",
    "function_call_outputs",
    "function_calls",
    "label",
    "offered_mcp_tools",
    "offered_tools",
    "parse_sse",
    "responses_router",
]

DEFAULT_ROUTER_BASE = "https://mock-responses.invalid/v1"


class MockResponses:
    """The service on a real port. `url`/`api_key`/`journal`/`script()`/`requests()`."""

    def __init__(self, api_key: str | None = None) -> None:
        self.service = ResponsesService(api_key=api_key)
        self._http: ThreadedHTTP | None = None

    # lifecycle -----------------------------------------------------------------------
    def start(self) -> MockResponses:
        if self._http is None:
            self._http = ThreadedHTTP(self.service.handle)
        return self

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> MockResponses:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # facts ---------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._http is None:
            raise RuntimeError("MockResponses is not started; use start() or a with block")
        return self._http.port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

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

    def reset(self) -> None:
        self.service.reset()

    def requests(self) -> list[Any]:
        return self.service.requests()


def responses_router(model: MockResponses | ResponsesService, base_url: str | None = None):
    """A respx router answering `{base_url}/responses` with `model`'s logic and journal.

    `base_url` defaults to the model's own URL when it is started, else a name that never
    resolves. Use it as `with responses_router(model, url) as router:` or pass
    `transport=httpx.MockTransport(router.handler)` to a client.
    """
    import httpx
    import respx

    service = model.service if isinstance(model, MockResponses) else model
    if base_url is None:
        base_url = (
            model.url if isinstance(model, MockResponses) and model._http else DEFAULT_ROUTER_BASE
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


# ---- standalone ----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mcp_host_conformance.mocks.responses", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--script", help="JSON file holding a list of steps (default: autopilot)")
    parser.add_argument("--api-key", help="the bearer key to accept (default: random)")
    args = parser.parse_args(argv)
    steps = None
    if args.script:
        try:
            with open(args.script, encoding="utf-8") as f:
                steps = script_from_json(json.load(f))
        except (OSError, ValueError) as exc:
            print(
                f"mcp_host_conformance.mocks.responses: bad --script {args.script}: {exc}",
                file=sys.stderr,
            )
            return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with MockResponses(api_key=args.api_key) as model:
        model.script(steps)
        line = {
            "name": "responses",
            "url": model.url,
            "api_key": model.api_key,
            "journal": model.journal_url,
        }
        print(json.dumps(line), flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
