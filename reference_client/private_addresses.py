"""Which addresses a remote server may not live at (profile `private-address-refusal`, PRIV-1).

Strategy: a URL names a host; what matters is the address the connection goes to. So the
decision is made on addresses, never on names, and it is made on every address a name
resolves to at the moment of connecting (the transport's network backend resolves, asks
`refusal` for each address, and connects to an address it checked: a DNS answer that
changes between a check and a connect cannot slip through, because there is no second
lookup). This module is the pure part: the ranges, and the decision for one address.

Refused: everything that is not a public unicast address. IPv4 "this network" 0/8,
loopback 127/8, RFC 1918 (10/8, 172.16/12, 192.168/16), CGNAT 100.64/10 (which Python's
`is_private` does not call private), link-local 169.254/16 (the cloud metadata address
169.254.169.254 among them), IETF protocol assignments 192.0.0/24, benchmarking 198.18/15,
multicast, reserved 240/4 and broadcast. IPv6 unspecified, loopback, unique-local fc00::/7
(fd00:ec2::254, a metadata address, among them), link-local fe80::/10, site-local
fec0::/10, multicast, discard 100::/64; and for the IPv6 forms that carry an IPv4 address
(IPv4-mapped ::ffff:0:0/96, IPv4-compatible ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16),
the embedded IPv4 address is judged. **Decision:** the documentation ranges (192.0.2/24,
198.51.100/24, 203.0.113/24, 2001:db8::/32) are not refused: they are never routed, and the
conformance suite's sealed network uses 192.0.2.1 as its stand-in for a public host.

`allowed` is the administrator's list of exact exceptions (the test harness's loopback).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection
from typing import Final

__all__ = ["REFUSED_NETWORKS", "address_refusal", "embedded_ipv4", "parse_address"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_V4: Final = (
    ("0.0.0.0/8", "a 'this network' address"),
    ("10.0.0.0/8", "a private address (RFC 1918)"),
    ("100.64.0.0/10", "a carrier-grade NAT address (RFC 6598)"),
    ("127.0.0.0/8", "a loopback address"),
    ("169.254.0.0/16", "a link-local address (cloud metadata lives here)"),
    ("172.16.0.0/12", "a private address (RFC 1918)"),
    ("192.0.0.0/24", "an IETF protocol address"),
    ("192.168.0.0/16", "a private address (RFC 1918)"),
    ("198.18.0.0/15", "a benchmarking address"),
    ("224.0.0.0/4", "a multicast address"),
    ("240.0.0.0/4", "a reserved address"),
)
_V6: Final = (
    ("::/128", "the unspecified address"),
    ("::1/128", "a loopback address"),
    ("100::/64", "a discard-only address"),
    ("fc00::/7", "a unique-local address (cloud metadata lives here too)"),
    ("fe80::/10", "a link-local address"),
    ("fec0::/10", "a site-local address"),
    ("ff00::/8", "a multicast address"),
)
REFUSED_NETWORKS: Final = tuple((ipaddress.ip_network(cidr), why) for cidr, why in (*_V4, *_V6))
_NAT64: Final = ipaddress.ip_network("64:ff9b::/96")
_COMPATIBLE: Final = ipaddress.ip_network("::/96")


def parse_address(text: str) -> Address | None:
    """`text` as an IP address (brackets and an IPv6 zone allowed), or None."""
    text = text.strip().strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), if any."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64 or (address in _COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_refusal(address: Address, allowed: Collection[str] = ()) -> str | None:
    """Why a connection to `address` is refused, or None. `allowed`: exact addresses (normal
    form, IPv4 for mapped ones) the administrator allows anyway."""
    inner = embedded_ipv4(address)
    judged: Address = inner if inner is not None else address
    if str(judged) in allowed or str(address) in allowed:
        return None
    for network, why in REFUSED_NETWORKS:
        if judged.version == network.version and judged in network:
            shown = f"{address} ({judged})" if inner is not None else str(address)
            return f"{shown} is {why}; private and internal addresses are refused"
    return None
