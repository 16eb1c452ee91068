"""`python -m mcp_host_conformance.mocks`: list, serve with one line per mock,
clean stop, clear errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import httpx
import pytest

from mcp_host_conformance.mocks.named import CATALOG

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(*args: str, timeout: float = 10) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_host_conformance.mocks", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_list_names_every_mock_with_a_summary():
    out = _run("list")
    assert out.returncode == 0
    lines = out.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == list(CATALOG)
    assert all(len(line.split()) > 2 for line in lines)


def test_help_explains():
    out = _run("--help")
    assert out.returncode == 0 and "serve" in out.stdout and "__journal" in out.stdout


@pytest.mark.parametrize(
    "args, needle",
    [
        (("serve", "no-such-mock"), "no-such-mock"),
        (("serve",), "nothing to serve"),
        (("serve", "--bogus"), "--bogus"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args, needle):
    out = _run(*args)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and needle in out.stderr and out.stdout == ""


@pytest.mark.parametrize(
    "content, suffix", [('{"tools": 3}', ".json"), ("tools = [", ".toml"), ("{oops", ".json")]
)
def test_malformed_spec_file_is_one_line_naming_it(tmp_path, content, suffix):
    path = tmp_path / f"bad{suffix}"
    path.write_text(content)
    out = _run("serve", "--spec", str(path))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "bad" in out.stderr


def _serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mcp_host_conformance.mocks", "serve", "--json", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def test_serve_json_then_sigterm_leaves_nothing(tmp_path):
    proc = _serve("healthy")
    try:
        described = json.loads(proc.stdout.readline())
        assert described["name"] == "healthy" and described["url"].startswith("http://127.0.0.1:")
        reply = httpx.post(
            described["url"], json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        )
        assert reply.status_code == 200
        journal = httpx.get(described["journal"]).json()
        assert [e["method"] for e in journal if e["kind"] == "rpc"] == ["initialize"]
        assert _children(proc.pid) == []
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(5) == 0
        with pytest.raises(httpx.ConnectError):
            httpx.get(described["journal"])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_serve_spec_file_and_stdio_lines(tmp_path):
    spec = tmp_path / "mine.toml"
    spec.write_text('name = "mine"\n[[tools]]\nname = "t"\n')
    proc = _serve("stdio", "--spec", str(spec))
    try:
        stdio = json.loads(proc.stdout.readline())
        mine = json.loads(proc.stdout.readline())
        assert isinstance(stdio["command"], list)
        assert any(a.endswith("stdio_entry.py") and os.path.exists(a) for a in stdio["command"])
        assert mine["name"] == "mine" and mine["url"].endswith("/mcp")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.parametrize("args", [("list",), ("serve", "--json", "healthy", "responses")])
def test_a_reader_that_goes_away_gets_a_quiet_exit(args):
    """`mcp-mocks list | head -1`: no BrokenPipeError traceback, exit 0, nothing left."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mcp_host_conformance.mocks", *args],
            cwd=ROOT,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 0 and proc.stderr == ""
