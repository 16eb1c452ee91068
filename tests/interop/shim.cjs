// Preloaded into the third-party server with `node --require ./shim.cjs ...`.
//
// Strategy: the server is someone else's code, pinned from the npm registry, so we change
// nothing in it and observe it from inside its own process instead:
// - LOOPBACK: every TCP listen (its express `app.listen(PORT)` binds all interfaces by
//   default) is forced onto 127.0.0.1, and the address actually bound is printed to stderr
//   as `interop-shim: listening on 127.0.0.1:PORT`, so the tests can use PORT=0.
// - TAP (stdio only, when MCP_INTEROP_TAP names a file): every chunk read from stdin and
//   written to stdout is appended, synchronously, to that file as a JSON line
//   {"dir": "in"|"out", "data": "..."}; the first line is {"pid": N}. A request is in the
//   file before the server handles it, so the file is the server's own record of what
//   reached it.
"use strict";

const fs = require("node:fs");
const net = require("node:net");

const LOOPBACK = "127.0.0.1";
const originalListen = net.Server.prototype.listen;

function isPort(value) {
  return typeof value === "number" || (typeof value === "string" && /^\d+$/.test(value));
}

net.Server.prototype.listen = function listen(...args) {
  const first = args[0];
  if (isPort(first)) {
    // listen(port[, host][, backlog][, callback]): keep port, backlog and callback only.
    const callback = typeof args[args.length - 1] === "function" ? args.pop() : undefined;
    const backlog = args.slice(1).find((a) => typeof a === "number");
    args = [Number(first), LOOPBACK];
    if (backlog !== undefined) args.push(backlog);
    if (callback !== undefined) args.push(callback);
  } else if (first && typeof first === "object" && first.path === undefined && first.fd === undefined
             && !first._handle && !first.handle) {
    args[0] = { ...first, host: LOOPBACK };
  }
  this.once("listening", () => {
    const address = this.address();
    if (address && typeof address === "object") {
      process.stderr.write(`interop-shim: listening on ${address.address}:${address.port}\n`);
    }
  });
  return originalListen.apply(this, args);
};

const tap = process.env.MCP_INTEROP_TAP;
if (tap) {
  const record = (value) => fs.appendFileSync(tap, JSON.stringify(value) + "\n");
  record({ pid: process.pid });
  const stdin = process.stdin;
  const originalOn = stdin.on;
  let tapped = false;
  // Attach our listener just before the server's own first "data" listener, so both see
  // every chunk and stdin does not start flowing before the server is ready for it.
  stdin.on = function on(event, listener) {
    if (event === "data" && !tapped) {
      tapped = true;
      originalOn.call(stdin, "data", (chunk) => record({ dir: "in", data: chunk.toString("utf8") }));
    }
    return originalOn.call(stdin, event, listener);
  };
  const originalWrite = process.stdout.write;
  process.stdout.write = function write(chunk, ...rest) {
    record({ dir: "out", data: typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8") });
    return originalWrite.call(process.stdout, chunk, ...rest);
  };
}
