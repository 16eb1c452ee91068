"""A driver command that misbehaves on purpose: `python hostile_driver.py BEHAVIOUR [FILE]`.

It answers `initialize` (except for `silent`), then does BEHAVIOUR at the next request:

- flood: sends 100 000 `approve` requests without reading anything again
- flood-unknown: sends 100 000 requests of a method the harness does not have, reading
  what it is sent (so the harness's answers flow), and never answers
- chatter: sends a notification and an unknown request every 10 ms, forever, never answering
- exits: exits with status 5 before reading anything
- silent: never writes anything (not even the handshake's answer); reads stdin
- deep: answers with JSON nested 100 000 levels deep
- huge: writes 40 MiB without a newline
- dies: starts a grandchild (`sleep`) in its own process group, writes its pid to FILE,
  then exits with status 7
- hangs: answers `describe`, then never answers anything again (keeps reading)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

PROTOCOL = "mcp-host-conformance-driver/1"


def send(message: dict) -> None:
    sys.stdout.buffer.write((json.dumps(message) + "\n").encode())
    sys.stdout.buffer.flush()


def read() -> dict:
    line = sys.stdin.buffer.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


def drain() -> None:
    threading.Thread(target=lambda: sys.stdin.buffer.read(), daemon=True).start()


def main() -> None:
    behaviour = sys.argv[1]
    if behaviour == "exits":
        sys.exit(5)
    if behaviour == "silent":
        sys.stdin.buffer.read()
        return
    hello = read()
    send({"jsonrpc": "2.0", "id": hello["id"], "result": {"protocol": PROTOCOL}})
    request = read()
    if behaviour == "hangs":
        if request["method"] == "describe":
            send({"jsonrpc": "2.0", "id": request["id"], "result": {"name": "h", "version": "0"}})
        sys.stdin.buffer.read()
        time.sleep(3600)
    elif behaviour == "flood":
        for n in range(100_000):
            send({"jsonrpc": "2.0", "id": f"f{n}", "method": "approve", "params": {}})
        time.sleep(3600)
    elif behaviour == "flood-unknown":
        drain()
        for n in range(100_000):
            send({"jsonrpc": "2.0", "id": f"f{n}", "method": "nonsense", "params": {}})
        time.sleep(3600)
    elif behaviour == "chatter":
        drain()
        n = 0
        while True:
            send({"jsonrpc": "2.0", "method": "progress", "params": {"n": n}})
            send({"jsonrpc": "2.0", "id": f"c{n}", "method": "chat", "params": {}})
            n += 1
            time.sleep(0.01)
    elif behaviour == "deep":
        depth = 100_000
        nested = "[" * depth + "]" * depth
        line = f'{{"jsonrpc":"2.0","id":{request["id"]},"result":{nested}}}\n'
        sys.stdout.buffer.write(line.encode())
        sys.stdout.buffer.flush()
        sys.stdin.buffer.read()
    elif behaviour == "huge":
        chunk = b"x" * (1024 * 1024)
        try:
            for _ in range(40):
                sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
        except BrokenPipeError:
            pass
        time.sleep(3600)
    elif behaviour == "dies":
        child = subprocess.Popen(["sleep", "60"])
        with open(sys.argv[2], "w") as f:
            f.write(str(child.pid))
        os._exit(7)
    else:
        raise SystemExit(f"unknown behaviour {behaviour}")


if __name__ == "__main__":
    main()
