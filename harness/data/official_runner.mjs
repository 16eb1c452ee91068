// The official conformance framework's CLI, run once per request in one long-lived Node
// process (harness/oauth/official_client.py's `_Runner`).
//
// Why: a start of the CLI costs ~0.8 s of CPU, nearly all of it loading its dependencies
// (undici, express, zod, jose, octokit...), and the auth scenarios start it ~20 times a run.
// Here the CLI module is imported again for each request under a new URL, so it runs
// afresh (its own state, its own argument parsing) while the dependencies stay loaded.
//
// Protocol: one JSON request a line on stdin, {"args": [...], "env": {...}, "cwd": "..."};
// one JSON reply a line on stdout, {"exit": N, "output": "..."}: the CLI's exit status and
// everything it wrote. Requests run one at a time; each gets the environment and the
// working directory it names (the client command the CLI starts inherits both). Output is
// the request's only if written by its own code (AsyncLocalStorage follows it through
// timers and promises): what an earlier request left running writes nowhere, and nothing
// but replies reaches stdout. The process ends at the end of its stdin.
import { AsyncLocalStorage } from "node:async_hooks";
import { pathToFileURL } from "node:url";
import readline from "node:readline";

const cli = process.argv[2];
const node = process.argv[0];
const real = {
  stdout: process.stdout.write.bind(process.stdout),
  stderr: process.stderr.write.bind(process.stderr),
};
let current = null; // the request running: { run, output: [], done, resolve }
const running = new AsyncLocalStorage(); // which request the running code belongs to

function finish(code) {
  if (current !== null && !current.done && running.getStore() === current.run) {
    current.done = true;
    current.resolve(Number.isInteger(code) ? code : 0);
  }
}

// The CLI ends by calling process.exit: here that ends the request, not the process.
process.exit = (code) => finish(code ?? 0);
for (const name of ["stdout", "stderr"]) {
  process[name].write = (chunk, encoding, callback) => {
    if (current !== null && !current.done && running.getStore() === current.run) {
      current.output.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString());
    }
    const done = typeof encoding === "function" ? encoding : callback;
    if (typeof done === "function") done();
    return true;
  };
}
function failed(error) {
  // whose error an uncaught exception is may not be known (no store): the running request's
  const owner = running.getStore();
  if (current !== null && !current.done && (owner === current.run || owner === undefined)) {
    current.output.push(`\n${error && error.stack ? error.stack : String(error)}\n`);
    finish(1);
  }
}
process.on("unhandledRejection", failed);
process.on("uncaughtException", failed);

let runs = 0;
const requests = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of requests) {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    real.stdout(JSON.stringify({ exit: 2, output: "the runner got a request that is not JSON" }) + "\n");
    continue;
  }
  for (const key of Object.keys(process.env)) delete process.env[key];
  Object.assign(process.env, request.env);
  process.chdir(request.cwd);
  process.argv = [node, cli, ...request.args];
  const code = await new Promise((resolve) => {
    runs += 1;
    current = { run: runs, output: [], done: false, resolve };
    running.run(runs, () => import(`${pathToFileURL(cli).href}?run=${runs}`).catch(failed));
  });
  const output = current.output.join("");
  current = null;
  real.stdout(JSON.stringify({ exit: code, output }) + "\n");
}
