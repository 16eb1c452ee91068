"""Broken clients for STDIO (local servers)."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal

from mcp_host_conformance.zoo.client import (
    BrokenClient,
    Seam,
    pure,
    replaced,
    replaced_after,
    replaced_when,
)

_STDIO = "mcp_host_conformance.reference_client.transports.stdio"


async def _start(command, args, env, cwd, **changes):
    """The server started as the reference host's `spawn_server` starts it, but for `changes`
    to its options (`shell=True`: through a shell)."""
    from mcp_host_conformance.reference_client.transports import MAX_MESSAGE_BYTES

    options = dict(
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
        limit=MAX_MESSAGE_BYTES + 1,
    )
    options.update(changes)
    if options.pop("shell", False):
        # Arguments joined unquoted, the way a "just run the command line" bug does it;
        # `exec` so the server keeps the shell's pid and process group.
        line = " ".join(["exec", shlex.quote(command), *args])
        return await asyncio.create_subprocess_shell(line, **options)
    return await asyncio.create_subprocess_exec(command, *args, **options)


def _spawn_with(**changes):
    def make(original):
        del original

        async def spawn(command, args, env, cwd):
            return await _start(command, args, env, cwd, **changes)

        return spawn

    return make


@replaced("mcp_host_conformance.reference_client.transports.stdio.child_environment")
def _inherit(original):
    def child_environment(host_environ, configured):
        return {**os.environ, **original(host_environ, configured)}

    return child_environment


@replaced("mcp_host_conformance.reference_client.transports.stdio.signal_group")
def _no_signals(original):
    del original
    return lambda pgid, sig: None


def _stdio_server_exited(outcome, server, transport, **options) -> bool:
    from mcp_host_conformance.reference_client import config

    kind, answer = outcome
    if kind == "raise" or not isinstance(server, config.StdioServerConfig):
        return False  # raised again as the reference does; an HTTP server is the reference's
    line, _ = answer
    return not line.connected and any(
        word in (line.reason or "") for word in ("exited", "closed its output")
    )


@replaced_after(
    "mcp_host_conformance.reference_client.discovery.connect_server", _stdio_server_exited
)
def _exited_is_connected(original):
    from mcp_host_conformance.reference_client import discovery

    async def connect_server(outcome, server, transport, **options):
        # a stdio server that exited or closed its output (`_stdio_server_exited`)
        line, connected = outcome[1]
        return discovery.connected_line(server.name, 0, line.destination), connected

    return connect_server


# ---- STDIO-1 ----------------------------------------------------------------------------------


@replaced(f"{_STDIO}.spawn")
def _split_command(original):
    async def spawn(command, args, env, cwd):
        # "Be lenient": a command line like "npx -y server" is split into program and words.
        program, *words = command.split(" ")
        return await original(program, [*words, *args], env, cwd)

    return spawn


# ---- STDIO-2 ----------------------------------------------------------------------------------

_SDK_DEFAULTS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")  # the SDK's stdio_client


@replaced(f"{_STDIO}.child_environment")
@pure
def _sdk_environment(original):
    def child_environment(host_environ, configured):
        env = {name: host_environ[name] for name in _SDK_DEFAULTS if name in host_environ}
        return {**env, **original(host_environ, configured)}

    return child_environment


# ---- STDIO-3 ----------------------------------------------------------------------------------

_SESSION_GROUPS: dict[tuple[str | None, int], asyncio.Future] = {}


def _one_group(original):
    del original

    async def spawn(command, args, env, cwd):
        # One process group per host session (its event loop): the first server leads it,
        # the others join it, so "kill the group" stops them all.
        key = (env.get("HOME"), id(asyncio.get_running_loop()))
        leader = _SESSION_GROUPS.get(key)
        if leader is None:
            leader = _SESSION_GROUPS[key] = asyncio.get_running_loop().create_future()
            group = 0
        else:
            group = await leader
        try:
            process = await _start(
                command, args, env, cwd, start_new_session=False, process_group=group
            )
        except BaseException:
            if not leader.done():
                leader.set_result(0)  # no group to join: the next server starts its own
            raise
        if not leader.done():
            leader.set_result(process.pid)
        return process

    return spawn


@replaced(f"{_STDIO}.signal_group")
def _process_only(original):
    del original

    def signal_group(pgid, sig):
        # The servers share one group, so stopping one "must not touch the others": the
        # process started is signalled alone (what it left in the group stays).
        try:
            os.kill(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    return signal_group


# ---- STDIO-4 ----------------------------------------------------------------------------------

_STDERR_TAILS: dict[int, asyncio.Task] = {}
_TAIL = 2048


async def _keep_tail(stream) -> bytes:
    tail = b""
    while chunk := await stream.read(65536):
        tail = (tail + chunk)[-_TAIL:]
    return tail


def _stderr_kept(original):
    del original

    async def spawn(command, args, env, cwd):
        # stderr is read (so a flood never blocks) and its last 2 KiB kept, to explain a crash.
        process = await _start(command, args, env, cwd, stderr=asyncio.subprocess.PIPE)
        _STDERR_TAILS[process.pid] = asyncio.ensure_future(_keep_tail(process.stderr))
        return process

    return spawn


@replaced(f"{_STDIO}.StdioTransport.request")
def _explained_by_stderr(original):
    from mcp_host_conformance.reference_client.transports import TransportError

    async def request(self, message):
        try:
            return await original(self, message)
        except TransportError as exc:
            tail = _STDERR_TAILS.get(self.pid)
            if tail is None:
                raise
            try:
                said = await asyncio.wait_for(asyncio.shield(tail), 1.0)
            except Exception:  # noqa: BLE001 - no tail (in time), no explanation
                raise exc from None
            text = said.decode("utf-8", "replace").strip()[-300:]
            raise TransportError(f"{exc}; it said: {text}", maybe_acted=exc.maybe_acted) from None

    return request


# ---- STDIO-5 ----------------------------------------------------------------------------------


def _group_alive(pgid: int) -> bool:
    """Some process of the group is there to get a signal (signal 0 only asks)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_to_live_group(original, pgid, sig) -> bool:
    # a SIGKILL to an empty group (the server ended on EOF or SIGTERM) changes nothing
    return sig == signal.SIGKILL and _group_alive(pgid)


@replaced_when(f"{_STDIO}.signal_group", _kill_to_live_group)
def _term_only(original):
    def signal_group(pgid, sig):
        if sig != signal.SIGKILL:  # "SIGTERM is the polite way; servers exit on it"
            original(pgid, sig)

    return signal_group


def _leader_state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            stat = f.read()
    except OSError:
        return "gone"
    fields = stat[stat.rfind(")") + 2 :].split()
    return "zombie" if fields and fields[0] in ("Z", "X") else "running"


def _group_outlives_leader(original, pgid, sig) -> bool:
    # otherwise the leader runs (signalled as by the reference) or nothing is left to signal
    return _leader_state(pgid) != "running" and _group_alive(pgid)


@replaced_when(f"{_STDIO}.signal_group", _group_outlives_leader)
def _live_leaders_only(original):
    def signal_group(pgid, sig):
        # The group is signalled only while the process we started runs: once it has exited
        # "there is nothing to stop" (and its pid might be reused).
        if _leader_state(pgid) == "running":
            original(pgid, sig)

    return signal_group


# ---- STDIO-6 ----------------------------------------------------------------------------------


def _failed_with_mcp_error(outcome, *args):
    from mcp_host_conformance.reference_client.transports import McpError

    kind, value = outcome
    return kind == "raise" and isinstance(value, McpError)


@replaced_after(
    "mcp_host_conformance.reference_client.rpc.RpcSession.list_tools", _failed_with_mcp_error
)
def _no_tools_on_failure(original):
    async def list_tools(outcome, self):
        # "tools" is an optional capability: a server whose tools/list fails has none.
        return []

    return list_tools


CLIENTS = [
    BrokenClient(
        "runs-through-shell",
        "Runs the stdio command line through /bin/sh.",
        {"STDIO-1", "STDIO-2"},  # STDIO-2: the shell exports PWD
        (
            Seam(
                "mcp_host_conformance.reference_client.transports.stdio.spawn",
                _spawn_with(shell=True),
            ),
        ),
    ),
    BrokenClient(
        "inherits-environment",
        "Hands its whole environment to stdio servers.",
        {"STDIO-2"},
        (_inherit,),
    ),
    BrokenClient(
        "same-process-group",
        "Starts stdio servers in its own process group.",
        {"STDIO-3", "STDIO-5"},  # STDIO-5: killing "its" group then misses the server's children
        (
            Seam(
                "mcp_host_conformance.reference_client.transports.stdio.spawn",
                _spawn_with(start_new_session=False),
            ),
        ),
    ),
    BrokenClient(
        "stderr-unread-pipe",
        "Pipes a stdio server's stderr and never reads it.",
        {"STDIO-4"},
        (
            Seam(
                "mcp_host_conformance.reference_client.transports.stdio.spawn",
                _spawn_with(stderr=asyncio.subprocess.PIPE),
            ),
        ),
    ),
    BrokenClient(
        "forgets-to-reap",
        "On exit closes the server's stdin but never signals its process group.",
        {"STDIO-5"},
        (_no_signals,),
    ),
    BrokenClient(
        "exited-server-connected",
        "Reports a stdio server that exits at once as connected with 0 tools.",
        {"STDIO-6"},
        (_exited_is_connected,),
    ),
    BrokenClient(
        "splits-command-on-spaces",
        "Splits a stdio server's command on spaces into program and arguments.",
        {"STDIO-1"},
        (_split_command,),
    ),
    BrokenClient(
        "sdk-default-environment",
        "Gives stdio servers the MCP SDK's default environment (HOME, LOGNAME, PATH, SHELL, "
        "TERM, USER) and LANG, not only PATH, HOME and LANG.",
        {"STDIO-2"},
        (_sdk_environment,),
    ),
    BrokenClient(
        "one-group-for-all-servers",
        "Starts the first stdio server in a new process group and the others in that group; "
        "so that stopping one leaves the others, it signals the process it started alone.",
        # STDIO-5: what a server left in the group survives the host's exit
        {"STDIO-3", "STDIO-5"},
        (Seam(f"{_STDIO}.spawn", _one_group), _process_only),
        target="STDIO-3",
    ),
    BrokenClient(
        "shows-stderr-of-failed-server",
        "Keeps the tail of a stdio server's stderr and shows it in the reason when the "
        "server fails.",
        {"STDIO-4"},
        (Seam(f"{_STDIO}.spawn", _stderr_kept), _explained_by_stderr),
    ),
    BrokenClient(
        "never-escalates-to-sigkill",
        "Stops stdio servers with SIGTERM only; one that ignores it keeps running.",
        {"STDIO-5"},
        (_term_only,),
    ),
    BrokenClient(
        "signals-only-live-leaders",
        "Signals a stdio server's process group only while the process it started still "
        "runs (a server that daemonized is left running).",
        {"STDIO-5"},
        (_live_leaders_only,),
    ),
    BrokenClient(
        "lists-no-tools-on-failure",
        "Treats a failed tools/list as a server with no tools, connected.",
        # Every server whose tools/list fails is then connected: past 16 pages (DISC-6), an
        # answer over 1 MiB (NET-4), a redirect at tools/list (NET-3; no header goes anywhere
        # wrong, so the redirect cases' CRED-1 is left unchecked, not failed)
        {"STDIO-6", "DISC-6", "NET-4", "NET-3"},
        (_no_tools_on_failure,),
        target="STDIO-6",
    ),
]
