"""Broken clients for STDIO (local servers)."""

from __future__ import annotations

import asyncio
import os
import shlex

from mcp_host_conformance.zoo.client import BrokenClient, Seam, replaced


def _spawn_with(**changes):
    def make(original):
        del original
        from mcp_host_conformance.reference_client.transports import MAX_MESSAGE_BYTES

        async def spawn(command, args, env, cwd):
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


@replaced("mcp_host_conformance.reference_client.discovery.connect_server")
def _exited_is_connected(original):
    from mcp_host_conformance.reference_client import config, discovery

    async def connect_server(server, transport, *, timeout, redactor):
        line, connected = await original(server, transport, timeout=timeout, redactor=redactor)
        if (
            isinstance(server, config.StdioServerConfig)
            and not line.connected
            and any(word in (line.reason or "") for word in ("exited", "closed its output"))
        ):
            line = discovery.connected_line(server.name, 0, line.destination)
        return line, connected

    return connect_server


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
]
