import io
import os
import re
import stat

import pytest

from mcp_host_conformance.reference_client.cli import main
from mcp_host_conformance.reference_client.config import (
    ConfigStore,
    HttpServerConfig,
    StdioServerConfig,
)

SECRET = "canary-SeCrEt-4711"


@pytest.fixture
def environ(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "DOCS_KEY": SECRET}


def run(argv, environ, stdin_text=""):
    out = io.StringIO()
    code = main(argv, environ=environ, stdin=io.StringIO(stdin_text), stdout=out)
    return code, out.getvalue()


def test_help_everywhere(environ):
    for argv in (["--help"], ["mcp", "--help"], ["mcp", "add", "--help"], ["chat", "--help"]):
        code, out = run(argv, environ)
        assert code == 0 and "usage:" in out


def test_add_with_prompted_header_does_not_echo(environ):
    code, out = run(
        ["mcp", "add", "docs", "https://docs.example/mcp", "--header", "X-Api-Key"],
        environ,
        stdin_text=SECRET + "\n",
    )
    assert code == 0, out
    assert SECRET not in out
    assert "X-Api-Key" in out and "Not connected yet" in out
    store = ConfigStore(environ)
    assert store.load() == [
        HttpServerConfig("docs", "https://docs.example/mcp", {"X-Api-Key": SECRET})
    ]
    assert str(store.path) in out
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600


def test_add_header_from_env_and_list_hides_values(environ):
    code, out = run(
        [
            "mcp",
            "add",
            "docs",
            "https://d.example/mcp",
            "--header-from-env",
            "Authorization=DOCS_KEY",
        ],
        environ,
    )
    assert code == 0, out
    code, out = run(
        [
            "mcp",
            "add",
            "local",
            "--command",
            "/bin/srv",
            "--arg=a;b",
            "--arg",
            "$HOME",
            "--env-from-env",
            "TOKEN=DOCS_KEY",
        ],
        environ,
    )
    assert code == 0, out
    code, out = run(["mcp", "list"], environ)
    assert code == 0
    assert SECRET not in out
    assert "docs" in out and "https://d.example/mcp" in out and "Authorization" in out
    assert "local" in out and "TOKEN" in out and "/bin/srv 'a;b' '$HOME'" in out
    servers = ConfigStore(environ).load()
    assert servers[1] == StdioServerConfig("local", "/bin/srv", ["a;b", "$HOME"], {"TOKEN": SECRET})


def test_secret_on_argv_is_refused_without_echo(environ):
    for argv in (
        ["mcp", "add", "d", "https://d.example/mcp", "--header", f"Authorization: Bearer {SECRET}"],
        ["mcp", "add", "d", "https://d.example/mcp", "--header", f"X-Key={SECRET}"],
        ["mcp", "add", "d", "--command", "x", "--env", f"TOKEN={SECRET}"],
        ["mcp", "add", "d", "https://d.example/mcp", "--header", "Authorization", "Bearer", SECRET],
    ):
        code, out = run(argv, environ, stdin_text="v\n")
        assert code == 2, argv
        assert SECRET not in out
        assert out.count("\n") == 1 or "prompt" in out
    assert ConfigStore(environ).load() == []
    code, out = run(["mcp", "add", "d", "https://d.example/mcp", "--header", "A: b"], environ)
    assert "--header-from-env" in out and "prompt" in out


def test_add_errors(environ):
    assert run(["mcp", "add", "d", "https://d.example/mcp"], environ)[0] == 0
    code, out = run(["mcp", "add", "d", "https://e.example/mcp"], environ)
    assert code == 1 and "already exists" in out
    assert run(["mcp", "add", "e"], environ)[0] == 2
    assert run(["mcp", "add", "e", "ftp://x/"], environ)[0] == 2
    code, out = run(["mcp", "add", "e", f"https://u:{SECRET}@x/"], environ)
    assert code == 2 and SECRET not in out
    code, out = run(["mcp", "add", "e", "https://x/", "--header-from-env", "A=MISSING"], environ)
    assert code == 2 and "MISSING" in out
    code, out = run(["mcp", "add", "e", "https://x/", "--header", "A"], environ, stdin_text="")
    assert code == 2 and "no value" in out
    assert run(["mcp", "add", "e", "https://x/", "--arg", "a"], environ)[0] == 2


def test_plain_http_warns_but_saves(environ):
    code, out = run(["mcp", "add", "far", "http://example.com/mcp"], environ)
    assert code == 0 and "HTTPS" in out and "Warning" in out
    code, out = run(["mcp", "add", "near", "http://127.0.0.1:9/mcp"], environ)
    assert code == 0 and "Warning" not in out


def test_remove(environ):
    run(["mcp", "add", "d", "https://d.example/mcp"], environ)
    assert run(["mcp", "remove", "d"], environ) == (0, "Removed MCP server d.\n")
    code, out = run(["mcp", "remove", "d"], environ)
    assert code == 1 and "no server named" in out
    code, out = run(["mcp", "list"], environ)
    assert "No MCP servers" in out


def test_usage_errors_exit_2(environ):
    assert run([], environ)[0] == 2
    assert run(["bogus"], environ)[0] == 2
    assert run(["mcp", "remove"], environ)[0] == 2


def test_damaged_config_is_one_line_without_content(environ):
    run(["mcp", "add", "d", "https://d.example/mcp", "--header-from-env", "K=DOCS_KEY"], environ)
    path = ConfigStore(environ).path
    path.write_text(path.read_text()[:-3])
    code, out = run(["mcp", "list"], environ)
    assert code == 1 and SECRET not in out and out.count("\n") == 1


def test_sessions_listing(environ):
    code, out = run(["sessions"], environ)
    assert code == 0 and "No saved sessions" in out
    from mcp_host_conformance.reference_client.sessions import SessionLog

    with SessionLog.create(environ) as log:
        log.append({"type": "message", "role": "user", "content": "How do hooks work?"})
    code, out = run(["sessions"], environ)
    assert log.id in out and "How do hooks work?" in out


def test_chat_needs_a_model_key(environ):
    code, out = run(["chat"], {k: v for k, v in environ.items()})
    assert code == 2 and "OPENAI_API_KEY" in out


def test_chat_resume_unknown_session(environ):
    pytest.importorskip("mcp_host_conformance.reference_client.engine")
    code, out = run(
        ["chat", "--resume", "20260101-000000-abcdef"], {**environ, "OPENAI_API_KEY": "k"}
    )
    assert code == 1 and "no session" in out


def test_chat_and_resume_in_process(environ, tmp_path, monkeypatch):
    pytest.importorskip("mcp_host_conformance.reference_client.engine")
    http_server = pytest.importorskip("mcp_host_conformance.mocks.http_server")
    responses = pytest.importorskip("mcp_host_conformance.mocks.responses")
    model_script = pytest.importorskip("mcp_host_conformance.mocks.model_script")
    spec = pytest.importorskip("mcp_host_conformance.mocks.spec")
    Step = model_script.Step
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    server_spec = spec.ServerSpec(name="docs", tools=[spec.Tool("query-docs", "Query.")])
    with http_server.HttpMock(server_spec) as docs, responses.MockResponses() as model:
        env = {**environ, "OPENAI_BASE_URL": model.url, "OPENAI_API_KEY": model.api_key}
        assert run(["mcp", "add", "docs", docs.url, "--header-from-env", "K=DOCS_KEY"], env)[0] == 0
        model.script(
            [Step.call(server="docs", tool="query-docs", arguments={"q": 1}), Step.text("Done.")]
        )
        code, out = run(["chat", "--connect-timeout", "30"], env, "What is it?\ny\n/exit\n")
        assert code == 0, out
        assert "MCP server docs: 1 tool" in out and "Done." in out
        assert SECRET not in out
        session_id = re.search(r"--resume (\S+)", out).group(1)
        assert docs.journal.count("tools/call") == 1

        # Damage the log, remove the server, resume: loads with a warning, calls nothing.
        path = tmp_path / "home/.local/share/mcp-reference-host/sessions" / f"{session_id}.jsonl"
        assert SECRET not in path.read_text()
        with open(path, "a") as f:
            f.write('{"type": "message", "rol\n')
        assert run(["mcp", "remove", "docs"], env)[0] == 0
        before = len(docs.journal)
        model.script([Step.text("Again.")])
        code, out = run(["chat", "--resume", session_id], env, "And now?\n")
        assert code == 0, out
        assert f"Resuming session {session_id}" in out
        assert re.search(rf"Warning: .*{session_id}\.jsonl:\d+: damaged record", out)
        assert "Again." in out
        assert len(docs.journal) == before
        body = model.journal.entries(kind="http")[-1].extra["body"]
        kinds = [item.get("type") for item in body["input"]]
        assert "function_call" in kinds and "function_call_output" in kinds


# ---- a user's mistakes, answered (hardening) -------------------------------------------------


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "-1", "0", "1e9", "ten", ""])
@pytest.mark.parametrize("flag", ["--connect-timeout", "--call-timeout"])
def test_timeouts_must_be_positive_finite_seconds(environ, flag, value):
    code, out = run(["chat", f"{flag}={value}"], {**environ, "OPENAI_API_KEY": "k"}, "/exit\n")
    assert code == 2, out
    assert flag in out and "greater than 0" in out and out.count("\n") == 1


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("notaurl", "https://"),
        ("docs.example.com/mcp", "no scheme"),
        ("http://127.0.0.1:99999/mcp", "port"),
        ("https://docs.example.com:0/mcp", "port"),
        ("https://exa mple.com/mcp", "space"),
        ("https://docs.example.com/m\x1b[2Jcp", "control character"),
        ("https://docs.\u202eexample.com/mcp", "control character"),
        ("https://a..b/mcp", "host name"),
        ("https:///mcp", "no host"),
        ("gopher://docs.example.com/mcp", "scheme"),
    ],
)
def test_bad_urls_are_refused_at_add_saying_what_is_wrong(environ, url, says):
    code, out = run(["mcp", "add", "d", url], environ)
    assert code == 2, out
    assert says in out and out.count("\n") == 1
    assert "\x1b" not in out and "\u202e" not in out
    assert ConfigStore(environ).load() == []


def test_notaurl_message_names_both_schemes(environ):
    code, out = run(["mcp", "add", "d", "notaurl"], environ)
    assert code == 2 and "https://" in out and "http://" in out and "loopback" in out


@pytest.mark.parametrize(
    "value",
    ["Bearer caf\u00e9", "tab\there", "line\nbreak", "nul\x00", "bell\x07", "del\x7f", "\u202e"],
)
def test_header_values_http_cannot_carry_are_refused_at_add(environ, value):
    env = {**environ, "BAD": value}
    code, out = run(["mcp", "add", "d", "https://d.example/mcp", "--header-from-env", "K=BAD"], env)
    assert code == 2, out
    assert "header K" in out and "visible ASCII" in out or "line break" in out
    assert value not in out
    assert ConfigStore(environ).load() == []
    if "\n" not in value:  # typed at the prompt, a line ends at the line break
        code, out = run(
            ["mcp", "add", "d", "https://d.example/mcp", "--header", "K"], environ, value + "\n"
        )
        assert code == 2 and ConfigStore(environ).load() == []


@pytest.mark.parametrize("name", ["X-Key\n", "X Key", "X:Key", "K\u00e9y", ""])
def test_header_names_must_be_tokens(environ, name):
    env = {**environ, "V": "value"}
    code, out = run(
        ["mcp", "add", "d", "https://d.example/mcp", "--header-from-env", f"{name}=V"], env
    )
    assert code == 2, out
    assert ConfigStore(environ).load() == []


def test_a_bad_header_in_a_hand_edited_file_makes_the_server_unavailable(environ, tmp_path):
    from mcp_host_conformance.reference_client.discovery import discover
    from mcp_host_conformance.reference_client.redaction import Redactor
    from tests.reference_client.engine_support import run as run_async

    server = HttpServerConfig("d", "http://127.0.0.1:9/mcp", {"K": "caf\u00e9-secret"})
    found = run_async(
        discover([server], environ={}, connect_timeout=2.0, redactor=Redactor(["caf\u00e9-secret"]))
    )
    [status] = found.statuses
    assert not status.connected and "header K" in status.reason
    assert "caf" not in status.line


def test_files_and_directories_are_private_whatever_the_umask(tmp_path):
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir()
    script = (
        "import io, os, sys\n"
        "os.umask(0)\n"
        "from mcp_host_conformance.reference_client.cli import main\n"
        "from mcp_host_conformance.reference_client.sessions import SessionLog\n"
        "env = {'HOME': sys.argv[1], 'K': 'secret-value'}\n"
        "out = io.StringIO()\n"
        "code = main(['mcp', 'add', 'd', 'https://d.example/mcp', '--header-from-env', 'X=K'],"
        " environ=env, stdout=out)\n"
        "assert code == 0, out.getvalue()\n"
        "SessionLog.create(env).close()\n"
    )
    subprocess.run([sys.executable, "-c", script, str(home)], check=True, timeout=60)
    made = [p for p in home.rglob("*")]
    assert {p.relative_to(home).parts[0] for p in made} == {".config", ".local"}
    for path in made:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), f"{path}: {oct(mode)}"
