import json

import pytest

from mcp_host_conformance.harness import cli


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["requirements", "--help"]])
def test_help_everywhere(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 0
    assert "usage: mcp-host-conformance" in capsys.readouterr().out


def test_client_and_client_cmd_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["run", "--client", "reference", "--client-cmd", "x"])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


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
        "--pyargs",
        "mcp_host_conformance.conformance",
        "--client-cmd",
        "go run ./driver",
        "--report-json",
        "r.json",
        "--expected-failures",
        "known.txt",
        "--strict",
        "--run-slow",
        "-n",
        "2",
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
    assert seen["args"] == ["--pyargs", "mcp_host_conformance.conformance"]


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
