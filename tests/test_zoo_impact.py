"""The self-test's impact selection (tests/zoo_impact.py), on made-up traces: which cases a
broken client's seams select, and when it must run every case instead."""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import os
import pickle
import pkgutil
import subprocess
import sys
import types
from unittest import mock

import pytest

from mcp_host_conformance.reference_client import limits, naming, pinning
from mcp_host_conformance.zoo import BROKEN, BrokenClient, recording
from mcp_host_conformance.zoo.client import (
    AfterGuard,
    constant,
    opaque,
    pure,
    replaced,
    replaced_after,
    replaced_when,
    same_until,
)
from tests import zoo_impact
from tests.zoo_impact import OUTSIDE, Trace


def _client(*seams) -> BrokenClient:
    return BrokenClient(name="probe", description="probe", fails={"DISC-6"}, seams=seams)


def _function_lines(function) -> tuple[str, set[int]]:
    code = function.__code__
    return os.path.realpath(code.co_filename), zoo_impact._body(code)


def _trace(**by_path: dict[int, set[str]]) -> Trace:
    return Trace({path: lines for path, lines in by_path.items()})


def _name_function():
    # a function of the naming rules, whatever it is called today
    return next(
        value
        for value in vars(naming).values()
        if callable(value)
        and getattr(value, "__module__", "") == naming.__name__
        and hasattr(value, "__code__")
    )


def test_a_function_seam_selects_the_cases_that_ran_its_body():
    function = _name_function()
    path, body = _function_lines(function)
    line = min(body)
    trace = Trace({path: {line: {"test_a.py::test_one"}, function.__code__.co_firstlineno: {""}}})
    seam = replaced(f"{naming.__name__}.{function.__name__}")(lambda original: original)
    assert zoo_impact.selection(_client(seam), trace) == {"test_a.py::test_one"}


def test_the_def_line_run_at_import_does_not_count():
    function = _name_function()
    path, _ = _function_lines(function)
    trace = Trace({path: {function.__code__.co_firstlineno: {OUTSIDE}}})
    seam = replaced(f"{naming.__name__}.{function.__name__}")(lambda original: original)
    assert zoo_impact.selection(_client(seam), trace) == set()


def test_a_seam_run_outside_any_case_runs_every_case():
    function = _name_function()
    path, body = _function_lines(function)
    trace = Trace({path: {min(body): {OUTSIDE, "test_a.py::test_one"}}})
    seam = replaced(f"{naming.__name__}.{function.__name__}")(lambda original: original)
    assert zoo_impact.selection(_client(seam), trace) is None


def test_a_constant_selects_the_cases_that_ran_a_function_reading_it():
    readers = zoo_impact.seam_lines(f"{limits.__name__}.MAX_TOOLS")
    assert readers, "MAX_TOOLS is read somewhere in the reference client"
    path, lines = next(iter(readers.items()))
    trace = Trace({path: {min(lines): {"test_b.py::test_two"}}})
    seam = constant(f"{limits.__name__}.MAX_TOOLS", 1)
    assert zoo_impact.selection(_client(seam), trace) == {"test_b.py::test_two"}


def test_cases_that_start_the_host_in_another_process_always_run():
    trace = Trace({"/x/harness/run/fresh_process.py": {10: {"test_c.py::test_restart"}}})
    seam = constant(f"{limits.__name__}.MAX_TOOLS", 1)
    assert zoo_impact.selection(_client(seam), trace) == {"test_c.py::test_restart"}


def test_a_case_served_by_a_restarted_host_an_earlier_case_started_always_runs():
    """Its process's lines are credited to the case that started it: even a case whose own
    process was traced (so not selected as spawning) runs."""
    from mcp_host_conformance.harness.run import fresh_process

    path, body = _function_lines(fresh_process.reused)
    later = "test_d.py::test_reopen"
    trace = Trace({path: {min(body): {later}}}, traced_elsewhere={later})
    seam = constant(f"{limits.__name__}.MAX_TOOLS", 1)
    assert trace.spawning() == set()
    assert zoo_impact.selection(_client(seam), trace) == {later}


def test_the_shared_restarted_host_starts_once_and_a_per_case_one_when_asked(monkeypatch):
    from mcp_host_conformance.harness.run import driver, fresh_process

    started = []
    monkeypatch.setattr(driver, "DriverAdapter", lambda command, **_: started.append(command))
    monkeypatch.setattr(fresh_process, "fresh_process_command", lambda config: "cmd")
    monkeypatch.setattr(
        "mcp_host_conformance.harness.run.client_under_test.timeout_scale", lambda config: 1.0
    )
    store: list = []
    fresh_process.shared(None, store)
    fresh_process.shared(None, store)
    assert started == ["cmd"] and store == [None]
    # a case's own (per case, traced runs): restarted twice, started once and never
    # `reused`, whose lines would make the case always run
    own: list = []
    with mock.patch.object(fresh_process, "reused", side_effect=AssertionError("reused")):
        fresh_process.own(None, own)
        fresh_process.own(None, own)
    assert started == ["cmd", "cmd"] and own == [None]
    for value, expected in (("", False), ("0", False), ("1", True)):
        monkeypatch.setenv(fresh_process.PER_CASE_ENV, value)
        assert fresh_process.per_case() is expected


def test_something_else_than_a_function_or_a_constant_runs_every_case():
    seam = constant(f"{naming.__name__}", None)  # a module: nothing to trace
    assert zoo_impact.seam_lines(naming.__name__) is None
    assert zoo_impact.selection(_client(seam), _trace()) is None


def test_every_seam_of_the_zoo_resolves():
    """Every seam is either traced or runs every case: never an error."""
    for client in BROKEN.values():
        for seam in client.seams:
            lines = zoo_impact.seam_lines(seam.target)
            assert lines is None or all(os.path.isabs(p) for p in lines), seam.target


def test_a_case_whose_own_process_was_traced_is_selected_by_its_seams_only():
    function = _name_function()
    path, body = _function_lines(function)
    spawning = "/x/harness/oauth/official_client.py"
    trace = Trace(
        {
            spawning: {10: {"test_d.py::test_scenario[a]", "test_d.py::test_scenario[b]"}},
            path: {min(body): {"test_d.py::test_scenario[b]"}},
        },
        traced_elsewhere={"test_d.py::test_scenario[a]", "test_d.py::test_scenario[b]"},
    )
    seam = replaced(f"{naming.__name__}.{function.__name__}")(lambda original: original)
    assert zoo_impact.selection(_client(seam), trace) == {"test_d.py::test_scenario[b]"}


def test_the_trace_tells_the_run_s_contexts_from_its_processes(tmp_path):
    from coverage import CoverageData

    data = CoverageData(basename=str(tmp_path / ".coverage"))
    for context, line in (
        ("", 1),  # import time
        ("test_a.py::test_x[a|b]|run", 2),  # the run's own, a "|" in the node ID
        ("test_a.py::test_y|setup", 3),
        ("test_a.py::test_z[p]", 4),  # a process the case started
        (zoo_impact.OUTSIDE_ELSEWHERE, 5),  # a process started outside any case
    ):
        data.set_context(context)
        data.add_lines({"/m/module.py": [line]})
    data.write()
    trace = Trace.read(tmp_path / ".coverage")
    assert trace.lines["/m/module.py"] == {
        1: {OUTSIDE},
        2: {"test_a.py::test_x[a|b]"},
        3: {"test_a.py::test_y"},
        4: {"test_a.py::test_z[p]"},
        5: {OUTSIDE},
    }
    assert trace.traced_elsewhere == {"test_a.py::test_z[p]"}
    assert trace.remote["/m/module.py"] == {4: {"test_a.py::test_z[p]"}, 5: {OUTSIDE}}


# ---- pure functions: the calls recorded in the reference run decide ------------------------

PURE_TARGET = f"{naming.__name__}.is_valid_name"


def _record(calls: dict[str, list[tuple]], target: str = PURE_TARGET) -> recording.Records:
    """Records of `target` called with each argument tuple under its case."""
    recorder = recording.Recorder([target])
    recorder.start()
    try:
        for case, arguments in calls.items():
            os.environ[recording.CASE_ENV] = case
            for args in arguments:
                try:
                    pkgutil.resolve_name(target)(*args)
                except Exception:  # noqa: BLE001 - an answer like any other
                    pass
    finally:
        os.environ.pop(recording.CASE_ENV, None)
        recorder.stop()
    return recorder.records


def test_the_recorder_sees_the_calls_through_the_patched_attribute_and_restores_it():
    original = naming.is_valid_name
    records = _record({"t.py::a": [("ok",), ("ok",)], "t.py::b": [("x" * 200,)]})
    assert naming.is_valid_name is original
    assert records.targets() == {PURE_TARGET}
    assert len(records.calls[PURE_TARGET]) == 2  # one entry per distinct call
    assert set(records.cases[PURE_TARGET]) == {"t.py::a", "t.py::b"}


def test_a_pure_seam_selects_only_the_cases_where_its_replacement_answers_otherwise():
    records = _record({"t.py::short": [("ok",)], "t.py::long": [("x" * 70,)]})
    cut_at_64 = replaced(PURE_TARGET)(pure(lambda original: lambda name: original(name[:64])))
    assert zoo_impact.selection(_client(cut_at_64), _trace(), records) == {"t.py::long"}
    same = replaced(PURE_TARGET)(pure(lambda original: original))
    assert zoo_impact.selection(_client(same), _trace(), records) == set()


def test_a_raise_is_an_answer_and_a_different_one_selects():
    target = f"{limits.__name__}.json_size"
    records = _record({"t.py::cyclic": [(_cyclic(),)], "t.py::plain": [({"a": 1},)]}, target)
    assert records.unrecordable == {}
    raising_other = replaced(target)(pure(lambda original: lambda value: original(value) + 0))
    assert zoo_impact.selection(_client(raising_other), _trace(), records) == set()
    swallowing = replaced(target)(
        pure(lambda original: lambda value: 0 if value != {"a": 1} else 999)
    )
    assert zoo_impact.selection(_client(swallowing), _trace(), records) == {
        "t.py::cyclic",
        "t.py::plain",
    }


def _cyclic():
    value: list = []
    value.append(value)
    return value


def test_a_call_that_cannot_be_copied_always_runs_its_case():
    records = _record({"t.py::odd": [(_Unpicklable("x"),)], "t.py::fine": [("a",)]})
    same = replaced(PURE_TARGET)(pure(lambda original: original))
    assert zoo_impact.selection(_client(same), _trace(), records) == {"t.py::odd"}


class _Unpicklable(str):
    def __reduce__(self):
        raise TypeError("not copyable")


def test_a_replacement_with_state_is_not_pure_and_selects():
    records = _record({"t.py::a": [("ok",)]})
    calls = []

    def counting(original):
        def is_valid_name(name):
            calls.append(name)
            return original(name) and len(calls) < 2  # the second time it says no

        return is_valid_name

    assert zoo_impact.selection(
        _client(replaced(PURE_TARGET)(pure(counting))), _trace(), records
    ) == {"t.py::a"}


def test_a_pure_call_outside_any_case_answered_otherwise_runs_every_case():
    records = _record({OUTSIDE: [("ok",)]})
    never = replaced(PURE_TARGET)(pure(lambda original: lambda name: False))
    assert zoo_impact.selection(_client(never), _trace(), records) is None


def test_a_pure_seam_run_in_a_case_s_own_process_selects_that_case():
    records = _record({})
    path, body = _function_lines(naming.is_valid_name)
    trace = Trace(
        {path: {min(body): {"t.py::remote"}}}, remote={path: {min(body): {"t.py::remote"}}}
    )
    same = replaced(PURE_TARGET)(pure(lambda original: original))
    assert zoo_impact.selection(_client(same), trace, records) == {"t.py::remote"}


def test_an_opaque_seam_selects_only_where_its_answers_are_no_renaming_of_the_reference_s():
    target = f"{pinning.__name__}.definition_hash"
    one, other = {"name": "a", "x": 1}, {"name": "b", "x": 1}
    records = _record({"t.py::same": [(one,), (one,)], "t.py::two": [(one,), (other,)]}, target)
    # another hash, one per definition as before: a renaming, nothing changes
    salted = replaced(target)(opaque(lambda original: lambda tool: original({**tool, "s": 1})))
    assert zoo_impact.selection(_client(salted), _trace(), records) == set()
    # two definitions, one hash: the case that had two has one now
    by_x = replaced(target)(opaque(lambda original: lambda tool: original({"x": tool["x"]})))
    assert zoo_impact.selection(_client(by_x), _trace(), records) == {"t.py::two"}
    # an answer of another form is no renaming
    short = replaced(target)(opaque(lambda original: lambda tool: len(original(tool))))
    assert zoo_impact.selection(_client(short), _trace(), records) == {"t.py::same", "t.py::two"}
    # merely pure: every other answer selects
    plain = replaced(target)(pure(lambda original: lambda tool: original({**tool, "s": 1})))
    assert zoo_impact.selection(_client(plain), _trace(), records) == {"t.py::same", "t.py::two"}


_CHECK_TOOLS = f"{limits.__name__}.check_tools"
_TOOLS = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(130)]


def test_a_constant_only_recorded_pure_functions_read_selects_by_their_answers():
    records = _record({"t.py::few": [(_TOOLS[:2],)], "t.py::many": [(_TOOLS,)]}, _CHECK_TOOLS)
    more = constant(f"{limits.__name__}.MAX_TOOLS", 256)  # 130 tools pass now
    assert zoo_impact.pure_readers(more, {_CHECK_TOOLS}) == {_CHECK_TOOLS}
    path, body = _function_lines(limits._tools_problem)  # where MAX_TOOLS is read
    trace = Trace({path: {min(body): {"t.py::few", "t.py::many"}}})
    assert zoo_impact.selection(_client(more), trace, records) == {"t.py::many"}
    assert limits.MAX_TOOLS == 128  # patched only while asked
    # not recorded: read by lines as before
    assert zoo_impact.pure_readers(more, set()) is None
    assert zoo_impact.selection(_client(more), trace, _record({})) == {"t.py::few", "t.py::many"}
    # read outside its module (rpc's own loop): by lines
    pages = constant("mcp_host_conformance.reference_client.rpc.MAX_PAGES", 17)
    assert zoo_impact.pure_readers(pages, {_CHECK_TOOLS}) is None


def test_a_pure_function_only_recorded_pure_functions_call_selects_by_their_answers():
    """json_size answers otherwise for every definition once names are left out, but only
    check_tools reads it: a case changes only where check_tools then answers otherwise."""
    big = {"name": "n" * 40, "inputSchema": {"type": "object", "d": "x" * (16 * 1024 - 60)}}
    records = _record({"t.py::small": [(_TOOLS[:2],)], "t.py::near": [([big],)]}, _CHECK_TOOLS)
    size = f"{limits.__name__}.json_size"
    halved = replaced(size)(pure(lambda original: lambda value: original(value) // 2))
    assert zoo_impact.pure_readers(halved, {_CHECK_TOOLS}) == {_CHECK_TOOLS}
    assert zoo_impact.selection(_client(halved), _trace(), records) == set()
    doubled = replaced(size)(pure(lambda original: lambda value: original(value) * 2))
    assert zoo_impact.selection(_client(doubled), _trace(), records) == {"t.py::near"}
    # a client that replaces check_tools too: check_tools' lines decide (here: both cases)
    path, body = _function_lines(limits.check_tools)
    trace = Trace({path: {min(body): {"t.py::small", "t.py::near"}}})
    both = _client(doubled, replaced(_CHECK_TOOLS)(lambda original: original))
    assert zoo_impact.selection(both, trace, records) == {"t.py::small", "t.py::near"}
    # an @opaque one keeps its renaming rule
    assert zoo_impact.pure_readers(replaced(size)(opaque(lambda o: o)), {_CHECK_TOOLS}) is None


def test_the_pure_functions_are_module_functions_of_the_reference_client():
    for name in recording.PURE_FUNCTIONS:
        value = pkgutil.resolve_name(name)
        assert recording.identity(value) == name, name
        assert not inspect.iscoroutinefunction(value), name


def test_an_unmarked_replacement_of_a_pure_function_is_selected_by_its_lines():
    """Not marked `@pure` (it may fetch, read the environment, keep state): the recorded
    answers decide nothing, every case that ran the function runs."""
    records = _record({"t.py::a": [("ok",)]})
    path, body = _function_lines(naming.is_valid_name)
    trace = Trace({path: {min(body): {"t.py::a", "t.py::b"}}})
    unmarked = replaced(PURE_TARGET)(lambda original: original)
    assert zoo_impact.selection(_client(unmarked), trace, records) == {"t.py::a", "t.py::b"}


def test_every_seam_marked_pure_replaces_a_pure_function():
    for client in BROKEN.values():
        for seam in client.seams:
            if seam.pure:
                assert recording.pure_targets([seam.target]), (client.name, seam.target)


def test_no_client_replaces_two_different_pure_functions():
    """Each replacement is asked alone, against the reference's other functions: sound while
    no client replaces two pure functions (one might call the other with new arguments)."""
    for client in BROKEN.values():
        functions = {
            recording.identity(pkgutil.resolve_name(seam.target))
            for seam in client.seams
            if seam.pure
        }
        assert len(functions) <= 1, (client.name, functions)


def test_a_recorded_function_that_answers_one_question_two_ways_is_not_used():
    answers = iter([True, False])
    with mock.patch(PURE_TARGET, lambda name: next(answers)):
        records = _record({"t.py::a": [("ok",)], "t.py::b": [("ok",)]})
    assert records.impure == {PURE_TARGET} and records.targets() == set()
    path, body = _function_lines(naming.is_valid_name)
    trace = Trace({path: {min(body): {"t.py::a", "t.py::b"}}})
    same = replaced(PURE_TARGET)(pure(lambda original: original))
    assert zoo_impact.selection(_client(same), trace, records) == {"t.py::a", "t.py::b"}


_IMPURE_NAMES = {"os", "sys", "time", "datetime", "random", "open", "print", "environ", "socket"}
_IMPURE_NAMES |= {"subprocess", "httpx", "urllib", "input", "hash", "id", "monotonic"}


def test_the_pure_functions_name_no_io_clock_environment_or_randomness():
    for name in recording.PURE_FUNCTIONS:
        code = pkgutil.resolve_name(name).__code__
        used = {n for inner in zoo_impact._nested(code) for n in inner.co_names}
        assert not used & _IMPURE_NAMES, (name, used & _IMPURE_NAMES)


# ---- the traced run's processes keep journals ------------------------------------------------


def _journal(
    tmp_path,
    calls: dict[str, list[tuple]],
    case: str,
    guards=None,
    own: recording.Records | None = None,
) -> recording.Records:
    """Records with one process's journal: `calls` of PURE_TARGET made under their cases, in
    a process whose case is `case`, recording it (or, with `guards`, watching those instead);
    `own`: the run's own process's records beside it."""
    os.environ[recording.CASE_ENV] = case
    targets = [] if guards else [PURE_TARGET]
    recorder = recording.JournalRecorder(targets, str(tmp_path / "records"), guards)
    try:
        recorder.start()
        for in_case, arguments in calls.items():
            os.environ[recording.CASE_ENV] = in_case
            for args in arguments:
                pkgutil.resolve_name(PURE_TARGET)(*args)
    finally:
        os.environ.pop(recording.CASE_ENV, None)
        recorder.stop()
    assert pkgutil.resolve_name(PURE_TARGET) is naming.is_valid_name
    (own or recording.Records()).dump(tmp_path / "records")
    return recording.Records.read(tmp_path / "records")


def test_a_process_journal_is_merged_and_selects_like_the_run_s_own_records(tmp_path):
    records = _journal(tmp_path, {"t.py::remote": [("ok",), ("x" * 70,)]}, "t.py::remote")
    assert records.recorded_elsewhere == {"t.py::remote"}
    path, body = _function_lines(naming.is_valid_name)
    trace = Trace(
        {path: {min(body): {"t.py::remote"}}}, remote={path: {min(body): {"t.py::remote"}}}
    )
    same = replaced(PURE_TARGET)(pure(lambda original: original))
    assert zoo_impact.selection(_client(same), trace, records) == set()
    cut_at_64 = replaced(PURE_TARGET)(pure(lambda original: lambda name: original(name[:64])))
    assert zoo_impact.selection(_client(cut_at_64), trace, records) == {"t.py::remote"}


def test_a_case_no_process_of_which_kept_a_journal_is_still_selected_by_their_lines(tmp_path):
    records = _journal(tmp_path, {"t.py::other": [("ok",)]}, "t.py::other")
    path, body = _function_lines(naming.is_valid_name)
    trace = Trace(
        {path: {min(body): {"t.py::remote"}}}, remote={path: {min(body): {"t.py::remote"}}}
    )
    same = replaced(PURE_TARGET)(pure(lambda original: original))
    assert zoo_impact.selection(_client(same), trace, records) == {"t.py::remote"}


def test_a_call_begun_and_never_answered_or_a_cut_journal_runs_its_case(tmp_path):
    _journal(tmp_path, {"t.py::a": [("ok",)]}, "t.py::a")
    journal = next(tmp_path.glob(f"records.*{recording.JOURNAL_SUFFIX}"))
    whole = journal.read_bytes()
    call = pickle.dumps((("z",), {}))
    key = hashlib.sha256(call).digest()
    begun = pickle.dumps((recording._BEGUN, PURE_TARGET, "t.py::a", key, call))
    journal.write_bytes(whole + begun)  # killed inside a call
    assert recording.Records.read(tmp_path / "records").unrecordable == {PURE_TARGET: {"t.py::a"}}
    journal.write_bytes(whole[:-3])  # killed while writing the answer
    assert recording.Records.read(tmp_path / "records").unrecordable == {PURE_TARGET: {"t.py::a"}}
    journal.write_bytes(whole)
    assert recording.Records.read(tmp_path / "records").unrecordable == {}


def test_a_forked_child_writes_a_journal_of_its_own(tmp_path):
    recorder = recording.JournalRecorder([PURE_TARGET], str(tmp_path / "records"))
    recorder.start()
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                os.environ[recording.CASE_ENV] = "t.py::child"
                pkgutil.resolve_name(PURE_TARGET)("ok")
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
    finally:
        recorder.stop()
    recording.Records().dump(tmp_path / "records")
    journals = sorted(tmp_path.glob(f"records.*{recording.JOURNAL_SUFFIX}"))
    assert [p.name for p in journals] == sorted(
        [f"records.{os.getpid()}.journal", f"records.{pid}.journal"]
    )
    records = recording.Records.read(tmp_path / "records")
    assert set(records.cases[PURE_TARGET]) == {"t.py::child"}


def test_the_traced_run_s_own_process_discards_its_journal(tmp_path):
    from mcp_host_conformance.zoo import remote_recording

    original = naming.is_valid_name
    remote_recording.coverage_init(
        None, {"journal": str(tmp_path / "records"), "targets": f"\n{PURE_TARGET}\n"}
    )
    assert naming.is_valid_name is not original
    remote_recording.discard()
    assert naming.is_valid_name is original
    assert list(tmp_path.iterdir()) == []


def test_a_traced_process_started_by_coverage_keeps_a_journal(tmp_path):
    env = {
        **os.environ,
        **zoo_impact.subprocess_env(tmp_path),
        recording.CASE_ENV: "t.py::spawned",
        "COVERAGE_FILE": str(tmp_path / ".coverage.trace"),
    }
    code = f"import pkgutil; pkgutil.resolve_name({PURE_TARGET!r})('ok')"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    recording.Records().dump(tmp_path / zoo_impact.RECORDS_FILE)
    records = recording.Records.read(tmp_path / zoo_impact.RECORDS_FILE)
    assert "t.py::spawned" in records.recorded_elsewhere
    assert set(records.cases[PURE_TARGET]) == {"t.py::spawned"}


def test_a_call_interrupted_or_with_arguments_that_cannot_be_copied_runs_its_case(tmp_path):
    def interrupted(name):
        raise KeyboardInterrupt

    prefix = str(tmp_path / "records")
    for make in (
        lambda: recording.Recorder([PURE_TARGET]),
        lambda: recording.JournalRecorder([PURE_TARGET], prefix),
    ):
        with mock.patch.object(naming, "is_valid_name", interrupted):
            recorder = make()  # recording the interrupting function
        recorder.start()
        os.environ[recording.CASE_ENV] = "t.py::c"
        try:
            for argument in (_Unpicklable("x"), "plain"):
                with pytest.raises(KeyboardInterrupt):
                    pkgutil.resolve_name(PURE_TARGET)(argument)
        finally:
            os.environ.pop(recording.CASE_ENV, None)
            recorder.stop()
        if isinstance(recorder, recording.JournalRecorder):
            recording.Records().dump(tmp_path / "records")
            records = recording.Records.read(tmp_path / "records")
        else:
            records = recorder.records
        assert records.unrecordable == {PURE_TARGET: {"t.py::c"}}, type(recorder)
        assert not records.cases.get(PURE_TARGET)


def test_a_discarded_journal_stays_discarded_whatever_still_calls_its_wrappers(tmp_path):
    recorder = recording.JournalRecorder([PURE_TARGET], str(tmp_path / "records"))
    recorder.start()
    held = naming.is_valid_name  # a wrapper some code bound meanwhile
    recorder.discard()
    assert held("ok") is naming.is_valid_name("ok")
    assert list(tmp_path.iterdir()) == []


def _holds(value, functions, depth=0):
    if depth > 3:
        return False
    if any(value is f for f in functions):
        return True
    if isinstance(value, dict):
        return any(_holds(v, functions, depth + 1) for v in value.values())
    if isinstance(value, list | tuple | set | frozenset):
        return any(_holds(v, functions, depth + 1) for v in value)
    if isinstance(value, functools.partial):
        return _holds(value.func, functions, depth + 1)
    if isinstance(value, types.FunctionType):
        defaults = (*(value.__defaults__ or ()), *(value.__kwdefaults__ or {}).values())
        return any(_holds(v, functions, depth + 1) for v in defaults)
    return False


def test_no_reference_module_keeps_a_pure_function_where_a_patch_cannot_reach_it():
    """The records (and a broken client's patch) see the calls made through the module
    attribute; a function kept in a table, a default or a partial at import would be called
    past both, and a process's journal would miss calls its lines show."""
    import mcp_host_conformance.reference_client as package

    functions = [pkgutil.resolve_name(t) for t in recording.zoo_pure_targets()]
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if info.name.endswith(".__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if any(value is f for f in functions):
                continue  # the attribute itself (or an import of it): patched with it
            assert not _holds(value, functions), f"{info.name}.{name} holds a pure function"


# ---- guarded seams: `differs`, asked in the reference run, decides ------------------------


def _guarded_probe(target, differs, make=lambda original: lambda *a, **k: "broken"):
    return BrokenClient(
        name="guarded-probe",
        description="probe",
        fails={"DISC-6"},
        seams=(replaced_when(target, differs)(make),),
    )


def test_a_guarded_seam_hands_every_call_differs_says_no_to_the_original():
    seam = replaced_when(PURE_TARGET, lambda original, name: name.startswith("x"))(
        lambda original: lambda name: "broken"
    )
    assert seam.differs is not None and not seam.pure
    dispatch = seam.replacement(naming.is_valid_name)
    assert dispatch("ok") is naming.is_valid_name("ok")
    assert dispatch("xy") == "broken"
    assert dispatch.__wrapped__ is naming.is_valid_name
    raising = replaced_when(PURE_TARGET, lambda original, name: 1 / 0)(
        lambda original: lambda name: "broken"
    )
    assert raising.replacement(naming.is_valid_name)("ok") == "broken"  # cannot tell: broken


def test_a_guarded_method_gets_its_instance_and_an_async_one_its_coroutine():
    class Engine:
        def __init__(self, label):
            self.label = label

        async def start(self, n):
            return ("original", self.label, n)

    seam = replaced_when("x.Engine.start", lambda original, self, n: n > 1)(
        lambda original: lambda self, n: original(self, -n)
    )
    with mock.patch.object(Engine, "start", seam.replacement(Engine.start)):
        import asyncio

        assert asyncio.run(Engine("a").start(1)) == ("original", "a", 1)
        assert asyncio.run(Engine("b").start(2)) == ("original", "b", -2)


def _asked(target: str, client: BrokenClient, calls: dict[str, list[tuple]]) -> recording.Records:
    """Records of the guarded seams of `client` asked at each call of `target` by case."""
    records = recording.Records()
    recorder = recording.GuardRecorder(recording.guards_of([client]), records)
    original = pkgutil.resolve_name(target)
    recorder.start()
    try:
        for case, arguments in calls.items():
            os.environ[recording.CASE_ENV] = case
            for args in arguments:
                assert pkgutil.resolve_name(target)(*args) == original(*args)  # unchanged
    finally:
        os.environ.pop(recording.CASE_ENV, None)
        recorder.stop()
    assert pkgutil.resolve_name(target) is original
    return records


def test_a_guarded_seam_selects_the_cases_where_differs_said_yes():
    client = _guarded_probe(PURE_TARGET, lambda original, name: len(name) > 64)
    records = _asked(PURE_TARGET, client, {"t.py::short": [("ok",)], "t.py::long": [("x" * 70,)]})
    path, body = _function_lines(naming.is_valid_name)
    ran_both = Trace({path: {min(body): {"t.py::short", "t.py::long"}}})
    assert zoo_impact.selection(client, ran_both, records) == {"t.py::long"}
    # without records of it (an older trace), its lines select as any impure seam's do
    assert zoo_impact.selection(client, ran_both, recording.Records()) == {
        "t.py::short",
        "t.py::long",
    }


def test_a_guarded_seam_run_in_a_case_s_own_process_selects_that_case():
    client = _guarded_probe(PURE_TARGET, lambda original, name: False)
    records = _asked(PURE_TARGET, client, {"t.py::local": [("ok",)]})
    path, body = _function_lines(naming.is_valid_name)
    trace = Trace(
        {path: {min(body): {"t.py::local", "t.py::remote"}}},
        remote={path: {min(body): {"t.py::remote"}}},
    )
    assert zoo_impact.selection(client, trace, records) == {"t.py::remote"}


def _watched_remotely(tmp_path, client: BrokenClient, calls: dict[str, list[tuple]]):
    """Records with the journal of a process of the run that watched `client`'s guarded
    seams (as remote_recording does) while making `calls` of PURE_TARGET, by case (it
    started in the first), and of the run's own process, which watched them too."""
    guards = recording.guards_of([client])
    own = recording.Records(guarded={key for w in guards.values() for key, _ in w})
    return _journal(tmp_path, calls, next(iter(calls)), guards, own)


def _remote_trace(*cases: str) -> Trace:
    path, body = _function_lines(naming.is_valid_name)
    lines = {path: {min(body): set(cases)}}
    return Trace(lines, remote=lines)


def test_a_guarded_seam_watched_in_a_case_s_own_process_selects_by_its_answers(tmp_path):
    client = _guarded_probe(PURE_TARGET, lambda original, name: len(name) > 64)
    records = _watched_remotely(
        tmp_path, client, {"t.py::short": [("ok",)], "t.py::long": [("ok",), ("x" * 70,)]}
    )
    key = recording.guard_key("guarded-probe", PURE_TARGET)
    assert records.watched_elsewhere == {key: {"t.py::short"}}  # the process's first case
    assert records.diverged == {key: {"t.py::long"}}
    trace = _remote_trace("t.py::short", "t.py::long", "t.py::unwatched")
    # a process the case started that watched nothing (no journal): its lines select it
    assert zoo_impact.selection(client, trace, records) == {"t.py::long", "t.py::unwatched"}


def test_a_cut_journal_counts_as_every_watched_guard_saying_yes(tmp_path):
    client = _guarded_probe(PURE_TARGET, lambda original, name: False)
    _watched_remotely(tmp_path, client, {"t.py::cut": [("ok",)]})
    journal = next(tmp_path.glob(f"records.*{recording.JOURNAL_SUFFIX}"))
    journal.write_bytes(journal.read_bytes() + pickle.dumps((recording._DIVERGED, "k", "c"))[:-3])
    records = recording.Records.read(tmp_path / "records")
    assert records.diverged == {recording.guard_key("guarded-probe", PURE_TARGET): {"t.py::cut"}}
    assert zoo_impact.selection(client, _remote_trace("t.py::cut"), records) == {"t.py::cut"}


def test_a_traced_process_watches_the_zoo_s_guards(tmp_path):
    env = {
        **os.environ,
        **zoo_impact.subprocess_env(tmp_path),
        recording.CASE_ENV: "t.py::spawned",
        "COVERAGE_FILE": str(tmp_path / ".coverage.trace"),
    }
    # a function both guarded and recorded as pure: asked by the guards, and recorded
    target = "mcp_host_conformance.reference_client.limits.check_tools"
    code = (
        f"import pkgutil; f = pkgutil.resolve_name({target!r}); "
        "print(hasattr(f, '__wrapped__')); f([{'name': 'q', 'inputSchema': {}}])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, timeout=60, capture_output=True
    )
    assert done.stdout.strip() == b"True"  # the guard's wrapper
    recording.Records().dump(tmp_path / zoo_impact.RECORDS_FILE)
    records = recording.Records.read(tmp_path / zoo_impact.RECORDS_FILE)
    assert set(records.cases[target]) == {"t.py::spawned"}
    watched = {key for key, cases in records.watched_elsewhere.items() if "t.py::spawned" in cases}
    assert watched == {key for w in recording.zoo_guards().values() for key, _ in w}


def test_a_guarded_seam_saying_yes_outside_any_case_runs_every_case():
    client = _guarded_probe(PURE_TARGET, lambda original, name: True)
    records = _asked(PURE_TARGET, client, {OUTSIDE: [("ok",)]})
    assert zoo_impact.selection(client, _trace(), records) is None


def test_every_guarded_seam_of_the_zoo_replaces_a_function_and_is_watched():
    guards = recording.zoo_guards()
    for client in BROKEN.values():
        for seam in client.seams:
            if seam.differs is None:
                continue
            assert isinstance(zoo_impact.seam_lines(seam.target), dict), seam.target
            original = pkgutil.resolve_name(seam.target)
            assert callable(original) and not isinstance(original, type), seam.target
            keys = [key for key, _ in guards[seam.target]]
            assert keys.count(recording.guard_key(client.name, seam.target)) == 1


# ---- seams guarded after the call: `differs` is asked of the original's outcome ----------


def test_an_after_seam_calls_the_original_once_and_hands_on_only_what_differs_picks():
    calls = []

    def original(n):
        calls.append(n)
        if n < 0:
            raise ValueError(n)
        return n * 2

    seam = replaced_after("x.original", lambda outcome, n: outcome[0] == "raise")(
        lambda original: lambda outcome, n: ("after", type(outcome[1]).__name__)
    )
    assert seam.differs is not None and not seam.pure
    dispatch = seam.replacement(original)
    assert dispatch(3) == 6
    assert dispatch(-1) == ("after", "ValueError")
    assert calls == [3, -1]  # once each: the client's extra work starts after the reference's
    passing = replaced_after("x.original", lambda outcome, n: False)(lambda original: None)
    with pytest.raises(ValueError):
        passing.replacement(original)(-2)  # the original's own exception, raised again
    broken = replaced_after("x.original", lambda outcome, n: 1 / 0)(
        lambda original: lambda outcome, n: "broken"
    )
    assert broken.replacement(original)(1) == "broken"  # cannot tell: broken


def test_an_async_after_seam_awaits_the_original_and_its_after():
    import asyncio

    class Session:
        async def list_tools(self, fail):
            if fail:
                raise LookupError("no tools")
            return ["t"]

    async def after(outcome, self, fail):
        return []

    seam = replaced_after(
        "x.Session.list_tools", lambda outcome, self, fail: outcome[0] == "raise"
    )(lambda original: after)
    with mock.patch.object(Session, "list_tools", seam.replacement(Session.list_tools)):
        assert asyncio.run(Session().list_tools(False)) == ["t"]
        assert asyncio.run(Session().list_tools(True)) == []


def test_the_guard_recorder_asks_an_after_seam_of_outcomes_sync_and_async():
    import asyncio

    from mcp_host_conformance.reference_client import discovery

    def long_answer(outcome, name):
        return outcome[0] == "return" and outcome[1] is False and len(name) > 64

    client = BrokenClient(
        name="after-probe",
        description="probe",
        fails={"DISC-6"},
        seams=(replaced_after(PURE_TARGET, long_answer)(lambda original: None),),
    )
    records = _asked(PURE_TARGET, client, {"t.py::short": [("ok",)], "t.py::long": [("x" * 70,)]})
    assert records.diverged == {recording.guard_key("after-probe", PURE_TARGET): {"t.py::long"}}
    path, body = _function_lines(naming.is_valid_name)
    ran_both = Trace({path: {min(body): {"t.py::short", "t.py::long"}}})
    assert zoo_impact.selection(client, ran_both, records) == {"t.py::long"}

    target = f"{discovery.__name__}.discover"
    key = "after-probe:" + target
    records = recording.Records()
    recorder = recording.GuardRecorder(
        {target: [(key, AfterGuard(lambda outcome, servers, **o: outcome[0] == "raise"))]},
        records,
    )
    recorder.start()
    try:
        os.environ[recording.CASE_ENV] = "t.py::bad"
        with pytest.raises(Exception):  # noqa: B017 - whatever discovery raises of a non-list
            asyncio.run(discovery.discover(object()))
    finally:
        os.environ.pop(recording.CASE_ENV, None)
        recorder.stop()
    assert records.diverged == {key: {"t.py::bad"}}


def test_the_guard_recorder_reaches_names_imported_before_it_started():
    """engine.py does `from discovery import discover`, at import: a broken client patches
    before the reference client is imported and so reaches that name; the traced run's
    recorder starts later and must reach it too."""
    from mcp_host_conformance.reference_client import discovery, engine

    original = discovery.discover
    assert engine.discover is original
    target = f"{discovery.__name__}.discover"
    recorder = recording.GuardRecorder(
        {target: [("probe:" + target, lambda original, *a, **k: True)]}, recording.Records()
    )
    recorder.start()
    try:
        assert engine.discover is discovery.discover is not original
        assert engine.discover.__wrapped__ is original
    finally:
        recorder.stop()
    assert engine.discover is discovery.discover is original
    with pytest.raises(ValueError, match="another guarded target"):
        recording.GuardRecorder(
            {target: [], f"{engine.__name__}.discover": []}, recording.Records()
        )


# ---- seams the same until an outcome of a function they name: `same_until` ---------------


def _long_valid(outcome, name):
    return outcome[0] == "return" and len(name) > 64


def test_same_until_keeps_the_replacement_and_names_the_function_it_watches():
    seam = same_until(PURE_TARGET, _long_valid)(
        replaced(f"{limits.__name__}.check_tools")(lambda original: lambda tools: "broken")
    )
    assert seam.replacement(limits.check_tools)([]) == "broken"  # used whole, no dispatch
    ((watched, guard),) = seam.witnesses
    assert watched == PURE_TARGET and isinstance(guard, AfterGuard)
    assert seam.differs is None
    other = f"{limits.__name__}.check_tools"
    stacked = same_until(other, _long_valid)(
        same_until(PURE_TARGET, _long_valid)(constant(f"{limits.__name__}.X", 1))
    )
    assert [watched for watched, _ in stacked.witnesses] == [PURE_TARGET, other]
    guarded = replaced_when(PURE_TARGET, lambda original, name: True)(lambda original: original)
    with pytest.raises(ValueError):
        same_until(PURE_TARGET, _long_valid)(guarded)


def test_a_same_until_seam_selects_where_the_watched_function_s_outcome_said_yes():
    """The seam's own function ran in every case; only the watched function's outcomes pick."""
    function = limits.check_tools
    seam = same_until(PURE_TARGET, _long_valid)(
        replaced(f"{limits.__name__}.check_tools")(lambda original: lambda tools: "broken")
    )
    client = _client(seam)
    assert recording.guards_of([client]) == {
        PURE_TARGET: [(recording.guard_key("probe", seam.target), seam.witnesses[0][1])]
    }
    records = _asked(PURE_TARGET, client, {"t.py::short": [("ok",)], "t.py::long": [("x" * 70,)]})
    path, body = _function_lines(function)
    cases = {"t.py::short", "t.py::long", "t.py::remote"}
    trace = Trace({path: {min(body): cases}}, remote={path: {min(body): {"t.py::remote"}}})
    # and where a process of the case's own ran the seam's function (nobody asked there)
    assert zoo_impact.selection(client, trace, records) == {"t.py::long", "t.py::remote"}
    # without records of it (an older trace), its lines select as any impure seam's do
    assert zoo_impact.selection(client, trace, recording.Records()) == cases


def test_every_same_until_seam_of_the_zoo_watches_a_callable_and_is_asked():
    guards = recording.zoo_guards()
    found = 0
    for client in BROKEN.values():
        for seam in client.seams:
            for watched, _ in seam.witnesses:
                found += 1
                assert callable(pkgutil.resolve_name(watched)), watched
                keys = [key for key, _ in guards[watched]]
                assert keys.count(recording.guard_key(client.name, seam.target)) == 1
    assert found


# ---- a traced run in shards (tests/test_zoo.py) -------------------------------------------


def test_shards_traces_merge_into_the_trace_of_one_run():
    path, lines = _function_lines(_name_function())
    line = min(lines)
    first = Trace({path: {line: {"t.py::a"}}}, {"t.py::a"}, {path: {line: {"t.py::a"}}})
    second = Trace({path: {line: {"t.py::b"}, line + 1: {"t.py::c"}}})
    first.merge(second)
    assert first.lines == {path: {line: {"t.py::a", "t.py::b"}, line + 1: {"t.py::c"}}}
    assert first.remote == {path: {line: {"t.py::a"}}}
    assert first.traced_elsewhere == {"t.py::a"}
    seam = replaced(f"{naming.__name__}.{_name_function().__name__}")(lambda original: original)
    assert zoo_impact.selection(_client(seam), first) == {"t.py::a", "t.py::b"}


def test_shards_records_merge_and_a_call_answered_two_ways_across_them_is_impure():
    first = _record({"t.py::short": [("ok",)]})
    second = _record({"t.py::long": [("x" * 70,)], "t.py::again": [("ok",)]})
    second.unrecordable[PURE_TARGET] = {"t.py::odd"}
    second.diverged["k"] = {"t.py::long"}
    first.merge(second)
    assert set(first.cases[PURE_TARGET]) == {"t.py::short", "t.py::long", "t.py::again"}
    assert first.targets() == {PURE_TARGET}
    assert first.unrecordable == {PURE_TARGET: {"t.py::odd"}}
    assert first.diverged == {"k": {"t.py::long"}}
    cut_at_64 = replaced(PURE_TARGET)(pure(lambda original: lambda name: original(name[:64])))
    selected = zoo_impact.selection(_client(cut_at_64), _trace(), first)
    assert selected == {"t.py::long", "t.py::odd"}
    other = _record({"t.py::b": [("ok",)]})
    key = next(iter(other.calls[PURE_TARGET]))
    call, _ = other.calls[PURE_TARGET][key]
    other.calls[PURE_TARGET][key] = (call, pickle.dumps((recording.RETURN, "another answer")))
    first.merge(other)
    assert PURE_TARGET in first.impure
