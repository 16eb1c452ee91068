"""A tiny in-process adapter served over the driver protocol, for test_driver.py.

Run as a script: `python fake_driver.py` serves it on stdin/stdout."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from mcp_host_conformance.harness.contract.adapter import (
    CallResult,
    Confirmation,
    Description,
    HttpServer,
    ServerStatus,
    Shown,
    StartOptions,
    Stopped,
    Turn,
)
from mcp_host_conformance.harness.contract.driver_server import serve


class FakeSession:
    def __init__(self, options: StartOptions, servers: dict) -> None:
        self.options = options
        self.statuses = [
            ServerStatus(
                name=name, connected=True, tools=1, destination=dest, line=f"{name}: 1 tool"
            )
            for name, dest in servers.items()
        ]
        self.text = (
            f"model at {options.model_url}; cwd {options.cwd}; env {sorted(options.env)}; "
            f"timeouts {options.connect_timeout} {options.call_timeout}"
        )
        self.cancelled = threading.Event()

    def ask(self, question, approve, acknowledge, on_question=None):
        if question == "ask me":  # the host's own free-form question to the person
            said = on_question("Which directory should I use?") if on_question else None
            return Turn(question_sent=True, answer=f"the person said {said!r}")
        if question == "crash":
            raise RuntimeError("the host fell over")
        if question == "hang":
            threading.Event().wait()
        if question == "wait":
            acknowledge("waiting for a cancel")
            self.cancelled.wait(10)
            return Turn(
                question_sent=True,
                calls=[CallResult(tool="mcp_a_slow", status="unknown", output="cancelled")],
            )
        confirmation = Confirmation(
            server="a",
            destination="http://127.0.0.1:1/mcp",
            tool="echo",
            arguments='{\n  "x": 1\n}',
            warning="goes to a",
            text="Server: a ...",
        )
        answer = approve(confirmation)
        accepted = acknowledge("the call may have run")
        status = "completed" if answer == "y" else "denied"
        return Turn(
            question_sent=accepted,
            confirmations=[confirmation],
            calls=[CallResult(tool="mcp_a_echo", status=status, output=question)],
            acknowledgements=["the call may have run"],
            answer=f"answer={answer!r} ack={accepted}",
            text="everything shown",
        )

    def cancel(self):
        self.cancelled.set()

    def stop(self):
        return Stopped(
            session_id="sess-1", session_files=[self.options.home / "s.json"], text="bye"
        )


class FakeAdapter:
    def describe(self):
        print("a host that prints to stdout must not break the protocol")
        return Description(
            name="fake",
            version="1.2",
            profiles=frozenset({"pinning"}),
            can_cancel=True,
            status_vocabulary={"failed": r"^Error: "},
            has_oauth=True,
        )

    def project_config(self, servers):
        names = {s.name: s.url if isinstance(s, HttpServer) else s.command for s in servers}
        return {".fake/project.json": json.dumps(names)}

    def _config(self, home: Path) -> Path:
        return home / "fake.json"

    def _load(self, home: Path) -> dict:
        path = self._config(home)
        return json.loads(path.read_text()) if path.exists() else {}

    def add_server(self, home, server):
        servers = self._load(home)
        dest = server.url if isinstance(server, HttpServer) else server.command
        servers[server.name] = dest
        self._config(home).write_text(json.dumps(servers))
        return Shown(
            text=f"added {type(server).__name__} {server.name}", paths=[self._config(home)]
        )

    def remove_server(self, home, name):
        servers = self._load(home)
        servers.pop(name)
        self._config(home).write_text(json.dumps(servers))
        return Shown(text=f"removed {name}")

    def list_servers(self, home):
        return Shown(text="\n".join(f"{k} {v}" for k, v in self._load(home).items()))

    def start(self, options):
        return FakeSession(options, self._load(options.home))


if __name__ == "__main__":
    sys.exit(serve(FakeAdapter()))
