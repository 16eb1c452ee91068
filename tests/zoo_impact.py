"""Which cases a broken client can change: the self-test's impact selection.

Why it is sound: a broken client is the reference client with some seams patched, and a
suite run against it is the reference run until the first call of a patched seam. A case
that never executes any of the client's seams in the reference run therefore has the
reference's outcome (it passes), so the self-test runs only the cases that do.

How: the reference run of the self-test is traced with coverage, one context per case
(pytest-cov's `--cov-context=test`), over the reference client and the harness's modules that
start a process (SPAWNING). A case is selected for a client when it executed a line of one of
its seams:
- a function (or a method, a cached function): its body, nested functions included;
- a constant (a limit, a list of definitions): the body of every function of the reference
  client that names it (the readers; the patch changes nothing that does not read it).
Every client runs every case (no selection) when one of its seams is something else, or ran
outside any case (at import, in describe() at the start of the run): state the patch may
change for the whole process. A case that runs the host in another process (a restarted
host, the person's `mcp add` in a pty, the official framework's scenarios) always runs,
unless that process was traced too: the traced run hands coverage to every Python process
it starts (COVERAGE_PROCESS_START), naming the running case (MCP_ZOO_CASE), so a process
started for one case (an official scenario's client command) records its lines under that
case. A process that outlives its case names only the first: the restarted host, shared by
the cases of a run, is therefore started once per case in a traced run
(fresh_process.PER_CASE_ENV), and a case served by one an earlier case started
(`fresh_process.reused`) always runs.

A pure replacement (`@pure`) of a pure function the traced run recorded the calls of
(tests/zoo/recording.py) selects more finely: only the cases in which it answers one of
their recorded calls otherwise. The traced processes record their calls too (the coverage
configuration loads tests/zoo/remote_recording.py in each), so lines a process of a case's
own executed (`Trace.remote`) count only for a case no such process kept a journal for.

A seam made by `replaced_when` (tests/zoo/client.py) hands the original every call its
`differs` says no to, so a run against its client is the reference run until `differs` first
says yes: the traced run asks `differs` at every call (`GuardRecorder`), in its own process
and in each process it starts (the journals, which note each yes), and the seam selects the
cases in which it said yes, and those in which a process of their own that kept no journal
ran the function. So does a seam made by `replaced_after` (asked of each outcome) and one
marked `same_until` (asked of each outcome of the function it names, whose outcome alone
shows its change).

A selection can only be as good as the reference run it comes from: a seam the reference
run reaches only now and then (a race) may be missed; the self-test then reports the ID as
missing, never a false pass of a case that ran. `ZOO_SELECT=all` runs every case for every
client (the check of this selection: both must give the same verdicts).
"""

from __future__ import annotations

import contextlib
import os
import pkgutil
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from unittest import mock

from mcp_host_conformance.harness.run import fresh_process
from mcp_host_conformance.zoo import BrokenClient, recording, remote_recording
from mcp_host_conformance.zoo.client import Seam
from mcp_host_conformance.zoo.recording import RECORD_ENV, Records, guard_key, zoo_pure_targets
from mcp_host_conformance.zoo.selection import CASE_ENV, TRACE_ENV

# A case executing these runs the host in a process of its own: it always runs, unless that
# process recorded its lines under the case (`Trace.traced_elsewhere`).
SPAWNING_MODULES = ("run.fresh_process", "cases.pty_session", "oauth.official_client")
SPAWNING = tuple(f"/{name.replace('.', '/')}.py" for name in SPAWNING_MODULES)
# Traced: the reference client (the seams) and, of the harness, only the modules where a case
# starts a process (all of the harness cost each traced run ~2 s more CPU, for lines nothing
# reads).
COVERAGE_ARGS = (
    "--cov=mcp_host_conformance.reference_client",
    *(f"--cov=mcp_host_conformance.harness.{name}" for name in SPAWNING_MODULES),
    "--cov-context=test",
    "--cov-report=",
)
OUTSIDE = ""  # the coverage context of code run outside any case
PHASES = ("setup", "run", "teardown")  # pytest-cov's contexts: "NODEID|PHASE"
# The processes a traced run starts: coverage started by its `.pth` hook, recording under the
# running case's ID with no "|phase" (how they are told apart from the run's own contexts),
# into parallel files beside the trace (COVERAGE_FILE is inherited), which pytest-cov merges
# into the trace when the run ends. A process still running then is lost: its case always
# runs.
_SUBPROCESS_RC = """\
[run]
source = mcp_host_conformance.reference_client
parallel = True
sigterm = True
context = ${{{case_env}-{outside}}}
plugins = {plugin}

[{plugin}]
journal = {journal}
guards = 1
targets =
    {targets}
"""
# The context of a process started outside any case (the run's own code there records "").
OUTSIDE_ELSEWHERE = "zoo:outside-any-case"


RECORDS_FILE = "pure-calls.pickle"


def subprocess_env(workdir: Path) -> dict[str, str]:
    """The environment a traced run needs so that the Python processes it starts trace too,
    and that it records the calls of the pure functions the zoo patches (RECORDS_FILE)."""
    rc = workdir / "subprocess.coveragerc"
    rc.write_text(
        _SUBPROCESS_RC.format(
            case_env=CASE_ENV,
            outside=OUTSIDE_ELSEWHERE,
            plugin=remote_recording.__name__,
            journal=workdir / RECORDS_FILE,
            targets="\n    ".join(sorted(zoo_pure_targets())),
        ),
        encoding="utf-8",
    )
    return {
        "COVERAGE_PROCESS_START": str(rc),
        TRACE_ENV: "1",
        RECORD_ENV: str(workdir / RECORDS_FILE),
    }


@dataclass
class Trace:
    """Per measured file (real path), per line, the cases that executed it."""

    lines: dict[str, dict[int, set[str]]]
    # the cases whose own processes were traced (their lines are in `lines` too)
    traced_elsewhere: set[str] = field(default_factory=set)
    # per file, per line, the cases whose processes (not the run's own) executed it
    remote: dict[str, dict[int, set[str]]] = field(default_factory=dict)

    @classmethod
    def read(cls, data_file: Path) -> Trace:
        from coverage import CoverageData

        data = CoverageData(basename=str(data_file))
        data.read()
        trace = cls({})
        for measured in data.measured_files():
            path = os.path.realpath(measured)
            by_line = trace.lines.setdefault(path, {})
            for line, contexts in (data.contexts_by_lineno(measured) or {}).items():
                for context in contexts:
                    case, bar, phase = context.rpartition("|")
                    if not (bar and phase in PHASES):  # not the run's own code in a case
                        case = OUTSIDE if context == OUTSIDE_ELSEWHERE else context
                        if context:  # a process the run started ("": the run's own code)
                            if case:
                                trace.traced_elsewhere.add(case)
                            trace.remote.setdefault(path, {}).setdefault(line, set()).add(case)
                    by_line.setdefault(line, set()).add(case)
        return trace

    def merge(self, other: Trace) -> None:
        """Add `other`'s (the trace of another shard of the same run, other cases)."""
        _merge_lines(self.lines, other.lines)
        _merge_lines(self.remote, other.remote)
        self.traced_elsewhere |= other.traced_elsewhere

    def spawning(self) -> set[str]:
        found: set[str] = set()
        for path, by_line in self.lines.items():
            if path.endswith(SPAWNING):
                for cases in by_line.values():
                    found |= cases
        return found - {OUTSIDE} - self.traced_elsewhere

    def reusing(self) -> set[str]:
        """The cases served by a restarted host an earlier case started (its lines are
        credited to that one): they always run. None in a traced run, which gives each case
        a restarted host of its own (run_suite sets fresh_process.PER_CASE_ENV)."""
        code = fresh_process.reused.__code__
        found = self.executing(os.path.realpath(code.co_filename), _body(code))
        return found - {OUTSIDE}

    def executing(self, path: str, lines: Iterable[int], *, remote: bool = False) -> set[str]:
        """The cases that executed one of `lines` of `path` (`remote`: in a process of
        their own)."""
        by_line = (self.remote if remote else self.lines).get(path, {})
        found: set[str] = set()
        for line in lines:
            found |= by_line.get(line, set())
        return found


def _merge_lines(
    into: dict[str, dict[int, set[str]]], more: dict[str, dict[int, set[str]]]
) -> None:
    for path, by_line in more.items():
        mine = into.setdefault(path, {})
        for line, cases in by_line.items():
            mine.setdefault(line, set()).update(cases)


def _nested(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _nested(const)


def _body(code: types.CodeType) -> set[int]:
    """The lines a call of `code` executes, never its `def` line (run at import)."""
    lines = {line for inner in _nested(code) for _, _, line in inner.co_lines() if line}
    lines.discard(code.co_firstlineno)
    return lines


@cache
def _package_functions(root: str) -> tuple[types.CodeType, ...]:
    """Every function of every module under `root` (class bodies and module code excluded:
    they run at import, before any patch)."""
    found: list[types.CodeType] = []
    for path in sorted(Path(root).rglob("*.py")):
        module = compile(path.read_bytes(), os.path.realpath(path), "exec", dont_inherit=True)
        found += [
            code
            for code in _nested(module)
            if code is not module and code.co_flags & 0x0002  # CO_NEWLOCALS: a function
        ]
    return tuple(found)


_CONSTANT = int | float | str | bytes | tuple | list | dict | frozenset | set


def _readers(name: str) -> list[types.CodeType]:
    """The functions of the reference client whose code names `name` (a global or an
    attribute: by name alone, so never fewer than read it)."""
    package = pkgutil.resolve_name("mcp_host_conformance.reference_client")
    return [
        code
        for code in _package_functions(os.path.realpath(os.path.dirname(package.__file__)))
        if any(name in inner.co_names for inner in _nested(code))
    ]


def seam_lines(target: str) -> dict[str, set[int]] | None:
    """The lines whose execution means the seam `target` took part (None: cannot tell)."""
    value = pkgutil.resolve_name(target)
    value = getattr(value, "__wrapped__", value)  # functools.cache and friends
    value = getattr(value, "__func__", value)  # classmethod, bound method
    if isinstance(value, types.FunctionType):
        code = value.__code__
        return {os.path.realpath(code.co_filename): _body(code)}
    if isinstance(value, _CONSTANT):
        module_name, _, name = target.rpartition(".")
        if not isinstance(pkgutil.resolve_name(module_name), types.ModuleType):
            return None
        readers: dict[str, set[int]] = {}
        for code in _readers(name):
            readers.setdefault(code.co_filename, set()).update(_body(code))
        return readers
    return None


def pure_readers(seam: Seam, recorded: set[str]) -> set[str] | None:
    """The recorded pure functions (their targets) through which alone `seam` acts, or
    None. A seam of a constant, or a pure replacement (`@pure`, not `@opaque`) of a module
    function, acts through them when every function naming it is one of them, or a private
    helper of its module (`_name`) that only such functions and helpers name. A call of one
    answers from its arguments (and the constant, the function it calls), so its recorded
    calls asked again with the seam patched in tell which cases the seam changes: finer
    than the seam's own answers (a size that differs under the limit changes nothing)."""
    module_name, _, name = seam.target.rpartition(".")
    module = pkgutil.resolve_name(module_name)
    if not isinstance(module, types.ModuleType):
        return None
    value = getattr(module, name)
    function = seam.pure and not seam.opaque and recording.identity(value) == seam.target
    if not (isinstance(value, _CONSTANT) or function):
        return None
    home = os.path.realpath(module.__file__ or "")
    by_identity = {recording.identity(pkgutil.resolve_name(t)): t for t in recorded}
    through: set[str] = set()
    pending, checked = [name], {name} if function else set()
    while pending:
        named = pending.pop()
        for code in _readers(named):
            if code.co_qualname == name and function:
                return None  # it calls itself: its own answers decide
            if os.path.realpath(code.co_filename) != home or "." in code.co_qualname:
                return None  # read elsewhere, or by a method or a nested function
            found = by_identity.get(f"{module.__name__}.{code.co_qualname}")
            if found is not None:
                through.add(found)
            elif code.co_qualname.startswith("_"):
                if code.co_qualname not in checked:  # a helper: who calls it?
                    checked.add(code.co_qualname)
                    pending.append(code.co_qualname)
            else:
                return None
    return through or None


def selection(
    client: BrokenClient, trace: Trace, records: Records | None = None
) -> set[str] | None:
    """The cases to run against `client` (None: all of them). With the `records` of the
    traced run, a pure replacement (`@pure`) of a recorded pure function selects only the
    cases in which it answers a recorded call otherwise (tests/zoo/recording.py), and those
    that executed the function in a process of their own that kept no journal; a seam that
    acts only through recorded pure functions (`pure_readers`), the cases in which they
    answer a recorded call otherwise with it patched in."""
    records = Records() if records is None else records  # nothing recorded
    selected = trace.spawning() | trace.reusing()
    recorded = records.targets()
    through = {s.target: pure_readers(s, recorded) for s in client.seams}
    patched_too = {s.target for s in client.seams}
    for target, readers in list(through.items()):
        if readers and readers & patched_too:
            through[target] = None  # a reader the client replaces too: by its own seam
    patches = [
        mock.patch(s.target, s.replacement(pkgutil.resolve_name(s.target)))
        for s in client.seams
        if through[s.target]
    ]
    with contextlib.ExitStack() as patched:
        for patch in patches:
            patched.enter_context(patch)
        for target in sorted(set().union(*(t for t in through.values() if t))):
            cases = records.diverging(target, pkgutil.resolve_name(target))
            if OUTSIDE in cases:
                return None
            selected |= cases
        # every other seam is asked with these patched in too, as the client has them
        return _by_seams(client, trace, records, recorded, through, selected)


def _by_seams(
    client: BrokenClient,
    trace: Trace,
    records: Records,
    recorded: set[str],
    through: dict[str, set[str] | None],
    selected: set[str],
) -> set[str] | None:
    for seam in client.seams:
        lines = seam_lines(seam.target)
        if lines is None:
            return None
        key = guard_key(client.name, seam.target)
        if (seam.differs is not None or seam.witnesses) and key in records.guarded:
            # where `differs` said yes, and wherever a process of a case's own that did not
            # watch it (kept no journal) ran the seam's function (nobody asked `differs`)
            unasked = set().union(
                *(trace.executing(path, numbers, remote=True) for path, numbers in lines.items())
            )
            unasked -= records.watched_elsewhere.get(key, set())
            cases = records.diverged.get(key, set()) | unasked
            if OUTSIDE in cases:
                return None
            selected |= cases
            continue
        by_answers = (seam.pure and seam.target in recorded) or bool(through[seam.target])
        for path, numbers in lines.items():
            # by its answers, the lines count only where nothing was recorded: another
            # process that kept no journal
            cases = trace.executing(path, numbers, remote=by_answers)
            if by_answers:
                cases -= records.recorded_elsewhere
            if OUTSIDE in cases:
                return None
            selected |= cases
        if by_answers and seam.pure and not through[seam.target]:
            replacement = seam.replacement(pkgutil.resolve_name(seam.target))
            if seam.opaque:
                cases = records.renamed(seam.target, replacement)
            else:
                cases = records.diverging(seam.target, replacement)
            if OUTSIDE in cases:
                return None
            selected |= cases
    return selected
