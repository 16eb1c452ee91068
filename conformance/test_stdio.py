"""STDIO: local servers.

Strategy: the stdio mock records, the moment it starts, its argv exactly as the kernel gave
it, its whole environment, its pid and process group, and its parent; so how the client
launched it is read from the journal, not from the client's word. Arguments that a shell,
a whitespace split or a trim would change (`a;b`, `$HOME`, `two words`, globs, quotes, a
newline, an empty string, a leading blank) must arrive verbatim, and a command whose own
path holds a space must run. The client's own environment is planted with the variables
a host really has (API keys, `LD_PRELOAD`, `PYTHONPATH`, `SSH_AUTH_SOCK`, the `TERM`,
`USER`, `LOGNAME` and `SHELL` an SDK passes on, a random name): the server's environment
must be exactly PATH, HOME, LANG and what was configured. Two servers must each lead a
group of their own. Reaping is checked in /proc after stop (zombies count as left behind)
and again after a grace period (nothing started again), with servers that leave a sleeping
child in their group, that ignore SIGTERM (only SIGKILL ends them), and that daemonize
within their group (the process the client started exits at once; the fork serves), all
of them staying alive when stdin closes. A stderr flood of several MiB, written
synchronously by the mock at start and at each call, blocks any client that neither reads
nor discards stderr; what a crashing server wrote to stderr must not show in its status.
Broken servers are missing, exit at once, exit after initialize, or speak garbage.
"""

from __future__ import annotations

import gc
import os
import secrets as _random
import sys
from pathlib import Path

import pytest

from mcp_host_conformance.harness.cases.observe import (
    model_requests,
    offered_function,
    status_text,
    wait_until,
)
from mcp_host_conformance.harness.cases.specs import gone_after_add, one_approved_query, tool_spec
from mcp_host_conformance.harness.monitors.stdio import ALLOWED_ENV, COERCED_LC_CTYPE  # noqa: E402
from mcp_host_conformance.harness.run.orphans import handed_to_us, reap_if_ours
from mcp_host_conformance.harness.verdicts.outcomes import HarnessFailure, check, precondition
from mcp_host_conformance.mocks.journal import JournalTimeout
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.stdio_server import SCRIPT, process_state


def started(mock, name: str, *, own: str | None = None):
    """The mock's first process entry. That the client started it at all is DISC-1's rule
    (every configured server is connected at start), a precondition of the STDIO cases;
    `own`: the case's own requirement, when starting it is what the case checks."""
    entries = mock.process_entries()
    verdict = check if own else precondition
    verdict(
        len(entries) >= 1,
        ids=own or "DISC-1",
        expected=f"stdio server {name} started by the client",
        actual="it never started (no process entry in its journal)",
    )
    return entries[0]


# ---- STDIO-1 ----------------------------------------------------------------------------------

SHELL_BAIT = [
    "a;b",
    "$HOME",
    "two words",
    "$(echo x)",
    "`id`",
    "*",
    "*.txt",
    "'q'",
    'say "hi"',
    "back\\slash",
    "x|y",
    "&&",
    "~",
    "line one\nline two",
    "",
    "  padded  ",
    "tab\there",
    "-x",
    "--flag=value with spaces",
    "\u00fcn\u00efc\u00f8d\u00e9",
]

_LAUNCHER = """#!{python}
# A stdio server whose own path holds a space (mcp-host-conformance, STDIO-1).
import runpy

runpy.run_path({script!r}, run_name="__main__")
"""


def spaced_command(mock, directory: Path) -> list[str] | None:
    """`mock`'s command line with the program at a path holding a space (a launcher script
    in `directory/with space/`), or None where no script may run here (a noexec mount)."""
    folder = directory / "with space"
    folder.mkdir(parents=True, exist_ok=True)
    launcher = folder / "stdio server"
    launcher.write_text(_LAUNCHER.format(python=sys.executable, script=SCRIPT), encoding="utf-8")
    launcher.chmod(0o755)
    if not os.access(launcher, os.X_OK):  # a noexec mount says so here (Linux)
        return None
    return [str(launcher), *mock.argv[1:]]  # argv = [SCRIPT, --spec, ...]


class _Command:
    """A command line for `Host.add_stdio` (anything with `command`; no mock is bound to it)."""

    def __init__(self, command: list[str]) -> None:
        self.command = command


@pytest.mark.mcphc_requirements("STDIO-1")
def test_arguments_arrive_verbatim(host, stdio_mock, project, case):
    """The command is executed directly, without a shell: arguments such as `a;b` or `$HOME`
    arrive verbatim (quotes, globs, blanks, a newline, an empty argument), and a command
    whose own path holds a space runs as that one program."""
    (project / "glob-bait.txt").write_text("a shell would expand * to this file's name\n")
    server = stdio_mock(tool_spec("verbatim"))
    host.add_stdio("verbatim", server, args=SHELL_BAIT)
    spaced_mock = stdio_mock(tool_spec("spaced"))
    spaced = spaced_command(spaced_mock, case.workdir("launcher"))
    if spaced is not None:
        host.add_stdio("spaced", _Command(spaced), args=["a b"])
    running = host.start()
    running.stop()

    entry = started(server, "verbatim", own="STDIO-1")
    received = (entry.extra or {}).get("extra_args")
    check(
        received == SHELL_BAIT,
        ids="STDIO-1",
        expected=f"the arguments exactly {SHELL_BAIT!r}",
        actual=f"the server received {received!r}",
    )
    check(
        entry.argv == server.argv + SHELL_BAIT,
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
    if spaced is None:
        return  # no script may run here: the command with a space is not tried
    entries = spaced_mock.process_entries()
    status = running.status("spaced")
    # The launcher runs the mock script in its place (argv[0] becomes the script's path);
    # the rest of argv is what the client passed.
    check(
        bool(entries)
        and entries[0].argv[1:] == [*spaced[1:], "a b"]
        and status is not None
        and status.connected,
        ids="STDIO-1",
        expected=f"the program {spaced[0]!r} (a path with a space) run as one, its argument "
        "'a b' as one, and connected",
        actual=(f"argv {entries[0].argv[1:]!r}; " if entries else "it never started; ")
        + status_text(status),
    )


# ---- STDIO-2 ----------------------------------------------------------------------------------

# What a host's own environment holds (secrets, loader and interpreter settings, an agent
# socket, and what an SDK passes on by default); each value is a canary where a value can be.
HOST_VARIABLES = (
    "OPENAI_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "GITHUB_TOKEN",
    "PYTHONPATH",
    "SSH_AUTH_SOCK",
    "TERM",
    "USER",
    "LOGNAME",
    "SHELL",
)


@pytest.mark.mcphc_requirements("STDIO-2")
def test_environment_holds_only_path_home_lang_and_configured(host, stdio_mock, secrets):
    """The environment holds only PATH, HOME, LANG and the configured variables: none of
    the many variables in the client's own environment (secrets, LD_PRELOAD, PYTHONPATH,
    SSH_AUTH_SOCK, the TERM, USER, LOGNAME and SHELL an SDK passes on, a random name)."""
    planted = {name: f"/nonexistent/{secrets.new(name.lower())}" for name in HOST_VARIABLES}
    planted["LD_PRELOAD"] = ""  # set but empty: no loader of any child may try to use it
    planted[f"MCPHC_{_random.token_hex(4).upper()}"] = secrets.new("random-variable")
    host.env.update(planted)
    configured = secrets.new("configured-variable")
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
        actual=f"also: {', '.join(extra)}"
        + (f" (of the client's own: {sorted(set(extra) & set(planted))})" if extra else ""),
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
        if "configured-variable" not in h
    ]
    check(
        not leaks,
        ids="STDIO-2",
        expected="no value of the client's own environment in the server's (under any name)",
        actual="; ".join(leaks),
    )


# ---- STDIO-3 ----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("STDIO-3")
def test_server_runs_in_its_own_process_group(host, stdio_mock):
    """The server runs in its own process group: each of two servers leads its own group,
    neither the client's nor the other's."""
    servers = {name: stdio_mock(tool_spec(name)) for name in ("grouped", "grouped-too")}
    for name, server in servers.items():
        host.add_stdio(name, server)
    running = host.start()
    entries = {name: started(server, name) for name, server in servers.items()}
    # The client's group, read while the client (the servers' parent) still runs.
    parent_groups = set()
    for entry in entries.values():
        parent = (entry.extra or {}).get("ppid")
        try:
            parent_groups.add(os.getpgid(parent) if parent else None)
        except ProcessLookupError:
            pass
    running.stop()

    for name, entry in entries.items():
        check(
            entry.pgid == entry.pid,
            ids="STDIO-3",
            expected=f"server {name} leads its own process group (pgid == pid)",
            actual=f"pgid {entry.pgid}, pid {entry.pid}",
        )
        shared = [g for g in (os.getpgrp(), *parent_groups) if g is not None and g == entry.pgid]
        check(
            not shared,
            ids="STDIO-3",
            expected=f"server {name} in a process group other than the client's and the harness's",
            actual=f"pgid {entry.pgid} is also the client's or harness's group",
        )
    groups = {entry.pgid for entry in entries.values()}
    check(
        len(groups) == len(entries),
        ids="STDIO-3",
        expected="the two servers in two different process groups",
        actual=f"process groups {sorted(g for g in groups if g is not None)}",
    )


# ---- STDIO-4 ----------------------------------------------------------------------------------

FLOOD = 4 * 1024 * 1024


STDERR_RUN = "E" * 32  # what the mock writes to stderr, as a host might show a tail of it


@pytest.mark.mcphc_requirements("STDIO-4")
def test_stderr_flood_neither_blocks_nor_shows(host, stdio_mock, model):
    """Its error output is discarded: a flood on stderr neither blocks the client nor is shown
    (nor, when a server writes to stderr and exits at once, in the status that explains
    why it is unavailable)."""
    server = stdio_mock(tool_spec("noisy", stderr_flood=FLOOD))
    crashing = stdio_mock(tool_spec("crashing", stderr_flood=4096, exit_at_once=1))
    host.add_stdio("noisy", server)
    host.add_stdio("crashing", crashing)
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
    crashed = crashing.journal.entries(
        kind="event", where=lambda e: e.extra.get("event") == "stderr-flooded"
    )
    precondition(
        bool(crashed),
        ids="DISC-1",
        expected="the crashing server wrote to stderr before it exited",
        actual="it never did (no stderr-flooded event)",
    )
    shown = "\n".join(
        [
            host.user_text(),
            *(s.reason or "" for s in running.statuses),
            *(s.line for s in running.statuses),
        ]
    )
    check(
        STDERR_RUN not in shown,
        ids="STDIO-4",
        expected="none of the stderr output in what the user saw (statuses included)",
        actual=f"the user saw stderr output ({shown.count(STDERR_RUN)} runs of "
        f"{len(STDERR_RUN)} of it); crashing: {status_text(running.status('crashing'))[:200]}",
    )


# ---- STDIO-5 ----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("STDIO-5")
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


def started_again(mock, starts: int, within: float) -> bool:
    """Whether `mock` records one more start than `starts` within `within` seconds."""
    try:
        mock.journal.wait_for(kind="process", count=starts + 1, timeout=within)
    except JournalTimeout:
        return False
    return True


def spawned(mock) -> list[int]:
    return [
        e.extra["pid"]
        for e in mock.journal.entries(
            kind="event", where=lambda e: e.extra.get("event") in ("child-spawned", "daemonized")
        )
    ]


@pytest.mark.mcphc_requirements("STDIO-5")
def test_stubborn_and_daemonized_servers_are_reaped(host, stdio_mock, timeouts):
    """On exit the client stops and reaps the server (and its process group): no process or
    zombie is left, and none starts again over a grace period: also a server that ignores
    SIGTERM (and its child, which inherits that), and one that daemonizes within its group
    (the process the client started exits at once; its fork serves), both still running
    after stdin closes."""
    stubborn = stdio_mock(tool_spec("stubborn", ignore_sigterm=True, spawn_child=True, linger=True))
    daemon = stdio_mock(tool_spec("daemon", daemonize=True, linger=True))
    host.add_stdio("stubborn", stubborn)
    host.add_stdio("daemon", daemon)
    running = host.start()
    mocks = {"stubborn": stubborn, "daemon": daemon}
    leaders = {name: started(mock, name).pid for name, mock in mocks.items()}
    others = {name: spawned(mock) for name, mock in mocks.items()}
    try:
        for name in mocks:
            status = running.status(name)
            precondition(
                status is not None and status.connected and bool(others[name]),
                ids="DISC-1",
                expected=f"server {name} connects (and left its other process in its group)",
                actual=f"{status_text(status)}; its other processes: {others[name]}",
            )
        # The daemon's first process exits by itself; whether it had when the host stops was
        # a race (a host that signals a group only while its leader runs passed now and then):
        # the host always meets it exited.
        if not wait_until(lambda: process_state(leaders["daemon"]) != "running", timeouts.wait):
            raise HarnessFailure("the daemonizing stdio mock's first process did not exit")
        started_count = {name: len(mock.process_entries()) for name, mock in mocks.items()}
        running.stop()
        # A client that leaves a server running may leave its pipes to the garbage collector;
        # collect now, so their finalizers run here and not while a failure is reported
        # (on CPython 3.11 one raising inside pytest's source parsing is an internal error).
        gc.collect()
        # A host may wait a while for SIGTERM before SIGKILL: allow the harness's wait bound.
        within = max(timeouts.wait, 3 * timeouts.grace)
        for name in mocks:
            leader, rest = leaders[name], others[name]
            gone = wait_until(
                lambda leader=leader, rest=rest: (
                    process_state(leader) == "gone"
                    and all(process_state(p) != "running" for p in rest)
                ),
                within,
            )
            check(
                gone,
                ids="STDIO-5",
                expected=(
                    f"server {name}'s process reaped and every process of its group stopped "
                    f"within {within:.1f} s after stop"
                ),
                actual=f"its process is {process_state(leader)}; the others: "
                + ", ".join(f"{p} {process_state(p)}" for p in rest),
            )
        again = [
            f"server {name} started again"
            for name, mock in mocks.items()
            if started_again(mock, started_count[name], timeouts.grace)
        ]
        check(
            not again,
            ids="STDIO-5",
            expected="no server started again after stop (watched for a grace period)",
            actual="; ".join(again),
        )
    finally:
        for pid in [p for rest in others.values() for p in rest]:
            try:  # never leave the bait behind, whatever the client did
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
            reap_if_ours(pid)  # the fork and the child came back to the harness (orphans)


# ---- STDIO-6 ----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("STDIO-6")
def test_broken_stdio_servers_are_unavailable_and_others_work(host, stdio_mock, model, case):
    """A command that is missing, exits at once, or speaks garbage is reported unavailable;
    others keep working (also one that exits once initialize is answered)."""
    healthy = stdio_mock(tool_spec("healthy"))
    exiting = stdio_mock(tool_spec("exiting", exit_at_once=3))
    late = stdio_mock(tool_spec("exits-after-initialize", exit_at="tools/list"))
    garbage = stdio_mock(tool_spec("garbage", garbage=True))
    host.add_stdio("healthy", healthy)
    host.add_stdio("exiting", exiting)
    host.add_stdio("exits-after-initialize", late)
    host.add_stdio("garbage", garbage)
    # a command removed after it was configured (a host that syncs at add saves it too)
    gone_after_add(
        host, "missing", stdio_mock(tool_spec("missing")), case.root / "gone", ("--serve",)
    )
    model.script(
        [Step.call(server="healthy", tool="query", arguments={"q": "x"}), Step.text("done")]
    )
    running = host.start()
    turn = running.ask("use the healthy one", approve="y", offer_rule="STDIO-6")
    running.stop()

    precondition(
        late.journal.count("initialize") == 1,
        ids="DISC-1",
        expected="the server that exits after initialize answered initialize (then died)",
        actual=f"methods received: {late.journal.methods()}",
    )
    for name in ("missing", "exiting", "exits-after-initialize", "garbage"):
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
