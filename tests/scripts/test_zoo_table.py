"""scripts/zoo_table.py: the broken-client table of docs/broken-clients.md,
from mcp_host_conformance.zoo.BROKEN."""

import importlib.util
import sys
from pathlib import Path

import mcp_host_conformance.zoo

_ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("zoo_table", _ROOT / "scripts" / "zoo_table.py")
zoo_table = importlib.util.module_from_spec(_spec)
sys.modules["zoo_table"] = zoo_table
_spec.loader.exec_module(zoo_table)


def test_rows_follow_the_catalog_and_list_the_whole_fails_set():
    found = zoo_table.rows(mcp_host_conformance.zoo.BROKEN)
    assert [row[0] for row in found].count("echoes-typed-secret") == 1
    assert len(found) == len(mcp_host_conformance.zoo.BROKEN)
    targets = [row[1] for row in found]
    assert (
        targets.index("CFG-1")
        < targets.index("DISC-1")
        < targets.index("CRED-5")
        < targets.index("NET-1")
    )
    follows = dict((row[0], row[2]) for row in found)["follows-redirects"]
    assert follows == "APR-1, RETRY-1, CRED-1, NET-3"  # catalog order, not alphabetical


def test_table_escapes_pipes():
    text = zoo_table.table([("x", "CFG-1", "CFG-1", "a | b\nc")])
    assert text.splitlines()[-1] == "| `x` | CFG-1 | CFG-1 | a \\| b c |"


def test_the_doc_holds_the_current_table():
    doc = (_ROOT / "docs" / "broken-clients.md").read_text()
    assert zoo_table.table(zoo_table.rows(mcp_host_conformance.zoo.BROKEN)) in doc, (
        "docs/broken-clients.md is out of date: regenerate its table with scripts/zoo_table.py"
    )
