// stdio-raw.mjs: a fresh sessionmem server's full resume as a minimal stdio MCP client sees it:
// the client keeps a line's chunks and joins them once, then JSON.parse, with none of the TS
// SDK's buffering. It separates what the server costs from what the SDK client costs
// (docs/BENCHMARKS.md, "Issue 25's bars on a quiet machine"). Per round it starts a server,
// resumes every page (max_tokens MAXTOK, default 100,000) and then again on the same server;
// full_cold is timed from initialize's answer, from_spawn from the server's spawn (what an
// agent waits for at its start; pi.mjs fresh is pi's counterpart). With DELAY=MS the client
// waits that long after tools/list before the cold resume, so the server's warm-up is over:
// what a fresh server's resume would take if nothing of its start were left to do
// (from_spawn then includes the wait).
//   node stdio-raw.mjs BIN msgs.jsonl MESSAGES RUNS
import { spawn } from "node:child_process";
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";

const [bin, file, nArg, runsArg] = process.argv.slice(2);
const n = Number(nArg ?? 2000), runs = Number(runsArg ?? 5), maxTokens = Number(process.env.MAXTOK ?? 100000);
const delay = Number(process.env.DELAY ?? 0);
const msgs = readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const store = mkdtempSync(join(tmpdir(), "sessionmem-raw-"));
const now = () => Number(process.hrtime.bigint()) / 1e6;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// start runs a server and returns req(method, params), which resolves to the answer.
function start() {
  const p = spawn(bin, ["serve", "--store", store], { env: { ...process.env, HOME: store, SESSIONMEM_LOG_FILE: join(store, "server.log") }, stdio: ["pipe", "pipe", "ignore"] });
  let chunks = [], nextId = 1;
  const waiting = [];
  p.stdout.on("data", (c) => {
    for (let i; (i = c.indexOf(10)) !== -1; c = c.subarray(i + 1)) {
      chunks.push(c.subarray(0, i));
      const line = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      chunks = [];
      waiting.shift()(JSON.parse(line.toString("utf8")));
    }
    if (c.length) chunks.push(c);
  });
  const send = (m) => p.stdin.write(JSON.stringify(m) + "\n");
  const req = (method, params) => new Promise((resolve) => { waiting.push(resolve); send({ jsonrpc: "2.0", id: nextId++, method, params }); });
  const init = async () => {
    await req("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "stdio-raw", version: "1" } });
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    await req("tools/list", {});
  };
  const stop = () => new Promise((resolve) => { p.once("close", resolve); p.stdin.end(); });
  return { req, init, stop };
}
async function call(s, name, args) {
  const r = await s.req("tools/call", { name, arguments: args });
  if (r.error || r.result.isError) throw new Error(`${name}: ${JSON.stringify(r.error ?? r.result.content)}`);
  return r.result.structuredContent;
}

try {
  let s = start();
  await s.init();
  let id;
  for (let i = 0; i < n; i += 500) {
    const batch = msgs.slice(i, Math.min(i + 500, n)).map((m, j) => ({ ...m, id: `m${i + j}` }));
    id = (await call(s, "session_save", id ? { session_id: id, messages: batch } : { working_dir: "/bench", messages: batch })).session_id;
  }
  await s.stop();
  const full = async () => {
    const t = now();
    let got = 0, cursor = "";
    do {
      const res = await call(s, "session_resume", cursor ? { session_id: id, max_tokens: maxTokens, cursor } : { session_id: id, max_tokens: maxTokens });
      got += res.messages.length;
      cursor = res.next_cursor;
    } while (cursor);
    if (got !== n) throw new Error(`resumed ${got} of ${n}`);
    return now() - t;
  };
  const cold = [], warm = [], fromSpawn = [];
  for (let r = 0; r < runs; r++) {
    const t = now();
    s = start();
    await s.init();
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    cold.push(await full());
    fromSpawn.push(now() - t);
    warm.push(await full());
    await s.stop();
  }
  console.log(JSON.stringify({ mode: "resume-raw", messages: n, max_tokens: maxTokens, delay_ms: delay, runs, full_cold_median_ms: median(cold), full_cold_min_ms: Math.min(...cold), full_warm_median_ms: median(warm), from_spawn_median_ms: median(fromSpawn) }));
} finally {
  rmSync(store, { recursive: true, force: true });
}
