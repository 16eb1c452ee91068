"""A `Host` of the harness with no mocks behind it, for tests of its own logic: its adapter
(None when configuration is not used), home and project in `tmp_path`, a model URL nothing
answers at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_host_conformance.harness.cases.hostrun import Host, Timeouts


def bare_host(tmp_path: Path, adapter: Any = None, **fields: Any) -> Host:
    return Host(
        adapter=adapter,
        home=tmp_path,
        project=tmp_path,
        model_url="http://127.0.0.1:9/v1",
        model_key="k",
        timeouts=Timeouts(),
        **fields,
    )
