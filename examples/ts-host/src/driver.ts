// The conformance driver of the TypeScript example host (docs/driver-protocol.md):
// newline-delimited JSON-RPC 2.0 on stdin/stdout, `node examples/ts-host/dist/driver.js`.
//
// Strategy: translate, never decide. Configuration commands edit the host's own file under
// the given HOME; `start` runs a `Host` in this process and keeps it by session id; `ask`
// runs concurrently with further reads, so the harness's answers to `approve` arrive while
// the turn waits for them, and the answer is passed to the host as typed. stdout carries
// the protocol only: every log line goes to stderr. The host runs with this process's
// environment; `StartOptions.env` is not applied.

import { createInterface } from "node:readline";
import * as config from "./config.js";
import { Host, type Confirmation, type StartOptions } from "./host.js";

const PROTOCOL = "mcp-host-conformance-driver/1";
const sessions = new Map<string, Host>();
const waiting = new Map<string, (message: Record<string, any>) => void>();
let nextSession = 1;
let nextRequest = 1;

function send(message: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(message) + "\n");
}

function askHarness(method: string, params: Record<string, unknown>): Promise<unknown> {
  const id = `d${nextRequest++}`;
  return new Promise((resolve, reject) => {
    waiting.set(id, (message) => {
      if ("error" in message) reject(new Error(`the harness's ${method} failed: ${message.error?.message}`));
      else resolve(message.result);
    });
    send({ jsonrpc: "2.0", id, method, params });
  });
}

function entry(server: Record<string, any>): config.ServerSpec {
  return server.type === "http"
    ? { type: "http", url: server.url, headers: server.headers ?? {} }
    : { type: "stdio", command: server.command, args: server.args ?? [], env: server.env ?? {} };
}

function session(params: Record<string, any>): Host {
  const host = sessions.get(params.session);
  if (!host) throw new Error(`no session ${params.session}`);
  return host;
}

const operations: Record<string, (params: Record<string, any>) => Promise<unknown> | unknown> = {
  initialize: () => ({ protocol: PROTOCOL }),
  describe: () => ({
    name: "ts-host", version: "@modelcontextprotocol/sdk 1.32.2", profiles: [],
    connect_timeout: 60.0, call_timeout: 60.0, project_config_files: [], can_cancel: false,
  }),
  add_server: ({ home, server }) => {
    const servers = config.load(home);
    servers[server.name] = entry(server);
    return { text: `added ${server.name}`, paths: [config.save(home, servers)] };
  },
  // The host reads no project configuration; its lure is its own file's shape where a
  // project would hold it if the host took the working directory for HOME.
  project_config: ({ servers }) => ({
    [config.relativePath]: JSON.stringify(
      Object.fromEntries((servers as Record<string, any>[]).map((s) => [s.name, entry(s)])), null, 2),
  }),
  remove_server: ({ home, name }) => {
    const servers = config.load(home);
    delete servers[name];
    return { text: `removed ${name}`, paths: [config.save(home, servers)] };
  },
  list_servers: ({ home }) => ({
    text: Object.entries(config.load(home)).map(([name, spec]) => `${name}: ${config.destination(spec)}`).join("\n"),
    paths: [],
  }),
  start: async ({ options }) => {
    const host = new Host(options as StartOptions);
    const statuses = await host.start();
    const id = `s${nextSession++}`;
    sessions.set(id, host);
    return { session: id, statuses, text: statuses.map((s) => s.line).join("\n") };
  },
  ask: async (params) => {
    const approve = async (c: Confirmation) => {
      const answer = await askHarness("approve", { session: params.session, ...c });
      if (typeof answer !== "string") throw new Error("the harness answered approve with a non-string");
      return answer;
    };
    return session(params).ask(params.question, approve);
  },
  stop: async (params) => {
    const host = session(params);
    sessions.delete(params.session);
    await host.close();
    return { session_id: null, session_files: [], text: "" };
  },
  shutdown: async () => {
    await Promise.allSettled([...sessions.values()].map((h) => h.close()));
    sessions.clear();
    return null;
  },
};

async function handle(message: Record<string, any>): Promise<void> {
  const operation = operations[message.method];
  if (!operation) {
    send({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: `unknown method ${message.method}` } });
    return;
  }
  try {
    const result = await operation(message.params ?? {});
    send({ jsonrpc: "2.0", id: message.id, result: result ?? null });
  } catch (error) {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    send({ jsonrpc: "2.0", id: message.id, error: { code: -32000, message: text } });
  }
  if (message.method === "shutdown") process.exit(0);
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (!line.trim()) return;
  let message: Record<string, any>;
  try {
    message = JSON.parse(line);
  } catch {
    send({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "not JSON" } });
    return;
  }
  if (!("method" in message)) {
    waiting.get(message.id)?.(message);
    waiting.delete(message.id);
    return;
  }
  void handle(message);
});
lines.on("close", async () => {
  await Promise.allSettled([...sessions.values()].map((h) => h.close()));
  process.exit(0);
});
