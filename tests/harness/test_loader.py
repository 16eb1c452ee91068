"""Loading the client under test by module:attr, entry point, environment, or driver command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types

import pytest

from mcp_host_conformance.harness.contract.adapter import Description
from mcp_host_conformance.harness.run import loader
from mcp_host_conformance.harness.run.loader import LoadError, load_adapter


class GoodAdapter:
    def describe(self):
        return Description("good", "1")

    def add_server(self, home, server): ...

    def remove_server(self, home, name): ...

    def list_servers(self, home): ...

    def start(self, options): ...


INSTANCE = GoodAdapter()


def make_adapter() -> GoodAdapter:
    return GoodAdapter()


class NotAnAdapter:
    def describe(self): ...


@pytest.fixture(autouse=True)
def fake_module(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("fake_adapters")
    module.GoodAdapter = GoodAdapter
    module.INSTANCE = INSTANCE
    module.make_adapter = make_adapter
    module.NotAnAdapter = NotAnAdapter
    monkeypatch.setitem(sys.modules, "fake_adapters", module)


@pytest.mark.parametrize("attr", ["GoodAdapter", "INSTANCE", "make_adapter"])
def test_module_attr_gives_an_adapter(attr: str) -> None:
    adapter = load_adapter(f"fake_adapters:{attr}")
    assert adapter.describe().name == "good"


def test_an_adapter_instance_is_used_as_is() -> None:
    assert load_adapter("fake_adapters:INSTANCE") is INSTANCE


def test_missing_operations_are_named() -> None:
    with pytest.raises(LoadError, match="missing add_server, remove_server, list_servers, start"):
        load_adapter("fake_adapters:NotAnAdapter")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_module_xyz:A", "cannot import module 'no_such_module_xyz'"),
        ("fake_adapters:Missing", "has no attribute 'Missing'"),
        ("fake_adapters:", "expected module:attr"),
        ("no-such-entry-point", "no such client"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(LoadError, match=message):
        load_adapter(spec)


def test_client_and_client_cmd_together_are_refused() -> None:
    with pytest.raises(LoadError, match="not both"):
        load_adapter("fake_adapters:GoodAdapter", "./driver")


def test_entry_point_name_is_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    class Point:
        name = "mine"
        value = "fake_adapters:GoodAdapter"

        def load(self):
            return GoodAdapter

    monkeypatch.setattr(loader, "adapter_entry_points", lambda: {"mine": Point()})
    assert load_adapter("mine").describe().name == "good"


def test_environment_chooses_the_client_when_no_option() -> None:
    adapter = load_adapter(environ={loader.CLIENT_ENV: "fake_adapters:GoodAdapter"})
    assert isinstance(adapter, GoodAdapter)


def test_reference_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    monkeypatch.setattr(loader, "resolve_client", lambda spec: seen.append(spec) or GoodAdapter)
    load_adapter(environ={})
    assert seen == ["reference"]


def test_client_cmd_gives_the_driver_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    driver = types.ModuleType("mcp_host_conformance.harness.run.driver")

    class DriverAdapter:
        def __init__(self, command: str, *, timeout_scale: float = 1.0) -> None:
            self.command = command
            self.timeout_scale = timeout_scale

    driver.DriverAdapter = DriverAdapter
    monkeypatch.setitem(sys.modules, "mcp_host_conformance.harness.run.driver", driver)
    assert load_adapter(None, "./my-driver --flag").command == "./my-driver --flag"
    assert load_adapter(environ={loader.CLIENT_CMD_ENV: "./d"}).command == "./d"
    assert load_adapter(None, "./d", timeout_scale=3).timeout_scale == 3


def test_an_unknown_name_is_one_line_with_a_suggestion_and_no_zoo_listing() -> None:
    with pytest.raises(LoadError) as caught:
        load_adapter("referense")
    text = str(caught.value)
    assert "\n" not in text and "did you mean 'reference'" in text
    assert "connects-on-add" not in text, "the zoo's names are not listed one by one"


def test_an_unparsable_driver_command_is_a_load_error() -> None:
    with pytest.raises(LoadError, match="cannot parse the driver command"):
        load_adapter(None, "driver 'unclosed")


def test_a_restarted_host_s_process_skips_httpx_s_command_line_client():
    """httpx imports its command-line client (click, pygments) when they are installed, ~13 ms
    in each process that imports it; the package marks that module absent before httpx loads."""
    code = (
        "from mcp_host_conformance.harness.run.loader import load_adapter\n"
        "import sys, httpx\n"
        "load_adapter('reference')\n"
        "print(sorted(m for m in ('click', 'pygments', 'httpx._main') if sys.modules.get(m)))\n"
        "print(httpx.AsyncClient.__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["[]", "AsyncClient"]


@pytest.mark.parametrize(
    ("client", "client_cmd", "environ", "message"),
    [
        ("", None, {}, "--client is empty (an unset variable?)"),
        (None, "", {}, "--client-cmd is empty (an unset variable?)"),
        ("  ", None, {}, "--client is empty"),
        (None, None, {loader.CLIENT_ENV: ""}, "$MCP_HOST_CONFORMANCE_CLIENT is set but empty"),
        (None, None, {loader.CLIENT_CMD_ENV: " "}, "$MCP_HOST_CONFORMANCE_CLIENT_CMD is set but"),
        (None, None, {loader.CLIENT_ENV: "a", loader.CLIENT_CMD_ENV: "b"}, "are both set"),
        ("", "./d", {}, "not both"),
    ],
    ids=["client", "client-cmd", "blank", "env", "env-cmd", "both-env", "both"],
)
def test_a_client_named_empty_is_refused_never_the_reference_host(
    client, client_cmd, environ, message
) -> None:
    """An unset variable in a CI script gives an empty option: testing the reference host
    instead would be a green run for the wrong host."""
    with pytest.raises(loader.ClientChoiceError, match=re.escape(message)) as caught:
        load_adapter(client, client_cmd, environ=environ)
    assert "\n" not in str(caught.value)


def test_an_option_is_not_refused_for_an_empty_variable() -> None:
    adapter = load_adapter("fake_adapters:GoodAdapter", environ={loader.CLIENT_CMD_ENV: ""})
    assert isinstance(adapter, GoodAdapter)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("raise RuntimeError('no config file')", "RuntimeError: no config file"),
        ("import sys\nsys.exit(3)", "it called sys.exit(3)"),
        ("raise KeyError", "KeyError"),
    ],
    ids=["raises", "exits", "bare"],
)
def test_a_module_that_fails_while_imported_is_a_load_error_naming_it(
    body, said, tmp_path, monkeypatch
) -> None:
    (tmp_path / "failing_host_module.py").write_text(body + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "failing_host_module", raising=False)
    with pytest.raises(LoadError) as caught:
        load_adapter("failing_host_module:Adapter")
    text = str(caught.value)
    assert "importing module 'failing_host_module' failed" in text and said in text


def test_a_factory_that_fails_is_a_load_error(monkeypatch) -> None:
    def broken():
        raise SystemExit("no licence")

    monkeypatch.setattr(sys.modules["fake_adapters"], "broken", broken, raising=False)
    with pytest.raises(LoadError, match="making the adapter failed: it called sys.exit"):
        load_adapter("fake_adapters:broken")


def test_a_restarted_host_is_the_client_the_run_chose(monkeypatch) -> None:
    """With --client given and the command variable set, the run tests the option's client:
    so does its restarted host (it took the variable's command)."""
    from mcp_host_conformance.harness.run.fresh_process import fresh_process_command

    class Config:
        def getoption(self, name):
            return {
                "mcphc_client": "fake_adapters:GoodAdapter",
                "mcphc_client_cmd": None,
                "mcphc_client_path": ["adapters"],
            }[name]

    monkeypatch.setenv(loader.CLIENT_CMD_ENV, "./some-driver")
    command = fresh_process_command(Config())
    assert "fake_adapters:GoodAdapter" in command and "some-driver" not in command
    assert f"--client-path {os.path.abspath('adapters')} " in command  # where it imports from
