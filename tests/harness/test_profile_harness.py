"""The harness's parts for the optional profiles: the name server stub, the injection
corpus, the readings the profile cases share, the official framework's verdict, the headless
browser's reach and the catalog's replacements."""

from __future__ import annotations

import json
import socket
import struct

import pytest

from mcp_host_conformance.harness.cases import injection_corpus
from mcp_host_conformance.harness.cases.profile_support import untrusted_marking
from mcp_host_conformance.harness.oauth import browser as oauth_browser
from mcp_host_conformance.harness.oauth.official_client import SCENARIOS, checks_problem
from mcp_host_conformance.harness.sandbox import dns_stub
from mcp_host_conformance.harness.verdicts.requirements import REQUIREMENTS, replaced_for


def _query(name: str, qtype: int = 1, ident: int = 7) -> bytes:
    packet = struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        packet += bytes([len(label)]) + label.encode()
    return packet + b"\x00" + struct.pack("!HH", qtype, 1)


def _addresses(response: bytes) -> list[str]:
    count = struct.unpack("!H", response[6:8])[0]
    return [socket.inet_ntoa(response[-4 * (count - i) :][:4]) for i in range(count)]


def test_a_rebinding_name_answers_public_then_private():
    rebinder = dns_stub.Rebinder()
    name = "rebind-abc.example.invalid"
    first = dns_stub.answer(_query(name), rebinder)
    second = dns_stub.answer(_query(name), rebinder)
    assert first[:2] == b"\x00\x07" and first[3] & 0x0F == 0
    assert _addresses(first) == [dns_stub.REBIND_FIRST]
    assert _addresses(second) == [dns_stub.REBIND_THEN]
    assert _addresses(dns_stub.answer(_query("rebind-other.example.invalid"), rebinder)) == [
        dns_stub.REBIND_FIRST
    ]  # counted per name
    aaaa = dns_stub.answer(_query(name, qtype=28), rebinder)
    assert aaaa[3] & 0x0F == 0 and struct.unpack("!H", aaaa[6:8])[0] == 0  # no AAAA record


@pytest.mark.parametrize(
    "garbage",
    [b"", b"\x00" * 11, _query("x")[:14], b"\x00\x01\x80\x00" + b"\x00" * 8, b"\xff" * 600],
)
def test_the_stub_never_answers_garbage_nor_raises(garbage):
    assert dns_stub.answer(garbage, dns_stub.Rebinder()) is None


def test_other_names_are_nxdomain():
    response = dns_stub.answer(_query("example.com"), dns_stub.Rebinder())
    assert response[3] & 0x0F == 3


def test_the_corpus_is_seeded_and_balanced():
    first, again = injection_corpus.corpus(), injection_corpus.corpus()
    assert first == again
    assert sum(s.injection for s in first) == injection_corpus.INJECTIONS
    assert sum(not s.injection for s in first) == injection_corpus.BENIGN
    assert {s.place for s in first if s.injection} == set(injection_corpus.PLACES)
    assert {s.disguise for s in first if s.injection} == set(injection_corpus.DISGUISES)
    assert injection_corpus.corpus(1) != first
    assert len({s.name for s in first}) == len(first)


def test_untrusted_marking_as_the_catalog_documents_it():
    content = "the server's text"
    assert untrusted_marking(f"Status: completed\nuntrusted: true\n{content}", content) is None
    assert untrusted_marking(json.dumps({"untrusted": True, "output": content}), content) is None
    assert untrusted_marking(f"Status: completed\n{content}", content)
    assert untrusted_marking(f"{content}\nuntrusted: true", content)  # after the content
    assert untrusted_marking(json.dumps({"output": content}), content)


def test_the_official_verdict():
    success = {"status": "SUCCESS", "id": "a"}
    assert checks_problem(0, [success]) is None
    assert "WARNING" in checks_problem(0, [success, {"status": "WARNING", "id": "b"}])
    assert checks_problem(0, []) == "no successful check"
    assert "exit 1" in checks_problem(1, [success])
    assert checks_problem(None, [success])
    assert all(s.startswith("auth/") for s in SCENARIOS)


def test_the_headless_browser_never_leaves_the_machine():
    assert oauth_browser.visit("http://example.com/") == 0
    assert oauth_browser.visit("file:///etc/passwd") == 0
    assert oauth_browser.main([]) == 2


def test_verified_add_replaces_cfg_1_only():
    assert {rid: req.id for rid, req in replaced_for({"verified-add"}).items()} == {
        "CFG-1": "SYNC-1"
    }
    assert replaced_for(set()) == {}
    assert all(REQUIREMENTS[rid].profile for rid in ("PIN-3", "SYNC-2"))
