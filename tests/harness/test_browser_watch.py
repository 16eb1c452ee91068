"""The stand-in browsers record what they are asked to open, and open nothing (CRED-6)."""

from __future__ import annotations

import os
import subprocess
import sys

from mcp_host_conformance.harness.oauth.browser_watch import (
    BROWSER_COMMANDS,
    BrowserWatch,
    browser_watch,
    guard_browser,
)


def test_every_stand_in_records_its_request(tmp_path):
    watch = BrowserWatch(tmp_path)
    assert watch.install()
    mark = watch.mark()
    env = {**os.environ, **watch.environ(os.environ.get("PATH", os.defpath))}
    for name in BROWSER_COMMANDS:
        subprocess.run([name, f"http://127.0.0.1:9/{name}"], env=env, check=True, timeout=10)
    assert watch.opened_since(mark) == [
        f"{name} http://127.0.0.1:9/{name}" for name in BROWSER_COMMANDS
    ]
    assert watch.opened_since(watch.mark()) == []


def test_the_process_watch_is_made_once():
    watch = browser_watch()
    assert watch is not None and browser_watch() is watch


def test_the_guard_points_browser_at_the_stand_in_and_restores_it(monkeypatch):
    monkeypatch.setenv("BROWSER", "firefox")
    restore = guard_browser()
    watch = browser_watch()
    assert watch is not None and os.environ["BROWSER"] == watch.browser
    restore()
    assert os.environ["BROWSER"] == "firefox"


def test_pythons_webbrowser_uses_it_in_a_process_of_its_own(tmp_path):
    # webbrowser reads BROWSER once per process: a fresh one, as the suite's workers are.
    watch = BrowserWatch(tmp_path)
    assert watch.install()
    mark = watch.mark()
    code = f"import webbrowser; assert webbrowser.open({'http://127.0.0.1:9/x'!r})"
    env = {**os.environ, "BROWSER": watch.browser}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=30)
    assert watch.opened_since(mark) == [f"{BROWSER_COMMANDS[0]} http://127.0.0.1:9/x"]
