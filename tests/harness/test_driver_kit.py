"""harness/contract/driver_kit.py: the driver side in one file of the standard library.

A host author copies the file beside a driver script in the host's own environment: so the
kit is copied into a temporary folder with a small driver of a fake host built on it, and
that driver runs with `python -S` (no site-packages: the standard library alone) under the
harness's own `DriverAdapter`, the side every `--client-cmd` run uses. The file must also
stay importable by Python 3.9 (its grammar) and import nothing outside the standard library.
"""

from __future__ import annotations

import ast
import shlex
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from mcp_host_conformance.harness.contract import driver_kit
from mcp_host_conformance.harness.contract.adapter import (
    AdapterError,
    CallResult,
    Confirmation,
    Description,
    HttpServer,
    ServerStatus,
    Shown,
    StartOptions,
    StdioServer,
    Stopped,
)
from mcp_host_conformance.harness.run.driver import DriverAdapter

KIT = Path(driver_kit.__file__)

FAKE_HOST_DRIVER = textwrap.dedent(
    """
    import json
    import os
    import threading

    import driver_kit as kit


    class Session:
        def __init__(self, options, servers):
            self.options = options
            self.statuses = [
                kit.server_status(n, True, 1, s["url"], line=f"MCP server {n}: 1 tools")
                for n, s in servers.items()
            ]
            self.text = "\\n".join(s["line"] for s in self.statuses)
            self.cancelled = threading.Event()

        def ask(self, question, approve, acknowledge):
            print("a host that prints on stdout breaks nothing")
            if question == "wait":
                self.cancelled.wait(30)
                return kit.turn(True, answer="cancelled" if self.cancelled.is_set() else "late")
            if question == "fail":
                raise RuntimeError("the model service is down")
            prompt = kit.confirmation(
                "docs", "http://x/mcp", "query", '{"q": 1}', "careful", "Allow?"
            )
            answer = approve(prompt)
            acked = acknowledge("it may have run") if question == "ack" else None
            status = "completed" if answer == "y" else "denied"
            return kit.turn(
                True,
                confirmations=[prompt],
                calls=[kit.call_result("mcp_docs_query", status, f"typed {answer!r}")],
                acknowledgements=["it may have run"] if acked is not None else [],
                answer=f"acknowledged {acked}",
                text="turn",
            )

        def cancel(self):
            self.cancelled.set()

        def stop(self):
            return kit.stopped("s-1", [os.path.join(self.options["home"], "session.jsonl")], "bye")


    class FakeHost(kit.Driver):
        def __init__(self):
            self.servers = {}

        def describe(self):
            return kit.description("fake-kit-host", "1.0", profiles=["pinning"], can_cancel=True)

        def add_server(self, home, server):
            if server["name"] == "refused":
                raise ValueError("no such scheme")
            self.servers[server["name"]] = server
            return kit.shown(f"added {server['name']} ({server['type']})", [home + "/cfg.json"])

        def remove_server(self, home, name):
            self.servers.pop(name, None)
            return kit.shown(f"removed {name}")

        def list_servers(self, home):
            return kit.shown(json.dumps(sorted(self.servers)))

        def start(self, options):
            return Session(options, dict(self.servers))


    raise SystemExit(kit.serve(FakeHost()))
    """
)


def test_the_kit_is_one_file_of_the_standard_library_for_python_3_9():
    tree = ast.parse(KIT.read_text("utf-8"), feature_version=(3, 9))
    imported = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    outside = {name for name in imported if name.split(".")[0] not in sys.stdlib_module_names}
    assert outside == set(), outside
    assert driver_kit.PROTOCOL == "mcp-host-conformance-driver/1"  # the harness's own


@pytest.fixture
def driver(tmp_path: Path):
    folder = tmp_path / "host"
    folder.mkdir()
    shutil.copy(KIT, folder / "driver_kit.py")  # as a host author copies it
    (folder / "conformance_driver.py").write_text(FAKE_HOST_DRIVER)
    command = (
        f"{shlex.quote(sys.executable)} -S {shlex.quote(str(folder / 'conformance_driver.py'))}"
    )
    adapter = DriverAdapter(command, timeout=20)
    yield adapter
    adapter.close()


def _options(tmp_path: Path) -> StartOptions:
    return StartOptions(
        home=tmp_path,
        cwd=tmp_path,
        model_url="http://127.0.0.1:9/v1",
        model_key="k",
        connect_timeout=1.0,
        call_timeout=2.0,
    )


def test_a_driver_on_the_kit_speaks_the_protocol_the_harness_drives(driver, tmp_path):
    assert driver.describe() == Description(
        "fake-kit-host", "1.0", frozenset({"pinning"}), can_cancel=True
    )
    added = driver.add_server(tmp_path, HttpServer("docs", "http://x/mcp", {"A": "b"}))
    assert added == Shown("added docs (http)", (tmp_path / "cfg.json",))
    driver.add_server(tmp_path, StdioServer("files", "/bin/srv", ("a",), {"T": "1"}))
    assert driver.list_servers(tmp_path).text == '["docs", "files"]'
    assert driver.remove_server(tmp_path, "files").text == "removed files"
    with pytest.raises(AdapterError, match="ValueError: no such scheme"):
        driver.add_server(tmp_path, HttpServer("refused", "ftp://x"))

    session = driver.start(_options(tmp_path))
    assert list(session.statuses) == [
        ServerStatus("docs", True, 1, "http://x/mcp", None, "MCP server docs: 1 tools")
    ]
    seen: list[Confirmation] = []
    granted = session.ask("q", lambda c: seen.append(c) or "y", lambda prompt: True)
    assert seen == [Confirmation("docs", "http://x/mcp", "query", '{"q": 1}', "careful", "Allow?")]
    assert granted.calls == (CallResult("mcp_docs_query", "completed", "typed 'y'"),)
    denied = session.ask("ack", lambda c: "", lambda prompt: prompt == "it may have run")
    assert denied.calls[0].status == "denied" and denied.answer == "acknowledged True"
    assert denied.acknowledgements == ("it may have run",)
    with pytest.raises(AdapterError, match="RuntimeError: the model service is down"):
        session.ask("fail", lambda c: "y", lambda prompt: True)
    assert session.stop() == Stopped("s-1", (tmp_path / "session.jsonl",), "bye")


def test_a_turn_in_flight_is_cancelled(driver, tmp_path):
    import threading

    session = driver.start(_options(tmp_path))
    result: list[str] = []
    asking = threading.Thread(
        target=lambda: result.append(session.ask("wait", lambda c: "y", lambda p: True).answer)
    )
    asking.start()
    session.cancel()  # before or during the turn: the host's turn ends cancelled either way
    asking.join(30)
    assert result == ["cancelled"]
    session.stop()


def test_a_driver_without_an_operation_says_so(tmp_path):
    folder = tmp_path / "host"
    folder.mkdir()
    shutil.copy(KIT, folder / "driver_kit.py")
    (folder / "d.py").write_text(
        "import driver_kit as kit\n"
        "class D(kit.Driver):\n"
        "    def describe(self):\n"
        "        return kit.description('half', '0')\n"
        "raise SystemExit(kit.serve(D()))\n"
    )
    adapter = DriverAdapter(f"{shlex.quote(sys.executable)} -S {folder / 'd.py'}", timeout=20)
    try:
        assert adapter.describe().name == "half"
        with pytest.raises(AdapterError, match="the driver has no list_servers"):
            adapter.list_servers(tmp_path)
    finally:
        adapter.close()
