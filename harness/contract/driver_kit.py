"""The driver protocol's driver side in one file of the standard library (Python 3.9+).

For a Python host that cannot share the suite's environment (its dependencies conflict with
the suite's: it pins `mcp` 1.x, say; or it runs on an older Python): the host keeps its own
virtual environment, and a small driver script in it speaks the driver protocol
(docs/driver-protocol.md) to the suite, which starts it with `--client-cmd`:

    mcp-host-conformance run --client-cmd "/path/to/host/.venv/bin/python conformance_driver.py"

Take this file into the host's environment either way: copy it beside the driver script (it
imports nothing but the standard library; keep it with the suite's version it came from), or,
in an environment of Python 3.11 or newer, `pip install --no-deps mcp-host-conformance` and
import `mcp_host_conformance.harness.contract.driver_kit` (nothing of the suite's dependencies
is needed for it).

Write a `Driver` whose methods do what the adapter contract's do (docs/adapter.md), with the
protocol's JSON values instead of its records: dicts with the records' field names, paths as
strings. The constructors below (`description`, `shown`, `server_status`, `confirmation`,
`call_result`, `turn`, `stopped`) make them with the right names. `start` returns a session:
any object with `statuses` (a list of `server_status`), `text`, and `ask`, `cancel`, `stop`.
Then `raise SystemExit(serve(MyDriver()))`.

Strategy: `serve` reads one JSON-RPC message per line from stdin and writes one per line to
the protocol's own copy of stdout; file descriptor 1 and `sys.stdout` then point at stderr, so
nothing the host or a child of it prints can break the protocol. Requests are served in order
on the reading thread, but for `ask` and `review_tools`, which run on threads of their own
(the harness answers the driver's `approve` / `acknowledge` / `review_tool` and may send
`cancel` while they run). An exception of the host's becomes the JSON-RPC error the harness
reports as the client's failure (`-32000`, "Type: message"). At `shutdown` or the end of
stdin every session still open is stopped and `serve` returns.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

__all__ = [
    "PROTOCOL",
    "Driver",
    "HarnessError",
    "call_result",
    "confirmation",
    "description",
    "serve",
    "server_status",
    "shown",
    "stopped",
    "turn",
]

PROTOCOL = "mcp-host-conformance-driver/1"
MAX_LINE = 32 * 1024 * 1024  # bytes of one message, as the harness bounds its own
MAX_ASKS = 16  # turns in flight at once

PARSE_ERROR = -32700
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
HOST_FAILED = -32000
BUSY = -32003

Json = Any
Approve = Callable[[dict[str, Json]], str]
Acknowledge = Callable[[str], bool]


class HarnessError(RuntimeError):
    """The harness answered a request of the driver's with an error, or went away."""


# ---- the values (docs/adapter.md defines every field) ----------------------------------------


def description(name: str, version: str, **fields: Json) -> dict[str, Json]:
    """`Description`: also profiles, connect_timeout, call_timeout, project_config_files,
    can_cancel, interactive_add, status_vocabulary, has_oauth."""
    return {"name": name, "version": version, **fields}


def shown(text: str, paths: Sequence[str] = ()) -> dict[str, Json]:
    """What a configuration command showed, and the files it wrote."""
    return {"text": text, "paths": [str(p) for p in paths]}


def server_status(
    name: str,
    connected: bool,
    tools: int | None = None,
    destination: str | None = None,
    reason: str | None = None,
    line: str = "",
) -> dict[str, Json]:
    """One server's status after start, `line` as shown."""
    return {
        "name": name,
        "connected": connected,
        "tools": tools,
        "destination": destination,
        "reason": reason,
        "line": line,
    }


def confirmation(
    server: str,
    destination: str,
    tool: str,
    arguments: str,
    warning: str,
    text: str,
    choices: Sequence[str] = (),
    default: str | None = None,
) -> dict[str, Json]:
    """One approval prompt as shown (a menu: its `choices` and `default`)."""
    return {
        "server": server,
        "destination": destination,
        "tool": tool,
        "arguments": arguments,
        "warning": warning,
        "text": text,
        "choices": list(choices),
        "default": default,
    }


def call_result(tool: str, status: str, output: str) -> dict[str, Json]:
    """One call's outcome as shown; `status`: completed, failed, denied, unknown, output_limit."""
    return {"tool": tool, "status": status, "output": output}


def turn(
    question_sent: bool,
    confirmations: Sequence[dict[str, Json]] = (),
    calls: Sequence[dict[str, Json]] = (),
    acknowledgements: Sequence[str] = (),
    answer: str = "",
    text: str = "",
) -> dict[str, Json]:
    """One question's turn."""
    return {
        "question_sent": question_sent,
        "confirmations": list(confirmations),
        "calls": list(calls),
        "acknowledgements": list(acknowledgements),
        "answer": answer,
        "text": text,
    }


def stopped(
    session_id: str | None = None, session_files: Sequence[str] = (), text: str = ""
) -> dict[str, Json]:
    """What `stop` returns: the session to reopen, the files it wrote, what was shown."""
    return {
        "session_id": session_id,
        "session_files": [str(p) for p in session_files],
        "text": text,
    }


# ---- the host's side ---------------------------------------------------------------------------


class Driver:
    """Override what your host has (the adapter contract's operations, on JSON values).

    `start(options)` gets the `StartOptions` fields (home, cwd, model_url, model_key,
    connect_timeout, call_timeout, ca_file, env, resume) and returns a session: an object
    with `statuses`, `text`, `ask(question, approve, acknowledge)` (call `approve(confirmation)`
    at each approval prompt and type back exactly the text it returns; call
    `acknowledge(prompt)` at an acknowledgement prompt; return a `turn`), `cancel()` and
    `stop()` (returns `stopped`). Optional, for the profiles that need them:
    `Driver.allow_addresses(home, addresses)` and a session's `review_tools(approve)`."""

    def describe(self) -> dict[str, Json]:
        raise NotImplementedError("describe")

    def add_server(self, home: str, server: dict[str, Json]) -> dict[str, Json]:
        """`server`: {"type": "http", name, url, headers, ...} or {"type": "stdio", name,
        command, args, env, ...}."""
        raise NotImplementedError("add_server")

    def remove_server(self, home: str, name: str) -> dict[str, Json]:
        raise NotImplementedError("remove_server")

    def list_servers(self, home: str) -> dict[str, Json]:
        raise NotImplementedError("list_servers")

    def start(self, options: dict[str, Json]) -> Any:
        raise NotImplementedError("start")


# ---- the wire ------------------------------------------------------------------------------------


class _Invalid(Exception):
    """A request's params are not what the method takes."""


class _Connection:
    """Both directions of the newline-delimited JSON-RPC stream."""

    def __init__(self, incoming: IO[bytes], outgoing: IO[bytes]) -> None:
        self.incoming = incoming
        self.outgoing = outgoing
        self.write_lock = threading.Lock()
        self.ids = itertools.count(1)
        self.waiting: dict[str, list[Any]] = {}  # id -> [event, result, error]
        self.waiting_lock = threading.Lock()
        self.ended = False

    def send(self, message: dict[str, Json]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self.write_lock:
            try:
                self.outgoing.write(line.encode("utf-8"))
                self.outgoing.flush()
            except (OSError, ValueError):  # the harness went away: its reads end too
                pass

    def reply(self, request_id: Json, result: Json) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def reply_error(self, request_id: Json, code: int, message: str) -> None:
        error = {"code": code, "message": message[:4000]}
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error})

    def call(self, method: str, params: dict[str, Json]) -> Json:
        """A request to the harness, answered (it answers while an `ask` is in flight)."""
        request_id = f"d{next(self.ids)}"
        slot: list[Any] = [threading.Event(), None, None]
        with self.waiting_lock:
            if self.ended:
                raise HarnessError(f"the harness went away before {method}")
            self.waiting[request_id] = slot
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        slot[0].wait()
        if slot[2] is not None:
            raise HarnessError(slot[2])
        return slot[1]

    def answered(self, message: dict[str, Json]) -> None:
        with self.waiting_lock:
            slot = self.waiting.pop(str(message.get("id")), None)
        if slot is None:
            return  # an answer to nothing of ours: ignored
        error = message.get("error")
        if error is not None:
            text = error.get("message") if isinstance(error, dict) else error
            slot[2] = f"the harness answered with an error: {text}"
        else:
            slot[1] = message.get("result")
        slot[0].set()

    def end(self) -> None:
        with self.waiting_lock:
            self.ended = True
            slots = list(self.waiting.values())
            self.waiting.clear()
        for slot in slots:
            slot[2] = "the harness went away before answering"
            slot[0].set()

    def messages(self) -> Iterator[dict[str, Json] | None]:
        """Each message read, as a dict; None for a line that is not one (its reply is a
        parse error); ends with the input."""
        while True:
            line = self.incoming.readline(MAX_LINE + 1)
            if not line:
                return
            if len(line) > MAX_LINE and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # the rest of the overlong line
                    line = self.incoming.readline(MAX_LINE)
                yield None
                continue
            if not line.strip():
                continue
            try:
                message = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                yield None
                continue
            yield message if isinstance(message, dict) else None


class _Server:
    def __init__(self, driver: Driver, connection: _Connection) -> None:
        self.driver = driver
        self.connection = connection
        self.lock = threading.Lock()
        self.sessions: dict[str, Any] = {}
        self.session_ids = itertools.count(1)
        self.threads: list[threading.Thread] = []

    def handle(self, message: dict[str, Json]) -> bool:
        """Serve one message; False once the harness asked to shut down."""
        method = message.get("method")
        if not isinstance(method, str):
            if "id" in message:
                self.connection.answered(message)
            return True
        if "id" not in message:
            return True  # a notification: nothing to do
        request_id = message["id"]
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method in ("ask", "review_tools"):
            with self.lock:
                self.threads = [t for t in self.threads if t.is_alive()]
                busy = len(self.threads) >= MAX_ASKS
                if not busy:
                    thread = threading.Thread(
                        target=self.run, args=(request_id, method, params), daemon=True
                    )
                    self.threads.append(thread)
            if busy:
                self.connection.reply_error(request_id, BUSY, f"more than {MAX_ASKS} turns")
            else:
                thread.start()
            return True
        self.run(request_id, method, params)
        return method != "shutdown"

    def run(self, request_id: Json, method: str, params: dict[str, Json]) -> None:
        operation = getattr(self, f"op_{method}", None)
        if operation is None:
            self.connection.reply_error(request_id, METHOD_NOT_FOUND, f"unknown method {method!r}")
            return
        try:
            result = operation(params)
        except (_Invalid, KeyError) as exc:
            text = f"params.{exc.args[0]}: missing" if isinstance(exc, KeyError) else str(exc)
            self.connection.reply_error(request_id, INVALID_PARAMS, text)
            return
        except NotImplementedError as exc:
            self.connection.reply_error(
                request_id,
                METHOD_NOT_FOUND,
                f"the driver has no {exc.args[0] if exc.args else method}",
            )
            return
        except Exception as exc:  # the host failed: the harness reports it as the client's failure
            traceback.print_exc(file=sys.stderr)
            self.connection.reply_error(request_id, HOST_FAILED, f"{type(exc).__name__}: {exc}")
            return
        self.connection.reply(request_id, result)

    def session(self, params: dict[str, Json]) -> Any:
        sid = params.get("session")
        with self.lock:
            session = self.sessions.get(sid) if isinstance(sid, str) else None
        if session is None:
            raise _Invalid(f"params.session: no session {str(sid)[:80]!r}")
        return session

    # -- the methods, harness -> driver --

    def op_initialize(self, params: dict[str, Json]) -> Json:
        return {"protocol": PROTOCOL}

    def op_describe(self, params: dict[str, Json]) -> Json:
        return self.driver.describe()

    def op_add_server(self, params: dict[str, Json]) -> Json:
        server = params["server"]
        if not isinstance(server, dict):
            raise _Invalid("params.server: expected an object")
        return self.driver.add_server(_text(params, "home"), server)

    def op_remove_server(self, params: dict[str, Json]) -> Json:
        return self.driver.remove_server(_text(params, "home"), _text(params, "name"))

    def op_list_servers(self, params: dict[str, Json]) -> Json:
        return self.driver.list_servers(_text(params, "home"))

    def op_allow_addresses(self, params: dict[str, Json]) -> Json:
        allow = getattr(self.driver, "allow_addresses", None)
        if allow is None:
            raise NotImplementedError("allow_addresses (profile private-address-refusal)")
        addresses = params["addresses"]
        if not isinstance(addresses, list) or not all(isinstance(a, str) for a in addresses):
            raise _Invalid("params.addresses: expected a list of strings")
        return allow(_text(params, "home"), addresses)

    def op_start(self, params: dict[str, Json]) -> Json:
        options = params["options"]
        if not isinstance(options, dict):
            raise _Invalid("params.options: expected an object")
        session = self.driver.start(options)
        sid = f"s{next(self.session_ids)}"
        with self.lock:
            self.sessions[sid] = session
        return {"session": sid, "statuses": list(session.statuses), "text": session.text}

    def op_ask(self, params: dict[str, Json]) -> Json:
        session = self.session(params)
        sid = params["session"]
        question = _text(params, "question")

        def approve(shown_prompt: dict[str, Json]) -> str:
            answer = self.connection.call("approve", {"session": sid, **shown_prompt})
            if not isinstance(answer, str):
                raise HarnessError("the harness answered approve with a non-string")
            return answer

        def acknowledge(prompt: str) -> bool:
            return bool(self.connection.call("acknowledge", {"session": sid, "prompt": prompt}))

        return session.ask(question, approve, acknowledge)

    def op_review_tools(self, params: dict[str, Json]) -> Json:
        session = self.session(params)
        sid = params["session"]
        review = getattr(session, "review_tools", None)
        if review is None:
            raise NotImplementedError("review_tools (profiles pinning, instruction-flagging)")

        def approve(pending: dict[str, Json]) -> bool:
            return bool(self.connection.call("review_tool", {"session": sid, **pending}))

        return review(approve)

    def op_cancel(self, params: dict[str, Json]) -> Json:
        self.session(params).cancel()
        return None

    def op_stop(self, params: dict[str, Json]) -> Json:
        session = self.session(params)
        with self.lock:
            self.sessions.pop(params["session"], None)
        return session.stop()

    def op_shutdown(self, params: dict[str, Json]) -> Json:
        self.stop_all()
        return None

    def stop_all(self) -> None:
        with self.lock:
            sessions = list(self.sessions.values())
            self.sessions.clear()
        for session in sessions:
            try:
                session.stop()
            except Exception as exc:  # going away: say it, stop the others
                print(f"driver: stopping a session failed: {exc}", file=sys.stderr)


def _text(params: dict[str, Json], name: str) -> str:
    value = params[name]
    if not isinstance(value, str):
        raise _Invalid(f"params.{name}: expected a string")
    return value


def _protocol_stdout() -> IO[bytes]:
    """The protocol's own copy of stdout; fd 1 and sys.stdout now write to stderr."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


def serve(
    driver: Driver, incoming: IO[bytes] | None = None, outgoing: IO[bytes] | None = None
) -> int:
    """Serve `driver` until the harness shuts it down or closes stdin; the exit status (0)."""
    incoming = incoming if incoming is not None else sys.stdin.buffer
    outgoing = outgoing if outgoing is not None else _protocol_stdout()
    connection = _Connection(incoming, outgoing)
    server = _Server(driver, connection)
    try:
        for message in connection.messages():
            if message is None:
                connection.reply_error(None, PARSE_ERROR, "not a JSON-RPC 2.0 message")
            elif not server.handle(message):
                break
    finally:
        connection.end()
        server.stop_all()
        for thread in list(server.threads):
            thread.join(timeout=5)
    return 0
