"""The self-test's impact selection (tests/zoo_impact.py), on made-up traces: which cases a
broken client's seams select, and when it must run every case instead."""

from __future__ import annotations

import os

from mcp_host_conformance.reference_client import limits, naming
from mcp_host_conformance.zoo import BROKEN, BrokenClient
from mcp_host_conformance.zoo.client import constant, replaced
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
    trace = Trace({"/x/harness/fresh_process.py": {10: {"test_c.py::test_restart"}}})
    seam = constant(f"{limits.__name__}.MAX_TOOLS", 1)
    assert zoo_impact.selection(_client(seam), trace) == {"test_c.py::test_restart"}


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
    spawning = "/x/harness/official_client.py"
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
    }
    assert trace.traced_elsewhere == {"test_a.py::test_z[p]"}
