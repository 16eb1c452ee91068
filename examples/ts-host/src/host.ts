// The host: MCP servers through the official TypeScript SDK client, a model through the
// Responses API, and an approval prompt before every call.
//
// Strategy: the least a host needs to be drivable at all, and nothing the SDK does not do
// by itself. Each server is a `Client` on the SDK's default transport
// (`StdioClientTransport` or `StreamableHTTPClientTransport`, no options but the configured
// headers), connected in parallel, `listTools` following `nextCursor`. The only settings
// passed to the SDK are the ones a host must pass: the configured headers and environment,
// and the timeouts (the SDK's own per-request `timeout`). Node 20's fetch takes no extra CA
// without another dependency, so the CA the suite offers is not used.
//
// The model loop offers every tool as `mcp_<server>_<tool>` with the label
// `[MCP server S, tool T]` in its description, asks for approval (yes means `y`/`yes`),
// calls, and sends the result's text back. Deliberately absent: name checks, discovery
// limits, size limits, redirect or environment policy, result statuses beyond
// completed/failed/denied, retry acknowledgement, sessions on disk.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import * as config from "./config.js";

const MODEL = "gpt-4.1-mini";
const MAX_MODEL_REQUESTS = 32; // per turn: a runaway guard, above the 16 calls a turn may make

export type Confirmation = {
  server: string; destination: string; tool: string; arguments: string; warning: string; text: string;
};
export type Status = {
  name: string; connected: boolean; tools: number | null; destination: string; reason: string | null; line: string;
};
export type CallOutcome = { tool: string; status: string; output: string };
export type TurnOutcome = {
  question_sent: boolean; confirmations: Confirmation[]; calls: CallOutcome[];
  acknowledgements: string[]; answer: string; text: string;
};
export type StartOptions = {
  home: string; cwd: string; model_url: string; model_key: string;
  // null: the suite leaves the timeout to the host, which then keeps the SDK's own default
  connect_timeout: number | null; call_timeout: number | null; ca_file: string | null;
};

type Connected = { name: string; destination: string; client: Client; tools: Tool[] };

function reason(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error);
}

async function connect(name: string, spec: config.ServerSpec, options: StartOptions): Promise<Connected> {
  const client = new Client({ name: "ts-host", version: "0.1.0" });
  const transport =
    spec.type === "http"
      ? new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers } })
      : new StdioClientTransport({
          command: spec.command,
          args: spec.args,
          env: Object.keys(spec.env).length ? spec.env : undefined,
          cwd: options.cwd,
        });
  const timeout = options.connect_timeout == null ? undefined : options.connect_timeout * 1000;
  try {
    await client.connect(transport, { timeout });
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return { name, destination: config.destination(spec), client, tools };
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
}

function resultText(result: { content?: unknown }): string {
  const blocks = Array.isArray(result.content) ? result.content : [];
  return blocks
    .map((b: { type?: string; text?: string }) => (b.type === "text" ? (b.text ?? "") : JSON.stringify(b)))
    .join("\n");
}

export class Host {
  statuses: Status[] = [];
  private servers: Connected[] = [];
  private offered = new Map<string, { server: Connected; tool: Tool }>();
  private history: Record<string, unknown>[] = [];

  constructor(private options: StartOptions) {}

  async start(): Promise<Status[]> {
    const specs = Object.entries(config.load(this.options.home));
    const settled = await Promise.allSettled(specs.map(([name, spec]) => connect(name, spec, this.options)));
    settled.forEach((outcome, i) => {
      const [name, spec] = specs[i];
      const where = config.destination(spec);
      if (outcome.status === "rejected") {
        const why = reason(outcome.reason);
        this.statuses.push({ name, connected: false, tools: null, destination: where, reason: why,
                             line: `MCP server ${name} unavailable: ${why}` });
        return;
      }
      const server = outcome.value;
      this.servers.push(server);
      for (const tool of server.tools) this.offered.set(`mcp_${name}_${tool.name}`, { server, tool });
      this.statuses.push({ name, connected: true, tools: server.tools.length, destination: where, reason: null,
                           line: `MCP server ${name}: ${server.tools.length} tools from ${where}` });
    });
    return this.statuses;
  }

  private functions(): Record<string, unknown>[] {
    return [...this.offered].map(([exposed, { server, tool }]) => ({
      type: "function",
      name: exposed,
      description: `[MCP server ${server.name}, tool ${tool.name}] ${tool.description ?? ""}`.trim(),
      parameters: tool.inputSchema,
      strict: false,
    }));
  }

  private async respond(): Promise<{ output?: Record<string, any>[] }> {
    const url = this.options.model_url.replace(/\/+$/, "") + "/responses";
    const body = { model: MODEL, input: this.history, tools: this.functions(), store: false };
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${this.options.model_key}` },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) {
      let message = text.slice(0, 200);
      try { message = JSON.parse(text).error.message; } catch { /* keep the raw text */ }
      throw new Error(`the model service answered HTTP ${response.status}: ${message}`);
    }
    return JSON.parse(text);
  }

  async ask(question: string, approve: (c: Confirmation) => Promise<string>): Promise<TurnOutcome> {
    const turn: TurnOutcome = { question_sent: true, confirmations: [], calls: [], acknowledgements: [], answer: "", text: "" };
    const lines: string[] = [];
    this.history.push({ role: "user", content: question });
    for (let i = 0; i < MAX_MODEL_REQUESTS; i++) {
      const reply = await this.respond();
      const calls: Record<string, any>[] = [];
      for (const item of reply.output ?? []) {
        if (item.type === "function_call") {
          calls.push(item);
          this.history.push({ type: "function_call", call_id: item.call_id, name: item.name, arguments: item.arguments });
        } else if (item.type === "message") {
          const text = (item.content ?? []).map((p: { text?: string }) => p.text ?? "").join("");
          this.history.push({ role: "assistant", content: text });
          turn.answer = text;
          lines.push(text);
        }
      }
      if (calls.length === 0) break;
      for (const item of calls) {
        const outcome = await this.call(item, approve, turn, lines);
        turn.calls.push(outcome);
        lines.push(`${outcome.tool}: ${outcome.status}\n${outcome.output}`);
        this.history.push({ type: "function_call_output", call_id: item.call_id, output: outcome.output });
      }
    }
    turn.text = lines.join("\n");
    return turn;
  }

  private async call(item: Record<string, any>, approve: (c: Confirmation) => Promise<string>,
                     turn: TurnOutcome, lines: string[]): Promise<CallOutcome> {
    const exposed: string = item.name;
    const found = this.offered.get(exposed);
    if (!found) return { tool: exposed, status: "failed", output: `unknown tool ${exposed}` };
    const { server, tool } = found;
    const args = JSON.parse(item.arguments || "{}");
    const shown = JSON.stringify(args, null, 2);
    const text = `Server: ${server.name}\nDestination: ${server.destination}\nTool: ${tool.name}\n` +
      `Arguments:\n${shown}\nAllow? [y/N] `;
    const confirmation = { server: server.name, destination: server.destination, tool: tool.name,
                           arguments: shown, warning: "", text };
    turn.confirmations.push(confirmation);
    const answer = await approve(confirmation);
    lines.push(text + answer);
    if (!["y", "yes"].includes(answer.trim().toLowerCase())) {
      return { tool: exposed, status: "denied", output: "the user denied this call" };
    }
    try {
      const call = this.options.call_timeout;
      const result = await server.client.callTool({ name: tool.name, arguments: args }, undefined,
                                                  { timeout: call == null ? undefined : call * 1000 });
      return { tool: exposed, status: result.isError ? "failed" : "completed", output: resultText(result as { content?: unknown }) };
    } catch (error) {
      return { tool: exposed, status: "failed", output: reason(error) };
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.servers.map((s) => s.client.close()));
  }
}
