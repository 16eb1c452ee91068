"""The official framework's CLI run once per request in one Node process
(harness/data/official_runner.mjs, official_client._Runner), with a stand-in CLI: each
request sees its own arguments, environment, directory and a fresh CLI module, and a CLI
that hangs, throws or kills the runner costs that request only."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from mcp_host_conformance.harness.oauth import official_client
from mcp_host_conformance.harness.oauth.official_client import _Runner
from mcp_host_conformance.mocks.stdio_server import process_state

# What the stand-in does is named by its first argument, as the framework's subcommands are.
FAKE_CLI = """
let calls = 0;  // module state: 1 on every request if the module runs afresh
calls += 1;
const [what, ...rest] = process.argv.slice(2);
if (what === "echo") {
  console.log(JSON.stringify({
    args: rest, calls, pid: process.pid, cwd: process.cwd(),
    mine: process.env.RUNNER_TEST_MINE ?? null, theirs: process.env.RUNNER_TEST_THEIRS ?? null,
  }));
  console.error("to stderr");
  await new Promise((resolve) => setTimeout(resolve, 1));
  process.exit(Number(rest[0] ?? 0));
  // In the runner, exit ends the request and the code goes on: what it writes now, and what
  // a timer set now writes later (during the next request), is not the request's output.
  // (A timer set before the exit could fire first on a loaded machine.)
  console.log("OUTPUT AFTER THE EXIT");
  setTimeout(() => console.log("LATE OUTPUT AFTER THE EXIT"), 10);
} else if (what === "hang") {
  setInterval(() => {}, 1000);
} else if (what === "throw") {
  setTimeout(() => { throw new Error("the CLI broke"); }, 1);
} else if (what === "die") {
  process.kill(process.pid, "SIGKILL");
}
"""


def _node() -> str:
    cli = official_client.framework()
    if cli is not None:
        return cli[0]
    found = shutil.which("node")
    if found is None:
        pytest.skip("no Node here")
    return found


@pytest.fixture
def runner(tmp_path):
    cli = tmp_path / "fake-cli.mjs"
    cli.write_text(FAKE_CLI)
    made = _Runner([_node(), str(cli)])
    yield made
    made._stop()


def _echo(runner: _Runner, cwd: Path, env: dict[str, str], *args: str) -> tuple[int | None, dict]:
    status, output = runner.run(["echo", *args], env, cwd, bound=60)
    lines = output.splitlines()
    return status, {"seen": json.loads(lines[0]), "rest": lines[1:]}


def test_one_process_runs_each_request_afresh_in_its_own_world(runner, tmp_path):
    first_dir, second_dir = tmp_path / "a", tmp_path / "b"
    first_dir.mkdir()
    second_dir.mkdir()
    status, first = _echo(runner, first_dir, {"RUNNER_TEST_MINE": "one"}, "3", "x y")
    assert status == 3
    assert first["seen"]["args"] == ["3", "x y"]
    assert first["seen"]["cwd"] == str(first_dir)
    assert first["seen"]["mine"] == "one"
    assert first["rest"] == ["to stderr"]  # stdout and stderr, and nothing written later
    status, second = _echo(runner, second_dir, {"RUNNER_TEST_THEIRS": "two"}, "0")
    assert status == 0
    assert second["seen"]["pid"] == first["seen"]["pid"]  # the same Node process
    assert second["seen"]["calls"] == 1  # the CLI module ran afresh
    assert second["seen"]["cwd"] == str(second_dir)
    assert second["seen"]["mine"] is None and second["seen"]["theirs"] == "two"
    assert second["rest"] == ["to stderr"]  # the first one's late output went nowhere


def test_a_hanging_cli_is_bounded_and_the_next_request_gets_a_new_runner(runner, tmp_path):
    _, before = _echo(runner, tmp_path, {})
    status, output = runner.run(["hang"], {}, tmp_path, bound=2)
    assert status is None and output == ""
    status, after = _echo(runner, tmp_path, {})
    assert status == 0
    assert after["seen"]["pid"] != before["seen"]["pid"]


def test_a_cli_that_throws_fails_its_request_only(runner, tmp_path):
    status, output = runner.run(["throw"], {}, tmp_path, bound=60)
    assert status == 1 and "the CLI broke" in output
    assert _echo(runner, tmp_path, {})[0] == 0


def test_a_runner_that_dies_is_reported_and_replaced(runner, tmp_path):
    status, output = runner.run(["die"], {}, tmp_path, bound=60)
    assert status == 1 and "ended unexpectedly" in output
    assert _echo(runner, tmp_path, {})[0] == 0


def test_the_runner_ends_with_its_caller(tmp_path):
    """Its stdin is all that keeps it: a run's worker ends with os._exit, and its runner goes."""
    cli = tmp_path / "fake-cli.mjs"
    cli.write_text(FAKE_CLI)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        try:
            made = _Runner([_node(), str(cli)])
            _, seen = _echo(made, tmp_path, {})
            (tmp_path / "runner-pid").write_text(str(seen["seen"]["pid"]))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    runner_pid = int((tmp_path / "runner-pid").read_text())
    deadline = time.monotonic() + 30
    while process_state(runner_pid) == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_state(runner_pid) != "running"


def test_an_interrupted_case_ends_its_scenario(runner, tmp_path, monkeypatch):
    """As a child process of the case would be: Ctrl-C in the wait kills the runner."""
    _, seen = _echo(runner, tmp_path, {})
    real_join = threading.Thread.join

    def interrupted(self, timeout=None):
        if self.daemon and timeout == 60:
            raise KeyboardInterrupt
        return real_join(self, timeout)

    monkeypatch.setattr(threading.Thread, "join", interrupted)
    with pytest.raises(KeyboardInterrupt):
        runner.run(["hang"], {}, tmp_path, bound=60)
    monkeypatch.undo()
    assert runner.process is None
    assert process_state(seen["seen"]["pid"]) == "gone"
