"""Throwaway certificate authorities for the TLS mocks.

Strategy: two trustme CAs per process, made on first use (key generation is the slow
part, so it happens once): the *trusted* CA, whose PEM file a client can be told to
trust (`trusted_ca_file()`), and the *untrusted* CA, which nobody is ever given. Both
issue one leaf certificate for 127.0.0.1 and localhost. An "untrusted" mock still reports
the trusted CA's file as its `ca_file`, so a client told to trust that file must still
refuse it. The trusted CA also issues two bad leaves, each wrong in one way only (NET-2):
"wrong-host" (valid now, for `wrong-host.example.invalid` alone, so neither 127.0.0.1 nor
localhost matches) and "expired" (for 127.0.0.1 and localhost, valid for one day ten days
ago). Temporary files are removed at exit.
"""

from __future__ import annotations

import atexit
import datetime
import os
import shutil
import ssl
import tempfile
import threading
from typing import Any

_lock = threading.Lock()
_state: dict[str, Any] = {}

HOSTS = ("127.0.0.1", "localhost")
WRONG_HOST = "wrong-host.example.invalid"
KINDS = ("trusted", "untrusted", "wrong-host", "expired")


def _dir() -> str:
    if "dir" not in _state:
        path = tempfile.mkdtemp(prefix="mock-tls-")
        _state["dir"] = path
        atexit.register(shutil.rmtree, path, True)
    return str(_state["dir"])


def _authority(which: str) -> tuple[Any, Any]:
    """(CA, leaf cert) for "trusted" or "untrusted", made once."""
    with _lock:
        if which not in _state:
            import trustme

            ca = trustme.CA(organization_name=f"mcp-host-conformance {which} mock CA")
            leaf = ca.issue_cert(*HOSTS)
            _state[which] = (ca, leaf)
            if which == "trusted":
                path = os.path.join(_dir(), "trusted-ca.pem")
                ca.cert_pem.write_to_path(path)
                _state["trusted_file"] = path
        ca_and_leaf: tuple[Any, Any] = _state[which]
        return ca_and_leaf


def _bad_leaf(which: str) -> Any:
    """The trusted CA's "wrong-host" or "expired" leaf, made once."""
    ca, _ = _authority("trusted")
    with _lock:
        if which not in _state:
            if which == "wrong-host":
                _state[which] = ca.issue_cert(WRONG_HOST)
            else:
                now = datetime.datetime.now(datetime.UTC)
                _state[which] = ca.issue_cert(
                    *HOSTS,
                    not_before=now - datetime.timedelta(days=11),
                    not_after=now - datetime.timedelta(days=10),
                )
        return _state[which]


def trusted_ca_file() -> str:
    """Path of the PEM file of the CA that clients may be told to trust."""
    _authority("trusted")
    return str(_state["trusted_file"])


def server_context(which: str) -> ssl.SSLContext:
    """A server SSL context whose certificate comes from the `which` CA."""
    if which not in KINDS:
        raise ValueError(f"tls must be None or one of {', '.join(KINDS)}, not {which!r}")
    leaf = _authority(which)[1] if which in ("trusted", "untrusted") else _bad_leaf(which)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    leaf.configure_cert(context)
    return context


def client_context() -> ssl.SSLContext:
    """A client SSL context that trusts the trusted CA (for tests and tools)."""
    return ssl.create_default_context(cafile=trusted_ca_file())
