"""mcp_host_conformance.harness.cases.pty_session: a command in a pseudo-terminal,
typed into at its prompt (CRED-5)."""

from __future__ import annotations

import sys
import time

from mcp_host_conformance.harness.cases.pty_session import (
    fill_template,
    run_in_terminal,
    terminal_environ,
)

SECRET = "typed-Zq8v3Kx1"


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def run(tmp_path, argv, **bounds):
    options = {"prompt_bound": 10.0, "settle": 0.3, "end_bound": 10.0} | bounds
    return run_in_terminal(
        argv, answer=SECRET, env=terminal_environ(tmp_path), cwd=tmp_path, **options
    )


def test_fill_template_replaces_placeholders_only():
    template = ["host", "add", "{name}", "--url={url}", "--header", "{header}", "{other}"]
    assert fill_template(template, name="docs", url="http://h/mcp", header="X-Key") == [
        "host", "add", "docs", "--url=http://h/mcp", "--header", "X-Key", "{other}",
    ]  # fmt: skip


def test_terminal_environ_sets_home_and_drops_xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", "/elsewhere")
    environ = terminal_environ(tmp_path, {"EXTRA": "1"})
    assert environ["HOME"] == str(tmp_path) and environ["EXTRA"] == "1"
    assert not any(k.startswith("XDG_") for k in environ)


def test_hidden_input_is_not_shown(tmp_path):
    code = "import getpass; v = getpass.getpass('Value: '); print('got', len(v))"
    result = run(tmp_path, python(code))
    assert result.prompted and result.typed and result.echo_off_when_typed
    assert result.status == 0
    assert SECRET not in result.shown and f"got {len(SECRET)}" in result.shown


def test_plain_input_is_echoed(tmp_path):
    result = run(tmp_path, python("v = input('Value: '); print('got', len(v))"), settle=0.1)
    assert result.status == 0 and result.echo_off_when_typed is False
    assert SECRET in result.shown


def test_the_child_has_the_pty_as_controlling_terminal(tmp_path):
    code = "import os; open('/dev/tty', 'w').write('tty ok\\n'); input(); print(os.getcwd())"
    result = run(tmp_path, python(code))
    assert result.status == 0 and "tty ok" in result.shown and str(tmp_path) in result.shown


def test_a_silent_command_is_not_typed_into(tmp_path):
    began = time.monotonic()
    result = run(
        tmp_path, python("import sys; sys.stdin.readline()"), prompt_bound=0.3, end_bound=0.2
    )
    assert not result.prompted and not result.typed and result.status is None  # killed
    assert time.monotonic() - began < 5


def test_a_command_that_never_ends_is_killed(tmp_path):
    result = run(tmp_path, python("input('Value: '); import time; time.sleep(60)"), end_bound=0.3)
    assert result.typed and result.status is None


def test_a_command_that_fails_early_reports_its_status(tmp_path):
    result = run(tmp_path, python("import sys; print('usage: nope'); sys.exit(2)"))
    assert result.status == 2 and "usage: nope" in result.shown
