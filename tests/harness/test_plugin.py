"""The plugin seen from pytest: options, markers, applicability, and the case fixtures,
driven against a tiny fake client in a pytester sandbox."""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

# The plugin has no entry point: a session that wants the suite names it.
PLUGIN = ("-p", "mcp_host_conformance.harness.plugin.hooks")

FAKE_CLIENT = textwrap.dedent(
    """
    import threading
    from mcp_host_conformance.harness.contract.adapter import (
        CallResult, Confirmation, Description, ServerStatus, Shown, Stopped, Turn,
    )

    BLOCK = threading.Event()

    class Session:
        def __init__(self, options, servers):
            self.options = options
            self.statuses = [
                ServerStatus(n, True, 1, "dest", line=f"MCP server {n}: 1 tools from dest")
                for n in servers
            ]
            self.text = "started\\n" + "\\n".join(s.line for s in self.statuses)
            self.stopped = False

        def ask(self, question, approve, acknowledge):
            if question == "hang":
                BLOCK.wait(30)
            c = Confirmation(
                "docs",
                "http://127.0.0.1:1/mcp",
                "query",
                '{"q": 1}',
                "The arguments are sent to this server; the client cannot control what it does.",
                "Server: docs ...",
            )
            answer = approve(c)
            status = "completed" if answer == "y" else "denied"
            calls = [CallResult("mcp_docs_query", status, "out")]
            return Turn(True, [c], calls, [], "answer", "turn text")

        def cancel(self):
            pass

        def stop(self):
            self.stopped = True
            return Stopped("s1", [], "bye")

    class FakeAdapter:
        profiles = frozenset({"verified-add"})

        def __init__(self):
            self.servers = {}

        def describe(self):
            return Description("fake", "0.1", self.profiles, project_config_files=[".fake.json"])

        def add_server(self, home, server):
            self.servers[server.name] = server
            return Shown(f"added {server.name}", [home / "cfg.json"])

        def remove_server(self, home, name):
            self.servers.pop(name, None)
            return Shown(f"removed {name}")

        def list_servers(self, home):
            return Shown("\\n".join(self.servers))

        def start(self, options):
            return Session(options, list(self.servers))
    """
)

CONFTEST = textwrap.dedent(
    """
    import pytest
    from mcp_host_conformance.mocks.journal import Journal

    class StubModel:
        url = "http://127.0.0.1:9/v1"
        api_key = "k"
        journal = Journal()
        def close(self):
            pass

    @pytest.fixture
    def model(case):
        stub = StubModel()
        case.mocks.append(stub)
        return stub
    """
)


@pytest.fixture
def sandbox(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(fakeclient=FAKE_CLIENT)
    pytester.mkdir("conformance")
    (pytester.path / "conformance" / "conftest.py").write_text(CONFTEST)
    pytester.syspathinsert()
    return pytester


def _case(pytester: pytest.Pytester, body: str) -> None:
    (pytester.path / "conformance" / "test_case.py").write_text(
        "import pytest\nfrom mcp_host_conformance.harness.verdicts.outcomes import check\n\n"
        + textwrap.dedent(body)
    )


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(
        *PLUGIN, "--mcphc-client", "fakeclient:FakeAdapter", "-p", "no:randomly", *args
    )


def test_options_are_registered_in_one_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess(*PLUGIN, "--help")
    result.stdout.fnmatch_lines(["*MCP host conformance*"])
    text = result.stdout.str()
    for option in (
        "--mcphc-client",
        "--mcphc-client-cmd",
        "--mcphc-client-path",
        "--mcphc-run-slow",
        "--mcphc-report-json",
        "--mcphc-expected-failures",
        "--mcphc-workers",
        "--strict",
    ):
        assert option in text


def test_markers_pass_strict_markers(sandbox: pytest.Pytester) -> None:
    _case(
        sandbox,
        """
        @pytest.mark.mcphc_requirements("CFG-1")
        @pytest.mark.mcphc_profile("verified-add")
        @pytest.mark.mcphc_needs_cancel
        @pytest.mark.mcphc_slow
        def test_marked():
            pass
        """,
    )
    result = run(sandbox, "--strict-markers", "--mcphc-run-slow", "-rs")
    result.assert_outcomes(skipped=1)  # needs_cancel: the fake cannot cancel
    result.stdout.fnmatch_lines(["*not applicable: fake cannot cancel*"])


def test_unclaimed_profile_is_not_applicable(sandbox: pytest.Pytester) -> None:
    _case(
        sandbox,
        """
        @pytest.mark.mcphc_requirements("PIN-1")
        @pytest.mark.mcphc_profile("pinning")
        def test_pinned():
            raise AssertionError("must not run")

        @pytest.mark.mcphc_requirements("SYNC-1")
        @pytest.mark.mcphc_profile("verified-add")
        def test_claimed():
            pass
        """,
    )
    result = run(sandbox, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*not applicable: profile pinning not claimed by fake*"])


def test_a_requirement_replaced_by_a_claimed_profile_is_not_applicable(
    sandbox: pytest.Pytester,
) -> None:
    # The fake claims verified-add, whose SYNC-1 "replaces CFG-1" (the catalog says so).
    _case(
        sandbox,
        """
        @pytest.mark.mcphc_requirements("CFG-1")
        def test_replaced():
            raise AssertionError("must not run")

        @pytest.mark.mcphc_requirements("CFG-2")
        def test_kept():
            pass
        """,
    )
    result = run(sandbox, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*not applicable: CFG-1 is replaced by SYNC-1 for a host that claims the verified-add*"]
    )


def test_a_server_a_verified_add_host_refuses_makes_a_case_not_applicable(
    sandbox: pytest.Pytester,
) -> None:
    # The fake claims verified-add; its add fails for "offline" (a failed first sync). A case
    # that needs that server configured is not applicable; one that catches the refusal
    # (a refusal is what it expects) and one about the profile itself see the exception.
    _case(
        sandbox,
        """
        from mcp_host_conformance.harness.contract.adapter import HttpServer
        from mcp_host_conformance.harness.cases.hostrun import RefusedAtAdd

        def refusing(adapter):
            def add_server(home, server):
                raise RuntimeError("first sync failed: connection refused")
            adapter.add_server = add_server

        @pytest.mark.mcphc_requirements("DISC-4")
        def test_needs_it(host, adapter):
            refusing(adapter)
            host.add(HttpServer("offline", "http://127.0.0.1:9/mcp"))
            raise AssertionError("must not get here")

        @pytest.mark.mcphc_requirements("NET-1")
        def test_expects_a_refusal(host, adapter):
            refusing(adapter)
            with pytest.raises(RefusedAtAdd, match="first sync failed"):
                host.add(HttpServer("offline", "http://127.0.0.1:9/mcp"))

        @pytest.mark.mcphc_requirements("SYNC-1")
        @pytest.mark.mcphc_profile("verified-add")
        def test_about_the_profile(host, adapter):
            refusing(adapter)
            with pytest.raises(RuntimeError, match="first sync failed"):
                host.add(HttpServer("offline", "http://127.0.0.1:9/mcp"))
        """,
    )
    result = run(sandbox, "-rs", "-p", "no:randomly")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["*not applicable: the host claims verified-add and did not save*"])


def test_a_case_of_the_suite_without_requirements_is_rejected(
    sandbox: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_host_conformance.harness.cases import items

    # the sandbox's folder stands for the suite's own package (the run is in this process)
    monkeypatch.setattr(items, "suite_dir", lambda: sandbox.path / "conformance")
    _case(sandbox, "def test_unmarked():\n    pass\n")
    result = run(sandbox)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*must name the requirements it checks*mcphc_requirements*"])


def test_a_project_folder_named_conformance_is_not_the_suite(sandbox: pytest.Pytester) -> None:
    """A project's own tests in a folder named `conformance`, with a `requirements` marker of
    its own, are ordinary tests even in a session that loads the plugin."""
    sandbox.makeini("[pytest]\nmarkers =\n    requirements: the project's own")
    _case(
        sandbox,
        """
        @pytest.mark.requirements("SPEC-1.2")
        def test_own_marked():
            pass

        def test_own_unmarked():
            pass
        """,
    )
    result = run(sandbox, "--strict-markers", "-rA")
    result.assert_outcomes(passed=2)
    assert "mcp-host-conformance" not in result.stdout.str().split("short test summary")[-1]


def test_unknown_requirement_id_is_rejected(sandbox: pytest.Pytester) -> None:
    _case(sandbox, '@pytest.mark.mcphc_requirements("NOPE-9")\ndef test_x():\n    pass\n')
    result = run(sandbox)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*unknown requirement ID(s) NOPE-9*"])


def test_slow_case_skipped_without_run_slow(sandbox: pytest.Pytester) -> None:
    _case(
        sandbox,
        '@pytest.mark.mcphc_requirements("DISC-3")\n'
        "@pytest.mark.mcphc_slow\ndef test_x():\n    pass\n",
    )
    result = run(sandbox, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*run with --run-slow (plain pytest: --mcphc-run-slow)*"])


def test_unloadable_client_is_a_usage_error(sandbox: pytest.Pytester) -> None:
    _case(sandbox, '@pytest.mark.mcphc_requirements("CFG-1")\ndef test_x():\n    pass\n')
    result = sandbox.runpytest_inprocess(
        *PLUGIN, "--mcphc-client", "no_such_module:Adapter", "-p", "no:randomly"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot import module 'no_such_module'*"])


def test_report_header_names_the_client(sandbox: pytest.Pytester) -> None:
    _case(sandbox, '@pytest.mark.mcphc_requirements("CFG-1")\ndef test_x():\n    pass\n')
    result = run(sandbox)
    result.stdout.fnmatch_lines(["mcp-host-conformance: client fake 0.1 (profiles: verified-add;*"])


def test_host_records_what_the_user_saw(sandbox: pytest.Pytester) -> None:
    _case(
        sandbox,
        """
        from mcp_host_conformance.harness.contract.adapter import HttpServer

        @pytest.mark.mcphc_requirements("APR-4")
        def test_flow(host, secrets, timeouts, home, project):
            token = secrets.new("tok")
            shown = host.add(HttpServer("docs", "http://127.0.0.1:1/mcp", {"Authorization": token}))
            assert host.config_paths == [home / "cfg.json"]
            running = host.start()
            assert running.status("docs").tools == 1 and running.status("nope") is None
            assert (
                running.options.connect_timeout == timeouts.wait  # unhurried by default
                and running.options.cwd == project
            )
            answers = []
            turn = running.ask("q", approve=lambda c: answers.append(c.tool) or "n")
            assert answers == ["query"] and turn.calls[0].status == "denied"
            assert [c.tool for c in host.confirmations] == ["query"]
            assert running.stop().session_id == "s1"
            seen = host.user_text()
            for piece in (
                "added docs", "MCP server docs: 1 tools", "Server: docs", "turn text", "bye"
            ):
                assert piece in seen
            assert secrets.found_in(seen) == []
            assert secrets.found_in("x " + token) == ["text: secret tok (raw)"]
        """,
    )
    run(sandbox).assert_outcomes(passed=1)


def test_a_hanging_client_fails_its_case_and_the_run_goes_on(sandbox: pytest.Pytester) -> None:
    _case(
        sandbox,
        """
        @pytest.mark.mcphc_requirements("APR-1")
        def test_hang(host):
            import fakeclient
            fakeclient.BLOCK.clear()  # hangs again if it runs again (a starved first attempt)
            running = host.start()
            try:
                running.ask("hang")
            finally:
                import fakeclient
                fakeclient.BLOCK.set()

        @pytest.mark.mcphc_requirements("APR-1")
        def test_after():
            pass
        """,
    )
    result = run(sandbox, "--mcphc-timeout-scale", "0.02")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*did not return from ask() within*"])


def test_case_dirs_are_removed_after_the_case(sandbox: pytest.Pytester) -> None:
    _case(
        sandbox,
        """
        import pathlib
        ROOTS = []

        @pytest.mark.mcphc_requirements("APR-1")
        def test_a(case, home):
            assert home.is_dir() and (home.stat().st_mode & 0o777) == 0o700
            ROOTS.append(case.root)
            raise AssertionError("fails on purpose")

        @pytest.mark.mcphc_requirements("APR-1")
        def test_b():
            assert ROOTS and not ROOTS[0].exists()
        """,
    )
    run(sandbox).assert_outcomes(passed=1, failed=1)


COUNTING_CLIENT = textwrap.dedent(
    """
    import os
    from fakeclient import FakeAdapter

    class Counting(FakeAdapter):
        def describe(self):
            with open(os.environ["DESCRIBE_LOG"], "a") as f:
                f.write(f"{os.getpid()}\\n")
            if os.environ.get("DESCRIBE_FAILS"):
                raise RuntimeError("the host's version file is missing")
            return super().describe()
    """
)

PROFILED_CASES = """
@pytest.mark.mcphc_requirements("SYNC-1")
@pytest.mark.mcphc_profile("verified-add")
def test_a():
    pass

@pytest.mark.mcphc_requirements("SYNC-1")
@pytest.mark.mcphc_profile("verified-add")
def test_b():
    pass

@pytest.mark.mcphc_requirements("CFG-1")
@pytest.mark.mcphc_needs_cancel
def test_c():
    pass
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one", "xdist"])
def test_describe_is_asked_once_per_run(sandbox, monkeypatch, workers) -> None:
    sandbox.makepyfile(countingclient=COUNTING_CLIENT)
    log = sandbox.path / "describe.log"
    monkeypatch.setenv("DESCRIBE_LOG", str(log))
    _case(sandbox, PROFILED_CASES)
    result = sandbox.runpytest_subprocess(
        *PLUGIN, "--mcphc-client", "countingclient:Counting", "-p", "no:randomly", *workers
    )
    result.assert_outcomes(passed=2, skipped=1)
    assert len(log.read_text().splitlines()) == 1


def test_a_client_that_cannot_describe_itself_stops_the_run_with_one_line(
    sandbox, monkeypatch
) -> None:
    sandbox.makepyfile(countingclient=COUNTING_CLIENT)
    log = sandbox.path / "describe.log"
    monkeypatch.setenv("DESCRIBE_LOG", str(log))
    monkeypatch.setenv("DESCRIBE_FAILS", "1")
    _case(sandbox, PROFILED_CASES)
    result = sandbox.runpytest_subprocess(
        *PLUGIN, "--mcphc-client", "countingclient:Counting", "-p", "no:randomly"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert errors == [
        "ERROR: mcp-host-conformance: the client could not describe itself: "
        "the host's version file is missing"
    ]
    assert "passed" not in result.stdout.str()
    assert len(log.read_text().splitlines()) == 1


@pytest.mark.parametrize("per_case", [False, True])
def test_restarted_hosts_are_shared_by_the_run_or_one_per_case(
    sandbox: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, per_case: bool
) -> None:
    """`restarted_host()` drives the client from one process the run's cases share, or (with
    MCP_HOST_CONFORMANCE_RESTART_PER_CASE, the self-test's traced runs) from one of each
    case's own, ended with the case."""
    from mcp_host_conformance.harness.run import fresh_process

    monkeypatch.setenv("PYTHONPATH", str(sandbox.path))  # the restarted host imports the fake
    monkeypatch.setenv(fresh_process.PER_CASE_ENV, "1" if per_case else "0")
    pids = sandbox.path / "pids.txt"
    _case(
        sandbox,
        f"""
        import os

        PIDS = {str(pids)!r}

        def served_by(restarted_host):
            first, again = restarted_host(), restarted_host()
            assert first.adapter is again.adapter  # a case's restarts share one process
            first.adapter.describe()  # started now
            return first.adapter._process.popen.pid

        def alive(pid):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return False
            return True

        @pytest.mark.mcphc_requirements("SESS-3")
        def test_one(restarted_host):
            with open(PIDS, "a") as out:
                out.write(f"{{served_by(restarted_host)}}\\n")

        @pytest.mark.mcphc_requirements("SESS-3")
        def test_two(restarted_host):
            earlier = int(open(PIDS).read().split()[0])
            pid = served_by(restarted_host)
            assert (pid != earlier) == {per_case!r}
            assert alive(earlier) == (not {per_case!r})  # a case's own ended with it
            with open(PIDS, "a") as out:
                out.write(f"{{pid}}\\n")
        """,
    )
    result = run(sandbox)
    result.assert_outcomes(passed=2)
    first, second = (int(pid) for pid in pids.read_text().split())
    assert (first != second) is per_case


HOSTILE_CLIENT = textwrap.dedent(
    """
    from mcp_host_conformance.harness.contract.adapter import Description
    from fakeclient import FakeAdapter

    class Hostile(FakeAdapter):
        def describe(self):
            return Description("x\\nAPR-1\\n\\x1b[2J", "1.0\\x1b[31m\\u2028", frozenset({"p\\nq"}))
    """
)


def test_a_client_s_name_reaches_the_header_and_reasons_on_one_line(sandbox) -> None:
    """The name and version a client gives itself are printed with their line breaks and
    escape sequences shown, never sent to the terminal as they are."""
    sandbox.makepyfile(hostileclient=HOSTILE_CLIENT)
    _case(sandbox, PROFILED_CASES)
    result = sandbox.runpytest_inprocess(
        *PLUGIN, "--mcphc-client", "hostileclient:Hostile", "-p", "no:randomly", "-rs"
    )
    text = result.stdout.str()
    assert "\x1b" not in text and "\u2028" not in text
    assert "APR-1" not in result.stdout.lines, "a line of its own, made by the client's name"
    result.stdout.fnmatch_lines(
        [
            "mcp-host-conformance: client x\\x0aAPR-1\\x0a\\x1b[[]2J 1.0\\x1b[[]31m<U+2028> "
            "(profiles: p\\x0aq;*",
            "*not applicable: x\\x0aAPR-1\\x0a\\x1b[[]2J cannot cancel a call*",
        ]
    )
