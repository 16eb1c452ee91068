#!/usr/bin/env python3
"""Install the pinned npm packages of a directory once, however many tox environments ask.

Usage:
    python scripts/npm_ready.py PREFIX [PREFIX ...]

For each PREFIX (a directory holding package.json and package-lock.json) this runs
`npm ci --prefix PREFIX --no-audit --no-fund`, unless node_modules already holds what the
lockfile pins: a stamp written there after the last successful `npm ci` names the SHA-256 of
package.json and package-lock.json (`npm ci` empties node_modules first, stamp included, so a
failed or interrupted install leaves none). It holds an exclusive lock on PREFIX while it
looks and installs, so environments running in parallel (`tox p`) never install into the
same directory at once, and one never empties node_modules under another that is using it
(`npm ci` removes the whole directory; three environments share tests/official/client).
Delete PREFIX/node_modules to force a fresh install. Exit status: npm's, on the first
PREFIX whose install fails; 2 for a PREFIX without package.json or package-lock.json.
"""

from __future__ import annotations

import fcntl
import hashlib
import subprocess
import sys
from pathlib import Path

LOCK = ".npm-ready.lock"
STAMP = ".npm-ready-stamp"
PINS = ("package.json", "package-lock.json")


def pins_digest(prefix: Path) -> str:
    """What node_modules must have been installed from: the pins' SHA-256."""
    digest = hashlib.sha256()
    for name in PINS:
        digest.update(name.encode() + b"\0" + (prefix / name).read_bytes() + b"\0")
    return digest.hexdigest()


def up_to_date(prefix: Path) -> bool:
    """Whether the last successful `npm ci` in `prefix` installed the current pins."""
    try:
        stamp = (prefix / "node_modules" / STAMP).read_text(encoding="utf-8").strip()
    except OSError:
        return False
    return stamp == pins_digest(prefix)


def ready(prefix: Path, npm: str = "npm") -> int:
    """Install `prefix`'s pinned packages unless they are there already; npm's status."""
    missing = [name for name in PINS if not (prefix / name).is_file()]
    if missing:
        print(f"npm_ready: {prefix}: no {' or '.join(missing)}", file=sys.stderr)
        return 2
    with open(prefix / LOCK, "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process ends
        if up_to_date(prefix):
            print(f"npm_ready: {prefix}: up to date", flush=True)
            return 0
        digest = pins_digest(prefix)
        done = subprocess.run(
            [npm, "ci", "--prefix", str(prefix), "--no-audit", "--no-fund"], check=False
        )
        if done.returncode == 0:
            (prefix / "node_modules" / STAMP).write_text(digest + "\n", encoding="utf-8")
        return done.returncode


def main(argv: list[str]) -> int:
    if not argv or any(arg.startswith("-") for arg in argv):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    for prefix in argv:
        status = ready(Path(prefix))
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
