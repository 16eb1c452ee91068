"""Stdio client transport: the server is a child process speaking JSON lines.

Strategy: spawn the process ourselves, because the SDK's `stdio_client` passes HOME,
LOGNAME, PATH, SHELL, TERM and USER (see `transports/__init__.py`). Each rule is one
argument of `create_subprocess_exec`:
- STDIO-1: exec of the command and its arguments, no shell, so `a;b` or `$HOME` arrive verbatim;
- STDIO-2: `env` holds only PATH, HOME, LANG (when the host has them) and the configured variables;
- STDIO-3: `start_new_session=True`: its own session and process group (pgid == pid);
- STDIO-4: `stderr=DEVNULL`: a flood on stderr can neither block us nor be shown;
- NET-4: the stdout reader's line limit is 1 MiB; a longer line abandons the process;
- STDIO-5: `close` closes stdin, SIGTERMs the group, waits briefly, SIGKILLs the group and
  waits for the child, so nothing is left running and no zombie remains. While it waits it
  drains and discards the child's stdout: a server that flooded it leaves the pipe full and
  its reader paused, and then the pipe never reports its end, `wait` never returns and the
  pipe is collected after the event loop closed ("Event loop is closed" at exit).
One request is in flight at a time (a lock); lines that do not answer it (notifications,
late answers to a request that timed out) are skipped, requests from the server are
refused, so a timed-out call can never be mistaken for the next one.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping
from typing import Any

from mcp_host_conformance.reference_client.transports import (
    MAX_MESSAGE_BYTES,
    MessageTooLarge,
    ProtocolError,
    TransportError,
    encode,
    parse_json,
)
from mcp_host_conformance.reference_client.transports.http import same_id

INHERITED = ("PATH", "HOME", "LANG")  # STDIO-2: the only variables taken from the host
TERM_GRACE = 0.5  # seconds between SIGTERM and SIGKILL
KILL_WAIT = 5.0  # seconds to wait for the pipes to end after SIGKILL
_DRAIN_CHUNK = 64 * 1024


def child_environment(
    host_environ: Mapping[str, str], configured: Mapping[str, str]
) -> dict[str, str]:
    """PATH, HOME, LANG from the host (when set) plus the server's own variables (pure)."""
    env = {name: host_environ[name] for name in INHERITED if name in host_environ}
    env.update(configured)
    return env


async def spawn(
    command: str, args: list[str], env: Mapping[str, str], cwd: str | None
) -> asyncio.subprocess.Process:
    """Start the server: STDIO-1 (exec, no shell), STDIO-2 (`env` exactly), STDIO-3 (own
    session and process group), STDIO-4 (stderr discarded), NET-4 (1 MiB line limit)."""
    return await asyncio.create_subprocess_exec(
        command,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
        limit=MAX_MESSAGE_BYTES + 1,
    )


class StdioTransport:
    def __init__(
        self,
        command: str,
        args: list[str],
        env: Mapping[str, str],
        *,
        host_environ: Mapping[str, str],
        cwd: str | None = None,
    ) -> None:
        self.command = command
        self.args = list(args)
        self.destination = " ".join([command, *self.args])
        self._env = child_environment(host_environ, env)
        self._cwd = cwd
        self._process: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._broken: str | None = None  # why the stream can no longer be trusted

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    async def connect(self) -> None:
        try:
            self._process = await spawn(self.command, self.args, self._env, self._cwd)
        except FileNotFoundError:
            raise TransportError(f"command not found: {self.command}", maybe_acted=False) from None
        except PermissionError:
            raise TransportError(
                f"command not executable: {self.command}", maybe_acted=False
            ) from None
        except OSError as exc:
            raise TransportError(
                f"cannot start {self.command}: {exc.strerror or type(exc).__name__}",
                maybe_acted=False,
            ) from None
        except ValueError:  # a NUL in the command, an argument or a variable
            raise TransportError(
                f"cannot start {self.command}: the command line or a variable holds a NUL "
                "character",
                maybe_acted=False,
            ) from None

    def set_protocol_version(self, version: str) -> None:
        pass  # stdio carries no per-message version header

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        async with self._lock:
            await self._write(message)
            while True:
                received = await self._read_message()
                if isinstance(received, dict) and "method" in received:
                    if "id" in received:  # a request from the server: we offer nothing
                        await self._refuse(received["id"])
                    continue
                if same_id(received, message.get("id")):
                    if "result" in received or "error" in received:
                        return received
                    raise ProtocolError("the server's response has neither result nor error")

    async def notify(self, message: dict[str, Any]) -> None:
        async with self._lock:
            await self._write(message)

    async def _write(self, message: dict[str, Any]) -> None:
        process = self._live()
        assert process.stdin is not None
        try:
            process.stdin.write(encode(message) + b"\n")
            await process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise TransportError(self._exit_reason()) from None

    async def _refuse(self, request_id: Any) -> None:
        error = {"code": -32601, "message": "Method not found"}
        try:
            await self._write({"jsonrpc": "2.0", "id": request_id, "error": error})
        except TransportError:
            pass

    async def _read_message(self) -> Any:
        line = await self.read_line()
        if not line.strip():
            return None  # a blank line: skipped by the caller as "not the answer"
        return parse_json(line)

    async def read_line(self) -> bytes:
        """The server's next line as it came, at most 1 MiB (NET-4, MessageTooLarge past it);
        a TransportError once the server's output ended. A zoo seam: the size clients watch
        what it reads."""
        process = self._live()
        assert process.stdout is not None
        try:
            line = await process.stdout.readline()
        except ValueError:  # the line is over the reader's limit: 1 MiB
            self._broken = "the server sent a message over the 1 MiB limit"
            raise MessageTooLarge() from None
        except (ConnectionResetError, BrokenPipeError):
            line = b""
        if not line:
            self._broken = self._exit_reason()
            raise TransportError(self._broken)
        if len(line.rstrip(b"\r\n")) > MAX_MESSAGE_BYTES:
            self._broken = "the server sent a message over the 1 MiB limit"
            raise MessageTooLarge()
        return line

    def _live(self) -> asyncio.subprocess.Process:
        if self._process is None:
            raise TransportError("not started", maybe_acted=False)
        if self._broken is not None:
            raise TransportError(self._broken, maybe_acted=False)
        return self._process

    def _exit_reason(self) -> str:
        code = self._process.returncode if self._process else None
        if code is None:
            return "the server closed its output"
        return f"the server exited (code {code})"

    async def close(self) -> None:
        """STDIO-5: close stdin, SIGTERM the group, SIGKILL it after a grace, reap."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            try:
                process.stdin.close()
            except (BrokenPipeError, ConnectionResetError):
                pass
        drain = asyncio.ensure_future(_discard_output(process))
        try:
            signal_group(process.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), TERM_GRACE)
            except TimeoutError:
                pass
            # Also after the leader exited: children it left in its group die with it.
            signal_group(process.pid, signal.SIGKILL)
            try:
                await asyncio.wait_for(process.wait(), KILL_WAIT)
            except TimeoutError:
                # The child is dead (SIGKILL) but something outside its group holds its
                # stdout open: stop listening to the pipe ourselves.
                _close_pipes(process)
        finally:
            drain.cancel()
            await asyncio.gather(drain, return_exceptions=True)
            # Closed here, while the loop runs: a transport left to the garbage collector
            # (a daemonized server still holds its pipes) complains from a closed loop.
            _close_pipes(process)


async def _discard_output(process: asyncio.subprocess.Process) -> None:
    """Read and drop the child's stdout until it ends, so the pipe can report its end."""
    if process.stdout is None:
        return
    try:
        while await process.stdout.read(_DRAIN_CHUNK):
            pass
    except (ConnectionResetError, BrokenPipeError, ValueError):
        pass


def _close_pipes(process: asyncio.subprocess.Process) -> None:
    # asyncio offers no public way to close a child's pipes short of the transport, which
    # Process keeps in a private attribute; closing it is what `wait` was waiting for.
    transport = getattr(process, "_transport", None)
    if transport is not None:
        transport.close()


def signal_group(pgid: int, sig: int) -> None:
    """Send `sig` to a stdio server's process group (its own, STDIO-3); gone is fine."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
