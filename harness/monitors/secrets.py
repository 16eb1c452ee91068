"""Monitors of configured secrets: each goes to its own server only (CRED-1, CRED-2), is
never shown, logged or sent to the model (CRED-3), lives only in private files (CFG-3), and
never appears in a listing (CFG-4); OAuth tokens are never shown (OAUTH-1).

Strategy: a secret is a header or environment value configured for a server that is one of
the case's canaries, searched in every encoding a leak takes (raw, URL, JSON-escaped,
base64 at each alignment; `cases.canaries.encodings`). Where it may be: the requests of the
servers it was configured for, and the files the host reported writing for its
configuration. Anywhere else the harness can see is a leak.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from mcp_host_conformance.harness.contract.adapter import HttpServer
from mcp_host_conformance.harness.monitors.observed import Observed, journal_text
from mcp_host_conformance.harness.monitors.registry import Monitor, monitor
from mcp_host_conformance.harness.verdicts.outcomes import Finding

FILE_BYTES = 4 * 1024 * 1024  # of one file read for secrets


def _read(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(FILE_BYTES)
    except OSError:
        return b""


@monitor(
    "secret-goes-to-its-server",
    "CRED-1 CRED-2",
    "a header value configured for a server reached no other server, no redirect target and "
    "not the model; an environment value configured for a stdio server reached no other",
)
def secret_goes_to_its_server(self: Monitor, observed: Observed) -> Iterator[Finding]:
    secrets = observed.configured_secrets
    if not secrets:  # most cases configure none: no journal is read as text
        return
    # each journal as text once, for every secret searched in it
    model_text = observed.model_text
    served_texts = [(served, served.text) for served in observed.served]
    other_texts = []
    for mock in observed.other_mocks:
        try:
            entries = list(mock.journal.entries())
        except Exception:  # noqa: BLE001 - an unreadable journal holds nothing to judge
            continue
        other_texts.append((type(mock).__name__, journal_text(entries)))
    for canary, owners in secrets:
        search = observed.secrets_of([canary.value])
        rule = "CRED-1" if any(isinstance(o, HttpServer) for o in owners) else "CRED-2"
        names = {o.name for o in owners}
        where = []
        for served, text in served_texts:
            if names & set(served.names):
                continue
            where += search.found_in(text, f"server {served.label}")
        for label, text in other_texts:
            where += search.found_in(text, label)
        where += search.found_in(model_text, "the model service")
        if where:
            yield self.finding(
                rule,
                f"the secret configured for {', '.join(sorted(names))} reaches that server only",
                "; ".join(where[:4]),
            )


@monitor(
    "secret-never-shown",
    "CRED-3",
    "no configured secret in what the user saw, in a session file, in any other file under "
    "HOME or the project than the configuration the host wrote, or in a model request",
)
def secret_never_shown(self: Monitor, observed: Observed) -> Iterator[Finding]:
    values = [c.value for c, _owners in observed.configured_secrets]
    if not values:
        return
    search = observed.secrets_of(values)
    listings = {text for host in observed.hosts for text in host.listings}
    hits = search.found_in_texts(t for t in observed.seen if t not in listings)  # CFG-4's
    if observed.model is not None:
        hits += search.found_in(observed.model_text, "model requests")
    private = {p.resolve() for p in observed.config_paths}
    for root in (observed.home, observed.project):
        for path in observed.files_under(root):
            if path.resolve() in private:
                continue
            hits += search.found_in(_read(path), str(path.relative_to(root)))
    if hits:
        yield self.finding(
            "CRED-3",
            "no configured secret in status lines, prompts, results, errors, session or other "
            "files, or requests to the model",
            "; ".join(hits[:4]),
        )


@monitor(
    "secret-files-private",
    "CFG-3",
    "every configuration file the host wrote that holds a configured secret is mode 0600 (no "
    "group or other bits), in a directory no group or other may write (a secret in any other "
    "file is CRED-3's)",
)
def secret_files_private(self: Monitor, observed: Observed) -> Iterator[Finding]:
    values = [c.value for c, _owners in observed.configured_secrets]
    if not values:
        return
    search = observed.secrets_of(values)
    states = [s for host in observed.hosts for s in host.config_states]
    for path in sorted(p for p in observed.config_paths if p.is_file()):
        try:
            states.append((path, os.stat(path).st_mode, os.stat(path.parent).st_mode, _read(path)))
        except OSError:
            continue
    for path, mode, folder, data in states:  # after each add and remove, and at the end
        if not search.found_in(data):
            continue
        if stat.S_IMODE(mode) & 0o077 or folder & (stat.S_IWGRP | stat.S_IWOTH):
            yield self.finding(
                "CFG-3",
                "the file holding a credential is private (0600, its directory not group or "
                "world writable), from the moment it holds one",
                f"{path.name} was {stat.S_IMODE(mode):04o} in a directory "
                f"{stat.S_IMODE(folder):04o}",
            )
            return


@monitor(
    "listing-hides-secrets",
    "CFG-4",
    "no listing of the servers showed a configured header or environment value",
)
def listing_hides_secrets(self: Monitor, observed: Observed) -> Iterator[Finding]:
    values = [c.value for c, _owners in observed.configured_secrets]
    listings = [text for host in observed.hosts for text in host.listings]
    if not values or not listings:
        return
    hits = observed.secrets_of(values).found_in_texts(listings, "the server listing")
    if hits:
        yield self.finding(
            "CFG-4",
            "listing servers shows names and destinations, never a header or environment value",
            "; ".join(hits[:4]),
        )


@monitor(
    "tokens-never-shown",
    "OAUTH-1",
    "no OAuth token the harness issued appears in what the user saw or in a model request",
    only=("oauth",),
)
def tokens_never_shown(self: Monitor, observed: Observed) -> Iterator[Finding]:
    secrets = observed.case_secrets
    if secrets is None:
        return
    tokens = [c.value for c in secrets.canaries if c.label.startswith("oauth-")]
    if not tokens:
        return
    search = observed.secrets_of(tokens)
    hits = search.found_in_texts(observed.seen)
    if observed.model is not None:
        hits += search.found_in(observed.model_text, "model requests")
    if hits:
        yield self.finding("OAUTH-1", "OAuth tokens are never shown", "; ".join(hits[:4]))
