"""NET-2's monitor judges what reached a server with a bad certificate, not what its mock
journalled of a handshake the host refused: a refused or abandoned TLS handshake is a loop
error with no connection (seen only on a loaded machine, where it failed the Agents SDK
example's case of certificates while the case itself passed)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from mcp_host_conformance.harness.monitors.network import untrusted_certificate_refused
from mcp_host_conformance.harness.monitors.observed import Observed
from mcp_host_conformance.harness.verdicts.outcomes import Finding
from mcp_host_conformance.mocks.journal import Entry, Journal
from mcp_host_conformance.mocks.spec import ServerSpec, Tool


def _observed(journal: Journal, tmp_path: Path) -> Observed:
    mock = SimpleNamespace(
        spec=ServerSpec(tools=[Tool("query")]), marker_token="tok", journal=journal, tls="expired"
    )
    host = SimpleNamespace(
        bound={"expired": mock}, moments=[], seen=[], config_paths=[], session_files=[], servers={}
    )
    return Observed([host], [mock], None, None, tmp_path, tmp_path, frozenset())  # type: ignore[list-item]


def _findings(journal: Journal, tmp_path: Path) -> list[Finding]:
    return list(untrusted_certificate_refused.check(_observed(journal, tmp_path)))


def test_a_refused_handshake_reached_nothing(tmp_path: Path) -> None:
    journal = Journal()
    journal.record(Entry(kind="event", extra={"event": "loop-error", "message": "SSL handshake"}))
    assert _findings(journal, tmp_path) == []


def test_a_connection_or_a_request_over_a_bad_certificate_is_a_finding(tmp_path: Path) -> None:
    accepted = Journal()  # the handshake completed: the connection exists
    accepted.record(Entry(kind="event", connection="c1", extra={"event": "bad-http"}))
    request = Journal()
    request.record(Entry(kind="http", connection="c1", http_method="POST", path="/mcp"))
    for journal in (accepted, request):
        (finding,) = _findings(journal, tmp_path)
        assert finding.rule == "NET-2"
