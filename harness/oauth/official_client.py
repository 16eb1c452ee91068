"""The official MCP conformance framework's auth scenarios, pointed at the host under test
(OAUTH-1): the framework runner, and the client command it runs.

Strategy: the framework (`@modelcontextprotocol/conformance`, client mode, pinned in the
repository's tests/official/client) plays an OAuth-protected MCP server and its
authorization server, runs a client command with the server's URL appended, and judges
what the client did (discovery, registration, PKCE, token requests, scopes). The command
here is that client: the host under test, driven through its adapter as a case drives it
(`python -m mcp_host_conformance.harness.oauth.official_client --client NAME URL`, or
`--client-cmd CMD`). In a scratch HOME it adds the scenario's server with OAuth on (a
pre-registered client or a client ID metadata document URL when the scenario supplies
one), starts the host with `BROWSER` set to the harness's headless browser
(`harness.oauth_browser`, which follows the authorization server's approval redirect to the
host's callback), approves its tools and every call of one question answered by the mock
model's autopilot, and stops. It then searches everything the host showed and saved, and
every model request, for the scenario's tokens and client secret (OAUTH-1: never shown) and
writes what it found to `--report` (JSON), for the case.

The runner (`run_scenario`) is pure plumbing around the framework's CLI; what passes is
`checks_problem`'s rule (the same as tests/official/client's): at least one SUCCESS, no
FAILURE or WARNING, and the framework did not report the client as failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

__all__ = [
    "FRAMEWORK_ENV",
    "OFF_MACHINE",
    "SCENARIOS",
    "checks_problem",
    "framework",
    "main",
    "run_scenario",
]

FRAMEWORK_ENV: Final = "MCP_HOST_CONFORMANCE_OFFICIAL_FRAMEWORK"
PACKAGE: Final = "@modelcontextprotocol/conformance"
# The framework's client-mode scenarios of the authorization code flow (the ones OAUTH-1
# covers; docs/profiles.md says why each of the others is left out).
SCENARIOS: Final = (
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/resource-mismatch",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
)
# The framework's fixed client ID metadata document URL (auth/basic-cimd expects it as the
# client_id); the host is given it as its configured metadata document URL.
CIMD_URL: Final = "https://conformance-test.local/client-metadata.json"
# The scenarios that hand a host a name off this machine: their authorization server takes
# client ID metadata documents, so the host is given CIMD_URL (conformance-test.local), or
# their protected-resource metadata names evil.example.com. A host may look such a name up;
# only a sealed network answers it on this machine, so unsealed they are not run (and no
# other scenario's host is given CIMD_URL).
OFF_MACHINE: Final = {
    "auth/basic-cimd": "conformance-test.local",
    "auth/offline-access-scope": "conformance-test.local",
    "auth/resource-mismatch": "evil.example.com",
}
# What the framework's authorization servers issue: tokens and codes, never to be shown.
TOKEN_PATTERN: Final = re.compile(r"test-token[-\w]*|test-auth-code|cc-token[-\w]*")
SERVER_NAME: Final = "scenario"
QUESTION: Final = "Please use the available MCP tools."


# ---- the runner (the case's side) -----------------------------------------------------------


def framework(environ: dict[str, str] | None = None) -> list[str] | None:
    """The framework's command (node and its CLI), or None when it is not installed: the
    directory named by FRAMEWORK_ENV, else the repository's tests/official/client."""
    env = os.environ if environ is None else environ
    given = env.get(FRAMEWORK_ENV)
    roots = [Path(given)] if given else []
    roots.append(Path(__file__).resolve().parents[2] / "tests" / "official" / "client")
    for root in roots:
        modules = root if root.name == "node_modules" else root / "node_modules"
        node = modules / "node" / "bin" / "node"
        cli = modules / PACKAGE / "dist" / "index.js"
        if node.is_file() and cli.is_file():
            return [str(node), str(cli)]
    return None


def _modules(cli: list[str]) -> Path:
    """The node_modules directory the framework's CLI (`framework()`) lies in."""
    return Path(cli[-1]).parents[3]


def checks_problem(returncode: int | None, checks: list[dict[str, Any]]) -> str | None:
    """Why a scenario run did not pass, or None (tests/official/client's rule)."""
    if returncode is None:
        return "the framework did not finish within its bound"
    bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    if bad:
        first = bad[0]
        why = first.get("errorMessage") or first.get("description") or ""
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        return f"{first.get('status')} {first.get('id')}: {str(why)[:200]}{more}"
    if not any(c.get("status") == "SUCCESS" for c in checks):
        return "no successful check"
    if returncode != 0:
        return f"the framework reported the client as failed (exit {returncode})"
    return None


RUNNER: Final = Path(__file__).resolve().parents[1] / "data" / "official_runner.mjs"


class _Runner:
    """The framework's CLI in one Node process that runs it once per request
    (data/official_runner.mjs): a start of the CLI costs ~0.8 s of CPU loading its
    dependencies, and a run starts it once per auth scenario. One request at a time; the
    process ends with this one (its stdin closes), and one that fails or overruns is
    killed and replaced on the next request."""

    def __init__(self, cli: list[str]) -> None:
        self.cli = cli
        self.lock = threading.Lock()
        self.process: subprocess.Popen[str] | None = None
        self.errors: IO[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        env = dict(os.environ)
        # V8's compiled code for the framework's modules, kept beside them (Node 22 reuses
        # it, and ignores it if unwritable)
        env.setdefault(
            "NODE_COMPILE_CACHE", str(_modules(self.cli) / ".cache" / "node-compile-cache")
        )
        if self.errors is not None:
            self.errors.close()
        self.errors = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        return subprocess.Popen(
            [self.cli[0], str(RUNNER), self.cli[-1]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=env,
        )

    def run(
        self, args: list[str], env: dict[str, str], cwd: Path, bound: float
    ) -> tuple[int | None, str]:
        """The CLI's exit status (None: no answer within `bound` s) and its output."""
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                self.process = self._start()
            process = self.process
            assert process.stdin is not None and process.stdout is not None
            request = {"args": args, "env": env, "cwd": str(cwd)}
            reply: list[str] = []
            reader = threading.Thread(
                target=lambda: reply.append(process.stdout.readline()),  # type: ignore[union-attr]
                daemon=True,
            )
            try:
                process.stdin.write(json.dumps(request) + "\n")
                process.stdin.flush()
            except OSError:
                pass  # it has ended: said below
            reader.start()
            try:
                reader.join(bound)
            except BaseException:  # Ctrl-C, SIGTERM: the scenario ends with the case
                self._stop()
                raise
            line = reply[0] if reply else None  # read before the stop below ends the read
            if not line:
                self._stop()
                if line is None:
                    return None, ""
                return 1, f"the framework's runner ended unexpectedly\n{self._errors()}"
            try:
                answer = json.loads(line)
                return int(answer["exit"]), str(answer["output"])
            except (ValueError, KeyError, TypeError):
                self._stop()
                return 1, f"the framework's runner answered something else\n{self._errors()}"

    def _errors(self) -> str:
        if self.errors is None:
            return ""
        try:
            self.errors.seek(0)
            return self.errors.read()[-4000:]
        except (OSError, ValueError):
            return ""

    def _stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            process.wait()


_RUNNERS: dict[tuple[str, ...], _Runner] = {}
_RUNNERS_LOCK = threading.Lock()
# a forked process (a run's worker) starts its own: the parent's pipes are not its to use
os.register_at_fork(after_in_child=_RUNNERS.clear)


def _runner(cli: list[str]) -> _Runner:
    with _RUNNERS_LOCK:
        if tuple(cli) not in _RUNNERS:
            _RUNNERS[tuple(cli)] = _Runner(cli)
        return _RUNNERS[tuple(cli)]


def run_cli(
    cli: list[str], args: list[str], env: dict[str, str], cwd: Path, bound: float
) -> tuple[int | None, str]:
    """`cli` (`framework()`'s command) run with `args`, in this process's Node runner: its exit
    status (None: no answer within `bound` s) and output, as a process of its own would give."""
    return _runner(cli).run(args, env, cwd, bound)


@dataclass
class ScenarioRun:
    problem: str | None  # None: the framework passed the client
    report: dict[str, Any]  # what the client command found (tokens shown, statuses...)
    output: str


def run_scenario(
    cli: list[str], scenario: str, client_args: list[str], workdir: Path, bound: float
) -> ScenarioRun:
    """Run one scenario with the harness's client command driving the host under test."""
    report = workdir / "client-report.json"
    command = shlex.join(
        [
            sys.executable,
            "-m",
            "mcp_host_conformance.harness.oauth.official_client",
            *client_args,
            "--report",
            str(report),
        ]
    )
    argv = [
        *cli,
        "client",
        "--command",
        command,
        "--scenario",
        scenario,
        "--timeout",
        str(int(bound * 1000)),
        "--output-dir",
        str(workdir / "results"),
    ]
    # the client command runs where this case runs, as a command started from here would (a
    # relative --client-cmd, a module:attr beside the user's project)
    returncode, output = run_cli(cli, argv[len(cli) :], dict(os.environ), Path.cwd(), bound + 60)
    checks: list[dict[str, Any]] = []
    for path in (workdir / "results").rglob("checks.json"):
        try:
            checks += json.loads(path.read_text())
        except (OSError, ValueError):
            return ScenarioRun(f"unreadable {path.name}", {}, output)
    try:
        found = json.loads(report.read_text())
    except (OSError, ValueError):
        found = {}
    return ScenarioRun(checks_problem(returncode, checks), found, output)


# ---- the client command (the framework's side) ------------------------------------------------


def _oauth_client(context: dict[str, Any]) -> dict[str, str]:
    from mcp_host_conformance.harness.sandbox.network import observe

    # unsealed, a host given a name off this machine could look it up through the machine's
    # resolver: the scenarios that need it are not run (OFF_MACHINE), the others need none
    sealed = observe(probe_dns=False).isolated
    client = {"client_metadata_url": CIMD_URL} if sealed else {}
    for key in ("client_id", "client_secret"):
        if isinstance(context.get(key), str):
            client[key] = context[key]
    return client


def _shown(texts: list[str], secret: str | None) -> list[str]:
    found = set()
    for text in texts:
        found |= {m.group(0)[:12] + "..." for m in TOKEN_PATTERN.finditer(text)}
        if secret and secret in text:
            found.add("the client secret")
    return sorted(found)


def _files(paths: list[Path]) -> list[str]:
    """The text of these files (the session files: what is replayed to the model). The
    host's configuration and token store are where tokens are kept, not shown."""
    texts = []
    for path in paths:
        try:
            texts.append(path.read_bytes().decode("utf-8", "replace"))
        except OSError:
            continue
    return texts


def run_client(args: argparse.Namespace) -> dict[str, Any]:
    from mcp_host_conformance.harness.cases.hostrun import Host, Timeouts
    from mcp_host_conformance.harness.contract.adapter import HttpServer
    from mcp_host_conformance.harness.run.loader import load_adapter
    from mcp_host_conformance.mocks.responses import MockResponses

    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    context = context if isinstance(context, dict) else {}
    adapter = load_adapter(args.client, args.client_cmd, timeout_scale=args.timeout_scale)
    description = adapter.describe()
    root = Path(tempfile.mkdtemp(prefix="mcphc-official-"))
    try:
        (root / "home").mkdir(mode=0o700)
        (root / "project").mkdir()
        with MockResponses() as model:
            host = Host(
                adapter=adapter,
                home=root / "home",
                project=root / "project",
                model_url=str(model.url),
                model_key=model.api_key,
                timeouts=Timeouts.scaled(args.timeout_scale * 4),
                model=model,
                profiles=frozenset(description.profiles),
                case_profiles=frozenset({"oauth"}),
            )
            host.env["BROWSER"] = shlex.join(
                [sys.executable, "-m", "mcp_host_conformance.harness.oauth.browser"]
            )
            server = HttpServer(
                name=SERVER_NAME, url=args.url, oauth=True, oauth_client=_oauth_client(context)
            )
            host.add(server)
            running = host.start()
            turn = running.ask(QUESTION, approve="y", acknowledge=True)
            stopped = running.stop()
            seen = [*host.seen, *_files(list(stopped.session_files))]
            seen += [json.dumps(body) for body in model.requests()]
            return {
                "statuses": [s.line for s in running.statuses],
                "calls": [c.status for c in turn.calls],
                "shown": _shown(seen, context.get("client_secret")),
            }
    finally:
        close = getattr(adapter, "close", None)
        if callable(close):
            close()
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mcp_host_conformance.harness.oauth.official_client",
        description="The client command the official conformance framework runs: the host "
        "under test, through its adapter, against the scenario's URL.",
    )
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--client", help="a Python adapter (entry-point name or module:attr)")
    who.add_argument("--client-cmd", help="a driver command")
    parser.add_argument(
        "--client-path",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder to import --client from (the run's --client-path); repeatable",
    )
    parser.add_argument("--timeout-scale", type=float, default=1.0)
    parser.add_argument("--report", type=Path, help="write what was found here (JSON)")
    parser.add_argument("url", help="the scenario's MCP server URL (the framework appends it)")
    args = parser.parse_args(argv)
    for folder in reversed(args.client_path):
        sys.path.insert(0, os.path.abspath(folder))
    try:
        found = run_client(args)
        status = 0
    except Exception as exc:  # noqa: BLE001 - reported to the case, never a traceback
        found = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
        status = 1
    if args.report is not None:
        args.report.write_text(json.dumps(found), "utf-8")
    print(json.dumps(found))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
