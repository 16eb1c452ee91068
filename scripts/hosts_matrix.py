#!/usr/bin/env python3
"""The conformance matrix of docs/hosts.md: requirement x host, from the hosts' JSON reports.

Usage:
    python scripts/hosts_matrix.py update              # every host, from its tox env's report
    python scripts/hosts_matrix.py snapshot KEY REPORT # one host, from any report of it
    python scripts/hosts_matrix.py render              # docs/hosts.md from the snapshots

Strategy: generated, never hand-edited. Each host's run (a tox env writes its report to
`.tox/<env>/tmp/report.json`) is reduced to a small snapshot, `docs/hosts/<key>.json`: the
client, the network the run had, every requirement's outcome, and one line per failing
case saying what the host did (the case's `actual`), with what is particular to the run or
the machine made general: ports, temporary directories, ids, timings, and the machine's own
paths (the interpreter becomes `python`, the checkout and the installed package relative
paths, any other absolute path its file name), so the page never carries where it was made.
The page is a pure function of the snapshots (`render`, which makes each line general again
for snapshots taken before a rule was added), and a test checks that the committed page is
that function of the committed snapshots, and that every snapshot agrees with its host's
expected-failures baseline, which CI holds each host to: when a host's behaviour changes,
its baseline has to change, and then its snapshot and this page must be regenerated.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_host_conformance.harness.verdicts.requirements import REQUIREMENTS
from mcp_host_conformance.harness.verdicts.safe_text import inline

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = ROOT / "docs" / "hosts"
PAGE = ROOT / "docs" / "hosts.md"
FAILING = ("failed", "expected_failure", "warning")
DID_LENGTH = 220


@dataclass(frozen=True)
class HostRun:
    key: str
    title: str
    env: str  # the tox env whose report describes it
    baseline: str | None  # its expected-failures file, relative to the repository
    note: str = ""  # what the report alone does not say (e.g. a case its CI run deselects)


HOSTS = (
    HostRun("reference", "Reference host", "conformance-inprocess", None),
    HostRun(
        "sdk-python",
        "Python SDK example",
        "example-sdk-python",
        "examples/sdk_python_host/expected-failures.txt",
    ),
    HostRun("ts", "TypeScript SDK example", "example-ts", "examples/ts-host/expected-failures.txt"),
    HostRun(
        "codex",
        "Codex CLI",
        "example-codex",
        "examples/codex/expected-failures.txt",
        note=(
            "STDIO-5's reap case is deselected in its CI run: Codex exits without reaping its "
            "stdio server in most runs (the server is handed to the harness, its subreaper) "
            "but reaps it first in about one in six, a race in its shutdown, so the case's "
            "verdict would flip between runs."
        ),
    ),
    HostRun(
        "openai-agents",
        "Agents SDK",
        "example-openai-agents",
        "examples/openai-agents/expected-failures.txt",
    ),
    HostRun(
        "pydantic-ai",
        "pydantic-ai",
        "example-pydantic-ai",
        "examples/pydantic-ai/expected-failures.txt",
    ),
    HostRun("opencode", "opencode", "example-opencode", "examples/opencode/expected-failures.txt"),
    HostRun(
        "fast-agent",
        "fast-agent",
        "example-fast-agent",
        "examples/fast-agent/expected-failures.txt",
    ),
)
CELLS = {
    "passed": "pass",
    "failed": "**FAIL**",
    "expected_failure": "**FAIL**",  # a SHOULD rule's: "warn" (see `_cell_of`)
    "warning": "warn",
    "info": "info",
    "not_applicable": "n/a",
    "not_observed": "not observed",
    "partial": "partial",
    "skipped": "-",
    "uncovered": "?",
}


# What changes from run to run (ports, temp dirs, ids, timings, markers) is normalised, so
# the page changes only when what a host does changes.
_VOLATILE = (
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),
    (re.compile(r"192\.0\.2\.1:\d+"), "192.0.2.1:PORT"),
    (re.compile(r"(\.invalid):\d+"), r"\1:PORT"),
    (re.compile(r"/(?:dev/shm|tmp)/\S*?mcphc-[^\s'\"]*"), "<case dir>"),
    (re.compile(r"\b(call|fc|msg|resp)_[0-9a-f]{16,}"), r"\1_…"),
    (re.compile(r"mcphc-tool-[0-9a-f]{16}"), "mcphc-tool-…"),
    (re.compile(r"\b\d+\.\d+ ?(s|seconds)\b"), r"N \1"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
)


# The machine's own paths. Not an HTTP request's path (`POST /moved/mcp`, `/.well-known/…`):
# an absolute path is only taken for the machine's when it starts at one of the directories
# where machines keep interpreters, checkouts, homes and temporary files.
_ANY_PATH = r"[^\s'\"]*"
_MACHINE_ROOTS = (
    "home|Users|root|tmp|var|opt|usr|work|workspace|private|nix|srv|mnt|builds|github|runner|"
    "snap|media|run|etc|lib|lib64|bin|sbin|Library|Applications|System|Volumes"
)
_MACHINE = (
    (re.compile(rf"{_ANY_PATH}/bin/python[0-9.]*(?![\w/.-])"), "python"),
    (re.compile(rf"(?<![\w.-]){_ANY_PATH}/(mcp_host_conformance/)"), r"\1"),
    (
        re.compile(rf"(?<![\w.:/-])/(?:{_MACHINE_ROOTS})(?:/[^\s'\"/]+)*/([^\s'\"/]+)"),
        r"\1",
    ),
    (re.compile(r"\b[A-Za-z]:\\(?:[^\s'\"\\]+\\)*([^\s'\"\\]+)"), r"\1"),
)


def _machine_free(line: str) -> str:
    """`line` without the generating machine's paths: the checkout's repository-relative,
    an interpreter `python`, the package wherever installed from `mcp_host_conformance/`
    on, any other absolute path under a machine's own directories its file name."""
    line = line.replace(f"{ROOT}{os.sep}", "")
    for pattern, replacement in _MACHINE:
        line = pattern.sub(replacement, line)
    return line


def _one_line(text: str) -> str:
    line = " ".join(str(text).split())
    for pattern, replacement in _VOLATILE:
        line = pattern.sub(replacement, line)
    line = _machine_free(line)
    return line if len(line) <= DID_LENGTH else line[: DID_LENGTH - 1] + "…"


def snapshot(report: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The part of a JSON report the matrix shows, for host `key`."""
    client = report.get("client") or {}
    failures = []
    for case in report.get("cases", []):
        if case.get("outcome") not in FAILING:
            continue
        did = case.get("actual") or next(iter((case.get("message") or "").splitlines()), "")
        failures.append(
            {
                "case": case["id"],
                "requirements": list(case.get("requirements", [])),
                "failed": list(case.get("failed_requirements") or case.get("requirements", [])),
                "outcome": case["outcome"],
                "did": _one_line(did),
            }
        )
    return {
        "host": key,
        "client": {"name": client.get("name"), "version": client.get("version")},
        "network": (report.get("environment") or {}).get("network"),
        "requirements": {
            rid: entry["outcome"] for rid, entry in report.get("requirements", {}).items()
        },
        "failures": sorted(failures, key=lambda f: f["case"]),
    }


def load_snapshots(where: Path = SNAPSHOTS) -> dict[str, dict[str, Any]]:
    found = {}
    for host in HOSTS:
        path = where / f"{host.key}.json"
        if path.exists():
            found[host.key] = json.loads(path.read_text("utf-8"))
    return found


def evidence_page(host: HostRun) -> Path | None:
    """A host's evidence page (written by hand), if it has one: each rule it fails, with the
    line of its own source or the journal excerpt that shows it. The reference host, which
    fails nothing, has none."""
    page = SNAPSHOTS / f"{host.key}.md"
    return page if host.baseline and page.exists() else None


def _title(host: HostRun) -> str:
    """The host's title, linked to its evidence page when it has one (page-relative)."""
    return f"[{host.title}](hosts/{host.key}.md)" if evidence_page(host) else host.title


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _label(text: object) -> str:
    """A client's own words (name, version) in the page: one line, bounded, no backtick that
    would end the code span, no bar that would end the cell."""
    return _cell(inline(text).replace("`", "'"))


def render(snapshots: Mapping[str, Mapping[str, Any]]) -> str:
    """docs/hosts.md from the snapshots (hosts in HOSTS order; missing ones left out)."""
    hosts = [h for h in HOSTS if h.key in snapshots]
    lines = [
        "# MCP hosts, rule by rule",
        "",
        "Generated by `scripts/hosts_matrix.py` from the JSON reports of the CI runs (one per",
        "host, `.tox/<env>/tmp/report.json`); do not edit by hand. Each column is a host run",
        "through the suite with its own defaults; `FAIL` is a MUST rule it breaks, `warn` a",
        "SHOULD rule, `partial` a rule some of whose cases could not be observed in that run,",
        "`-` a rule none of whose cases ran there. A host's name links to its evidence page:",
        "each rule it fails, with the line of the host's own source or the journal excerpt",
        "that shows it.",
        "",
        "| host | client | tox env | network |",
        "|---|---|---|---|",
    ]
    for host in hosts:
        shot = snapshots[host.key]
        client = shot["client"]
        lines.append(
            f"| {_title(host)} | `{_label(client['name'])}` {_label(client['version'])} | "
            f"`{host.env}` | {_label(shot.get('network') or 'unknown')} |"
        )
    lines += [
        "",
        "## The matrix",
        "",
        "| requirement | level | " + " | ".join(_title(h) for h in hosts) + " |",
        "|---|---|" + "---|" * len(hosts),
    ]
    for rid, requirement in REQUIREMENTS.items():
        if requirement.profile is not None:
            continue
        outcomes = [snapshots[h.key]["requirements"].get(rid, "uncovered") for h in hosts]
        cells = [
            "warn" if o == "expected_failure" and requirement.level == "SHOULD" else CELLS.get(o, o)
            for o in outcomes
        ]
        lines.append(f"| {rid} | {requirement.level} | " + " | ".join(cells) + " |")
    lines += ["", "## What each host did", ""]
    for host in hosts:
        shot = snapshots[host.key]
        client = shot["client"]
        lines.append(f"### {host.title} (`{_label(client['name'])}` {_label(client['version'])})")
        lines.append("")
        if host.note:
            lines += [host.note, ""]
        if evidence_page(host):
            lines += [
                f"Each failed rule with what shows it: [hosts/{host.key}.md](hosts/{host.key}.md).",
                "",
            ]
        if not shot["failures"]:
            lines.append("Every case passed.")
        for failure in shot["failures"]:
            ids = ", ".join(failure["requirements"])
            lines.append(f"- {ids} `{failure['case']}`: {_cell(_machine_free(failure['did']))}")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else ""
    if command == "snapshot" and len(args) == 3:
        key, report = args[1], Path(args[2])
        SNAPSHOTS.mkdir(exist_ok=True)
        shot = snapshot(json.loads(report.read_text("utf-8")), key)
        (SNAPSHOTS / f"{key}.json").write_text(json.dumps(shot, indent=2) + "\n", "utf-8")
    elif command == "update" and len(args) == 1:
        for host in HOSTS:
            report = ROOT / ".tox" / host.env / "tmp" / "report.json"
            if report.exists():
                main(["snapshot", host.key, str(report)])
            else:
                sys.stderr.write(f"hosts_matrix: no report for {host.key} ({report}); kept\n")
    elif command != "render" or len(args) != 1:
        sys.stderr.write(__doc__.split("Strategy:")[0])
        return 2
    PAGE.write_text(render(load_snapshots()) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
