import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_host_conformance.harness import cli
from mcp_host_conformance.harness.reports.progress import CaseLines

FEW_SECONDS = 20.0  # a mistake is answered long before this, even on a loaded machine


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["requirements", "--help"]])
def test_help_everywhere(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 0
    assert "usage: mcp-host-conformance" in capsys.readouterr().out


def test_client_and_client_cmd_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["run", "--client", "reference", "--client-cmd", "x"])
    assert exited.value.code == cli.Status.USAGE_ERROR
    assert "not allowed with argument" in capsys.readouterr().err


SUITE = "mcp_host_conformance.conformance"


def test_run_passes_options_and_pytest_args_and_returns_pytest_status(monkeypatch):
    seen = {}

    def fake_main(args, plugins=None):
        seen["args"] = args
        return pytest.ExitCode.TESTS_FAILED

    monkeypatch.setattr(pytest, "main", fake_main)
    status = cli.main(
        [
            "run",
            "--client-cmd",
            "go run ./driver",
            "--report-json",
            "r.json",
            "--expected-failures",
            "known.txt",
            "--strict",
            "--run-slow",
            "--timeout-scale",
            "2.5",
            "-n",
            "2",
            "--",
            "-k",
            "approval",
            "-x",
        ]
    )
    assert status == 1
    assert seen["args"] == [
        *cli.plugin_args(),
        *cli.isolated_args(),
        "--pyargs",
        "mcp_host_conformance.conformance",
        "--mcphc-client-cmd",
        "go run ./driver",
        "--mcphc-report-json",
        "r.json",
        "--mcphc-expected-failures",
        "known.txt",
        "--strict",
        "--mcphc-run-slow",
        "--mcphc-timeout-scale",
        "2.5",
        "--mcphc-workers",
        "2",
        *CaseLines.PYTEST_ARGS,  # the run's line per case
        "-k",
        "approval",
        "-x",
    ]


def test_run_defaults_leave_the_client_to_the_plugin(monkeypatch):
    seen = {}
    monkeypatch.setattr(
        pytest, "main", lambda args, plugins=None: seen.setdefault("args", args) and 0
    )
    assert cli.main(["run"]) == 0
    workers = str(cli.default_workers())
    assert seen["args"] == [
        *cli.plugin_args(),
        *cli.isolated_args(),
        "--pyargs",
        "mcp_host_conformance.conformance",
        *("--mcphc-workers", workers),
        *CaseLines.PYTEST_ARGS,
    ]


@pytest.mark.parametrize("argv", [["--serial"], ["-n", "0"]])
def test_serial_runs_in_this_process(monkeypatch, argv):
    seen = {}
    monkeypatch.setattr(
        pytest, "main", lambda args, plugins=None: seen.setdefault("args", args) and 0
    )
    assert cli.main(["run", *argv]) == 0
    assert seen["args"] == [
        *cli.plugin_args(),
        *cli.isolated_args(),
        "--pyargs",
        SUITE,
        *CaseLines.PYTEST_ARGS,
    ]


def test_a_run_loads_only_the_suites_plugins():
    """No plugin of the environment starts with the run (a host project's own, respx's,
    pytest-xdist's: the workers are the suite's own); the suite's plugin and hypothesis's are
    named."""
    args = cli.plugin_args()
    assert args[0] == "--disable-plugin-autoload"
    assert args[1::2] == ["-p", "-p"]
    assert args[2::2] == ["mcp_host_conformance.harness.plugin.hooks", "_hypothesis_pytestplugin"]


def test_default_workers_overlap_waiting_cases_within_bounds(monkeypatch):
    for cpus, expected in ((1, 2), (2, 4), (3, 6), (64, 8)):
        monkeypatch.setattr(cli.os, "sched_getaffinity", lambda _pid, n=cpus: set(range(n)))
        assert cli.default_workers() == expected


def test_listing_marks_uncovered_ids_and_lists_cases(monkeypatch):
    monkeypatch.setattr(cli, "_zoo", lambda: {})
    listing = cli.requirements_listing(
        {"approval::test_a": ["APR-2", "APR-3"], "approval::test_b": ["APR-2"]}
    )
    by_id = {entry["id"]: entry for entry in listing}
    assert len(listing) == len(cli.REQUIREMENTS)
    assert by_id["APR-2"]["cases"] == ["approval::test_a", "approval::test_b"]
    assert by_id["APR-2"]["covered"] and not by_id["CFG-1"]["covered"]
    assert by_id["CFG-1"]["broken_clients"] == []
    text = cli.render_requirements(listing)
    assert "APR-2 (MUST): Approval is default-deny" in text
    assert "    checked by approval::test_b" in text
    assert "PIN-1 (MUST, profile pinning): " in text
    assert text.endswith(f"2 of {len(listing)} requirements covered")


def test_requirements_json_from_a_collection(monkeypatch, capsys):
    monkeypatch.setattr(cli, "collect_cases", lambda extra=(): {"exposure::test_x": ["EXP-1"]})
    assert cli.main(["requirements", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)["requirements"]
    entry = next(e for e in listing if e["id"] == "EXP-1")
    assert entry["cases"] == ["exposure::test_x"] and entry["level"] == "MUST"
    assert set(entry) >= {"id", "level", "rule", "cases", "covered", "broken_clients"}


def test_broken_clients_come_from_the_zoos(monkeypatch):
    import types

    zoo = {
        "skips-approval": types.SimpleNamespace(fails=frozenset({"APR-1"})),
        "leaks-header": types.SimpleNamespace(fails=frozenset({"CRED-1", "APR-1"})),
    }
    monkeypatch.setattr(cli, "_zoo", lambda: zoo)
    assert cli.broken_clients_for("APR-1") == ["leaks-header", "skips-approval"]
    assert cli.broken_clients_for("CFG-1") == []
    listing = cli.requirements_listing({"approval::test_a": ["APR-1"]})
    assert (
        "    fails against broken clients: leaks-header, skips-approval"
        in cli.render_requirements(listing)
    )


def test_installed_zoo_names_a_broken_client_for_every_covered_core_id():
    # The project's own zoo is installed through the entry-point group.
    assert "connects-on-add" in cli.broken_clients_for("CFG-1")


def test_run_help_lists_the_timeout_scale(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    out = capsys.readouterr().out
    assert "--timeout-scale FACTOR" in out and "driver's included" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--timeout-scale", "abc"], "--timeout-scale: not a number: 'abc'"),
        (["run", "--timeout-scale", "-1"], "must be a positive number"),
        (["run", "--bogus"], "unrecognized arguments: --bogus"),
        (["run", "-n", "two"], "-n: not a whole number: 'two'"),
        (["run", "-n", "-1"], "must be 0 or more"),
        (["run", "-n", "2", "--serial"], "not allowed with argument"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_a_wrong_option_is_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "--help" in err, err


# ---- a user's mistakes, as the command answers them (a process of its own) -----------------------


ONE_CASE = "test_adding_a_server_does_not_connect"  # were the run to start, it stays short


def command(
    *argv: str, cwd: Path, env: dict[str, str] | None = None, pytest: bool = False
) -> tuple[subprocess.CompletedProcess[str], float]:
    """`mcp-host-conformance ARGV` (or, with `pytest`, plain pytest with the suite's plugins)
    in a process of its own, with `env` added to this one's environment."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MCP_HOST_"))},
        **(env or {}),
    }
    entry = ["pytest", *cli.plugin_args()] if pytest else ["mcp_host_conformance.harness.cli"]
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", *entry, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, time.monotonic() - began


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, done.stdout + done.stderr
    return lines[0]


def test_a_client_that_does_not_exist_is_one_line_at_once(tmp_path):
    done, took = command("run", "--client", "nonexistent", cwd=tmp_path)
    assert done.returncode == cli.Status.CLIENT_UNUSABLE
    line = one_line(done)
    assert line.startswith("ERROR: mcp-host-conformance: --client 'nonexistent': no such client")
    assert "connects-on-add" not in line and took < FEW_SECONDS


@pytest.mark.parametrize(
    "content, message",
    [
        (b"APR-2\n\xff\xfe binary\n", "baseline.txt:2: not UTF-8 text (byte 6)"),
        (None, "cannot read the expected-failures file"),
        (b"APR-2 APR-3\n", "one requirement or case ID per line"),
    ],
    ids=["not-utf8", "missing", "two-per-line"],
)
def test_a_wrong_expected_failures_file_is_one_line_at_once(content, message, tmp_path):
    path = tmp_path / "baseline.txt"
    if content is not None:
        path.write_bytes(content)
    done, took = command("run", "--expected-failures", str(path), cwd=tmp_path)
    assert done.returncode == 5
    assert message in one_line(done) and took < FEW_SECONDS


def test_a_wrong_option_of_run_is_one_line_at_once(tmp_path):
    done, took = command("run", "--timeout-scal", "3", cwd=tmp_path)
    assert done.returncode == 5
    assert "unrecognized arguments" in one_line(done) and took < FEW_SECONDS


@pytest.mark.parametrize(
    "given, env, message",
    [
        (["--client", ""], {}, "--client is empty (an unset variable?)"),
        (["--client-cmd", ""], {}, "--client-cmd is empty (an unset variable?)"),
        ([], {"MCP_HOST_CONFORMANCE_CLIENT": ""}, "$MCP_HOST_CONFORMANCE_CLIENT is set but empty"),
        ([], {"MCP_HOST_CONFORMANCE_CLIENT_CMD": ""}, "_CLIENT_CMD is set but empty"),
    ],
    ids=["client", "client-cmd", "env", "env-cmd"],
)
@pytest.mark.parametrize("entry", ["run", "pytest"])
def test_an_empty_client_is_a_usage_error_never_the_reference_host(
    entry, given, env, message, tmp_path
):
    """`--client "$HOST"` with HOST unset: one line and a usage error, never a green run of
    the bundled reference host. Plain pytest says it with its own usage error (4)."""
    if entry == "run":
        done, took = command("run", *given, "--", "-k", ONE_CASE, cwd=tmp_path, env=env)
        assert done.returncode == cli.Status.USAGE_ERROR, done.stdout + done.stderr
    else:
        given = [a.replace("--client", "--mcphc-client") for a in given]
        argv = ("--pyargs", cli.SUITE_PACKAGE, *given, "-k", ONE_CASE)
        done, took = command(*argv, cwd=tmp_path, env=env, pytest=True)
        assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    line = one_line(done)
    assert message in line and "error" in line.lower(), line
    assert "passed" not in done.stdout and took < FEW_SECONDS


@pytest.mark.parametrize(
    "body, said",
    [
        ("raise RuntimeError('cannot find ~/.myhost')", "RuntimeError: cannot find ~/.myhost"),
        ("import sys\nsys.exit(2)", "it called sys.exit(2)"),
    ],
    ids=["raises", "exits"],
)
def test_a_client_module_that_fails_at_import_is_one_line_and_status_4(body, said, tmp_path):
    (tmp_path / "crashing_host.py").write_text(body + "\n")
    done, took = command(
        "run", "--client", "crashing_host:Adapter", cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)}
    )
    assert done.returncode == cli.Status.CLIENT_UNUSABLE, done.stdout + done.stderr
    line = one_line(done)
    assert "importing module 'crashing_host' failed" in line and said in line, line
    assert "INTERNALERROR" not in line and took < FEW_SECONDS


@pytest.mark.parametrize(
    "given, said",
    [
        (["--report-json", "no-such-dir/report.json"], "the directory"),
        (["--report-html", "."], "it is a directory"),
        (["--", "--junitxml", "a-file/junit.xml"], "is not a directory"),
    ],
    ids=["json", "html", "junit"],
)
def test_a_report_path_that_cannot_be_written_is_one_line_before_any_case(given, said, tmp_path):
    (tmp_path / "a-file").write_text("not a directory")
    before = sorted(p.name for p in tmp_path.iterdir())
    done, took = command("run", *given, cwd=tmp_path)
    assert done.returncode == cli.Status.USAGE_ERROR, done.stdout + done.stderr
    line = one_line(done)
    assert said in line and "nothing was run" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "nothing may be made"
    assert took < FEW_SECONDS


# ---- exit statuses -----------------------------------------------------------------------------


def test_exit_statuses_are_distinct_and_listed_in_help(capsys):
    assert [int(s) for s in cli.Status] == [0, 1, 2, 3, 4, 5]
    assert set(cli.EXIT_STATUSES) == set(cli.Status)
    for argv in (["--help"], ["run", "--help"]):
        with pytest.raises(SystemExit):
            cli.main(argv)
        out = " ".join(capsys.readouterr().out.split())
        for status, text in cli.EXIT_STATUSES.items():
            assert f"{int(status)} {' '.join(text.split())}" in out


def test_pytest_s_codes_map_to_the_run_s_statuses():
    codes = pytest.ExitCode
    assert cli.run_status(codes.OK) == cli.Status.PASSED
    assert cli.run_status(codes.TESTS_FAILED) == cli.Status.FAILED
    assert cli.run_status(codes.INTERRUPTED) == cli.Status.INTERRUPTED
    assert cli.run_status(codes.INTERNAL_ERROR) == cli.Status.INTERNAL_ERROR
    assert cli.run_status(codes.USAGE_ERROR) == cli.Status.USAGE_ERROR
    assert cli.run_status(codes.USAGE_ERROR, client_failed=True) == cli.Status.CLIENT_UNUSABLE
    assert cli.run_status(codes.NO_TESTS_COLLECTED) == cli.Status.USAGE_ERROR
    assert cli.run_status(99) == cli.Status.INTERNAL_ERROR  # a plugin's own code


def test_a_run_that_selects_no_case_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setattr(
        pytest, "main", lambda args, plugins=None: pytest.ExitCode.NO_TESTS_COLLECTED
    )
    assert cli.main(["run"]) == cli.Status.USAGE_ERROR
    assert "no case was selected" in capsys.readouterr().err


# ---- baseline ------------------------------------------------------------------------------------

REPORT = {
    "schema": "mcp-host-conformance-report/1",
    "client": {"name": "my-host", "version": "1.2", "profiles": []},
    "requirements": {
        "APR-2": {"outcome": "failed"},
        "APR-3": {"outcome": "passed"},
        "RES-9": {"outcome": "warning"},
    },
    "cases": [
        {"id": "test_approval::test_b", "outcome": "failed"},
        {"id": "test_approval::test_a", "outcome": "expected_failure"},
        {"id": "test_results::test_c", "outcome": "warning"},
        {"id": "test_results::test_d", "outcome": "passed"},
        {"id": "test_results::test_e", "outcome": "skipped"},
    ],
}

# a rule monitor's findings: its rule is listed, never its case (which checks others)
WATCHED = {
    **REPORT,
    "cases": [
        *REPORT["cases"],
        {
            "id": "test_stdio::test_f",
            "outcome": "passed",
            "monitors": [
                {"rule": "STDIO-2", "outcome": "failed"},
                {"rule": "CFG-3", "outcome": "expected_failure"},
                {"rule": "RES-9", "outcome": "passed"},
            ],
        },
        {"id": "test_stdio::test_h", "outcome": "failed", "failed_requirements": ["STDIO-6"]},
        {
            "id": "test_stdio::test_g",
            "outcome": "expected_failure",
            "failed_requirements": ["STDIO-2"],
            "monitors": [{"rule": "STDIO-2", "outcome": "expected_failure"}],
        },
    ],
}


def test_baseline_from_a_report_lists_what_failed_sorted(tmp_path, capsys):
    report = tmp_path / "report.json"
    report.write_text(json.dumps(REPORT))
    assert cli.main(["baseline", str(report), "-o", str(tmp_path / "known.txt")]) == 0
    lines = (tmp_path / "known.txt").read_text().splitlines()
    assert lines[0].startswith("# Expected failures of my-host 1.2")
    entries = [line.split("#")[0].strip() for line in lines if not line.startswith("#")]
    assert entries == ["test_approval::test_a", "test_approval::test_b", "test_results::test_c"]
    assert cli.main(["baseline", str(report), "--requirements"]) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if not line.startswith("#")] == ["APR-2", "RES-9"]


def test_rules_a_monitor_saw_broken_are_listed_as_rules(tmp_path):
    from mcp_host_conformance.harness.verdicts.baseline import load_baseline

    report = tmp_path / "report.json"
    report.write_text(json.dumps(WATCHED))
    assert cli.main(["baseline", str(report), "-o", str(tmp_path / "known.txt")]) == 0
    assert list(load_baseline(tmp_path / "known.txt").entries) == [
        "test_approval::test_a",
        "test_approval::test_b",
        "test_results::test_c",
        "test_stdio::test_h",
        "CFG-3",
        "STDIO-2",
    ]
    assert re.search(r"^test_stdio::test_h +# STDIO-6$", (tmp_path / "known.txt").read_text(), re.M)


def test_a_baseline_written_by_the_command_is_read_back(tmp_path):
    from mcp_host_conformance.harness.verdicts.baseline import load_baseline

    report = tmp_path / "report.json"
    report.write_text(json.dumps(REPORT))
    cli.main(["baseline", str(report), "-o", str(tmp_path / "known.txt")])
    assert list(load_baseline(tmp_path / "known.txt").entries) == [
        "test_approval::test_a",
        "test_approval::test_b",
        "test_results::test_c",
    ]


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot be read"),
        ("{not json", "is not a JSON report"),
        ('{"schema": "something-else"}', "is not an mcp-host-conformance report"),
        ("[" * 100000, "is not a JSON report"),
    ],
    ids=["missing", "garbage", "other-schema", "deep"],
)
def test_baseline_of_something_that_is_not_a_report_is_one_line(content, message, tmp_path):
    path = tmp_path / "report.json"
    if content is not None:
        path.write_text(content)
    done, took = command("baseline", str(path), cwd=tmp_path)
    assert done.returncode == 5
    assert message in one_line(done) and took < FEW_SECONDS


@pytest.mark.parametrize("given, passed", [([], str(cli.SHRINK_DEFAULT)), (["--shrink", "0"], "0")])
def test_explore_passes_its_shrinking_budget(given, passed):
    options = cli._parser().parse_args(["explore", "--client", "reference", *given])
    args = cli.build_explore_args(options)
    assert args[args.index("--mcphc-explore-shrink") + 1] == passed


def test_explore_refuses_a_negative_shrinking_budget(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["explore", "--client", "reference", "--shrink", "-1"])
    assert exited.value.code == cli.Status.USAGE_ERROR
    assert "must be 0 or more" in capsys.readouterr().err
