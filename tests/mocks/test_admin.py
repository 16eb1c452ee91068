"""`GET /__journal` and `POST /__reset`: one handler, the same answers on every HTTP mock."""

from __future__ import annotations

import httpx
import pytest

from mcp_host_conformance.mocks.named import start

MOCKS = ["healthy", "sdk-http", "responses"]


@pytest.mark.parametrize("name", MOCKS)
def test_every_http_mock_answers_the_admin_endpoints_alike(name):
    with start(name) as running, httpx.Client(timeout=10) as client:
        journal_url = running.journal_ref
        reset_url = journal_url.replace("/__journal", "/__reset")
        if name == "responses":
            client.post(running.url + "/responses", json={"model": "m", "input": "x"})
        else:
            client.post(running.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        listed = client.get(journal_url)
        assert listed.status_code == 200
        assert listed.headers["content-type"] == "application/json"
        assert any(e["kind"] == "http" for e in listed.json())
        assert client.get(journal_url).json() == listed.json()  # reading changes nothing
        assert client.post(journal_url).status_code == 405
        assert client.get(reset_url).status_code == 405
        cleared = client.post(reset_url)
        assert cleared.status_code == 204 and cleared.content == b""
        assert client.get(journal_url).json() == [] and running.journal.is_empty()
