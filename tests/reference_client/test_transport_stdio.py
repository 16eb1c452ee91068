"""The stdio transport against the stdio mock (STDIO-*, NET-4 over stdio)."""

from __future__ import annotations

import os
import sys

import pytest

from mcp_host_conformance.mocks.spec import Misbehaviour, ServerSpec, Tool
from mcp_host_conformance.mocks.stdio_server import StdioMock, process_state
from mcp_host_conformance.reference_client.rpc import RpcSession
from mcp_host_conformance.reference_client.transports import (
    MessageTooLarge,
    ProtocolError,
    TransportError,
)
from mcp_host_conformance.reference_client.transports.stdio import StdioTransport, child_environment
from tests.reference_client.engine_support import run

HOST_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": "/tmp/home-x",
    "LANG": "C.UTF-8",
    "CANARY_HOST_ONLY": "must-not-leak",
    "USER": "u",
    "SHELL": "/bin/sh",
}


def spec(**misbehaviour) -> ServerSpec:
    return ServerSpec(name="local", tools=[Tool("echo")], misbehaviour=Misbehaviour(**misbehaviour))


def transport_for(mock: StdioMock, *, extra_args=(), env=None) -> StdioTransport:
    return StdioTransport(
        mock.command[0], [*mock.command[1:], *extra_args], env or {}, host_environ=HOST_ENV
    )


async def session_up(transport: StdioTransport) -> RpcSession:
    session = RpcSession(transport)
    await transport.connect()
    await session.initialize()
    return session


def test_child_environment_is_only_path_home_lang_and_configured() -> None:
    env = child_environment(HOST_ENV, {"TOKEN": "s3"})
    assert env == {
        "PATH": HOST_ENV["PATH"],
        "HOME": "/tmp/home-x",
        "LANG": "C.UTF-8",
        "TOKEN": "s3",
    }
    assert child_environment({"PATH": "/bin"}, {}) == {"PATH": "/bin"}


def test_spawn_verbatim_args_own_group_env_and_reaped(tmp_path) -> None:
    mock = StdioMock(spec(stderr_flood=2 * 1024 * 1024), tmp_path)
    transport = transport_for(mock, extra_args=["a;b", "$HOME"], env={"TOKEN": "s3cr3t"})

    async def go() -> list[dict]:
        session = await session_up(transport)
        try:
            tools = await session.list_tools()
            result = await session.call_tool("echo", {"x": 1})
            assert result["content"][0]["text"] == '{"x":1}'
            return tools
        finally:
            await session.close()

    assert [t["name"] for t in run(go())] == ["echo"]
    started = mock.process_entries()[0]
    assert started.argv[-2:] == ["a;b", "$HOME"]
    assert (
        set(started.env) <= {"PATH", "HOME", "LANG", "TOKEN"} and started.env["TOKEN"] == "s3cr3t"
    )
    assert "CANARY_HOST_ONLY" not in started.env
    assert started.pgid == started.pid != os.getpgid(0)
    assert process_state(started.pid) == "gone"


def test_missing_command_is_an_error_not_a_crash() -> None:
    transport = StdioTransport("/nonexistent/mcp-server", [], {}, host_environ=HOST_ENV)
    with pytest.raises(TransportError, match="command not found"):
        run(transport.connect())


def test_exit_at_once_and_garbage_are_errors(tmp_path) -> None:
    for misbehaviour, error in (
        (dict(exit_at_once=3), TransportError),
        (dict(garbage=True), ProtocolError),
    ):
        mock = StdioMock(spec(**misbehaviour), tmp_path)
        transport = transport_for(mock)

        async def go(transport: StdioTransport = transport) -> None:
            try:
                await session_up(transport)
            finally:
                await transport.close()

        with pytest.raises(error):
            run(go())
        assert all(process_state(p) == "gone" for p in mock.pids())


def test_line_over_one_mib_is_refused(tmp_path) -> None:
    mock = StdioMock(spec(oversize_at="tools/list"), tmp_path)
    transport = transport_for(mock)

    async def go() -> None:
        session = await session_up(transport)
        try:
            await session.list_tools()
        finally:
            await session.close()

    with pytest.raises(MessageTooLarge):
        run(go())


def test_close_kills_a_server_that_ignores_sigterm(tmp_path) -> None:
    script = tmp_path / "stubborn.py"
    script.write_text(
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    transport = StdioTransport(sys.executable, [str(script)], {}, host_environ=HOST_ENV)

    async def go() -> int:
        await transport.connect()
        assert transport._process is not None
        await transport._process.stdout.readline()  # started, SIGTERM now ignored
        pid = transport.pid
        await transport.close()
        return pid

    pid = run(go())
    assert process_state(pid) == "gone"


# ---- a server that floods its output (hardening) ----------------------------------------

FLOODER = """\
import json, os, signal, sys
mode = sys.argv[1]
if "stubborn" in mode:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if mode.startswith("early"):
    while True:
        os.write(1, b"x" * 65536)  # one endless line, before any answer
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {},
                  "serverInfo": {"name": "f", "version": "1"}}
    else:
        result = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\\n")
    sys.stdout.flush()
    if message["method"] == "tools/list":
        while True:
            os.write(2 if mode.startswith("stderr") else 1, b"y" * 65536)
"""

FLOOD_MODES = ["early", "early-stubborn", "stdout", "stdout-stubborn", "stderr-stubborn"]


@pytest.mark.parametrize("mode", FLOOD_MODES)
def test_close_after_a_flood_returns_and_reaps(tmp_path, mode: str) -> None:
    script = tmp_path / "flood.py"
    script.write_text(FLOODER)
    transport = StdioTransport(sys.executable, [str(script), mode], {}, host_environ=HOST_ENV)

    async def go() -> int | None:
        session = RpcSession(transport)
        await transport.connect()
        try:
            await session.initialize()
            await session.list_tools()
        except MessageTooLarge:
            assert mode.startswith("early")
        pid = transport.pid
        await transport.close()
        return pid

    pid = run(go(), timeout=30)
    assert pid is not None and process_state(pid) == "gone"


@pytest.mark.parametrize("mode", FLOOD_MODES)
def test_chat_exits_cleanly_after_a_server_flooded(tmp_path, mode: str) -> None:
    import subprocess

    script = tmp_path / "flood.py"
    script.write_text(FLOODER)
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "PATH": HOST_ENV["PATH"],
        "OPENAI_API_KEY": "k",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",  # never asked: the session only starts
    }
    program = [sys.executable, "-m", "mcp_host_conformance.reference_client"]
    add = [*program, "mcp", "add", "f", f"--command={sys.executable}", f"--arg={script}"]
    subprocess.run([*add, f"--arg={mode}"], env=env, check=True, timeout=60)
    done = subprocess.run(
        [*program, "chat", "--connect-timeout", "30"],
        env=env,
        input=b"/exit\n",
        capture_output=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b"", done.stderr.decode()  # no "Exception ignored ... loop is closed"
    assert b"MCP server f" in done.stdout
