"""The pure checks of scripts/flake_check.py (the script itself is run by hand)."""

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "flake_check.py"
_spec = importlib.util.spec_from_file_location("flake_check", _PATH)
flake_check = importlib.util.module_from_spec(_spec)
sys.modules["flake_check"] = flake_check  # dataclasses look their module up there
_spec.loader.exec_module(flake_check)

TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:A3F1 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0
   1: 0100007F:A3F2 0100007F:0050 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0
   2: 0A00000A:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 333 1 0
"""


def test_an_outcome_that_varies_or_goes_missing_is_flaky():
    runs = [
        {"a": "passed", "b": "passed", "c": "info"},
        {"a": "failed", "c": "info"},
        {"a": "passed", "b": "passed", "c": "info"},
    ]
    assert flake_check.flaky_cases(runs) == {
        "a": ["passed", "failed", "passed"],
        "b": ["passed", "missing", "passed"],
    }


def test_only_new_loopback_listeners_count():
    now = flake_check.listening_sockets([TCP])
    assert now == {"111": "127.0.0.1:41969", "333": "10.0.0.10:80"}
    assert flake_check.new_listeners({}, now) == {"111": "127.0.0.1:41969"}
    assert flake_check.new_listeners({"111": "127.0.0.1:41969"}, now) == {}


def test_pytest_basetemp_is_not_a_leftover():
    assert flake_check.leftover_entries(["pytest-of-root", "mcphc-x", "mock-tls-y"]) == [
        "mcphc-x",
        "mock-tls-y",
    ]


def test_descendants_skip_zombies_and_strangers():
    table = {
        10: ("S", 1, "me"),
        11: ("S", 10, "child"),
        12: ("Z", 10, "dead"),
        13: ("S", 11, "grandchild"),
        20: ("S", 1, "other"),
    }
    assert flake_check.descendants(10, table) == {11: "child", 13: "grandchild"}
