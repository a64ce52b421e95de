// save-rss.mjs: the resident memory of one server process while it saves a lot: MB of
// corpus messages (msgs.jsonl, cycled) through session_save over stdio, BATCH messages per
// call, PER messages per session, requests written by hand (no client library, so the
// client's own cost stays out of the way). Prints one JSON line: the peak RSS (VmHWM) and
// RSS after the saves, the idle RSS right after start, and the saving rate. Linux only.
//   node save-rss.mjs BIN msgs.jsonl [MB=400] [BATCH=50] [PER=2000]
// With METRICS=PORT the server also serves /metrics on 127.0.0.1:PORT, read every 100 ms, and
// a second line (on stderr) gives RSS beside the Go runtime's memory every 2 s, MB:
// RSS / heap in use / heap idle not yet released / all the runtime took from the OS. What
// RSS gains beyond the runtime's is the SQLite page caches and the binary's pages.
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

const metricsPort = process.env.METRICS;
const srv = spawn(bin, ["serve", "--store", store, ...(metricsPort ? ["--metrics-addr", `127.0.0.1:${metricsPort}`] : [])], { env: { ...process.env, HOME: store, SESSIONMEM_LOG_FILE: join(store, "server.log") }, stdio: ["pipe", "pipe", "ignore"] });
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
  const samples = [];
  let sampling = false;
  const sampler = metricsPort && setInterval(async () => {
    if (sampling) return;
    sampling = true;
    try {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const metric = (k) => Number(text.match(new RegExp(`^${k} (\\S+)$`, "m"))?.[1]) / 1048576;
      samples.push([status().rss, metric("go_memstats_heap_inuse_bytes"), metric("go_memstats_heap_idle_bytes") - metric("go_memstats_heap_released_bytes"), metric("go_memstats_sys_bytes")]);
    } catch {} // the server between two answers: the next sample
    sampling = false;
  }, 100);
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
  if (sampler) {
    clearInterval(sampler);
    console.error("rss/heap-inuse/heap-idle-unreleased/go-sys MB every 2 s:", samples.filter((_, i) => i % 20 === 10).map((x) => x.map((v) => v.toFixed(0)).join("/")).join(" "));
  }
  srv.stdin.end();
  await new Promise((r) => srv.once("close", r));
  console.log(JSON.stringify({ mb, batch, per, messages: n, idle_rss_mb: idle.rss, peak_rss_mb: end.hwm, sampled_peak_rss_mb: peakRss, end_rss_mb: end.rss, end_anon_mb: end.anon, end_file_mb: end.file, seconds: secs, mb_per_s: bytes / 1e6 / secs }));
} finally {
  srv.kill();
  if (process.env.SESSIONMEM_BENCH_KEEP) console.error(`store kept: ${store}`); else rmSync(store, { recursive: true, force: true });
}
