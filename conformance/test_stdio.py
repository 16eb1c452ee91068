"""STDIO: local servers.

Strategy: the stdio mock records, the moment it starts, its argv exactly as the kernel gave
it, its whole environment, its pid and process group, and its parent; so how the client
launched it is read from the journal, not from the client's word. Arguments that a shell
would change (`a;b`, `$HOME`, `two words`, globs, quotes) must arrive verbatim; a canary
variable put in the client's own environment must not. Reaping is checked in /proc after
stop (zombies count as left behind), with a server that leaves a sleeping child in its own
process group, so a client that signals only the pid is caught. A stderr flood of several
MiB, written synchronously by the mock, blocks any client that neither reads nor discards
stderr.
"""

from __future__ import annotations

import os
import select
import time

import pytest

from mcp_host_conformance.harness.observe import model_requests, offered_function, status_text
from mcp_host_conformance.harness.orphans import handed_to_us
from mcp_host_conformance.harness.outcomes import check
from mcp_host_conformance.harness.specs import one_approved_query, tool_spec
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.stdio_server import process_state

ALLOWED_ENV = {"PATH", "HOME", "LANG"}
# Python's own locale coercion (PEP 538) adds LC_CTYPE inside the mock when LANG is unset
# or "C": the mock's interpreter put it there, not the client.
COERCED_LC_CTYPE = {"C.UTF-8", "C.utf8", "UTF-8"}


def started(mock, name: str):
    """The mock's one process entry (it must have been started once)."""
    entries = mock.process_entries()
    check(
        len(entries) >= 1,
        ids="STDIO-1",
        expected=f"stdio server {name} started by the client",
        actual="it never started (no process entry in its journal)",
    )
    return entries[0]


def wait_until(condition, within: float) -> bool:
    """Poll `condition` (a /proc reading: there is no event for another process's exit)
    every 10 ms until it holds or `within` seconds pass."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() >= deadline:
            return False
        select.select([], [], [], 0.01)
    return True


# ---- STDIO-1 ----------------------------------------------------------------------------------

SHELL_BAIT = ["a;b", "$HOME", "two words", "$(echo x)", "`id`", "*", "'q'", "x|y", "&&", "~"]


@pytest.mark.requirements("STDIO-1")
def test_arguments_arrive_verbatim(host, stdio_mock, project):
    """The command is executed directly, without a shell: arguments such as `a;b` or `$HOME`
    arrive verbatim."""
    (project / "glob-bait.txt").write_text("a shell would expand * to this file's name\n")
    server = stdio_mock(tool_spec("verbatim"))
    host.add_stdio("verbatim", server, args=SHELL_BAIT)
    running = host.start()
    running.stop()

    entry = started(server, "verbatim")
    received = (entry.extra or {}).get("extra_args")
    check(
        received == SHELL_BAIT,
        ids="STDIO-1",
        expected=f"the arguments exactly {SHELL_BAIT!r}",
        actual=f"the server received {received!r}",
    )
    check(
        entry.argv == server.command[1:] + SHELL_BAIT,
        ids="STDIO-1",
        expected=(
            "the configured command line, then the arguments, unchanged "
            "(argv as the script sees it)"
        ),
        actual=f"argv {entry.argv!r}",
    )
    status = running.status("verbatim")
    check(
        status is not None and status.connected,
        ids="STDIO-1",
        expected="the server started directly connects",
        actual=status_text(status),
    )


# ---- STDIO-2 ----------------------------------------------------------------------------------


@pytest.mark.requirements("STDIO-2")
def test_environment_holds_only_path_home_lang_and_configured(host, stdio_mock, secrets):
    """The environment holds only PATH, HOME, LANG and the configured variables."""
    inherited = secrets.new("client-environment")
    configured = secrets.new("configured-variable")
    host.env["MCPHC_CLIENT_CANARY"] = inherited
    host.env["OPENAI_API_KEY_MCPHC"] = inherited  # the kind of thing a host's own env holds
    server = stdio_mock(tool_spec("env"))
    host.add_stdio("env", server, env={"CONFIGURED_VAR": configured})
    running = host.start()
    running.stop()

    entry = started(server, "env")
    env = dict(entry.env or {})
    if env.get("LC_CTYPE") in COERCED_LC_CTYPE and env.get("LANG") in (None, "C", "POSIX"):
        env.pop("LC_CTYPE")
    extra = sorted(set(env) - ALLOWED_ENV - {"CONFIGURED_VAR"})
    check(
        not extra,
        ids="STDIO-2",
        expected="only PATH, HOME, LANG and CONFIGURED_VAR in the server's environment",
        actual=f"also: {', '.join(extra)}",
    )
    check(
        env.get("CONFIGURED_VAR") == configured,
        ids="STDIO-2",
        expected="the configured variable CONFIGURED_VAR set to its configured value",
        actual="absent" if "CONFIGURED_VAR" not in env else "present with another value",
    )
    leaks = [
        h
        for h in secrets.found_in_journal(server.journal, "stdio server")
        if "client-environment" in h
    ]
    check(
        not leaks,
        ids="STDIO-2",
        expected="nothing of the client's own environment in the server's",
        actual="; ".join(leaks),
    )


# ---- STDIO-3 ----------------------------------------------------------------------------------


@pytest.mark.requirements("STDIO-3")
def test_server_runs_in_its_own_process_group(host, stdio_mock):
    """The server runs in its own process group."""
    server = stdio_mock(tool_spec("grouped"))
    host.add_stdio("grouped", server)
    running = host.start()
    entry = started(server, "grouped")
    # The client's group, read while the client (the server's parent) still runs.
    parent = (entry.extra or {}).get("ppid")
    try:
        parent_group = os.getpgid(parent) if parent else None
    except ProcessLookupError:
        parent_group = None
    running.stop()

    check(
        entry.pgid == entry.pid,
        ids="STDIO-3",
        expected="the server leads its own process group (pgid == pid)",
        actual=f"pgid {entry.pgid}, pid {entry.pid}",
    )
    shared = [g for g in (os.getpgrp(), parent_group) if g is not None and g == entry.pgid]
    check(
        not shared,
        ids="STDIO-3",
        expected="a process group other than the client's and the harness's",
        actual=f"pgid {entry.pgid} is also the client's or harness's group",
    )


# ---- STDIO-4 ----------------------------------------------------------------------------------

FLOOD = 4 * 1024 * 1024


@pytest.mark.requirements("STDIO-4")
def test_stderr_flood_neither_blocks_nor_shows(host, stdio_mock, model):
    """Its error output is discarded: a flood on stderr neither blocks the client nor is shown."""
    server = stdio_mock(tool_spec("noisy", stderr_flood=FLOOD))
    host.add_stdio("noisy", server)
    running, turn = one_approved_query(host, model, "noisy", offer_rule="STDIO-4")

    status = running.status("noisy")
    check(
        status is not None and status.connected,
        ids="STDIO-4",
        expected=f"the server writing {FLOOD // (1024 * 1024)} MiB to stderr at start connects",
        actual=status_text(status),
    )
    statuses = [c.status for c in turn.calls]
    check(
        statuses == ["completed"] and server.journal.count("tools/call") == 1,
        ids="STDIO-4",
        expected="its call (flooding stderr again before answering) completes",
        actual=(
            f"call statuses {statuses}, {server.journal.count('tools/call')} tools/call received"
        ),
    )
    floods = server.journal.entries(
        kind="event", where=lambda e: e.extra.get("event") == "stderr-flooded"
    )
    check(
        len(floods) >= 2,
        ids="STDIO-4",
        expected="both floods (at start and at the call) written out in full",
        actual=f"{len(floods)} flood(s) finished",
    )
    shown = host.user_text()
    check(
        "E" * 256 not in shown,
        ids="STDIO-4",
        expected="none of the stderr output in what the user saw",
        actual=f"the user saw stderr output ({shown.count('E' * 256)} runs of 256 of it)",
    )


# ---- STDIO-5 ----------------------------------------------------------------------------------


@pytest.mark.requirements("STDIO-5")
def test_server_and_its_group_are_reaped_on_exit(host, stdio_mock, timeouts):
    """On exit the client stops and reaps the server (and its process group): no process or
    zombie is left."""
    server = stdio_mock(tool_spec("reaped", spawn_child=True))
    host.add_stdio("reaped", server)
    running = host.start()
    status = running.status("reaped")
    check(
        status is not None and status.connected,
        ids="STDIO-5",
        expected="the server (with a child in its group) connects",
        actual=status_text(status),
    )
    entry = started(server, "reaped")
    children = [
        e.extra["pid"]
        for e in server.journal.entries(
            kind="event", where=lambda e: e.extra.get("event") == "child-spawned"
        )
    ]
    try:
        running.stop()
        # A client that exited without reaping it handed it to the harness, its subreaper
        # (harness.orphans): seen at once, whatever the machine's init does with orphans.
        check(
            not handed_to_us(entry.pid, entry.extra.get("ppid")),
            ids="STDIO-5",
            expected="the server's process stopped and reaped by the client",
            actual=(
                f"the client exited and left it {process_state(entry.pid)} and unreaped "
                "(handed to the harness, its subreaper)"
            ),
        )
        grace = max(1.0, 3 * timeouts.grace)
        reaped = wait_until(lambda: process_state(entry.pid) == "gone", grace)
        check(
            reaped,
            ids="STDIO-5",
            expected=(
                f"the server's process gone (stopped and reaped) within {grace:.1f} s after stop"
            ),
            actual=f"it is still {process_state(entry.pid)}",
        )
        # The child was orphaned to init when the server died: it cannot be the client's to
        # reap, but it must not be running.
        ended = wait_until(lambda: all(process_state(p) != "running" for p in children), grace)
        check(
            ended,
            ids="STDIO-5",
            expected="the process the server left in its group stopped too (the group signalled)",
            actual="the server's child is still running after stop",
        )
    finally:
        for pid in children:  # never leave the bait behind, whatever the client did
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass


# ---- STDIO-6 ----------------------------------------------------------------------------------


@pytest.mark.requirements("STDIO-6")
def test_broken_stdio_servers_are_unavailable_and_others_work(host, stdio_mock, model, case):
    """A command that is missing, exits at once, or speaks garbage is reported unavailable;
    others keep working."""
    healthy = stdio_mock(tool_spec("healthy"))
    exiting = stdio_mock(tool_spec("exiting", exit_at_once=3))
    garbage = stdio_mock(tool_spec("garbage", garbage=True))
    missing = case.root / "no-such-dir" / "mcphc-missing-command"
    host.add_stdio("healthy", healthy)
    host.add_stdio("exiting", exiting)
    host.add_stdio("garbage", garbage)
    host.add_stdio("missing", type("Missing", (), {"command": [str(missing), "--serve"]})())
    model.script(
        [Step.call(server="healthy", tool="query", arguments={"q": "x"}), Step.text("done")]
    )
    running = host.start()
    turn = running.ask("use the healthy one", approve="y")
    running.stop()

    for name in ("missing", "exiting", "garbage"):
        status = running.status(name)
        check(
            status is not None and not status.connected,
            ids="STDIO-6",
            expected=f"the {name} server reported unavailable",
            actual=status_text(status),
        )
    good = running.status("healthy")
    check(
        good is not None and good.connected,
        ids="STDIO-6",
        expected="the healthy stdio server beside them connects",
        actual=status_text(good),
    )
    bodies = model_requests(model)
    offered = bool(bodies) and offered_function(bodies[0], healthy, "query") is not None
    check(
        offered,
        ids="STDIO-6",
        expected="the healthy server's tool offered to the model",
        actual=(
            f"{len(bodies)} model request(s); the tool {'offered' if offered else 'not offered'}"
        ),
    )
    statuses = [c.status for c in turn.calls]
    check(
        statuses == ["completed"] and healthy.journal.count("tools/call") == 1,
        ids="STDIO-6",
        expected="a call to the healthy server completes",
        actual=(
            f"call statuses {statuses}, {healthy.journal.count('tools/call')} tools/call received"
        ),
    )
