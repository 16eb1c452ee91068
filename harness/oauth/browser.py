"""The person's browser in an OAuth authorization, headless: `python -m
mcp_host_conformance.harness.oauth.browser URL`.

Strategy: a host that authorizes with OAuth opens the authorization URL in the person's
browser (most hosts run `$BROWSER URL`, as this command is meant to be given), the person
signs in and approves, and the authorization server redirects the browser to the host's
callback with a code. In the suite, the authorization servers approve at once (the
official conformance framework's do: their authorization endpoint answers with that
redirect), so the browser only has to follow redirects: this command GETs the URL and each
`Location` it is sent to, until a page that is not a redirect (the host's callback), at
most MAX_HOPS. It goes only to loopback and to the sealed network's own names and
addresses (nothing off this machine), sends no cookies or credentials of its own, and
prints nothing (a URL may carry a code). Exit status 0 when the last page answered 2xx.
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


def _local(host: str) -> bool:
    """Whether `host` is this machine: loopback, or a name/address of the sealed network."""
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    from mcp_host_conformance.harness.sandbox.network import (
        PRIVATE_ADDRESSES,
        PRIVATE_ADDRESSES_V6,
        REMOTE_ADDRESS,
    )

    sealed = {REMOTE_ADDRESS, *PRIVATE_ADDRESSES, *PRIVATE_ADDRESSES_V6}
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if not (address.is_loopback or str(address) in sealed):
            return False
    return bool(infos)


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
