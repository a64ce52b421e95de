// save-rss.mjs: the resident memory of one server process while it saves a lot: MB of
// corpus messages (msgs.jsonl, cycled) through session_save over stdio, BATCH messages per
// call, PER messages per session, requests written by hand (no client library, so the
// client's own cost stays out of the way). Prints one JSON line: the peak RSS (VmHWM) and
// RSS after the saves, the idle RSS right after start, and the saving rate. Linux only.
//   node save-rss.mjs BIN msgs.jsonl [MB=400] [BATCH=50] [PER=2000]
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

const [bin, file, mbArg, batchArg, perArg] = process.argv.slice(2);
const mb = Number(mbArg ?? 400), batch = Number(batchArg ?? 50), per = Number(perArg ?? 2000);
const msgs = readFileSync(file, "utf8").trim().split("\n");
const store = mkdtempSync(join(tmpdir(), "sessionmem-rss-"));
const now = () => Number(process.hrtime.bigint()) / 1e6;

const srv = spawn(bin, ["serve", "--store", store], { env: { ...process.env, HOME: store, SESSIONMEM_LOG_FILE: join(store, "server.log") }, stdio: ["pipe", "pipe", "ignore"] });
const waiting = new Map();
createInterface({ input: srv.stdout }).on("line", (line) => {
  const m = JSON.parse(line);
  const w = waiting.get(m.id);
  if (w) { waiting.delete(m.id); w(m); }
});
let nextId = 1;
function rpc(method, params) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, (m) => m.error ? reject(new Error(JSON.stringify(m.error))) : resolve(m.result));
    srv.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  });
}
function status() {
  const s = readFileSync(`/proc/${srv.pid}/status`, "utf8");
  const kb = (k) => Number(s.match(new RegExp(`${k}:\\s+(\\d+)`))[1]);
  return { rss: kb("VmRSS") / 1024, hwm: kb("VmHWM") / 1024, anon: kb("RssAnon") / 1024, file: kb("RssFile") / 1024 };
}

try {
  await rpc("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "save-rss", version: "1" } });
  srv.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
  await new Promise((r) => setTimeout(r, 500));
  const idle = status();
  let bytes = 0, n = 0, id = null, inSession = 0, peakRss = 0;
  const t0 = now();
  while (bytes < mb * 1e6) {
    const lines = [];
    for (let i = 0; i < batch; i++) { const l = msgs[n++ % msgs.length]; lines.push(l); bytes += l.length; }
    const args = `{"name":"session_save","arguments":{${id ? `"session_id":"${id}"` : `"working_dir":"/bench"`},"messages":[${lines.join(",")}]}}`;
    const cid = nextId++;
    const res = await new Promise((resolve, reject) => {
      waiting.set(cid, (m) => m.error ? reject(new Error(JSON.stringify(m.error))) : resolve(m.result));
      srv.stdin.write(`{"jsonrpc":"2.0","id":${cid},"method":"tools/call","params":${args}}\n`);
    });
    if (res.isError) throw new Error(JSON.stringify(res.content));
    id = res.structuredContent.session_id;
    inSession += batch;
    if (inSession >= per) { id = null; inSession = 0; }
    if (n % (batch * 20) === 0) peakRss = Math.max(peakRss, status().rss);
  }
  const secs = (now() - t0) / 1000;
  const end = status();
  srv.stdin.end();
  await new Promise((r) => srv.once("close", r));
  console.log(JSON.stringify({ mb, batch, per, messages: n, idle_rss_mb: idle.rss, peak_rss_mb: end.hwm, sampled_peak_rss_mb: peakRss, end_rss_mb: end.rss, end_anon_mb: end.anon, end_file_mb: end.file, seconds: secs, mb_per_s: bytes / 1e6 / secs }));
} finally {
  srv.kill();
  if (process.env.SESSIONMEM_BENCH_KEEP) console.error(`store kept: ${store}`); else rmSync(store, { recursive: true, force: true });
}
