"""PRIV: private and internal addresses refused (optional profile `private-address-refusal`).

Observed only inside the sealed network (docs/network.md), where the private addresses live
on this machine's own loopback: a listener on each one records any connection, so "refused
without a connection" is seen for real and nothing ever leaves the machine. Outside it the
cases are not observed (reported so, never passed) and the host is given no such URL.

Every way a URL reaches a private address is tried: the address literally (IPv4, IPv6
unique-local, carrier-grade NAT, link-local metadata, a loopback address beyond the
harness's allowance), the same address in other IPv4 notations and as IPv4-mapped IPv6,
names that resolve to them (/etc/hosts, resolved by the host's own resolver), and a name
whose DNS answer changes between the first lookup and the next (rebinding; the sealed
network's name server, `harness.dns_stub`). All URLs are HTTPS, so no refusal is NET-1's.
The harness gives the host its loopback allowance (127.0.0.1 and ::1, where its mocks
listen) before anything else (`Host.allow_loopback`). The control: the stand-in public
address (192.0.2.1) is connected to, else the host's refusals cannot be told from refusing
everything and the case is not observed.
"""

from __future__ import annotations

import secrets

import pytest

from mcp_host_conformance.harness.cases.observe import stays_quiet
from mcp_host_conformance.harness.contract.adapter import HttpServer
from mcp_host_conformance.harness.sandbox.network import NAMES
from mcp_host_conformance.harness.sandbox.remote import RemoteListener, on_one_port
from mcp_host_conformance.harness.verdicts.outcomes import check, not_observable

pytestmark = pytest.mark.mcphc_profile("private-address-refusal")

BEYOND_ALLOWANCE = "127.0.0.2"  # loopback, but not the harness's 127.0.0.1


def _add(host, name: str, url: str) -> None:
    try:
        host.add(HttpServer(name=name, url=url))
    except AssertionError:  # the harness's bound: the client hangs
        raise
    except Exception:  # noqa: BLE001 - refused at add: as good as refused at start
        pass


def _connections(listener: RemoteListener) -> list[str]:
    """One line per connection the listener accepted (never the bytes: a TLS hello)."""
    where = f"[{listener.address}]" if ":" in listener.address else listener.address
    return [f"{where}:{listener.port}" for _e in listener.journal.entries(kind="connection")]


def _started_and_stopped(host) -> None:
    running = host.start()
    running.stop()


@pytest.mark.mcphc_requirements("PRIV-1")
def test_urls_that_reach_private_addresses_are_refused(host, case, network, timeouts):
    """URLs that resolve to private or internal addresses are refused (the harness passes its
    own loopback allowance)."""
    if not network.isolated:
        not_observable(
            "private addresses are only given to a host inside the sealed network, where they "
            f"are this machine's own ({network.reason})"
        )
    listeners = {}
    for address in (*network.private_addresses, BEYOND_ALLOWANCE):
        listeners[address] = RemoteListener(address)
        case.mocks.append(listeners[address])
    public = RemoteListener(network.remote_address)
    case.mocks.append(public)
    ten = listeners.get("10.0.0.2")
    urls = {f"literal {a}": listener.url(scheme="https") for a, listener in listeners.items()}
    if ten is not None:
        urls.update(
            {
                "hexadecimal 10.0.0.2": f"https://0x0a000002:{ten.port}/mcp",
                "decimal 10.0.0.2": f"https://167772162:{ten.port}/mcp",
                "short 10.0.0.2": f"https://10.2:{ten.port}/mcp",
                "IPv4-mapped 10.0.0.2": f"https://[::ffff:10.0.0.2]:{ten.port}/mcp",
            }
        )
    for name, address in NAMES.items():
        if address in listeners:
            urls[f"name {name}"] = listeners[address].url(name, scheme="https")
    for index, url in enumerate(urls.values()):
        _add(host, f"private-{index}", url)
    _add(host, "public", public.url("mcp.example.invalid", scheme="https"))
    _started_and_stopped(host)

    for listener in listeners.values():  # a host that connects late is seen too
        stays_quiet(listener.journal, timeouts.grace, kind="connection")
    reached = [line for listener in listeners.values() for line in _connections(listener)]
    if not reached and not _connections(public):
        not_observable(
            "the host connected to no address at all, not even the stand-in public one "
            f"({network.remote_address}): its refusals cannot be told from refusing everything"
        )
    aimed = {
        label: url
        for label, url in urls.items()
        if any(f":{int(line.rsplit(':', 1)[1])}/" in url for line in reached)
    }
    check(
        not reached,
        ids="PRIV-1",
        expected="no connection to a private or internal address, whatever the URL's form "
        f"({len(urls)} URLs: {', '.join(urls)})",
        actual=f"{len(reached)} connection(s), to {sorted(set(reached))}; the URLs aimed at "
        f"those listeners: {sorted(aimed)}",
    )


@pytest.mark.mcphc_requirements("PRIV-1")
def test_a_name_that_rebinds_to_a_private_address_is_refused(host, case, network, timeouts):
    """URLs that resolve to private or internal addresses are refused, also when the name's
    DNS answer changes between the host's check and its connection (DNS rebinding)."""
    if not network.isolated or not network.dns:
        not_observable(
            "a name whose DNS answer changes needs the sealed network's name server "
            f"({network.reason or 'it does not answer here'})"
        )
    pair = on_one_port("10.0.0.2", network.remote_address)  # one URL reaches either
    assert pair is not None, "no port free on both addresses"
    private, public = pair
    case.mocks += [private, public]
    name = f"rebind-{secrets.token_hex(6)}.example.invalid"  # answers 192.0.2.1, then 10.0.0.2
    _add(host, "rebinding", f"https://{name}:{private.port}/mcp")
    _started_and_stopped(host)

    stays_quiet(private.journal, timeouts.grace, kind="connection")
    reached = _connections(private)
    if not reached and not _connections(public):
        not_observable(
            "the host connected to neither answer of the rebinding name (not even the first, "
            "public one): the rebinding was not exercised"
        )
    check(
        not reached,
        ids="PRIV-1",
        expected=f"{name} checked once and connected to as checked (the public address), never "
        "at the private address its next DNS answer gives",
        actual=f"{len(reached)} connection(s) to the private address: {reached[:4]}",
    )
