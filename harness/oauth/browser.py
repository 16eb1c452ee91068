"""The person's browser in an OAuth authorization, headless: `python -m
mcp_host_conformance.harness.oauth.browser URL`.

Strategy: a host that authorizes with OAuth opens the authorization URL in the person's
browser (most hosts run `$BROWSER URL`, as this command is meant to be given), the person
signs in and approves, and the authorization server redirects the browser to the host's
callback with a code. In the suite, the authorization servers approve at once (the
official conformance framework's do: their authorization endpoint answers with that
redirect), so the browser only has to follow redirects: this command GETs the URL and each
`Location` it is sent to, until a page that is not a redirect (the host's callback), at
most MAX_HOPS. It goes only to addresses of this machine (loopback, or one the kernel here
says is local: in a sealed network its stand-in remote and private addresses) and looks a
name up only where that sends nothing off the machine (`_addresses`); it sends no cookies or
credentials of its own, and prints nothing (a URL may carry a code). Exit status 0 when the
last page answered 2xx.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
import urllib.error
import urllib.request
from typing import Final
from urllib.parse import urljoin, urlsplit

__all__ = ["MAX_HOPS", "main", "visit"]

MAX_HOPS: Final = 10
TIMEOUT: Final = 15.0


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # every redirect is returned, and followed by `visit` after its check


def _addresses(host: str) -> list[str]:
    """The addresses `host` names, without sending anything off this machine: an address as
    it is; `localhost`; any other name only in a sealed network, where every lookup is
    answered on this machine (docs/network.md), never through an unsealed machine's
    resolver. [] when it names none."""
    literal = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return [str(ipaddress.ip_address(literal.split("%")[0]))]
    except ValueError:
        pass
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return ["127.0.0.1", "::1"]
    from mcp_host_conformance.harness.sandbox.network import observe

    if not name or not observe(probe_dns=False).isolated:
        return []
    try:
        infos = socket.getaddrinfo(name, None)
    except OSError:
        return []
    return [str(info[4][0]).split("%")[0] for info in infos]


def _local(host: str) -> bool:
    """Whether `host` is this machine: every address it names is loopback or one this
    machine has (the kernel lets a socket bind it), asked here, not read from a list."""
    from mcp_host_conformance.harness.sandbox.network import is_local

    addresses = _addresses(host)
    return bool(addresses) and all(
        ipaddress.ip_address(a).is_loopback or is_local(a) for a in addresses
    )


def visit(url: str) -> int:
    """Follow `url` through its redirects; the last status (0 when it could not be fetched)."""
    opener = urllib.request.build_opener(_NoRedirect)
    for _hop in range(MAX_HOPS):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not _local(parts.hostname or ""):
            return 0
        try:
            response = opener.open(urllib.request.Request(url, method="GET"), timeout=TIMEOUT)
            status, location = int(response.status), response.headers.get("location")
            response.read(64 * 1024)
        except urllib.error.HTTPError as exc:
            status, location = int(exc.code), exc.headers.get("location")
        except (urllib.error.URLError, OSError, ValueError):
            return 0
        if 300 <= status < 400 and location:
            url = urljoin(url, location)
            continue
        return status
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m mcp_host_conformance.harness.oauth.browser URL\n")
        return 2
    return 0 if 200 <= visit(args[0]) < 300 else 1


if __name__ == "__main__":
    raise SystemExit(main())
