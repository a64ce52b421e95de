// Times sessionmem over stdio with the official TypeScript SDK client (what most agents use) on
// the messages of msgs.jsonl (contract messages, one per line). Run through
// scripts/bench-stdio.sh, or: node stdio.mjs BIN msgs.jsonl resume N RUNS | list SESSIONS PER RUNS
// The client validates each result against the tool's output schema, as agents' clients do.
import { readFileSync, mkdtempSync, rmSync, readdirSync, lstatSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, file, mode, ...rest] = process.argv.slice(2);
const msgs = readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const store = mkdtempSync(join(tmpdir(), "sessionmem-bench-store-"));
const median = (xs) => { xs.sort((a, b) => a - b); return xs[Math.floor(xs.length / 2)]; };
const now = () => Number(process.hrtime.bigint()) / 1e6;

const logFile = join(store, "server.log");
// disk sums the blocks (as du counts them) and apparent sizes of the files under dir, the
// server's log excluded.
function disk(dir) {
  const out = { blocks: 0, apparent: 0, files: 0 };
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (p === logFile) continue;
    const st = lstatSync(p);
    out.blocks += st.blocks * 512;
    if (e.isDirectory()) { const d = disk(p); out.blocks += d.blocks; out.apparent += d.apparent; out.files += d.files; }
    else { out.apparent += st.size; out.files++; }
  }
  return out;
}
async function connect() {
  const transport = new StdioClientTransport({ command: bin, args: ["serve", "--store", store], env: { ...process.env, HOME: store, SESSIONMEM_LOG_FILE: logFile }, stderr: "ignore" });
  const client = new Client({ name: "sessionmem-bench", version: "1" });
  await client.connect(transport);
  await client.listTools(); // as agents do; the client then checks results against outputSchema
  return client;
}
// stop ends a server as a client that waits for it does: its stdin closed, then its exit
// awaited (the SDK's close kills it after 2 s, then 4 s), and returns how long it took.
async function stop(c) {
  const p = c.transport._process;
  const t = now();
  const exited = new Promise((resolve) => p.once("close", resolve));
  p.stdin.end();
  await exited;
  const ms = now() - t;
  await c.close();
  return ms;
}
const call = async (c, name, args) => {
  const r = await c.callTool({ name, arguments: args }, undefined, { timeout: 600000 });
  if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content)}`);
  return r.structuredContent;
};

try {
  let c = await connect();
  if (mode === "resume") {
    const n = Number(rest[0] ?? 2000), runs = Number(rest[1] ?? 9);
    let id;
    for (let i = 0; i < n; i += 500) {
      const batch = msgs.slice(i, Math.min(i + 500, n)).map((m, j) => ({ ...m, id: `m${i + j}` }));
      const r = await call(c, "session_save", id ? { session_id: id, messages: batch } : { working_dir: "/bench", messages: batch });
      id = r.session_id;
    }
    await c.close();
    // First call after a server start (cold), over several starts: as the client sees it, and
    // as the server timed it (its log's mcp.tool line for that call). Then warm.
    const cold = [], coldServer = [];
    let t;
    for (let r = 0; r < Math.min(runs, 5); r++) {
      if (r > 0) { await c.close(); }
      c = await connect();
      const before = readFileSync(logFile, "utf8").length;
      t = now();
      await call(c, "session_resume", { session_id: id });
      cold.push(now() - t);
      const m = readFileSync(logFile, "utf8").slice(before).match(/mcp\.tool\.name=session_resume duration_s=([0-9.e-]+)/);
      if (m) coldServer.push(1000 * Number(m[1]));
    }
    // A full resume as the first call of a fresh server process (every page).
    const fullResume = async () => {
      const t = now();
      let got = 0, cursor = "";
      do {
        const res = await call(c, "session_resume", cursor ? { session_id: id, max_tokens: 100000, cursor } : { session_id: id, max_tokens: 100000 });
        got += res.messages.length; cursor = res.next_cursor;
      } while (cursor);
      if (got !== n) throw new Error(`resumed ${got} of ${n}`);
      return now() - t;
    };
    const fullCold = [];
    for (let r = 0; r < Math.min(runs, 5); r++) {
      await c.close();
      c = await connect();
      fullCold.push(await fullResume());
    }
    const first = [], full = [];
    for (let r = 0; r < runs; r++) {
      t = now();
      await call(c, "session_resume", { session_id: id });
      first.push(now() - t);
    }
    for (let r = 0; r < runs; r++) {
      t = now();
      let got = 0, cursor = "", pages = 0;
      do {
        const res = await call(c, "session_resume", cursor ? { session_id: id, max_tokens: 100000, cursor } : { session_id: id, max_tokens: 100000 });
        got += res.messages.length; cursor = res.next_cursor; pages++;
      } while (cursor);
      full.push(now() - t);
      if (got !== n) throw new Error(`resumed ${got} of ${n}`);
    }
    console.log(JSON.stringify({ mode, messages: n, runs, full_median_ms: median(full), full_min_ms: Math.min(...full), us_per_msg: 1000 * median(full) / n,
      full_cold_median_ms: median(fullCold), full_cold_min_ms: Math.min(...fullCold),
      first_page_median_ms: median(first), first_page_cold_median_ms: median(cold), first_page_cold_server_median_ms: median(coldServer) }));
  } else if (mode === "list") {
    const sessions = Number(rest[0] ?? 1000), per = Number(rest[1] ?? 4), runs = Number(rest[2] ?? 9);
    for (let i = 0; i < sessions; i++) {
      await call(c, "session_save", { working_dir: "/bench", name: `session ${i}`, messages: msgs.slice(i * per, (i + 1) * per) });
    }
    const listAll = async () => {
      const t = now();
      let got = 0, cursor = "";
      do {
        const res = await call(c, "session_list", cursor ? { limit: 100, cursor } : { limit: 100 });
        got += res.sessions.length; cursor = res.next_cursor;
      } while (cursor);
      if (got !== sessions) throw new Error(`listed ${got}`);
      return now() - t;
    };
    // Disk use once the server that saved has stopped (Close seals what it wrote).
    const stopMs = await stop(c);
    const saved = disk(store);
    c = await connect();
    const times = [];
    for (let r = 0; r < runs; r++) times.push(await listAll());
    // Cold: the first listing of a fresh server process (after the client connected), as
    // when an agent starts; the store's files are in the page cache.
    const cold = [];
    for (let r = 0; r < runs; r++) {
      await c.close();
      c = await connect();
      cold.push(await listAll());
    }
    await c.close();
    // And after servers that only read (which compact the index once idle) stopped too. Disk
    // use is du's blocks and the files' apparent size, the server's log excluded.
    const du = disk(store);
    c = await connect();
    console.log(JSON.stringify({ mode, sessions, per_session: per, runs, median_ms: median(times), min_ms: Math.min(...times),
      cold_median_ms: median(cold), cold_min_ms: Math.min(...cold), stop_after_saves_ms: stopMs,
      saved_du_bytes: saved.blocks, saved_apparent_bytes: saved.apparent, du_bytes: du.blocks, apparent_bytes: du.apparent, files: du.files }));
  }
  await c.close();
} finally {
  if (process.env.SESSIONMEM_BENCH_KEEP) console.error(`store kept: ${store}`); else rmSync(store, { recursive: true, force: true });
}
