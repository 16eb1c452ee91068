#!/usr/bin/env python3
"""The client command the official conformance framework runs: the reference host, used as a
person would, against the scenario's server.

Usage (the framework appends the scenario's server URL):
    python tests/official/client/reference_host_client.py URL

In a scratch HOME it runs `mcp-reference-host mcp add scenario URL`, starts the mock model
(`mcp_host_conformance.mocks.responses.MockResponses`, with no script: its autopilot calls
every MCP tool it is offered once, with arguments made from the tool's schema), then runs
`mcp-reference-host chat` on pipes: it asks one question, answers `y` at every
confirmation, and leaves with `/exit` at the next prompt. The transcript goes to stdout
(the framework keeps it in the scenario's stdout.txt). Exit status: chat's, or 1 if chat
did not finish within BOUND seconds (it is then killed). The scratch HOME is removed.

Strategy: everything goes through the real command line in its own process, so what the
framework observes is what a person's session does; this script only plays the person.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from mcp_host_conformance.mocks.responses import MockResponses  # noqa: E402

PROGRAM = [sys.executable, "-m", "mcp_host_conformance.reference_client"]
SERVER_NAME = "scenario"
QUESTION = "Please use the available MCP tools."
APPROVAL_PROMPT = b"Approve this operation? [y/N] "
QUESTION_PROMPT = b"You> "
BOUND = 25.0  # seconds for the whole chat; the framework's own limit is 30 s by default


class Person:
    """Reads what chat writes and answers its prompts: the question once, `y` to every
    confirmation, `/exit` at the next question prompt."""

    def __init__(self, chat: subprocess.Popen[bytes]) -> None:
        self.chat = chat
        self.seen = bytearray()
        self.done = threading.Event()
        self._scanned = 0
        self._questions = 0

    def _answer(self, text: bytes) -> None:
        assert self.chat.stdin is not None
        try:
            self.chat.stdin.write(text + b"\n")
            self.chat.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def _react(self) -> None:
        while True:
            approval = self.seen.find(APPROVAL_PROMPT, self._scanned)
            question = self.seen.find(QUESTION_PROMPT, self._scanned)
            found = [i for i in (approval, question) if i >= 0]
            if not found:
                return
            first = min(found)
            if first == approval:
                self._scanned = approval + len(APPROVAL_PROMPT)
                self._answer(b"y")
            else:
                self._scanned = question + len(QUESTION_PROMPT)
                self._questions += 1
                self._answer(QUESTION.encode() if self._questions == 1 else b"/exit")

    def listen(self) -> None:
        assert self.chat.stdout is not None
        while True:
            chunk = os.read(self.chat.stdout.fileno(), 65536)
            if not chunk:
                break
            self.seen += chunk
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
            self._react()
        self.done.set()


def run(url: str) -> int:
    home = Path(tempfile.mkdtemp(prefix="official-client-"))
    try:
        environ = {
            "HOME": str(home),
            "PATH": os.environ.get("PATH", os.defpath),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        }
        if "PYTHONPATH" in os.environ:
            environ["PYTHONPATH"] = os.environ["PYTHONPATH"]
        added = subprocess.run(
            [*PROGRAM, "mcp", "add", SERVER_NAME, url],
            env=environ,
            capture_output=True,
            timeout=30,
        )
        sys.stdout.buffer.write(added.stdout + added.stderr)
        if added.returncode != 0:
            return added.returncode
        with MockResponses() as model:
            environ.update(OPENAI_BASE_URL=model.url, OPENAI_API_KEY=model.api_key)
            chat = subprocess.Popen(
                [*PROGRAM, "chat", "--connect-timeout", "10", "--call-timeout", "15"],
                env=environ,
                cwd=home,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            person = Person(chat)
            listener = threading.Thread(target=person.listen, daemon=True)
            listener.start()
            deadline = time.monotonic() + BOUND
            try:
                status = chat.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                chat.kill()
                chat.wait()
                sys.stdout.write(f"\n[chat did not finish within {BOUND:g} s: killed]\n")
                status = 1
            listener.join(5)
            return status
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    return run(argv[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
