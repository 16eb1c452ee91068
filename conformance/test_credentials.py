"""CRED: credentials.

Strategy: every secret the suite configures is a canary
(`mcp_host_conformance.harness.cases.canaries`), a random value searched raw, URL-encoded,
JSON-escaped and base64-encoded, so a leak is found however the client encodes it, and is
reported by label, never by value. Where a secret goes is read from the mocks' journals
(each HTTP mock records the headers it received, each stdio mock its whole environment,
the mock model every request); where it must not appear is everything the suite can see:
what the user saw (status lines, listings, confirmations, results, errors, prompts), every
file the host wrote under HOME and in the working directory (walked, not only the session
files it reported; the configuration files it reported are the one place secrets belong),
and every request to the model service. Servers echo secrets back in every form a host
must still remove: the whole header value, the credential after its auth scheme alone
(`Bearer TOKEN` echoed as TOKEN, `Basic` as its base64), encoded, inside results, error
results, JSON-RPC errors and the error that makes a server unavailable.

CRED-6 (no OAuth flow): the rejecting servers' 401 and 403 carry the MCP authorization
spec's discovery hint (`WWW-Authenticate: Bearer resource_metadata="URL"`) pointing at a
live authorization-server mock that would answer every step, at connect and at call time;
the host is given stand-in browsers (`harness/oauth/browser_watch.py`). Neither journal may show
an OAuth step and no browser may be asked to open anything, across a grace period after
the last rejection.
"""

from __future__ import annotations

import base64
import json
import re
import secrets as _random
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from mcp_host_conformance.harness.cases.canaries import CANARY_PREFIX, Secrets
from mcp_host_conformance.harness.cases.observe import (
    model_requests,
    oauth_reason_problems,
    status_text,
    stays_quiet,
)
from mcp_host_conformance.harness.cases.pty_session import (
    fill_template,
    run_in_terminal,
    terminal_environ,
)
from mcp_host_conformance.harness.oauth.browser_watch import browser_watch
from mcp_host_conformance.harness.verdicts.outcomes import (
    NOT_APPLICABLE_PREFIX,
    check,
    precondition,
)
from mcp_host_conformance.harness.verdicts.safe_text import inline
from mcp_host_conformance.mocks.authorization_server import AuthorizationServerMock, is_oauth_path
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool


def tool_spec(name: str, reply: Reply | None = None) -> ServerSpec:
    tool = Tool("query", "Looks something up.", reply=reply or Reply.text(f"answer from {name}"))
    return ServerSpec(name=name, tools=[tool])


def hits_of(label: str, hits: list[str]) -> list[str]:
    """The search results that concern the canary labelled `label`."""
    return [h for h in hits if f"secret {label} (" in h]


def header_values(journal, name: str) -> list[str | None]:
    """The value of header `name` on every JSON-RPC message a mock received (initialize,
    notifications, tools/list, tools/call)."""
    return [e.headers.get(name.lower()) for e in journal.entries(kind="rpc")]


MAX_WALKED_FILES = 2000


def files_written(host) -> list[Path]:
    """Every file under HOME and the working directory, walked (a host may write where it
    does not say), except the configuration files `add_server` reported writing: they are
    the one place configured secrets belong (CFG-3 keeps them private)."""
    configuration = {Path(p).resolve() for p in host.config_paths}
    found: list[Path] = []
    for root in (Path(host.home), Path(host.project)):
        for path in sorted(root.rglob("*")):
            if len(found) >= MAX_WALKED_FILES:
                return found
            if path.is_file() and not path.is_symlink() and path.resolve() not in configuration:
                found.append(path)
    return found


def everywhere(host, model, secrets: Secrets) -> list[str]:
    """Every place a configured secret must never be: what the user saw (status lines,
    listings, confirmations, results, errors, prompts), the session files and every other
    file written under HOME or in the working directory, the model requests."""
    hits = secrets.found_in_texts(host.seen)
    hits += secrets.found_in_texts([c.text for c in host.confirmations], "confirmations")
    hits += secrets.found_in_files([*host.session_files, *files_written(host)])
    hits += secrets.found_in_journal(model.journal, "requests to the model service")
    return hits


# ---- CRED-1 -----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("CRED-1")
def test_each_header_goes_to_its_own_server_only(host, http_mock, stdio_mock, model, secrets):
    """A header configured for a remote server is sent to that server and to no other
    destination (two remote servers with headers, one without, the model service, and two
    stdio servers, whose environment and arguments must not carry a header either)."""
    alpha_token = secrets.new("alpha-token", special=True)
    beta_token = secrets.new("beta-token", special=True)
    alpha = http_mock(tool_spec("alpha"))
    beta = http_mock(ServerSpec(name="beta", tools=tool_spec("beta").tools, response_mode="json"))
    plain = http_mock(tool_spec("plain"))  # configured without any header
    locals_ = {name: stdio_mock(tool_spec(name)) for name in ("local-a", "local-b")}
    host.add_http("alpha", alpha, headers={"Authorization": f"Bearer {alpha_token}"})
    host.add_http("beta", beta, headers={"X-Api-Key": beta_token})
    host.add_http("plain", plain)
    host.add_stdio("local-a", locals_["local-a"])
    host.add_stdio("local-b", locals_["local-b"], env={"LOCAL_SETTING": "a-setting-of-local-b"})
    model.script(
        [
            Step.calls(
                [
                    Step.call(server="alpha", tool="query", arguments={"q": "a"}),
                    Step.call(server="beta", tool="query", arguments={"q": "b"}),
                    Step.call(server="plain", tool="query", arguments={"q": "c"}),
                    Step.call(server="local-a", tool="query", arguments={"q": "d"}),
                ]
            ),
            Step.text("done"),
        ]
    )
    running = host.start()
    running.ask("ask all four", approve="y")
    running.stop()

    # The header does reach its own server, on every message (connect, list and call).
    for name, mock, header, value in (
        ("alpha", alpha, "Authorization", f"Bearer {alpha_token}"),
        ("beta", beta, "X-Api-Key", beta_token),
    ):
        sent = header_values(mock.journal, header)
        methods = sorted({e.method or "?" for e in mock.journal.entries(kind="rpc")})
        check(
            "tools/call" in methods and all(v == value for v in sent),
            ids="CRED-1",
            expected=(
                f"every message to server {name} (initialize, tools/list, tools/call) carries "
                f"its configured {header} header"
            ),
            actual=(
                f"{sum(v == value for v in sent)} of {len(sent)} messages carried it "
                f"(methods received: {methods})"
            ),
        )
    # ...and nowhere else.
    leaks = hits_of("alpha-token", secrets.found_in_journal(beta.journal, "server beta"))
    leaks += hits_of("alpha-token", secrets.found_in_journal(plain.journal, "server plain"))
    leaks += hits_of("beta-token", secrets.found_in_journal(alpha.journal, "server alpha"))
    leaks += hits_of("beta-token", secrets.found_in_journal(plain.journal, "server plain"))
    for name, mock in locals_.items():
        precondition(
            bool(mock.process_entries()),
            ids="DISC-1",
            expected=f"stdio server {name} started (so its environment could be searched)",
            actual="it never started",
        )
        leaks += secrets.found_in_journal(mock.journal, f"stdio server {name}")
    leaks += secrets.found_in_journal(model.journal, "requests to the model service")
    check(
        not leaks,
        ids="CRED-1",
        expected=(
            "each server's header only in that server's journal; none at other servers or the model"
        ),
        actual="; ".join(leaks),
    )


# ---- CRED-2 -----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("CRED-2")
def test_each_environment_variable_reaches_its_own_server_only(
    host, stdio_mock, http_mock, model, secrets
):
    """An environment variable configured for a stdio server reaches that server only (two
    stdio servers with variables of their own, two remote servers, the model service)."""
    one_token = secrets.new("one-env", special=True)
    two_token = secrets.new("two-env", special=True)
    one = stdio_mock(tool_spec("one"))
    two = stdio_mock(tool_spec("two"))
    remote = http_mock(tool_spec("remote"))
    keyed = http_mock(tool_spec("keyed"))  # a remote server with a header of its own
    host.add_stdio("one", one, env={"ONE_TOKEN": one_token})
    host.add_stdio("two", two, env={"TWO_TOKEN": two_token})
    host.add_http("remote", remote)
    host.add_http("keyed", keyed, headers={"X-Api-Key": "not-a-secret-of-this-case"})
    model.script(
        [
            Step.calls(
                [
                    Step.call(server="one", tool="query", arguments={}),
                    Step.call(server="two", tool="query", arguments={}),
                ]
            ),
            Step.text("done"),
        ]
    )
    running = host.start()
    running.ask("ask both", approve="y")
    running.stop()

    one_envs = [e.env or {} for e in one.process_entries()]
    two_envs = [e.env or {} for e in two.process_entries()]
    check(
        bool(one_envs) and all(env.get("ONE_TOKEN") == one_token for env in one_envs),
        ids="CRED-2",
        expected="server one started with its configured ONE_TOKEN",
        actual=f"{len(one_envs)} start(s); ONE_TOKEN set as configured in "
        f"{sum(env.get('ONE_TOKEN') == one_token for env in one_envs)}",
    )
    check(
        bool(two_envs) and all(env.get("TWO_TOKEN") == two_token for env in two_envs),
        ids="CRED-2",
        expected="server two started with its configured TWO_TOKEN",
        actual=f"{len(two_envs)} start(s); TWO_TOKEN set as configured in "
        f"{sum(env.get('TWO_TOKEN') == two_token for env in two_envs)}",
    )
    leaks = hits_of("one-env", secrets.found_in_journal(two.journal, "stdio server two"))
    leaks += hits_of("two-env", secrets.found_in_journal(one.journal, "stdio server one"))
    leaks += secrets.found_in_journal(remote.journal, "HTTP server remote")
    leaks += secrets.found_in_journal(keyed.journal, "HTTP server keyed")
    leaks += secrets.found_in_journal(model.journal, "requests to the model service")
    # The name too: a client that passes one server's variables to all leaks them by name.
    leaks += [
        "variable ONE_TOKEN in server two's environment" for env in two_envs if "ONE_TOKEN" in env
    ]
    leaks += [
        "variable TWO_TOKEN in server one's environment" for env in one_envs if "TWO_TOKEN" in env
    ]
    check(
        not leaks,
        ids="CRED-2",
        expected="each stdio server's variable only in that server's environment",
        actual="; ".join(sorted(set(leaks))),
    )


# ---- CRED-3 -----------------------------------------------------------------------------------


@pytest.mark.mcphc_requirements("CRED-3")
def test_no_secret_anywhere_the_user_or_the_model_sees(host, http_mock, stdio_mock, model, secrets):
    """No configured secret ever appears in status lines, confirmations, error messages,
    results, session files, or any request to the model service."""
    http_token = secrets.new("http-header", special=True)
    env_token = secrets.new("stdio-env", special=True)
    rejected_token = secrets.new("rejected-header", special=True)
    crashing_token = secrets.new("crashing-env", special=True)
    docs = http_mock(tool_spec("docs", Reply.echo_arguments()))
    local = stdio_mock(tool_spec("local", Reply.echo_arguments()))
    rejecting = http_mock(
        ServerSpec(
            name="rejecting", tools=[Tool("query")], misbehaviour=Misbehaviour(reject_status=401)
        )
    )
    crashing = stdio_mock(
        ServerSpec(
            name="crashing", tools=[Tool("query")], misbehaviour=Misbehaviour(exit_at_once=3)
        )
    )
    host.add_http("docs", docs, headers={"Authorization": f"Bearer {http_token}"})
    host.add_stdio("local", local, env={"API_TOKEN": env_token})
    host.add_http("rejecting", rejecting, headers={"X-Api-Key": rejected_token})
    host.add_stdio("crashing", crashing, env={"CRASH_TOKEN": crashing_token})
    host.list()
    model.script(
        [
            Step.calls(
                [
                    Step.call(server="docs", tool="query", arguments={"q": "docs"}),
                    Step.call(server="local", tool="query", arguments={"q": "local"}),
                ]
            ),
            Step.text("done"),
        ]
    )
    running = host.start()
    turn = running.ask("use both", approve="y")
    running.stop()

    check(
        len(turn.calls) == 2 and len(host.confirmations) == 2,
        ids="CRED-3",
        expected="two confirmed calls (so confirmations and results were shown and searched)",
        actual=f"{len(host.confirmations)} confirmation(s), {len(turn.calls)} call result(s)",
    )
    leaks = everywhere(host, model, secrets)
    reasons = [s.reason or "" for s in running.statuses]
    leaks += secrets.found_in_texts(reasons, "unavailable reasons")
    check(
        not leaks,
        ids="CRED-3",
        expected=(
            "no configured secret in status lines, listing, confirmations, results, errors, "
            "session files or model requests"
        ),
        actual="; ".join(sorted(set(leaks))),
    )


def strings_in(value) -> list[str]:
    """Every string inside a JSON value (keys too), decoded."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings_in(v))]
    if isinstance(value, list):
        return [s for item in value for s in strings_in(item)]
    return []


def decoded_texts(host, model) -> list[str]:
    """What the user saw, the session files (and the strings in their JSON lines), and the
    strings of every model request: decoded, so an escaped form is searched as sent."""
    texts = [t for t in host.seen if t] + [c.text for c in host.confirmations]
    texts += [s for body in model_requests(model) for s in strings_in(body)]
    for path in host.session_files:
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        texts.append(text)
        for line in text.splitlines():
            try:
                texts += strings_in(json.loads(line))
            except ValueError:
                pass
    return texts


def lower_hex(encoded: str) -> str:
    """A percent-encoding with lower-case hex digits (RFC 3986 makes them equivalent)."""
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)


@pytest.mark.mcphc_requirements("CRED-3")
def test_secret_echoed_back_by_a_server_is_neither_shown_nor_sent(
    host, http_mock, stdio_mock, model, secrets
):
    """No configured secret ever appears in ... results, session files, or any request to
    the model service (even when the server puts it in its result, as is or in disguise:
    base64 inside longer base64 text at every byte offset, URL-encoded with lower-case hex,
    JSON-escaped with or without escaping non-ASCII characters)."""
    token = secrets.new("echoed-header", special=True)
    # The disguises use a header whose whole value is the secret (no "Bearer " scheme).
    key = secrets.new("echoed-key", special=True)
    # A secret that a single replace-once pass would leave behind: once "removed]" + tail
    # is replaced by a marker ending in "removed]", the tail after it forms the secret again.
    tail = f"{CANARY_PREFIX}joined-{_random.token_hex(8)}"
    joined = f"removed]{tail}"
    secrets.add("joined-header", joined)
    # Only an environment value can hold non-ASCII text; a quote and a backslash make its
    # JSON escape differ from the value, and the non-ASCII letters make the two escapes differ.
    wide = f'{CANARY_PREFIX}wide-{_random.token_hex(8)}"\\\u00e9\u00f8'
    secrets.add("wide-env", wide)
    raw = key.encode()
    disguised = {
        "lower-hex url-encoded": lower_hex(quote(key, safe="")),
        "ascii json-escaped": json.dumps(wide)[1:-1],
        "utf-8 json-escaped": json.dumps(wide, ensure_ascii=False)[1:-1],
    }
    query = Tool(
        "query",
        "Looks something up.",
        reply=Reply.text(
            f"debug: you sent Bearer {token}",
            "second block",
            *(base64.b64encode(pad + raw + b"yz").decode() for pad in (b"", b"x", b"xy")),
            disguised["lower-hex url-encoded"],
        ),
    )
    # Alone in its result, so the first pass removes exactly one occurrence.
    debug = Tool("debug", "Shows debug output.", reply=Reply.text(joined + tail))
    leaky = http_mock(ServerSpec(name="leaky", tools=[query, debug]))
    local = stdio_mock(
        tool_spec(
            "local", Reply.text(disguised["ascii json-escaped"], disguised["utf-8 json-escaped"])
        )
    )
    host.add_http(
        "leaky",
        leaky,
        headers={"Authorization": f"Bearer {token}", "X-Api-Key": key, "X-Join": joined},
    )
    host.add_stdio("local", local, env={"WIDE_TOKEN": wide})
    model.script(
        [
            Step.calls(
                [
                    Step.call(server="leaky", tool="query", arguments={"q": "x"}),
                    Step.call(server="local", tool="query", arguments={"q": "y"}),
                    Step.call(server="leaky", tool="debug", arguments={"q": "z"}),
                ]
            ),
            Step.text("done"),
        ]
    )
    running = host.start()
    turn = running.ask("call them", approve="y")
    running.stop()

    calls = leaky.journal.count("tools/call") + local.journal.count("tools/call")
    check(
        calls == 3,
        ids="CRED-3",
        expected="all three calls reached their servers (so their results could leak)",
        actual=f"{calls} tools/call",
    )
    leaks = secrets.found_in_texts([c.output for c in turn.calls], "results")
    leaks += everywhere(host, model, secrets)
    texts = decoded_texts(host, model) + [c.output or "" for c in turn.calls]
    leaks += [
        f"{name} form of a secret"
        for name, form in disguised.items()
        if any(form in t for t in texts)
    ]
    check(
        not leaks,
        ids="CRED-3",
        expected=(
            "the secrets removed from the results before they are shown, saved or sent to the model"
        ),
        actual="; ".join(sorted(set(leaks))),
    )


@pytest.mark.mcphc_requirements("CRED-3")
def test_credential_echoed_without_its_scheme_is_removed_everywhere(
    host, http_mock, model, secrets
):
    """No configured secret ever appears in status lines, confirmations, error messages,
    results, session files, or any request to the model service: also the credential a
    header carries after its auth scheme, echoed alone (`Bearer TOKEN` as TOKEN, `Token
    TOKEN` as TOKEN, `Basic B64` as B64), in a result, an error result, a JSON-RPC error,
    and the error that makes a server unavailable at connect."""
    bearer = secrets.new("bearer-credential", special=True)
    token = secrets.new("token-credential")
    password = secrets.new("basic-password")
    basic = base64.b64encode(f"user:{password}".encode()).decode()
    refused = secrets.new("refused-credential", special=True)
    tools = [
        Tool("whoami", "Says who you are.", reply=Reply.text(f"signed in as {bearer}")),
        Tool(
            "session",
            "Shows the session.",
            reply=Reply.tool_error(f"token {token} is read-only; credentials {basic}"),
        ),
        Tool("admin", "Administers.", reply=Reply.rpc_error(f"{bearer} may not administer")),
    ]
    echo = http_mock(ServerSpec(name="echo", tools=tools))
    refusing = http_mock(
        ServerSpec(
            name="refusing",
            tools=[Tool("query")],
            misbehaviour=Misbehaviour(
                fail_at="initialize", fail_message=f"unknown credential {refused}"
            ),
        )
    )
    host.add_http(
        "echo",
        echo,
        headers={
            "Authorization": f"Bearer {bearer}",
            "X-Session": f"Token {token}",
            "X-Basic": f"Basic {basic}",
        },
    )
    host.add_http("refusing", refusing, headers={"Authorization": f"Bearer {refused}"})
    model.script(
        [
            Step.calls(
                [
                    Step.call(server="echo", tool=name, arguments={"q": name})
                    for name in ("whoami", "session", "admin")
                ]
            ),
            Step.text("done"),
        ]
    )
    running = host.start()
    turn = running.ask("who am I", approve="y")
    running.stop()

    calls = echo.journal.count("tools/call")
    failed = refusing.journal.entries(
        kind="event", where=lambda e: e.extra.get("event") == "failed"
    )
    precondition(
        bool(failed),
        ids="DISC-1",
        expected="server refusing was connected to (and answered initialize with its error)",
        actual=f"methods it received: {refusing.journal.methods()}",
    )
    precondition(
        calls == 3 and len(turn.calls) == 3,
        ids="SESS-1",
        expected="the three approved calls reached server echo and their results were shown",
        actual=f"{calls} tools/call received; {len(turn.calls)} call result(s) shown",
    )
    leaks = secrets.found_in_texts([c.output for c in turn.calls], "results")
    leaks += secrets.found_in_texts(
        [s.reason or "" for s in running.statuses] + [s.line for s in running.statuses],
        "status lines and unavailable reasons",
    )
    leaks += everywhere(host, model, secrets)
    check(
        not leaks,
        ids="CRED-3",
        expected=(
            "each credential removed wherever a server echoed it without its scheme: results, "
            "errors, status lines, files, model requests"
        ),
        actual="; ".join(sorted(set(leaks))),
    )


# Header values: visible ASCII, with the characters that JSON, URL and base64 treat specially.
SECRET_TAILS = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=16
)


@pytest.mark.mcphc_requirements("CRED-3")
# No shrinking (nor example database): every example starts the host, and the first failing
# one says enough; shrinking would start it dozens of times more.
@settings(
    max_examples=5,
    deadline=None,
    derandomize=True,
    database=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(tail=SECRET_TAILS)
# Every run tries the characters each encoding treats specially: URL (%, +, /, =), JSON (",
# \), and a tail that makes the value's base64 change alignment.
@example(tail='%2F+/="\\')
@example(tail="~!@#$^&*()[]{}|;:<>,.?`")
def test_no_secret_leaks_whatever_its_characters(host, http_mock, model, tail):
    """No configured secret ever appears in status lines, confirmations, results, session
    files, or any request to the model service: for any header value."""
    name = f"s{_random.token_hex(3)}"
    canaries = Secrets()
    value = f"{CANARY_PREFIX}prop-{_random.token_hex(6)}{tail}"
    canaries.add("generated-header", value)
    server = http_mock(tool_spec(name, Reply.echo_arguments()))
    seen_before = len(host.seen)
    files_before = len(host.session_files)
    requests_before = len(model.journal.entries())
    host.add_http(name, server, headers={"X-Api-Key": value})
    model.script([Step.call(server=name, tool="query", arguments={"q": tail}), Step.text("done")])
    running = host.start()
    running.ask("call it", approve="y")
    running.stop()
    host.remove(name)  # the next example starts with only its own server

    leaks = canaries.found_in_texts(host.seen[seen_before:])
    leaks += canaries.found_in_files([*host.session_files[files_before:], *files_written(host)])
    leaks += canaries.found_in_journal(
        model.journal,
        "requests to the model service",
        entries=model.journal.entries()[requests_before:],
    )
    check(
        not leaks,
        ids="CRED-3",
        expected=(
            "the header value nowhere in what the user saw, the session files or the model requests"
        ),
        actual="; ".join(sorted(set(leaks))) + f" (value of {len(value)} characters)",
    )


# ---- CRED-4 -----------------------------------------------------------------------------------


# The rejections at connect: (server, HTTP status, header name, auth scheme or "").
REJECTIONS = (
    ("unauthorized-key", 401, "X-Api-Key", ""),
    ("unauthorized-bearer", 401, "Authorization", "Bearer "),
    ("forbidden-key", 403, "X-Api-Key", ""),
    ("forbidden-bearer", 403, "Authorization", "Bearer "),
)


@pytest.mark.mcphc_requirements("CRED-4")
def test_rejected_credentials_are_reported_without_the_value(host, http_mock, model, secrets):
    """A server that rejects the credentials (401 or 403 at connect) is reported unavailable
    with a reason that says OAuth is not supported and suggests a static header such as an
    API key, without echoing the value (nor at call time, when a server that accepted the
    connection rejects a call)."""
    right = secrets.new("right-key", special=True)
    # The server called at call time first: what follows an unavailable server must not decide
    # whether it is offered (DISC-4's rule, not this one).
    at_call = http_mock(
        ServerSpec(
            name="at-call",
            tools=[Tool("query")],
            misbehaviour=Misbehaviour(reject_status=401, reject_at="tools/call"),
        )
    )
    host.add_http("at-call", at_call, headers={"Authorization": f"Bearer {secrets.new('at-call')}"})
    for name, status_code, header, scheme in REJECTIONS:
        value = secrets.new(name, special=True)
        if status_code == 401 and header == "X-Api-Key":
            # A server that checks the key, rather than one that rejects everyone.
            refusal = Misbehaviour(accept_header=header, accept_value=right)
        else:
            refusal = Misbehaviour(reject_status=status_code)
        mock = http_mock(ServerSpec(name=name, tools=[Tool("query")], misbehaviour=refusal))
        host.add_http(name, mock, headers={header: f"{scheme}{value}"})
    accepted = http_mock(
        ServerSpec(
            name="accepted",
            tools=[Tool("query")],
            misbehaviour=Misbehaviour(accept_header="X-Api-Key", accept_value=right),
        )
    )
    host.add_http("accepted", accepted, headers={"X-Api-Key": right})
    model.script([Step.call(server="at-call", tool="query", arguments={}), Step.text("done")])
    running = host.start()
    turn = running.ask("use it", approve="y")
    running.stop()

    good = running.status("accepted")
    check(
        good is not None and good.connected,
        ids="CRED-4",
        expected="the server given the right key connects (control)",
        actual=f"status {status_text(good)!r}",
    )
    for name, status_code, _header, scheme in REJECTIONS:
        status = running.status(name)
        shown = f"server {name} (HTTP {status_code} at connect, {scheme or 'plain '}value)"
        check(
            status is not None and not status.connected,
            ids="CRED-4",
            expected=f"{shown} reported unavailable",
            actual="no status line" if status is None else f"connected={status.connected}",
        )
        reason = status.reason or status.line
        problems = oauth_reason_problems(reason)
        check(
            not problems,
            ids="CRED-4",
            expected=(
                f"{shown}: the reason says OAuth is not supported "
                "and suggests a static header such as an API key"
            ),
            actual=f"the reason {', and '.join(problems)}",
        )
    called = at_call.journal.count("tools/call")
    precondition(
        called == 1 and len(turn.calls) == 1,
        ids="SESS-1",
        expected="the call to server at-call was sent (and rejected with HTTP 401) and shown",
        actual=f"{called} tools/call received; {len(turn.calls)} call result(s) shown",
    )
    # Where a rejection is reported: the start's text and status lines, the rejected call's
    # result (a confirmation showing a header is CRED-3's, not a rejection's echo).
    reported = [running.text, *(s.line for s in running.statuses)]
    reported += [s.reason or "" for s in running.statuses]
    leaks = secrets.found_in_texts(reported, "status lines and reasons")
    leaks += secrets.found_in_texts([c.output for c in turn.calls], "the rejected call's result")
    check(
        not leaks,
        ids="CRED-4",
        expected=(
            "no header value echoed where a rejection is reported: status lines, reasons, "
            "the rejected call's result"
        ),
        actual="; ".join(sorted(set(leaks))),
    )


# ---- CRED-6 -----------------------------------------------------------------------------------


def oauth_steps(mock, name: str) -> list[str]:
    """The OAuth steps (discovery documents, default endpoints) a server's journal shows."""
    return [
        f"{e.http_method} {(e.path or '')[:120]} at {name}"
        for e in mock.journal.entries(kind="http")
        if is_oauth_path(e.path or "")
    ]


@pytest.mark.mcphc_requirements("CRED-6")
def test_no_oauth_flow_after_a_rejection(
    description, host, http_mock, model, case, monkeypatch, timeouts
):
    """A host without OAuth starts no OAuth flow: after a 401 or 403 it fetches no
    authorization metadata, registers no client and opens no browser. (A host claiming the
    `oauth` profile is checked by OAUTH-1 instead.)

    The 401 and 403 (at connect, and a 401 at call time) carry the MCP authorization spec's
    `WWW-Authenticate: Bearer resource_metadata="URL"` pointing at a live authorization
    server mock that would answer every step of the flow."""
    if description.has_oauth and "oauth" not in description.profiles:
        pytest.skip(
            f"{NOT_APPLICABLE_PREFIX}{description.name} has OAuth (describe().has_oauth) "
            "without claiming the oauth profile: the rule is for hosts without OAuth"
        )
    if "oauth" in description.profiles:
        pytest.skip(
            f"{NOT_APPLICABLE_PREFIX}{inline(description.name)} claims the oauth profile "
            "(checked by OAUTH-1)"
        )
    authority = AuthorizationServerMock()
    case.mocks.append(authority)
    authority.start()
    watch = browser_watch()
    if watch is not None:
        monkeypatch.setenv("BROWSER", watch.browser)  # an in-process host's own environment
        host.env.update(watch.environ())
        mark = watch.mark()
    rejecting = {  # the one called first: unavailable servers before it must not matter
        "expired": Misbehaviour(
            reject_status=401,
            reject_at="tools/call",
            reject_challenge=authority.challenge("invalid_token"),
        ),
        "unauthorized": Misbehaviour(reject_status=401, reject_challenge=authority.challenge()),
        "forbidden": Misbehaviour(
            reject_status=403, reject_challenge=authority.challenge("insufficient_scope")
        ),
    }
    mocks = {}
    for name, refusal in rejecting.items():
        mocks[name] = http_mock(ServerSpec(name=name, tools=[Tool("query")], misbehaviour=refusal))
        host.add_http(name, mocks[name], headers={"X-Api-Key": f"static-key-of-{name}"})
    model.script([Step.call(server="expired", tool="query", arguments={}), Step.text("done")])
    running = host.start()
    running.ask("use it", approve="y")
    # An OAuth flow may start in the background: watch the authorization server a while.
    stays_quiet(authority.journal, timeouts.grace, kind="http")
    running.stop()

    met = {
        name: mock.journal.count(method)
        for (name, mock), method in zip(
            mocks.items(), ("tools/call", "initialize", "initialize"), strict=True
        )
    }
    precondition(
        all(met.values()),
        ids=("DISC-1", "SESS-1"),
        expected=(
            "the host met each rejection: initialize at unauthorized (401) and forbidden "
            "(403), tools/call at expired (401 at call time)"
        ),
        actual=f"requests that met a rejection: {met}",
    )
    steps = [
        f"{e.http_method} {(e.path or '')[:120]} at the authorization server"
        for e in authority.requests()
    ]
    for name, mock in mocks.items():
        steps += oauth_steps(mock, f"server {name}")
    check(
        not steps,
        ids="CRED-6",
        expected=(
            "no OAuth request after a 401 or 403: no protected-resource or authorization "
            "server metadata, no client registration, no authorize or token request"
        ),
        actual="; ".join(steps[:8]),
    )
    if watch is None:
        return  # no stand-in browser can run here: the journals above are all there is
    opened = watch.opened_since(mark)
    check(
        not opened,
        ids="CRED-6",
        expected="no browser opened (BROWSER and the usual openers on PATH are stand-ins)",
        actual="; ".join(opened[:4]),
    )


# ---- CRED-5 -----------------------------------------------------------------------------------


HEADER = "X-Api-Key"


def terminal_tail(text: str, secret: str, limit: int = 600) -> str:
    """The end of what the terminal showed, for a failure message: the typed secret masked."""
    text = text.replace(secret, "<the typed secret>").replace("\r\n", "\n").strip()
    return repr(text[-limit:])


@pytest.mark.mcphc_requirements("CRED-5")
def test_secret_typed_with_echo_off(description, host, http_mock, secrets, timeouts):
    """A secret is typed with echo off when the server is added interactively.

    Observable for a host whose adapter declares `describe().interactive_add` (how a person
    adds a remote server with one secret header at a terminal): the harness runs it in a
    pseudo-terminal, types the value at the prompt, and reads what the terminal showed. The
    value must also really be saved and sent, so a host that hides it by dropping it fails
    too. For any other host the rule is not observable: not applicable, never passed."""
    if description.interactive_add is None:
        pytest.skip(
            f"{NOT_APPLICABLE_PREFIX}{inline(description.name)} declares no interactive add "
            "command (describe().interactive_add), so echo-off secret input cannot be observed"
        )
    token = secrets.new("typed-header")
    docs = http_mock(
        ServerSpec(
            name="docs",
            tools=[Tool("query")],
            misbehaviour=Misbehaviour(accept_header=HEADER, accept_value=token),
        )
    )
    argv = fill_template(description.interactive_add, name="docs", url=docs.url, header=HEADER)
    run = run_in_terminal(
        argv,
        answer=token,
        env=terminal_environ(host.home, host.env),
        cwd=host.project,
        prompt_bound=timeouts.config_bound(),
        # Echo off is the decisive moment, not a time: a host that prints something first and
        # hides the input later is waited for (up to the harness's bound, which only a host
        # that never hides it waits out), so a loaded machine never decides the verdict.
        settle=timeouts.config_bound(),
        end_bound=timeouts.config_bound(),
    )
    check(
        run.prompted,
        ids="CRED-5",
        expected="the interactive add command prompts for the header's value",
        actual=f"nothing shown within {timeouts.config_bound():.0f} s; the terminal showed "
        f"{terminal_tail(run.shown, token)}, exit status {run.status}",
    )
    echoed = secrets.found_in(run.shown, "what the terminal showed")
    check(
        not echoed,
        ids="CRED-5",
        expected="the typed value is not shown on the terminal (echo off)",
        actual=f"{'; '.join(echoed)} (terminal echo was "
        f"{'off' if run.echo_off_when_typed else 'on'} while the value was typed)",
    )
    check(
        run.status == 0,
        ids="CRED-5",
        expected="the interactive add command ends with exit status 0 once the value is typed",
        actual=(
            f"still running {timeouts.config_bound():.0f} s after the value was typed (killed)"
            if run.status is None
            else f"exit status {run.status}"
        )
        + f"; the terminal showed {terminal_tail(run.shown, token)}",
    )
    running = host.start()
    running.stop()
    sent = header_values(docs.journal, HEADER)
    status = running.status("docs")
    check(
        bool(sent) and all(v == token for v in sent) and status is not None and status.connected,
        ids="CRED-5",
        expected=(
            f"the typed value saved: the next start sends it as {HEADER} and the server connects"
        ),
        actual=f"{sum(v == token for v in sent)} of {len(sent)} messages carried the typed value; "
        f"status {status.line if status else 'missing'!r}",
    )
