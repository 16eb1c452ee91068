"""The calls of the reference client's pure functions in a traced reference run: what a
broken client patching one of them would have changed (tests/zoo_impact.py).

A pure function's result depends on its arguments only (no I/O, no state, no clock). A
broken client that patches one with a pure replacement changes a case only if, for
arguments the case passed it, the replacement answers otherwise: until that first
different answer the run is the reference run. So the traced reference run records, for
each pure function a broken client patches, every argument tuple it was called with and
its answer, by case; the self-test then asks each client's replacement the same questions
and runs only the cases that got another answer somewhere.

Recorded through the very module attributes the broken clients patch (a wrapper patched in
the same way), so exactly the calls a patch would intercept are seen. A call whose
arguments or answer cannot be copied (pickled) is recorded as such: its case then always
runs. A process the traced run starts records its calls too, into a journal of its own
(`JournalRecorder`, started by coverage as it starts there: tests/zoo/remote_recording.py),
one entry at a time so that a process killed half-way leaves what it did; `Records.read`
merges the journals beside the records. A replacement is asked with the rest of the
reference as it is: a client whose replacement of one pure function calls another it also
replaces, with arguments the reference never passed, would be judged by the reference's
answer to those (none does).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import pickle
import pkgutil
import sys
import threading
import types
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

RECORD_ENV = "MCP_ZOO_RECORD"  # where a traced run writes its records
CASE_ENV = "MCP_ZOO_CASE"  # the running case (tests/zoo/selection.py sets it)

_RC = "mcp_host_conformance.reference_client."
# Reference functions whose answer depends on their arguments only. A function goes here
# only after reading it (and the helpers it calls): no I/O, no clock, no randomness, no
# environment, no module state it or anything else changes (tests/test_zoo_impact.py checks
# the names each one uses for the obvious ones).
PURE_FUNCTIONS = frozenset(
    _RC + name
    for name in (
        "config.secrets_of",
        "config.url_refusal",
        "confirmation.confirmation",
        "confirmation.is_approved",
        "confirmation.shown_arguments",
        "discovery.connected_line",
        "display.terminal_safe",
        "flagging.flags",
        "flagging.normalise",
        "flagging.texts_of",
        "limits.check_tools",
        "limits.json_size",
        "naming.hashed_name",
        "naming.is_valid_name",
        "naming.plain_name",
        "offering.function_tool",
        "pinning.definition_hash",
        "private_addresses.address_refusal",
        "results.block_text",
        "results.from_call_result",
        "results.render_content",
        "results.unknown",
        "rpc.check_tools_page",
        "server_commands.check_short_name",
        "transports.parse_json",
        "transports.http.same_id",
        "transports.http.status_error",
        "transports.stdio.child_environment",
        "turn.cancelled_outcome",
        "turn.timed_out_outcome",
        "turn_rules.pending_in_history",
        "validation.argument_problem",
        "verified_add.short_name_problem",
    )
)


def identity(value: Any) -> str | None:
    """`module.name` of a module-level function (None for anything else)."""
    value = getattr(value, "__wrapped__", value)
    if not isinstance(value, types.FunctionType) or "." in value.__qualname__:
        return None
    return f"{value.__module__}.{value.__qualname__}"


def pure_targets(targets: Iterable[str]) -> set[str]:
    """The seam targets (dotted attribute paths) that name a pure function."""
    return {t for t in targets if identity(pkgutil.resolve_name(t)) in PURE_FUNCTIONS}


def zoo_pure_targets() -> set[str]:
    """The pure functions some broken client of the zoo patches: what a traced run records."""
    from mcp_host_conformance.zoo import BROKEN

    return pure_targets(seam.target for client in BROKEN.values() for seam in client.seams)


RETURN, RAISE = "return", "raise"


@dataclass
class Records:
    """Per target: each distinct call (key -> pickled (args, kwargs), pickled (kind, value)),
    which cases made it, and the cases that made a call that could not be pickled."""

    calls: dict[str, dict[bytes, tuple[bytes, bytes]]] = field(default_factory=dict)
    cases: dict[str, dict[str, set[bytes]]] = field(default_factory=dict)
    unrecordable: dict[str, set[str]] = field(default_factory=dict)
    # targets that answered one question two ways in the run: not pure after all
    impure: set[str] = field(default_factory=set)
    # the cases a process of their own started under (its journal holds every call it made
    # through the targets, or marks them unrecordable), whether it made any or not
    recorded_elsewhere: set[str] = field(default_factory=set)
    # the guarded seams (`guard_key`) watched in the run's own process, and per seam the
    # cases in which its `differs` said yes at some call there or in a process of the
    # case's own (GuardRecorder)
    guarded: set[str] = field(default_factory=set)
    diverged: dict[str, set[str]] = field(default_factory=dict)
    # per guarded seam, the cases a process of their own watched it in (its journal holds
    # every yes of its `differs` there): its lines in those processes say nothing more
    watched_elsewhere: dict[str, set[str]] = field(default_factory=dict)

    def targets(self) -> set[str]:
        """The recorded targets that answered each question one way (pure in the run)."""
        return set(self.calls) - self.impure

    def dump(self, path: Path) -> None:
        path.write_bytes(pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL))

    @staticmethod
    def read(path: Path) -> Records:
        """The records at `path`, with the journals of the run's processes beside it."""
        records = pickle.loads(path.read_bytes())
        if not isinstance(records, Records):
            raise TypeError(f"{path}: not a Records pickle")
        for journal in sorted(path.parent.glob(f"{path.name}.*{JOURNAL_SUFFIX}")):
            records.absorb(journal)
        return records

    def merge(self, other: Records) -> None:
        """Add `other`'s records (another shard of the same run, other cases): each of its
        calls as `add` takes one (every call is some case's, OUTSIDE's too), so a call
        answered two ways across shards makes its target impure."""
        for target, cases in other.cases.items():
            calls = other.calls.get(target, {})
            for case, keys in cases.items():
                for key in keys:
                    self.add(target, case, *calls[key])
        _merge_sets(self.unrecordable, other.unrecordable)
        _merge_sets(self.diverged, other.diverged)
        _merge_sets(self.watched_elsewhere, other.watched_elsewhere)
        self.impure |= other.impure
        self.recorded_elsewhere |= other.recorded_elsewhere
        self.guarded |= other.guarded

    def add(self, target: str, case: str, call: bytes, answer: bytes) -> None:
        """One call of `target` in `case` (both pickled) and its answer."""
        key = hashlib.sha256(call).digest()
        known = self.calls.setdefault(target, {}).setdefault(key, (call, answer))
        if known[1] != answer and not _same(pickle.loads(known[1]), pickle.loads(answer)):
            self.impure.add(target)
        self.cases.setdefault(target, {}).setdefault(case, set()).add(key)

    def absorb(self, journal: Path) -> None:
        """Add what one process wrote to its journal. A call it began and never answered
        (the process ended inside it), or a journal cut short, leaves its case
        unrecordable; a journal cut short, as if every guarded seam it watched said yes."""
        calls: dict[bytes, bytes] = {}  # key -> pickled call
        running: Counter[tuple[str, str, bytes]] = Counter()  # begun, not yet answered
        case: str | None = None
        watched: tuple[str, ...] = ()
        with journal.open("rb") as source:
            while True:
                try:
                    entry = pickle.load(source)
                except EOFError:
                    break
                except Exception:  # noqa: BLE001 - cut short: nothing after it can be trusted
                    for target in self.calls:
                        self.unrecordable.setdefault(target, set()).add(case or "")
                    for key in watched:
                        self.diverged.setdefault(key, set()).add(case or "")
                    break
                kind, *rest = entry
                if kind == _STARTED:
                    case, watched = rest
                    self.recorded_elsewhere.add(case)
                    for key in watched:
                        self.watched_elsewhere.setdefault(key, set()).add(case)
                elif kind == _DIVERGED:
                    key, in_case = rest
                    self.diverged.setdefault(key, set()).add(in_case)
                elif kind == _BEGUN:
                    target, in_case, key, call = rest
                    calls[key] = call
                    running[(target, in_case, key)] += 1
                elif kind == _ANSWERED:
                    target, in_case, key, answer = rest
                    if running[(target, in_case, key)] > 0 and key in calls:
                        running[(target, in_case, key)] -= 1
                        self.add(target, in_case, calls[key], answer)
                    else:  # an answer to nothing begun: cannot be trusted
                        self.unrecordable.setdefault(target, set()).add(in_case)
                elif kind == _UNRECORDABLE:
                    target, in_case = rest
                    self.unrecordable.setdefault(target, set()).add(in_case)
        for (target, in_case, _), count in running.items():
            if count:
                self.unrecordable.setdefault(target, set()).add(in_case)

    def diverging(self, target: str, replacement: Callable[..., Any]) -> set[str]:
        """The cases (OUTSIDE: "" for calls outside any case) in which `replacement` answers
        some recorded call of `target` otherwise than the reference did, or made a call that
        was not recorded."""
        different = {
            key
            for key, (call, answer) in self.calls.get(target, {}).items()
            if not _same_answer(replacement, call, answer)
        }
        found = set(self.unrecordable.get(target, set()))
        for case, keys in self.cases.get(target, {}).items():
            if keys & different:
                found.add(case)
        return found

    def renamed(self, target: str, replacement: Callable[..., Any]) -> set[str]:
        """The cases (OUTSIDE as above) in which `replacement`'s answers to the recorded calls
        of `target` are not a renaming of the reference's: two calls answered alike are
        answered otherwise, two answered otherwise alike, an answer is of another type or a
        raise where the reference returned (or the other way round), or a call was not
        recorded (`@opaque`, tests/zoo/client.py)."""
        calls = self.calls.get(target, {})
        found = set(self.unrecordable.get(target, set()))
        for case, keys in self.cases.get(target, {}).items():
            forth: dict[bytes, bytes] = {}  # a reference answer -> the replacement's
            back: dict[bytes, bytes] = {}
            for key in keys:
                call, answer = calls[key]
                expected = pickle.loads(answer)
                first = _answer(replacement, call)
                mine = _pickled(first)
                if (
                    mine is None
                    or first[0] != expected[0]
                    or type(first[1]) is not type(expected[1])
                    or not _same(_answer(replacement, call), first)  # state: not pure
                    or forth.setdefault(answer, mine) != mine
                    or back.setdefault(mine, answer) != answer
                ):
                    found.add(case)
                    break
        return found


def _merge_sets(into: dict[str, set[str]], more: dict[str, set[str]]) -> None:
    for key, values in more.items():
        into.setdefault(key, set()).update(values)


def _answer(function: Callable[..., Any], call: bytes) -> tuple[str, Any]:
    args, kwargs = pickle.loads(call)
    try:
        return RETURN, function(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - an exception is an answer too
        return RAISE, exc


def _same(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    if a[0] != b[0]:
        return False
    try:
        if a[0] == RETURN and a[1] == b[1]:
            return True
    except Exception:  # noqa: BLE001 - an odd __eq__: compare the state below
        pass
    # equal state (an exception, a value without __eq__), or not the same answer
    try:
        return type(a[1]) is type(b[1]) and pickle.dumps(a[1]) == pickle.dumps(b[1])
    except Exception:  # noqa: BLE001 - cannot tell: different
        return False


def _same_answer(replacement: Callable[..., Any], call: bytes, answer: bytes) -> bool:
    expected = pickle.loads(answer)
    first = _answer(replacement, call)
    # a replacement that answers the same question twice otherwise keeps state: not pure
    return _same(first, expected) and _same(_answer(replacement, call), first)


def _pickled(value: Any) -> bytes | None:
    """`value` pickled, or None when it cannot be copied (its case then always runs)."""
    try:
        return pickle.dumps(value)
    except Exception:  # noqa: BLE001 - any failure to copy means the same
        return None


_REFERENCE = "mcp_host_conformance.reference_client"


def _patches_everywhere(wrappers: Iterable[tuple[str, Any, Any]]) -> list[Any]:
    """Patches putting each wrapper at its target, and at every other attribute of a module of
    the reference client imported by now that holds the original function (a `from M import
    f` run before the patch, here by resolving another target): a broken client patches
    before the reference client is imported, so its patch reaches every such name, and the
    recorder must see what it sees (engine's `discover`). A method is one class attribute.
    The pure functions' Recorder patches their targets only: several name one function
    (`url_refusal`), and a name patched by two would be credited to one of them."""
    patches = []
    for target, original, wrapper in wrappers:
        patches.append(mock.patch(target, wrapper))
        if not isinstance(original, types.FunctionType) or "." in original.__qualname__:
            continue
        for name, module in list(sys.modules.items()):
            if module is None or not (name == _REFERENCE or name.startswith(_REFERENCE + ".")):
                continue
            for attribute, value in list(vars(module).items()):
                if value is original and f"{name}.{attribute}" != target:
                    patches.append(mock.patch.object(module, attribute, wrapper))
    return patches


class Recorder:
    """Wrappers of the pure targets that record each call under the running case."""

    def __init__(self, targets: Iterable[str]) -> None:
        wanted = sorted(set(targets))
        self.records = Records(calls={target: {} for target in wanted})
        self._lock = threading.Lock()
        self._patches = [
            mock.patch(target, self._wrap(target, pkgutil.resolve_name(target)))
            for target in wanted
        ]

    def start(self) -> None:
        for patch in self._patches:
            patch.start()

    def stop(self) -> None:
        for patch in reversed(self._patches):
            patch.stop()

    def _wrap(self, target: str, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            case = os.environ.get(CASE_ENV, "")
            call = _pickled((args, kwargs))
            self._begin(target, case, call)
            try:
                result = original(*args, **kwargs)
            except Exception as exc:
                self._note(target, case, call, (RAISE, exc))
                raise
            except BaseException:  # interrupted: no answer to compare, the case always runs
                self._note(target, case, None, (RAISE, None))
                raise
            self._note(target, case, call, (RETURN, result))
            return result

        return recorded

    def _begin(self, target: str, case: str, call: bytes | None) -> None:
        """A call is about to run (a journal notes it: its process may end inside it)."""

    def _note(self, target: str, case: str, call: bytes | None, answer: tuple[str, Any]) -> None:
        pickled = _pickled(answer) if call is not None else None
        with self._lock:
            if call is None or pickled is None:
                self.records.unrecordable.setdefault(target, set()).add(case)
            else:
                self.records.add(target, case, call, pickled)


def guard_key(client: str, target: str) -> str:
    return f"{client}:{target}"


def zoo_guards() -> dict[str, list[tuple[str, Callable[..., bool]]]]:
    """`guards_of` every broken client of the zoo."""
    from mcp_host_conformance.zoo import BROKEN

    return guards_of(BROKEN.values())


def guards_of(clients: Iterable[Any]) -> dict[str, list[tuple[str, Callable[..., bool]]]]:
    """Per target, the (key, differs) of every `replaced_when` and `replaced_after` seam of
    `clients`, and of every `same_until` seam (at the function it names)."""
    guards: dict[str, list[tuple[str, Callable[..., bool]]]] = {}
    for client in clients:
        for seam in client.seams:
            key = guard_key(client.name, seam.target)
            for watched, differs in seam.witnesses:
                guards.setdefault(watched, []).append((key, differs))
            if seam.differs is not None:
                guards.setdefault(seam.target, []).append((key, seam.differs))
    return guards


class GuardRecorder:
    """Wrappers of the targets of `replaced_when` and `replaced_after` seams
    (tests/zoo/client.py) that ask each seam's `differs` of every call (or of its outcome),
    as the broken client would, and note the running case when it says yes: where a run
    against that client stops being the reference run."""

    def __init__(
        self,
        guards: dict[str, list[tuple[str, Callable[..., bool]]]],
        records: Records,
        noted: Callable[[str, str], None] | None = None,
    ) -> None:
        """`noted(key, case)` is told of each yes (default: into `records.diverged`)."""
        self.records = records
        self._lock = threading.Lock()
        self._noted = noted or self._diverged
        self._wrappers: list[tuple[str, Any, Callable[..., Any]]] = []
        for target, watched in sorted(guards.items()):
            records.guarded.update(key for key, _ in watched)
            original = pkgutil.resolve_name(target)
            if any(original is known for _, known, _ in self._wrappers):
                raise ValueError(f"{target}: a function another guarded target names too")
            self._wrappers.append((target, original, self._wrap(original, watched)))
        self._patches: list[Any] = []

    def start(self) -> None:
        self._patches = _patches_everywhere(self._wrappers)
        for patch in self._patches:
            patch.start()

    def stop(self) -> None:
        for patch in reversed(self._patches):
            patch.stop()

    def _diverged(self, key: str, case: str) -> None:
        with self._lock:
            self.records.diverged.setdefault(key, set()).add(case)

    def _wrap(
        self, original: Callable[..., Any], watched: list[tuple[str, Callable[..., bool]]]
    ) -> Callable[..., Any]:
        from mcp_host_conformance.zoo.client import (
            AfterGuard,
            asks,
            asks_after,
            awaited_outcome,
            outcome_of,
            settled,
        )

        before = [(key, d) for key, d in watched if not isinstance(d, AfterGuard)]
        after = [(key, d) for key, d in watched if isinstance(d, AfterGuard)]

        def note(key: str) -> None:
            self._noted(key, os.environ.get(CASE_ENV, ""))

        def ask_before(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            for key, differs in before:
                if asks(differs, original, args, kwargs):
                    note(key)

        def ask_after(outcome: tuple[str, Any], args: tuple[Any, ...], kwargs: Any) -> Any:
            for key, guard in after:
                if asks_after(guard, outcome, args, kwargs):
                    note(key)
            return settled(outcome)

        if not after:

            @functools.wraps(original)
            def asked(*args: Any, **kwargs: Any) -> Any:
                ask_before(args, kwargs)
                return original(*args, **kwargs)

            return asked

        # an outcome is asked of once it is there: an async original's, once awaited
        if inspect.iscoroutinefunction(original):

            @functools.wraps(original)
            async def asked_async(*args: Any, **kwargs: Any) -> Any:
                ask_before(args, kwargs)
                return ask_after(await awaited_outcome(original, args, kwargs), args, kwargs)

            return asked_async

        @functools.wraps(original)
        def asked_after(*args: Any, **kwargs: Any) -> Any:
            ask_before(args, kwargs)
            return ask_after(outcome_of(original, args, kwargs), args, kwargs)

        return asked_after


JOURNAL_SUFFIX = ".journal"
_STARTED, _BEGUN, _ANSWERED, _UNRECORDABLE = "started", "begun", "answered", "unrecordable"
_DIVERGED = "diverged"


class JournalRecorder(Recorder):
    """A recorder for a process the traced run started: each call is appended to the
    journal `{prefix}.{pid}.journal` before it runs (or, its arguments not copyable, marked
    unrecordable) and again with its answer, so nothing waits for an exit that may never
    come. With `guards` (`guards_of`), it asks their `differs` too, as GuardRecorder does in
    the run's own process, and appends each yes as it comes. A forked child writes a journal
    of its own. A process that cannot write its journal ends at once (`os._exit`, before
    coverage saves its lines): a call some code might swallow the error of must never go
    unrecorded while its lines are kept."""

    def __init__(
        self,
        targets: Iterable[str],
        prefix: str,
        guards: dict[str, list[tuple[str, Callable[..., bool]]]] | None = None,
    ) -> None:
        super().__init__(targets)
        self._prefix = prefix
        self._file: Any = None
        self._pid = -1
        self._discarded = False
        self._guard_targets = guards or {}
        self._guards: GuardRecorder | None = None
        # what the journal's first entry says was watched (a forked child's too)
        self._watched = tuple(sorted(key for w in self._guard_targets.values() for key, _ in w))
        os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        # a lock another thread held at the fork would stay held in the child for ever
        self._lock = threading.Lock()

    def start(self) -> None:
        super().start()
        if self._guard_targets:
            # built now, over the pure ones' wrappers (as in the run's own process): built
            # before, a guarded pure function's calls would reach the original unrecorded
            self._guards = GuardRecorder(self._guard_targets, Records(), noted=self._diverged)
            self._guards.start()
        self._write(self._started())

    def stop(self) -> None:
        if self._guards is not None:
            self._guards.stop()
        super().stop()

    def _started(self) -> tuple[Any, ...]:
        return (_STARTED, os.environ.get(CASE_ENV, ""), self._watched)

    def path(self) -> Path:
        return Path(f"{self._prefix}.{os.getpid()}{JOURNAL_SUFFIX}")

    def _write(self, entry: tuple[Any, ...]) -> None:
        with self._lock:
            if self._discarded:
                return
            try:
                if self._pid != os.getpid():  # first write, or a forked child's
                    self._file = self.path().open("ab")
                    self._pid = os.getpid()
                    if entry[0] != _STARTED:
                        self._file.write(pickle.dumps(self._started()))
                self._file.write(pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL))
                self._file.flush()  # a buffered file writes all of it, or raises
            except OSError:
                os._exit(70)  # EX_SOFTWARE

    def _diverged(self, key: str, case: str) -> None:
        self._write((_DIVERGED, key, case))

    def _begin(self, target: str, case: str, call: bytes | None) -> None:
        if call is None:
            self._write((_UNRECORDABLE, target, case))
        else:
            self._write((_BEGUN, target, case, hashlib.sha256(call).digest(), call))

    def _note(self, target: str, case: str, call: bytes | None, answer: tuple[str, Any]) -> None:
        if call is None:
            return  # marked unrecordable as it began
        pickled = _pickled(answer)
        if pickled is None:
            self._write((_UNRECORDABLE, target, case))
        else:
            self._write((_ANSWERED, target, case, hashlib.sha256(call).digest(), pickled))

    def discard(self) -> None:
        """Stop for good, and remove this process's journal (its calls are recorded another
        way): a wrapper some code still holds calls the function and writes nothing."""
        self.stop()
        with self._lock:
            self._discarded = True
            if self._pid == os.getpid():
                self._file.close()
                self.path().unlink(missing_ok=True)
