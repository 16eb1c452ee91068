"""A real headless Chromium for tests, driven over the DevTools protocol on a pipe.

Strategy: no WebDriver, no port, no extra package: Chromium is started with
`--remote-debugging-pipe` (it reads commands from fd 3 and writes answers to fd 4, each
message ending in a NUL byte), inside the sealed network when the machine can make one
(`harness.sandbox`), and with its background networking switched off and every name
resolving nowhere besides, so opening a local page can never make the browser contact
anything. The browser is found as `$CHROMIUM`, `chromium`, `chromium-browser` or
`google-chrome`; `available()` says why not when none is there (CI installs Debian's
`chromium` in the tox env `report-html`).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
BOUND = 60.0


def executable() -> str | None:
    chosen = os.environ.get("CHROMIUM")
    if chosen:
        return chosen if shutil.which(chosen) else None
    return next((found for name in CANDIDATES if (found := shutil.which(name))), None)


def available() -> str | None:
    """None when a browser can be started here; otherwise why not."""
    if executable() is None:
        return "no Chromium found (set $CHROMIUM, or install Debian's chromium)"
    return None


class HeadlessBrowser:
    def __init__(self) -> None:
        binary = executable()
        if binary is None:
            raise RuntimeError(available())
        self._profile = tempfile.mkdtemp(prefix="mcphc-browser-")
        flags = [
            "--headless=new",
            "--disable-gpu",
            "--no-first-run",
            "--remote-debugging-pipe",
            f"--user-data-dir={self._profile}",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-pings",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--proxy-server=http://127.0.0.1:9",
            "about:blank",
        ]
        if os.geteuid() == 0:
            flags.insert(0, "--no-sandbox")  # Chromium refuses its own sandbox as root
        sealed = [sys.executable, "-m", "mcp_host_conformance.harness.sandbox.network", "--"]
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def wire_fds() -> None:  # in the child: the pipe ends become fds 3 and 4, inheritable
            commands, answers = os.dup(to_browser), os.dup(from_browser)
            os.dup2(commands, 3)
            os.dup2(answers, 4)

        self._process = subprocess.Popen(
            [*sealed, binary, *flags],
            preexec_fn=wire_fds,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next = 0
        self._lock = threading.Lock()
        self.events: list[dict[str, Any]] = []
        self._session: str | None = None

    # ---- the protocol -----------------------------------------------------------------------

    def _send(self, method: str, params: dict[str, Any] | None, session: str | None) -> int:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        return self._next

    def _receive(self, ident: int, deadline: float) -> dict[str, Any]:
        while True:
            while b"\0" not in self._buffer:
                if time.monotonic() > deadline:
                    raise TimeoutError("the browser did not answer in time")
                chunk = os.read(self._read, 1 << 16)
                if not chunk:
                    raise RuntimeError("the browser exited")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            message = json.loads(raw)
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"browser: {message['error']}")
                return dict(message.get("result") or {})
            self.events.append(message)

    def call(self, method: str, params: dict[str, Any] | None = None, page: bool = True) -> Any:
        with self._lock:
            ident = self._send(method, params, self._session if page else None)
            return self._receive(ident, time.monotonic() + BOUND)

    # ---- what a test needs ---------------------------------------------------------------

    def open(self, url: str, viewport: tuple[int, int] | None = None) -> None:
        """Open `url` in a new tab (its viewport `viewport` CSS pixels, width and height, at
        scale 1) and wait until it has loaded."""
        target = self.call("Target.createTarget", {"url": "about:blank"}, page=False)
        attached = self.call(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, page=False
        )
        self._session = attached["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        if viewport is not None:
            width, height = viewport
            self.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            )
        self.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + BOUND
        while self.evaluate("document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not finish loading")

    def evaluate(self, expression: str) -> Any:
        answer = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in answer:
            raise RuntimeError(f"in the page: {answer['exceptionDetails'].get('text')}")
        return answer.get("result", {}).get("value")

    def screenshot(self, path: Path) -> None:
        """A PNG of what the viewport shows now, written to `path`."""
        shot = self.call("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(shot["data"]))

    def click(self, selector: str) -> None:
        """A real mouse click (press and release) at the middle of the element's box."""
        where = self.evaluate(
            f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
            e.scrollIntoView({{block: "center"}}); const r = e.getBoundingClientRect();
            return [r.left + Math.min(r.width / 2, 40), r.top + r.height / 2]; }})()"""
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": where[0], "y": where[1], "button": "left", "clickCount": 1},
            )

    def type_into(self, selector: str, text: str) -> None:
        """Replace the text of an input by `text`, as typing it would (an `input` event)."""
        self.evaluate(
            f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
            e.focus(); e.select(); }})()"""
        )
        if text:
            self.call("Input.insertText", {"text": text})
        else:
            self.call(
                "Input.dispatchKeyEvent",
                {
                    "type": "keyDown",
                    "key": "Backspace",
                    "code": "Backspace",
                    "windowsVirtualKeyCode": 8,
                },
            )
            self.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": "Backspace"})

    def event_methods(self) -> list[str]:
        return [str(e.get("method")) for e in self.events]

    def close(self) -> None:
        try:
            with self._lock:
                self._send("Browser.close", None, None)
        except OSError:
            pass
        try:
            self._process.wait(BOUND)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(BOUND)
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> HeadlessBrowser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
