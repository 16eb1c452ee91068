"""CRED: credentials.

Strategy: every secret the suite configures is a canary
(`mcp_host_conformance.harness.canaries`), a random value searched raw, URL-encoded,
JSON-escaped and base64-encoded, so a leak is found however the client encodes it, and is
reported by label, never by value. Where a secret goes is read from the mocks' journals
(each HTTP mock records the headers it received, each stdio mock its whole environment,
the mock model every request); where it must not appear is everything the suite can see:
what the user saw (status lines, listings, confirmations, results, errors, prompts), the
session files the client reported, and every request to the model service.
"""

from __future__ import annotations

import base64
import json
import re
import secrets as _random
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from mcp_host_conformance.harness.canaries import CANARY_PREFIX, Canary, Secrets
from mcp_host_conformance.harness.observe import model_requests
from mcp_host_conformance.harness.outcomes import NOT_APPLICABLE_PREFIX, check
from mcp_host_conformance.harness.pty_session import (
    fill_template,
    run_in_terminal,
    terminal_environ,
)
from mcp_host_conformance.mocks.model_script import Step
from mcp_host_conformance.mocks.spec import Misbehaviour, Reply, ServerSpec, Tool


def tool_spec(name: str, reply: Reply | None = None) -> ServerSpec:
    tool = Tool("query", "Looks something up.", reply=reply or Reply.text(f"answer from {name}"))
    return ServerSpec(name=name, tools=[tool])


def hits_of(label: str, hits: list[str]) -> list[str]:
    """The search results that concern the canary labelled `label`."""
    return [h for h in hits if f"secret {label} (" in h]


def header_values(journal, name: str) -> list[str | None]:
    """The value of header `name` on every `initialize` and `tools/call` a mock received."""
    return [
        e.headers.get(name.lower())
        for e in journal.entries(kind="rpc")
        if e.method in ("initialize", "tools/call")
    ]


def everywhere(host, model, secrets: Secrets) -> list[str]:
    """Every place a configured secret must never be: what the user saw (status lines,
    listings, confirmations, results, errors, prompts), the session files, the model requests."""
    hits = secrets.found_in_texts(host.seen)
    hits += secrets.found_in_texts([c.text for c in host.confirmations], "confirmations")
    hits += secrets.found_in_files(host.session_files)
    hits += secrets.found_in_journal(model.journal, "requests to the model service")
    return hits


# ---- CRED-1 -----------------------------------------------------------------------------------


@pytest.mark.requirements("CRED-1")
def test_each_header_goes_to_its_own_server_only(host, http_mock, model, secrets):
    """A header configured for a remote server is sent to that server and to no other
    destination."""
    alpha_token = secrets.new("alpha-token", special=True)
    beta_token = secrets.new("beta-token", special=True)
    alpha = http_mock(tool_spec("alpha"))
    beta = http_mock(tool_spec("beta"))
    plain = http_mock(tool_spec("plain"))  # configured without any header
    host.add_http("alpha", alpha, headers={"Authorization": f"Bearer {alpha_token}"})
    host.add_http("beta", beta, headers={"X-Api-Key": beta_token})
    host.add_http("plain", plain)
    model.script(
        [
            Step.calls(
                [
                    Step.call(server="alpha", tool="query", arguments={"q": "a"}),
                    Step.call(server="beta", tool="query", arguments={"q": "b"}),
                    Step.call(server="plain", tool="query", arguments={"q": "c"}),
                ]
            ),
            Step.text("done"),
        ]
    )
    running = host.start()
    running.ask("ask all three", approve="y")
    running.stop()

    # The header does reach its own server, on every request (connect and call).
    sent_alpha = header_values(alpha.journal, "Authorization")
    check(
        bool(sent_alpha) and all(v == f"Bearer {alpha_token}" for v in sent_alpha),
        ids="CRED-1",
        expected=(
            "server alpha's initialize and tools/call carry its configured Authorization header"
        ),
        actual=(
            f"{sum(v == f'Bearer {alpha_token}' for v in sent_alpha)} of {len(sent_alpha)} "
            "messages carried it"
        ),
    )
    sent_beta = header_values(beta.journal, "X-Api-Key")
    check(
        bool(sent_beta) and all(v == beta_token for v in sent_beta),
        ids="CRED-1",
        expected="server beta's initialize and tools/call carry its configured X-Api-Key header",
        actual=f"{sum(v == beta_token for v in sent_beta)} of {len(sent_beta)} messages carried it",
    )
    # ...and nowhere else.
    leaks = hits_of("alpha-token", secrets.found_in_journal(beta.journal, "server beta"))
    leaks += hits_of("alpha-token", secrets.found_in_journal(plain.journal, "server plain"))
    leaks += hits_of("beta-token", secrets.found_in_journal(alpha.journal, "server alpha"))
    leaks += hits_of("beta-token", secrets.found_in_journal(plain.journal, "server plain"))
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


@pytest.mark.requirements("CRED-2")
def test_each_environment_variable_reaches_its_own_server_only(
    host, stdio_mock, http_mock, model, secrets
):
    """An environment variable configured for a stdio server reaches that server only."""
    one_token = secrets.new("one-env", special=True)
    two_token = secrets.new("two-env", special=True)
    one = stdio_mock(tool_spec("one"))
    two = stdio_mock(tool_spec("two"))
    remote = http_mock(tool_spec("remote"))
    host.add_stdio("one", one, env={"ONE_TOKEN": one_token})
    host.add_stdio("two", two, env={"TWO_TOKEN": two_token})
    host.add_http("remote", remote)
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


@pytest.mark.requirements("CRED-3")
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


@pytest.mark.requirements("CRED-3")
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
    secrets.canaries.append(Canary("joined-header", joined))
    # Only an environment value can hold non-ASCII text; a quote and a backslash make its
    # JSON escape differ from the value, and the non-ASCII letters make the two escapes differ.
    wide = f'{CANARY_PREFIX}wide-{_random.token_hex(8)}"\\\u00e9\u00f8'
    secrets.canaries.append(Canary("wide-env", wide))
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


# Header values: visible ASCII, with the characters that JSON, URL and base64 treat specially.
SECRET_TAILS = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=16
)


@pytest.mark.requirements("CRED-3")
# No shrinking (nor example database): every example starts the host, and the first failing
# one says enough; shrinking would start it dozens of times more.
@settings(
    max_examples=5,
    deadline=None,
    database=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(tail=SECRET_TAILS)
def test_no_secret_leaks_whatever_its_characters(host, http_mock, model, tail):
    """No configured secret ever appears in status lines, confirmations, results, session
    files, or any request to the model service: for any header value."""
    name = f"s{_random.token_hex(3)}"
    canaries = Secrets()
    value = f"{CANARY_PREFIX}prop-{_random.token_hex(6)}{tail}"
    canaries.canaries.append(Canary("generated-header", value))
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
    leaks += canaries.found_in_files(host.session_files[files_before:])
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


def oauth_reason_problems(reason: str) -> list[str]:
    """What a credential-rejection reason lacks: it must say OAuth is not supported and
    suggest a static header such as an API key."""
    text = reason.lower()
    problems = []
    if "oauth" not in text:
        problems.append("does not mention OAuth")
    elif "support" not in text:
        problems.append("does not say OAuth is not supported")
    if not any(word in text for word in ("header", "api key", "api-key", "apikey", "token")):
        problems.append("suggests no static header such as an API key")
    return problems


@pytest.mark.requirements("CRED-4")
def test_rejected_credentials_are_reported_without_the_value(host, http_mock, secrets):
    """A server that rejects the credentials (401 or 403 at connect) is reported unavailable
    with a reason that says OAuth is not supported and suggests a static header such as an
    API key, without echoing the value."""
    wrong = secrets.new("wrong-key", special=True)
    forbidden_key = secrets.new("forbidden-key", special=True)
    right = secrets.new("right-key", special=True)
    checking = Misbehaviour(accept_header="X-Api-Key", accept_value=right)
    unauthorized = http_mock(
        ServerSpec(name="unauthorized", tools=[Tool("query")], misbehaviour=checking)
    )
    forbidden = http_mock(
        ServerSpec(
            name="forbidden", tools=[Tool("query")], misbehaviour=Misbehaviour(reject_status=403)
        )
    )
    accepted = http_mock(
        ServerSpec(
            name="accepted",
            tools=[Tool("query")],
            misbehaviour=Misbehaviour(accept_header="X-Api-Key", accept_value=right),
        )
    )
    host.add_http("unauthorized", unauthorized, headers={"X-Api-Key": wrong})
    host.add_http("forbidden", forbidden, headers={"Authorization": f"Bearer {forbidden_key}"})
    host.add_http("accepted", accepted, headers={"X-Api-Key": right})
    running = host.start()
    running.stop()

    good = running.status("accepted")
    check(
        good is not None and good.connected,
        ids="CRED-4",
        expected="the server given the right key connects (control)",
        actual=f"status {good.line if good else 'missing'!r}",
    )
    for name, status_code in (("unauthorized", 401), ("forbidden", 403)):
        status = running.status(name)
        check(
            status is not None and not status.connected,
            ids="CRED-4",
            expected=f"server {name} (HTTP {status_code} at connect) reported unavailable",
            actual="no status line" if status is None else f"connected={status.connected}",
        )
        reason = status.reason or status.line
        problems = oauth_reason_problems(reason)
        check(
            not problems,
            ids="CRED-4",
            expected=(
                f"server {name}'s reason says OAuth is not supported "
                "and suggests a static header such as an API key"
            ),
            actual=f"the reason {', and '.join(problems)}",
        )
    leaks = secrets.found_in_texts(host.seen) + secrets.found_in_texts(
        [s.reason or "" for s in running.statuses], "unavailable reasons"
    )
    check(
        not leaks,
        ids="CRED-4",
        expected="no header value echoed in the status lines or anything else the user saw",
        actual="; ".join(sorted(set(leaks))),
    )


# ---- CRED-5 -----------------------------------------------------------------------------------


HEADER = "X-Api-Key"


def terminal_tail(text: str, secret: str, limit: int = 600) -> str:
    """The end of what the terminal showed, for a failure message: the typed secret masked."""
    text = text.replace(secret, "<the typed secret>").replace("\r\n", "\n").strip()
    return repr(text[-limit:])


@pytest.mark.requirements("CRED-5")
def test_secret_typed_with_echo_off(description, host, http_mock, secrets, timeouts):
    """A secret is typed with echo off when the server is added interactively.

    Observable for a host whose adapter declares `describe().interactive_add` (how a person
    adds a remote server with one secret header at a terminal): the harness runs it in a
    pseudo-terminal, types the value at the prompt, and reads what the terminal showed. The
    value must also really be saved and sent, so a host that hides it by dropping it fails
    too. For any other host the rule is not observable: not applicable, never passed."""
    if description.interactive_add is None:
        pytest.skip(
            f"{NOT_APPLICABLE_PREFIX}{description.name} declares no interactive add command "
            "(describe().interactive_add), so echo-off secret input cannot be observed"
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
        settle=timeouts.grace,
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
