"""What a broken client is: the reference client with one seam patched.

Strategy: a broken client never copies reference code. It names one or a few seams of
`reference_client` (a module attribute: a function, a method, a constant) and, for each, a
function that takes the original and returns its replacement (usually a thin wrapper that
changes one behaviour). The patches are applied with `unittest.mock.patch(...).start()`
when the broken adapter is built: the suite builds its adapter once per process and each run
against a broken client is its own process, so a process-wide patch is what we want. Two
different broken clients in one process would mix their bugs, so that is refused.

A `BrokenClient` is also its own zero-argument factory (calling it gives the adapter), so a
mapping of them is what the entry-point group `mcp_host_conformance.zoos` loads.

Some cases run the host's own command in a process of their own (CRED-5 types a secret at
`mcp add`); that process must carry the same patches. A broken client remembers the module
that defined it, so `python -m mcp_host_conformance.zoo.client MODULE:NAME FILE ARGS...`
finds it there (by import, or from FILE when the module is not importable in that process)
wherever it was defined, inside this zoo or in a project's own tests, as long as it is
reachable from its module's top level (an attribute, or an item of a list, tuple or dict).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import inspect
import pkgutil
import sys
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, TypeVar
from unittest import mock

__all__ = [
    "AfterGuard",
    "BrokenAdapter",
    "BrokenClient",
    "Seam",
    "constant",
    "opaque",
    "pure",
    "replaced",
    "replaced_after",
    "replaced_when",
    "same_until",
]


@dataclass(frozen=True)
class Seam:
    """One patched attribute: `target` is its dotted path, `replacement(original)` the new value."""

    target: str
    replacement: Callable[[Any], Any]
    # (function, AfterGuard) pairs: the replacement acts as the original in every case in
    # which no outcome of those functions is one its guard picks (`same_until`)
    witnesses: tuple[tuple[str, AfterGuard], ...] = ()

    @property
    def pure(self) -> bool:
        """The replacement answers from its arguments alone (`@pure`)."""
        return bool(getattr(self.replacement, "pure", False))

    @property
    def opaque(self) -> bool:
        """The replacement is pure, and only the equality of its answers counts (`@opaque`)."""
        return bool(getattr(self.replacement, "opaque", False))

    @property
    def differs(self) -> Callable[..., bool] | None:
        """For a seam made by `replaced_when`: which calls the replacement takes; by
        `replaced_after`: which outcomes (an `AfterGuard`); None: every call."""
        return getattr(self.replacement, "differs", None)


MakeT = TypeVar("MakeT", bound=Callable[[Any], Any])


def pure(make: MakeT) -> MakeT:
    """Mark a replacement factory whose functions answer from their arguments alone: no I/O,
    no clock, no environment, no state kept between calls, no per-process `hash()`. The
    self-test then runs a case against it only if it answers one of the case's recorded
    calls of a pure reference function otherwise (tests/zoo/recording.py)."""
    make.pure = True  # type: ignore[attr-defined]
    return make


def opaque(make: MakeT) -> MakeT:
    """`@pure`, for a function whose answers the reference client only compares with one
    another and keeps (a hash a person approved): it never shows them, nor reads anything
    in them. A case in which the replacement answers its recorded calls with other values
    but equal where the reference's were equal (a renaming: same calls same answer, other
    calls other answers) then runs as it ran against the reference, and is not selected.
    The replacement must answer in the reference's form (a value of the same type)."""
    make = pure(make)
    make.opaque = True  # type: ignore[attr-defined]
    return make


def constant(target: str, value: Any) -> Seam:
    return Seam(target, lambda _original: value)


def replaced(target: str) -> Callable[[Callable[[Any], Any]], Seam]:
    """Decorator: `@replaced("mod.func") def make(original): return new` -> a Seam."""

    def decorate(make: Callable[[Any], Any]) -> Seam:
        return Seam(target, make)

    return decorate


def replaced_when(
    target: str, differs: Callable[..., bool]
) -> Callable[[Callable[[Any], Any]], Seam]:
    """Decorator: `@replaced_when("mod.func", differs) def make(original): return new` -> a
    Seam whose replacement hands a call to `new` only when `differs(original, *args,
    **kwargs)` is true of it (or raises), and every other call to the original itself.

    So a run against the client is the reference run up to the first call `differs` is true
    of, by construction: the self-test asks `differs` the same question at each call of the
    traced reference run (tests/zoo/recording.py, `GuardRecorder`) and runs only the cases
    in which it said yes, instead of every case that ran the function. `differs` must only
    look: no I/O but reading, no clock, and no state but what the client's own replacements
    keep for the case at hand (a removal they hold in memory for this file, a lock for this
    discovery): the reference run never sets it, and in a run against the client it is set
    only after a replacement ran, in a case selected for that. An async target's `differs`
    is asked before the call, of its arguments (its coroutine is the original's or `new`'s).
    """

    def decorate(make: Callable[[Any], Any]) -> Seam:
        def dispatching(original: Callable[..., Any]) -> Callable[..., Any]:
            new = make(original)

            # a plain function wrapping the original, as the traced run's wrapper is: bound
            # as a method too, it hands back what the chosen function returns (a coroutine)
            @functools.wraps(original)
            def dispatch(*args: Any, **kwargs: Any) -> Any:
                chosen = new if asks(differs, original, args, kwargs) else original
                return chosen(*args, **kwargs)

            return dispatch

        dispatching.differs = differs  # type: ignore[attr-defined]
        return Seam(target, dispatching)

    return decorate


def asks(
    differs: Callable[..., bool],
    original: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> bool:
    """`differs`'s answer for one call; one that raises counts as yes."""
    try:
        return bool(differs(original, *args, **kwargs))
    except Exception:  # noqa: BLE001 - cannot tell: the replacement takes it
        return True


Outcome = tuple[str, Any]  # ("return", value) or ("raise", exception)


class AfterGuard:
    """The `differs` of a `replaced_after` seam: asked of the original's outcome, after the
    call, not of the original before it."""

    def __init__(self, differs: Callable[..., bool]) -> None:
        self.differs = differs

    def __call__(self, outcome: Outcome, *args: Any, **kwargs: Any) -> bool:
        return bool(self.differs(outcome, *args, **kwargs))


def replaced_after(
    target: str, differs: Callable[..., bool]
) -> Callable[[Callable[[Any], Any]], Seam]:
    """Decorator: `@replaced_after("mod.func", differs) def make(original): return after` ->
    a Seam whose replacement calls the original once, as the reference does, and then, when
    `differs(outcome, *args, **kwargs)` is true of its outcome (or raises), hands the outcome
    to `after(outcome, *args, **kwargs)`, whose answer is the call's; otherwise it returns or
    raises what the original did. `outcome` is ("return", value) or ("raise", exception)
    (an `Exception`: anything else, a cancellation, passes through unasked). An async
    target's `after` is a coroutine function.

    For a client that post-processes what a function gave (a failure it swallows, a result
    it drops): a run against it is the reference run up to the first outcome `differs` is
    true of, by construction, and the self-test asks `differs` of each outcome of the
    traced reference run (`GuardRecorder`), as for `replaced_when`, whose rules for
    `differs` hold here too (it must only look).
    """

    def decorate(make: Callable[[Any], Any]) -> Seam:
        def wrapping(original: Callable[..., Any]) -> Callable[..., Any]:
            after = make(original)
            guard = wrapping.differs  # type: ignore[attr-defined]
            if inspect.iscoroutinefunction(original):

                @functools.wraps(original)
                async def dispatch_async(*args: Any, **kwargs: Any) -> Any:
                    outcome = await awaited_outcome(original, args, kwargs)
                    if asks_after(guard, outcome, args, kwargs):
                        return await after(outcome, *args, **kwargs)
                    return settled(outcome)

                return dispatch_async

            @functools.wraps(original)
            def dispatch(*args: Any, **kwargs: Any) -> Any:
                outcome = outcome_of(original, args, kwargs)
                if asks_after(guard, outcome, args, kwargs):
                    return after(outcome, *args, **kwargs)
                return settled(outcome)

            return dispatch

        wrapping.differs = AfterGuard(differs)  # type: ignore[attr-defined]
        return Seam(target, wrapping)

    return decorate


def asks_after(
    guard: AfterGuard, outcome: Outcome, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> bool:
    """An `AfterGuard`'s answer for one outcome; one that raises counts as yes."""
    try:
        return guard(outcome, *args, **kwargs)
    except Exception:  # noqa: BLE001 - cannot tell: the replacement takes it
        return True


def outcome_of(function: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> Outcome:
    """What calling `function` gave, as an outcome (an `Exception` caught, nothing else)."""
    try:
        return ("return", function(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - the outcome a `differs` is asked of
        return ("raise", exc)


async def awaited_outcome(
    function: Callable[..., Any], args: tuple[Any, ...], kwargs: Any
) -> Outcome:
    """`outcome_of` for a coroutine function: the outcome once awaited."""
    try:
        return ("return", await function(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - the outcome a `differs` is asked of
        return ("raise", exc)


def same_until(target: str, differs: Callable[..., bool]) -> Callable[[Seam], Seam]:
    """Decorator over a seam (`@same_until("mod.f", differs)` above `@replaced(...)`, or
    applied to a `constant(...)`): its replacement acts exactly as the original until an
    outcome of `target` (the seam's own function or another one, a library's too) is one
    `differs(outcome, *args, **kwargs)` is true of, as for `replaced_after`.

    For a client whose change can only show through one kind of event (a redirect, a page
    limit reached, a connect timed out) that the replacement cannot dispatch on itself: a
    client that lets its HTTP library follow redirects acts as the reference until an
    answer carries a Location. Unlike `replaced_when` and `replaced_after`, this is the
    author's claim, not made so by construction, as `@pure` is: the self-test asks
    `differs` of each outcome of `target` in the traced reference run (`GuardRecorder`) and
    runs only the cases in which it said yes, and those in which a process of their own ran
    the seam's function. `differs` must only look. A call that never ends (cancelled) has
    no outcome, and shows nothing: the claim is that the change shows only in an outcome.
    Stacked, the seam is the same until any of the functions' outcomes is picked."""

    def decorate(seam: Seam) -> Seam:
        if seam.differs is not None:
            raise ValueError(f"{seam.target}: a guarded seam has its own `differs`")
        witness = (target, AfterGuard(differs))
        return dataclasses.replace(seam, witnesses=(*seam.witnesses, witness))

    return decorate


def settled(outcome: Outcome) -> Any:
    """What the call gave: its value returned, or its exception raised again."""
    kind, value = outcome
    if kind == "raise":
        raise value
    return value


@dataclass(frozen=True)
class BrokenClient:
    name: str
    description: str
    fails: AbstractSet[str]  # exactly the requirement IDs the suite must fail against it
    seams: tuple[Seam, ...]
    target: str = ""  # the requirement it was made for (one of `fails`)
    # The reference adapter it breaks: "reference" (the core host) or "profiles" (the
    # reference host with every optional profile switched on, `reference-profiles`).
    base: str = "reference"
    # Where it was defined (the module, and its file), for a process of its own.
    defined_in: tuple[str, str | None] = field(
        default=("", None), init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "fails", frozenset(self.fails))
        object.__setattr__(self, "seams", tuple(self.seams))
        object.__setattr__(self, "defined_in", _caller_module())
        if not self.target:
            object.__setattr__(self, "target", min(self.fails))
        if self.target not in self.fails:
            raise ValueError(f"broken client {self.name}: its target {self.target} is not in fails")

    def __call__(self) -> BrokenAdapter:
        return BrokenAdapter(self)


def _caller_module() -> tuple[str, str | None]:
    """The module (name, file) that constructed the BrokenClient being initialised: the
    first frame up the stack outside this module (the dataclass's generated __init__ runs
    with this module's globals)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") in (__name__, "dataclasses"):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:  # pragma: no cover - there is always a caller
        return "", None
    return str(frame.f_globals.get("__name__", "")), frame.f_globals.get("__file__")


_applied: str | None = None


def apply(client: BrokenClient) -> None:
    """Start every patch of `client`, once per process."""
    global _applied
    if _applied == client.name:
        return
    if _applied is not None:
        raise RuntimeError(
            f"broken client {_applied} is already patched into this process; "
            f"run {client.name} in a process of its own"
        )
    for seam in client.seams:
        original = pkgutil.resolve_name(seam.target)
        mock.patch(seam.target, seam.replacement(original)).start()
    _applied = client.name


def _reference_adapter_class(base: str = "reference") -> type:
    from mcp_host_conformance.reference_client.adapter import (
        ReferenceAdapter,
        ReferenceProfilesAdapter,
    )

    return ReferenceProfilesAdapter if base == "profiles" else ReferenceAdapter


class BrokenAdapter:
    """The reference adapter, with the broken client's patches applied and its own name."""

    def __init__(self, client: BrokenClient) -> None:
        apply(client)
        self.client = client
        self._reference = _reference_adapter_class(client.base)()

    def describe(self):
        from mcp_host_conformance.reference_client.adapter import INTERACTIVE_ADD

        module, file = self.client.defined_in
        return dataclasses.replace(
            self._reference.describe(),
            name=f"broken:{self.client.name}",
            # the person's own command runs in a process of its own: with the same patches
            interactive_add=(
                sys.executable,
                "-m",
                "mcp_host_conformance.zoo.client",
                f"{module}:{self.client.name}",
                file or "-",
                *INTERACTIVE_ADD,
            ),
        )

    def add_server(self, home, server):
        return self._reference.add_server(home, server)

    def remove_server(self, home, name):
        return self._reference.remove_server(home, name)

    def list_servers(self, home):
        return self._reference.list_servers(home)

    def start(self, options):
        return self._reference.start(options)

    def __getattr__(self, name):
        # The optional parts of the contract (allow_addresses, ...) of the adapter it breaks.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._reference, name)


def by_name(clients: Iterable[BrokenClient]) -> dict[str, BrokenClient]:
    found: dict[str, BrokenClient] = {}
    for client in clients:
        if client.name in found:
            raise ValueError(f"two broken clients named {client.name}")
        found[client.name] = client
    return found


def _module(name: str, file: str | None) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        if not file:
            raise
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {name} from {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _candidates(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        return value.values()
    if isinstance(value, list | tuple):
        return value
    return [value]


def find(locator: str, file: str | None) -> BrokenClient:
    """The broken client NAME defined in MODULE (`locator` is "MODULE:NAME"), found among
    the module's top-level values (and the items of its top-level lists, tuples, dicts)."""
    module_name, _, name = locator.rpartition(":")
    module = _module(module_name, file)
    for value in list(vars(module).values()):
        for candidate in _candidates(value):
            if isinstance(candidate, BrokenClient) and candidate.name == name:
                return candidate
    raise LookupError(f"no broken client {name!r} at the top level of {module_name}")


def main(argv: list[str]) -> int:
    """`python -m mcp_host_conformance.zoo.client MODULE:NAME FILE ARGS...`: the reference
    host's command line with ARGS, patched as broken client NAME (FILE: "-" or the module's
    file, for a module that cannot be imported by name here)."""
    if len(argv) < 2:
        print(
            "usage: python -m mcp_host_conformance.zoo.client MODULE:NAME FILE|- "
            "[mcp-reference-host arguments...]",
            file=sys.stderr,
        )
        return 2
    client = find(argv[0], None if argv[1] == "-" else argv[1])
    apply(client)
    from mcp_host_conformance.reference_client.cli import main as reference_main

    return reference_main(argv[2:])


if __name__ == "__main__":
    # Run as a script, this file is `__main__`: use the one real module, whose class the
    # broken clients are instances of.
    from mcp_host_conformance.zoo import client as _real

    sys.exit(_real.main(sys.argv[1:]))
