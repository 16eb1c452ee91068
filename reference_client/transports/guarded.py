"""A network backend that connects only to addresses it has checked (PRIV-1).

Strategy: checking a URL's host name and then letting the HTTP library connect by name
leaves a window: the library looks the name up again, and a DNS answer that changed
meanwhile (DNS rebinding) lands the connection on an internal address. So the check sits
where the connection is made: `connect_tcp` resolves the host once, refuses if any of its
addresses is refused by `private_addresses.address_refusal` (a name that resolves to one
public and one private address is refused outright, as such a name is a trap), and
connects to the checked addresses literally, one after another. TLS still verifies the
certificate against the URL's host name (httpcore passes the origin's name as
server_hostname whatever address the stream went to). Every connection the client opens
goes through here: the one of initialize, and any later one (a reconnect, a GET that
resumes a stream), each checked afresh.
"""

from __future__ import annotations

import asyncio
import socket
import typing
from collections.abc import Collection

import httpcore

from mcp_host_conformance.reference_client.private_addresses import (
    address_refusal,
    parse_address,
)
from mcp_host_conformance.reference_client.transports.network import AsyncioBackend

__all__ = ["GuardedBackend", "PrivateAddressRefused"]

MAX_ADDRESSES = 16


class PrivateAddressRefused(httpcore.ConnectError):
    """The host resolves to an address that is refused; nothing was connected."""


class GuardedBackend(AsyncioBackend):
    """The host's backend (`network.AsyncioBackend`) with every connect checked first."""

    def __init__(self, allowed: Collection[str] = ()) -> None:
        self._allowed = frozenset(allowed)

    async def resolve(self, host: str, port: int) -> list[str]:
        """Every address `host` has now, each checked; PrivateAddressRefused otherwise."""
        literal = parse_address(host)
        if literal is not None:
            addresses = [str(literal)]
        else:
            try:
                found = await asyncio.get_running_loop().getaddrinfo(
                    host, port, type=socket.SOCK_STREAM
                )
            except (OSError, UnicodeError) as exc:
                raise httpcore.ConnectError(f"cannot resolve {host[:100]}: {exc}") from None
            addresses = list(dict.fromkeys(str(info[4][0]) for info in found))[:MAX_ADDRESSES]
        if not addresses:
            raise httpcore.ConnectError(f"{host[:100]} has no address")
        for text in addresses:
            address = parse_address(text)
            refusal = (
                "not an IP address" if address is None else address_refusal(address, self._allowed)
            )
            if refusal is not None:
                where = "" if literal is not None else f"{host[:100]} resolves to "
                raise PrivateAddressRefused(f"{where}{refusal}")
        return addresses

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self.resolve(host, port)
        last: Exception | None = None
        for address in addresses:
            try:
                return await super().connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last
