import json
import os
import stat

import pytest

from mcp_host_conformance.reference_client.config import (
    ConfigError,
    ConfigStore,
    HttpServerConfig,
    StdioServerConfig,
    destination,
    secrets_of,
    url_refusal,
)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def environ(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home)}


def test_path_under_home_and_xdg(tmp_path, environ):
    assert ConfigStore(environ).path == tmp_path / "home/.config/mcp-reference-host/servers.json"
    xdg = {**environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert ConfigStore(xdg).path == tmp_path / "xdg/mcp-reference-host/servers.json"
    relative = {**environ, "XDG_CONFIG_HOME": "relative/dir"}
    assert ConfigStore(relative).path == tmp_path / "home/.config/mcp-reference-host/servers.json"


def test_missing_home_is_an_error():
    with pytest.raises(ConfigError):
        ConfigStore({})


def test_add_load_remove_roundtrip_private(environ):
    store = ConfigStore(environ)
    assert store.load() == []
    http = HttpServerConfig("docs", "https://docs.example/mcp", {"X-Api-Key": "k-123"})
    stdio = StdioServerConfig("local", "/usr/bin/srv", ["a;b", "$HOME"], {"TOKEN": "t-456"})
    path = store.add(http)
    store.add(stdio)
    assert path == store.path
    assert mode(store.path) == 0o600
    assert mode(store.path.parent) == 0o700
    assert store.load() == [http, stdio]
    assert json.loads(store.path.read_text())["servers"][0]["type"] == "http"
    assert store.remove("docs") is True
    assert store.remove("docs") is False
    assert store.load() == [stdio]
    leftovers = [p.name for p in store.path.parent.iterdir()]
    assert leftovers == ["servers.json"]


def test_duplicate_and_bad_names_refused(environ):
    store = ConfigStore(environ)
    store.add(HttpServerConfig("docs", "https://a.example/mcp"))
    with pytest.raises(ConfigError, match="already exists"):
        store.add(HttpServerConfig("docs", "https://b.example/mcp"))
    for bad in ("", "a b", "x\x1b", "n" * 65):
        with pytest.raises(ConfigError):
            store.add(HttpServerConfig(bad, "https://b.example/mcp"))


def test_looser_modes_are_tightened(environ):
    store = ConfigStore(environ)
    store.add(HttpServerConfig("docs", "https://a.example/mcp", {"h": "v"}))
    store.path.chmod(0o644)
    store.path.parent.chmod(0o755)
    store.load()
    assert mode(store.path) == 0o600
    assert mode(store.path.parent) == 0o700


def test_damaged_file_error_never_shows_content(environ):
    store = ConfigStore(environ)
    store.add(HttpServerConfig("docs", "https://a.example/mcp", {"h": "SECRET-VALUE-9"}))
    store.path.write_text(store.path.read_text()[:-5])
    with pytest.raises(ConfigError) as info:
        store.load()
    assert "SECRET-VALUE-9" not in str(info.value)
    assert str(store.path) in str(info.value)


def test_working_directory_config_is_ignored(tmp_path, environ, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"evil": {"url": "http://x"}}}))
    monkeypatch.chdir(project)
    assert ConfigStore(environ).load() == []


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/mcp",
        "http://localhost:8000/mcp",
        "http://127.0.0.1:1/mcp",
        "http://127.3.2.1/mcp",
        "http://[::1]:9/mcp",
        "https://10.0.0.1/mcp",
    ],
)
def test_url_accepted(url):
    assert url_refusal(url) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/mcp",
        "http://10.0.0.1/mcp",
        "http://128.0.0.1/mcp",
        "http://localhost.evil.com/mcp",
        "ftp://example.com/",
        "example.com/mcp",
    ],
)
def test_url_refused_names_https(url):
    reason = url_refusal(url)
    assert reason and "HTTPS" in reason


def test_url_refused_other():
    assert url_refusal("https://user:pw@example.com/") and "pw" not in url_refusal(
        "https://user:pw@example.com/"
    )
    assert url_refusal("https:///nohost")
    assert url_refusal("http://localhost:99999/")


def test_destination_and_secrets():
    http = HttpServerConfig("d", "https://x/mcp", {"A": "1", "B": "2"})
    stdio = StdioServerConfig("s", "/bin/srv", ["a b", "c"], {"E": "3"})
    assert destination(http) == "https://x/mcp"
    assert destination(stdio) == "/bin/srv 'a b' c"
    assert secrets_of([http, stdio]) == ["1", "2", "3"]


def test_a_bearer_token_is_a_secret_of_its_own():
    server = HttpServerConfig(
        "docs", "https://docs.example/mcp", {"Authorization": "Bearer tok-123456789"}
    )
    assert secrets_of([server]) == ["Bearer tok-123456789", "tok-123456789"]


def test_a_short_word_after_a_space_is_not_split_off():
    server = HttpServerConfig("docs", "https://docs.example/mcp", {"X-Note": "hello world"})
    assert secrets_of([server]) == ["hello world"]
