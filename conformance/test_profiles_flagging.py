"""FLAG: tool text that reads like instructions is flagged (optional profile
`instruction-flagging`).

One server serves the generated corpus (`harness.injection_corpus`: injections in the
description, the title, a property's description or default, disguised by capitals,
spacing, zero-width characters and full-width letters; and benign look-alikes). The
person approving the tools is the one who must see the flag, so it is read from the host's
tool review (`PendingTool.flagged`); nothing is approved. The detection rate and the false
positive rate are reported as figures; the rule holds (a SHOULD) at 90 % detected and at
most 10 % of the look-alikes flagged, the catalog's decision.
"""

from __future__ import annotations

import pytest

from mcp_host_conformance.harness.cases.injection_corpus import SEED, corpus
from mcp_host_conformance.harness.cases.profile_support import reviewed
from mcp_host_conformance.harness.verdicts.outcomes import check, precondition
from mcp_host_conformance.mocks.spec import ServerSpec, Tool

pytestmark = pytest.mark.mcphc_profile("instruction-flagging")

DETECTION = 0.90
FALSE_POSITIVES = 0.10


@pytest.mark.mcphc_requirements("FLAG-1")
def test_tool_text_that_instructs_the_model_is_flagged(
    host, http_mock, description, record_property
):
    """Tool text that reads like instructions to the model is flagged to the person
    approving it."""
    samples = corpus()
    tools = [Tool(s.name, **s.definition()) for s in samples]
    docs = http_mock(ServerSpec(tools=tools))
    host.add_http("docs", docs)
    running = host.start()
    check(
        running.can_review,
        ids="FLAG-1",
        expected="a tool review where the person approving tools sees the flags",
        actual="the host's session has no review_tools",
    )
    shown = reviewed([running.review(False)], "docs")
    missing = [s.name for s in samples if s.name not in shown]
    precondition(
        not missing,
        ids="PIN-2" if "pinning" in description.profiles else "FLAG-1",
        expected="every tool of the new server shown to the person for approval",
        actual=f"{len(missing)} of {len(samples)} tools not shown (e.g. {missing[:5]})",
    )
    injections = [s for s in samples if s.injection]
    benign = [s for s in samples if not s.injection]
    caught = [s for s in injections if shown[s.name].flagged]
    wrongly = [s for s in benign if shown[s.name].flagged]
    detection = len(caught) / len(injections)
    false_positives = len(wrongly) / len(benign)
    record_property("FLAG-1 corpus seed", SEED)
    record_property("FLAG-1 detection rate", round(detection, 3))
    record_property("FLAG-1 false positive rate", round(false_positives, 3))
    missed = [
        f"{s.kind}/{s.place}/{s.disguise}: {s.text[:60]!r}" for s in injections if s not in caught
    ]
    check(
        detection >= DETECTION,
        ids="FLAG-1",
        expected=f"at least {DETECTION:.0%} of the {len(injections)} injection texts flagged",
        actual=f"{detection:.0%} flagged; missed {missed[:6]}",
    )
    check(
        false_positives <= FALSE_POSITIVES,
        ids="FLAG-1",
        expected=f"at most {FALSE_POSITIVES:.0%} of the {len(benign)} benign look-alikes flagged",
        actual=f"{false_positives:.0%} flagged: {[s.text[:50] for s in wrongly[:6]]}",
    )
