"""OAUTH: OAuth servers (optional profile `oauth`), through the official framework.

OAUTH-1 is covered, as the catalog says, by pointing the official MCP conformance
framework's client-mode auth scenarios at the host: each scenario below is run with the
harness's client command (`harness.official_client`), which drives the host under test
through its adapter (a scratch HOME, the server added with OAuth, the harness's headless
browser as `BROWSER`, one question whose calls are approved) while the framework plays the
MCP server and its authorization server and judges the flow (metadata discovery,
registration, PKCE S256, the resource parameter, scopes, step-up, the token endpoint's
client authentication, retry limits). A scenario passes as the repository's official-client
runner decides. The client command also searches everything the host showed, its session
files and every model request for the scenarios' tokens, codes and client secret: they are
never shown. The framework must be installed (`npm ci --prefix tests/official/client`, or
$MCP_HOST_CONFORMANCE_OFFICIAL_FRAMEWORK naming its node_modules); without it the cases are
not observed. docs/profiles.md lists the scenarios left out and why.

No official scenario makes a host refresh a token, so one case here does: the harness's own
OAuth mock (`harness.oauth_server`) issues canary tokens, then refuses the access token
as expired; the host must get a new one with the refresh token, host-side (no second trip
through the browser), and no token may appear anywhere the user, the session or the model
sees.
"""

from __future__ import annotations

import shlex
import sys

import pytest

from mcp_host_conformance.harness.cases.items import option
from mcp_host_conformance.harness.cases.observe import status_text
from mcp_host_conformance.harness.contract.adapter import HttpServer
from mcp_host_conformance.harness.oauth.official_client import (
    OFF_MACHINE,
    SCENARIOS,
    framework,
    run_scenario,
)
from mcp_host_conformance.harness.oauth.server import OAuthServer
from mcp_host_conformance.harness.verdicts.outcomes import check, not_observable, precondition
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Reply, ServerSpec, Tool

pytestmark = pytest.mark.mcphc_profile("oauth")

BOUND = 60.0  # seconds the framework gives the client command (times the timeout scale)


def _client_args(config) -> list[str]:
    client = option(config, "client", None)
    client_cmd = option(config, "client_cmd", None)
    if client_cmd:
        return ["--client-cmd", client_cmd]
    paths: list[str] = option(config, "client_path", [])
    folders = [a for folder in paths for a in ("--client-path", folder)]
    return [*folders, "--client", client] if client else []


@pytest.mark.mcphc_requirements("OAUTH-1")
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_official_auth_scenario(scenario, request, case, timeouts, network):
    """OAuth servers: authorization code with PKCE, tokens refreshed host-side and never
    shown; covered by pointing the official MCP conformance auth scenarios at the client."""
    if scenario in OFF_MACHINE and not network.isolated:
        not_observable(
            f"{scenario} gives the host a name off this machine ({OFF_MACHINE[scenario]}), "
            f"which it could look up through the machine's resolver; run sealed "
            f"({network.reason})"
        )
    cli = framework()
    if cli is None:
        not_observable(
            "the official conformance framework is not installed (npm ci --prefix "
            "tests/official/client, or set MCP_HOST_CONFORMANCE_OFFICIAL_FRAMEWORK)"
        )
    args = [*_client_args(request.config), "--timeout-scale", f"{timeouts.scale:g}"]
    run = run_scenario(cli, scenario, args, case.workdir("official"), BOUND * timeouts.scale)
    check(
        "error" not in run.report,
        ids="OAUTH-1",
        expected="the host, driven through its adapter, went through the scenario",
        actual=f"the client command failed: {run.report.get('error', '')[:300]}",
    )
    check(
        run.problem is None,
        ids="OAUTH-1",
        expected=f"the official framework passes the host in {scenario}",
        actual=f"{run.problem}; host statuses {run.report.get('statuses')}",
    )
    shown = run.report.get("shown") or []
    check(
        not shown,
        ids="OAUTH-1",
        expected="no token, authorization code or client secret in what the host showed, its "
        "session files or any model request",
        actual=f"found {shown}",
    )


BROWSER = shlex.join([sys.executable, "-m", "mcp_host_conformance.harness.oauth.browser"])


@pytest.mark.mcphc_requirements("OAUTH-1")
def test_an_expired_token_is_refreshed_host_side_and_never_shown(host, model, case, secrets):
    """OAuth servers: authorization code with PKCE, tokens refreshed host-side and never
    shown."""
    server = OAuthServer(
        ServerSpec(tools=[Tool("query", "Looks something up.", reply=Reply.text("answer"))]),
        secrets.new,
    )
    case.mocks.append(server)
    host.env["BROWSER"] = BROWSER  # the person's browser: approves at once (harness.oauth_browser)
    host.bind("docs", server)
    host.add(HttpServer(name="docs", url=server.url, oauth=True))
    running = host.start()
    status = running.status("docs")
    check(
        status is not None and status.connected,
        ids="OAUTH-1",
        expected="the OAuth server connected once authorized in the browser",
        actual=status_text(status),
    )
    authorizations = server.entries("authorize")
    check(
        len(authorizations) == 1 and authorizations[0].extra.get("pkce") == "S256",
        ids="OAUTH-1",
        expected="one authorization request, with PKCE S256",
        actual=f"{len(authorizations)} authorization request(s): "
        f"{[e.extra.get('pkce') for e in authorizations]}",
    )
    model.script([Step.call(server="docs", tool="query", arguments={}), Step.text("done")])
    running.ask("look it up")
    requests = [(e.extra.get("method"), e.extra.get("accepted")) for e in server.entries("mcp")]
    precondition(
        ("tools/call", True) in requests,
        ids="OAUTH-1",
        expected="a call with the first access token reaches the server (control)",
        actual=f"MCP requests (method, accepted): {requests}",
    )

    server.expire()  # the access token is refused from now on, as an expired one
    model.script([Step.call(server="docs", tool="query", arguments={}), Step.text("done")])
    turn = running.ask("look it up again")
    stopped = running.stop()
    grants = [(e.extra.get("grant"), e.extra.get("presented")) for e in server.entries("token")]
    check(
        ("refresh_token", "refresh-1") in grants,
        ids="OAUTH-1",
        expected="the expired token refreshed with the refresh token (grant_type=refresh_token)",
        actual=f"token requests (grant, what was presented): {grants}",
    )
    check(
        len(server.entries("authorize")) == 1,
        ids="OAUTH-1",
        expected="refreshed host-side: no second authorization in the browser",
        actual=f"{len(server.entries('authorize'))} authorization requests",
    )
    called = [
        (e.extra.get("presented"), e.extra.get("accepted"))
        for e in server.entries("mcp")
        if e.extra.get("method") == "tools/call"
    ]
    check(
        [c.status for c in turn.calls] == ["completed"] and ("access-2", True) in called,
        ids="OAUTH-1",
        expected="the second call completes with the refreshed token",
        actual=f"statuses {[c.status for c in turn.calls]}; calls (token, accepted) {called}",
    )
    found = [
        *secrets.found_in_texts(host.seen),
        *secrets.found_in_files(list(stopped.session_files)),
        *secrets.found_in_journal(model.journal, "model requests"),
    ]
    check(
        not found,
        ids="OAUTH-1",
        expected="no token or code in what the user saw, the session files or a model request",
        actual="; ".join(found[:6]),
    )
