"""Every canary a credential case plants stays out of what pytest captures and reports.

The credential cases run with a chatty plugin of this test's (`CHATTY`): whenever a case
searches for its canaries it logs each one at DEBUG, prints it to stdout and stderr, raw,
URL-encoded and base64-encoded, as a host or a library that logs its configuration would, and
writes it down for this test. With log capture at DEBUG, JUnit logging everything and every
report section shown (`-rA`), no form of any canary may appear in the run's output, its JUnit
file or its JSON report: each one a case plants is registered with the run's redaction.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import quote

from mcp_host_conformance.harness.cases.canaries import encodings

BOUND = 600.0

CHATTY = textwrap.dedent(
    """
    import base64, json, logging, os, sys
    from urllib.parse import quote

    from mcp_host_conformance.harness.cases import canaries

    LOG = logging.getLogger("chatty-host")
    searched = canaries.Secrets.found_in

    def found_in(self, text, where="text"):
        values = [canary.value for canary in self.canaries]
        with open(os.environ["CANARY_FILE"], "a", encoding="utf-8") as f:
            f.writelines(json.dumps(value) + "\\n" for value in values)
        for value in values:
            for shown in (value, quote(value, safe=""), base64.b64encode(value.encode()).decode()):
                LOG.debug("the host's configuration holds %s", shown)
                print(f"configured: {shown}")
                print(f"configured: {shown}", file=sys.stderr)
        return searched(self, text, where)

    canaries.Secrets.found_in = found_in
    """
)


def _texts_of_junit(path: Path) -> str:
    texts = []
    for element in ET.parse(path).iter():
        texts.append(element.text or "")
        texts.extend(element.attrib.values())
    return "\n".join(texts)


def test_no_canary_in_captured_output_junit_or_reports(tmp_path):
    (tmp_path / "chatty.py").write_text(CHATTY)
    values_file = tmp_path / "canaries.jsonl"
    junit, report = tmp_path / "junit.xml", tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "mcp_host_conformance.harness.cli", "run", "-n", "2"]
        + ["--report-json", str(report), "--", "-k", "test_credentials", "-p", "chatty"]
        + ["-p", "no:randomly", "-p", "no:cacheprovider", "--junitxml", str(junit)]
        + ["--log-level=DEBUG", "-o", "junit_logging=all", "-rA"],
        capture_output=True,
        text=True,
        timeout=BOUND,
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])
            ),
            "CANARY_FILE": str(values_file),
        },
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    values = {json.loads(line) for line in values_file.read_text("utf-8").splitlines()}
    labels = {value.split("-")[2] for value in values}
    # the canaries the cases make themselves, beside the ones `secrets.new` makes
    assert {"joined", "wide", "prop"} <= labels, labels
    outputs = {
        "the run's output": done.stdout + done.stderr,
        "JUnit": _texts_of_junit(junit),
        "the JSON report": json.dumps(json.loads(report.read_text()), ensure_ascii=False),
    }
    assert "configured: <secret" in outputs["JUnit"]  # the chatty lines are there, redacted
    found = []
    for value in values:
        forms = {
            **encodings(value),
            "url": quote(value, safe=""),
            "base64": base64.b64encode(value.encode()).decode(),
        }
        for where, text in outputs.items():
            found += [
                f"{value[:24]}... ({name}) in {where}"
                for name, form in forms.items()
                if len(form) >= 8 and form in text
            ]
    assert found == [], found[:10]
