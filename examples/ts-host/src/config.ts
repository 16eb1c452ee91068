// The host's configuration: a JSON file of servers under the user's HOME.
//
// Strategy: what a first version of a host would write, `JSON.stringify` to
// `$HOME/.ts-host/servers.json` with the process's default file mode. Nothing about file
// modes or redaction is added; the suite reports what that costs.

import { mkdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";

export type HttpSpec = { type: "http"; url: string; headers: Record<string, string> };
export type StdioSpec = { type: "stdio"; command: string; args: string[]; env: Record<string, string> };
export type ServerSpec = HttpSpec | StdioSpec;

export const relativePath = ".ts-host/servers.json";

export function configPath(home: string): string {
  return join(home, relativePath);
}

export function load(home: string): Record<string, ServerSpec> {
  const path = configPath(home);
  return existsSync(path) ? JSON.parse(readFileSync(path, "utf-8")) : {};
}

export function save(home: string, servers: Record<string, ServerSpec>): string {
  const path = configPath(home);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify(servers, null, 2));
  return path;
}

export function destination(spec: ServerSpec): string {
  return spec.type === "http" ? spec.url : [spec.command, ...spec.args].join(" ");
}
