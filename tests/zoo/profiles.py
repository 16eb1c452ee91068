"""Broken clients for the optional profiles: pinning, verified add, flagging.

Each is the reference host with every optional profile switched on (`reference-profiles`,
`base="profiles"`) and one seam of a profile's rule patched, so the self-test runs the
whole suite against it with those profiles claimed and checks that exactly the profile's
cases catch it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

from mcp_host_conformance.zoo.client import (
    BrokenClient,
    opaque,
    pure,
    replaced,
    replaced_when,
    same_until,
)

_PINNING = "mcp_host_conformance.reference_client.pinning"


def _hash(value) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@replaced(f"{_PINNING}.definition_hash")
@opaque
def _description_only(original):
    def definition_hash(tool):
        return _hash({"name": tool.get("name"), "description": tool.get("description")})

    return definition_hash


@replaced(f"{_PINNING}.definition_hash")
@opaque
def _without_annotations(original):
    def definition_hash(tool):
        return original({k: v for k, v in tool.items() if k != "annotations"})

    return definition_hash


@replaced(f"{_PINNING}.definition_hash")
@opaque
def _in_listed_order(original):
    def definition_hash(tool):
        # json.dumps without sort_keys: the members' order as the server listed them
        text = json.dumps(tool, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    return definition_hash


def _listed(tools) -> list:
    """The tools a `seen` call records, as a list a guard may look at (an iterator it must
    not consume: asked of one, a guard says yes)."""
    if not isinstance(tools, list | tuple):
        raise TypeError("not a list of tools")
    return list(tools)


def _lists_a_new_tool(original, self, server, destination, tools) -> bool:
    """A `seen` that differs only for a tool never approved (new, or never approved)."""
    pins = self.pins(server, destination).tools
    return any(
        getattr(pins.get(str(t.get("name"))), "approved", None) is None for t in _listed(tools)
    )


def _trusted_then_new(original, self, server, destination, tools) -> bool:
    """A `seen` that differs only for a tool new on a server some tool of which is approved."""
    pins = self.pins(server, destination).tools
    trusted = any(p.approved for p in pins.values())
    return trusted and any(str(t.get("name")) not in pins for t in _listed(tools))


def _lists_a_changed_tool(original, self, server, destination, tools) -> bool:
    """A `seen` that differs only for an approved tool whose definition changed."""
    from mcp_host_conformance.reference_client import pinning

    return any(self.state(server, t, destination) == pinning.CHANGED for t in _listed(tools))


def _approving(should_approve):
    """A `seen` that records the definitions as the reference does, then approves each
    tool for which `should_approve(name, pin, pins_before)` holds."""

    def make(original):
        def seen(self, server, destination, tools):
            before = self.pins(server, destination).tools
            updated = original(self, server, destination, tools)
            pins = updated.servers[server]
            tools_now = {
                name: dataclasses.replace(pin, approved=pin.seen)
                if should_approve(name, pin, before)
                else pin
                for name, pin in pins.tools.items()
            }
            return dataclasses.replace(
                updated,
                servers={**updated.servers, server: dataclasses.replace(pins, tools=tools_now)},
            )

        return seen

    return make


# Every tool never approved is approved as it is first seen.
_trust_on_first_use = replaced_when(f"{_PINNING}.Approvals.seen", _lists_a_new_tool)(
    _approving(lambda name, pin, before: pin.approved is None)
)
# A server some tool of which is approved (`_trusted_then_new`): its new tools too.
_trust_later_tools = replaced_when(f"{_PINNING}.Approvals.seen", _trusted_then_new)(
    _approving(lambda name, pin, before: pin.approved is None and name not in before)
)
# An approved tool whose definition changed stays approved for the new one.
_follow_changes = replaced_when(f"{_PINNING}.Approvals.seen", _lists_a_changed_tool)(
    _approving(lambda name, pin, before: pin.approved is not None)
)


APPROVE_TOOL = {
    "type": "function",
    "name": "approve_mcp_tools",
    "description": "Enable the MCP tools that wait for approval, so you can call them.",
    "parameters": {"type": "object", "properties": {}},
    "strict": False,
}


@replaced("mcp_host_conformance.reference_client.builtins.DEFINITIONS")
def _approve_builtin(original):
    return [*original, APPROVE_TOOL]


@replaced("mcp_host_conformance.reference_client.turn.Conversation.run_call")
def _model_approves(original):
    from mcp_host_conformance.reference_client import results

    async def run_call(self, call, report):
        if call.get("name") != APPROVE_TOOL["name"]:
            return await original(self, call, report)
        approvals = self.policy.approvals
        for server, pins in approvals.servers.items():
            for tool in pins.tools:
                approvals = approvals.approve(server, tool)
        self.policy.approvals = approvals
        self.offer(self.discovery)
        return results.Outcome(results.COMPLETED, "Every waiting MCP tool is enabled.")

    return run_call


_COMMANDS = "mcp_host_conformance.reference_client.server_commands"


def _raised(outcome, *args, **kwargs) -> bool:
    return outcome[0] == "raise"


# Saved, synced, removed, saved again: the file ends as the reference leaves it, unless the
# sync fails or the save does (an unwritable file: the reference syncs before it fails).
@same_until(f"{_COMMANDS}.sync_new_server", _raised)
@same_until("mcp_host_conformance.reference_client.config.ConfigStore.add", _raised)
@replaced(f"{_COMMANDS}.sync_new_server")
def _save_first(original):
    from mcp_host_conformance.reference_client.config import ConfigStore

    def sync_new_server(server, environ, settings, redactor, args):
        store = ConfigStore(environ)
        store.add(server)  # saved before the sync: a failed sync leaves it behind
        tools = original(server, environ, settings, redactor, args)
        store.remove(server.name)  # the caller saves it (again) on success
        return tools

    return sync_new_server


@replaced(f"{_COMMANDS}.sync_new_server")
def _no_first_sync(original):
    def sync_new_server(server, environ, settings, redactor, args):
        return None  # added like the core host: connected only at the next start

    return sync_new_server


@replaced(f"{_COMMANDS}.check_short_name")
@pure
def _any_name(original):
    def check_short_name(name):
        return None

    return check_short_name


@replaced("mcp_host_conformance.reference_client.verified_add.short_name_problem")
@pure
def _lowercase_only(original):
    def short_name_problem(name):
        if name == name.lower() and " " not in name:
            return None
        return "a server name must be lowercase"

    return short_name_problem


_FLAGGING = "mcp_host_conformance.reference_client.flagging"


@replaced(f"{_FLAGGING}.flags")
@pure
def _flags_nothing(original):
    def flags(tool):
        return []

    return flags


@replaced(f"{_FLAGGING}.texts_of")
@pure
def _descriptions_only(original):
    def texts_of(tool):
        return [tool["description"]] if isinstance(tool.get("description"), str) else []

    return texts_of


_WORDS = ("ignore", "instruction", "must", "system", "password", "never", "prompt", "secret")


@replaced(f"{_FLAGGING}.flags")
@pure
def _keywords(original):
    def flags(tool):
        text = " ".join(__import__(_FLAGGING, fromlist=["texts_of"]).texts_of(tool)).lower()
        return [f"contains {word!r}" for word in _WORDS if word in text]

    return flags


@replaced(f"{_FLAGGING}.normalise")
@pure
def _lower_only(original):
    def normalise(text):
        return " ".join(text.split()).lower()

    return normalise


CLIENTS = [
    BrokenClient(
        "pins-description-only",
        "Pins a tool by its name and description only: a changed schema or annotation keeps "
        "the approval.",
        {"PIN-1"},
        (_description_only,),
        base="profiles",
    ),
    BrokenClient(
        "pins-without-annotations",
        "Leaves the annotations out of the pinned text: readOnlyHint turned false keeps the "
        "approval.",
        {"PIN-1"},
        (_without_annotations,),
        base="profiles",
    ),
    BrokenClient(
        "pins-in-listed-order",
        "Hashes the definition in the order the server listed its members: the same schema "
        "with its members reordered needs approval again (an unchanged tool stops working).",
        {"PIN-1"},
        (_in_listed_order,),
        base="profiles",
    ),
    BrokenClient(
        "trusts-tools-on-first-use",
        "Approves every tool the first time it is seen; only changes need a person.",
        # PIN-3: the tool nobody approved is callable from the start
        {"PIN-2", "PIN-3"},
        (_trust_on_first_use,),
        target="PIN-2",
        base="profiles",
    ),
    BrokenClient(
        "trusts-later-tools",
        "A tool that appears later on a server whose tools were approved starts enabled.",
        {"PIN-2"},
        (_trust_later_tools,),
        base="profiles",
    ),
    BrokenClient(
        "follows-changed-tools",
        "Carries an approval over to a tool's new text (a rug pull goes through).",
        {"PIN-1"},
        (_follow_changes,),
        base="profiles",
    ),
    BrokenClient(
        "model-approves-tools",
        "Offers the model a built-in that enables every tool waiting for approval.",
        # PIN-2: the tool the model enabled reaches its server with no person's approval
        {"PIN-3", "PIN-2"},
        (
            _approve_builtin,
            _model_approves,
        ),
        target="PIN-3",
        base="profiles",
    ),
    BrokenClient(
        "saves-before-first-sync",
        "Saves the server, then syncs it: a failed first sync leaves it configured.",
        {"SYNC-1"},
        (_save_first,),
        base="profiles",
    ),
    BrokenClient(
        "no-first-sync",
        "Claims verified-add but only saves at add (the tools are listed at the next start).",
        {"SYNC-1", "NET-1"},  # NET-1: the server at 127.0.0.2 is then not offered
        (_no_first_sync,),
        target="SYNC-1",
        base="profiles",
    ),
    BrokenClient(
        "any-server-name",
        "Accepts any server name at add (capitals, underscores, dots, spaces, any length).",
        {"SYNC-2"},
        (_any_name,),
        base="profiles",
    ),
    BrokenClient(
        "lowercase-name-check-only",
        "Checks only that a name is lowercase without spaces (underscores, dots, non-ASCII "
        "letters and long names pass).",
        {"SYNC-2"},
        (_lowercase_only,),
        base="profiles",
    ),
    BrokenClient(
        "flags-nothing",
        "Claims instruction flagging but flags no tool.",
        {"FLAG-1"},
        (_flags_nothing,),
        base="profiles",
    ),
    BrokenClient(
        "flags-descriptions-only",
        "Reads only a tool's description, not its title or its schema's texts.",
        {"FLAG-1"},
        (_descriptions_only,),
        base="profiles",
    ),
    BrokenClient(
        "flags-keywords",
        "Flags a tool whose text contains a trigger word (ignore, must, system, password...).",
        {"FLAG-1"},
        (_keywords,),
        base="profiles",
    ),
    BrokenClient(
        "flags-without-normalising",
        "Matches the text as written: full-width letters dodge it.",
        {"FLAG-1"},
        (_lower_only,),
        base="profiles",
    ),
]
