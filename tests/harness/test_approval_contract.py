"""The approval contract: a menu's entries and its default travel with a confirmation, over
the driver protocol too, and an older driver that sends neither still decodes."""

from __future__ import annotations

from mcp_host_conformance.harness.contract.adapter import Confirmation
from mcp_host_conformance.harness.contract.driver_wire import decode, encode

MENU = Confirmation(
    server="docs",
    destination="",
    tool="query",
    arguments="{}",
    warning="",
    text="Allow the docs MCP server to run tool 'query'?",
    choices=("Approve Once", "Approve this session", "Cancel"),
    default="Approve Once",
)


def test_a_menu_travels_over_the_driver_protocol():
    wire = encode(MENU)
    assert wire["choices"] == ["Approve Once", "Approve this session", "Cancel"]
    assert wire["default"] == "Approve Once"
    assert decode(Confirmation, wire) == MENU


def test_a_typed_prompt_has_no_choices_and_an_older_driver_still_decodes():
    fields = {k: v for k, v in encode(MENU).items() if k not in ("choices", "default")}
    typed = decode(Confirmation, fields)
    assert typed.choices == () and typed.default is None
