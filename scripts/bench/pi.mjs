// pi.mjs: times pi's SessionManager (npm @mariozechner/pi-coding-agent) on the same corpus
// messages sessionmem's benchmarks use, for the comparisons in docs/BENCHMARKS.md. Run by
// scripts/bench-stdio.sh --pi; it converts each contract message to pi's session format (v3).
//   node pi.mjs resume msgs.jsonl 2000 RUNS
//   node pi.mjs fresh msgs.jsonl 2000 RUNS    (open and build, each in a new node process)
//   node pi.mjs list msgs.jsonl 1000 4 RUNS
import { readFileSync, mkdtempSync, mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { spawnSync } from "node:child_process";
import { SessionManager } from "@mariozechner/pi-coding-agent";
import { writeSession } from "./pisession.mjs";

const [mode, file, ...rest] = process.argv.slice(2);
const contract = readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));

function median(xs) { xs.sort((a, b) => a - b); return xs[Math.floor(xs.length / 2)]; }
const now = () => Number(process.hrtime.bigint()) / 1e6;

const root = mkdtempSync(join(tmpdir(), "pibench-"));
try {
  if (mode === "resume") {
    const n = Number(rest[0] ?? 2000), runs = Number(rest[1] ?? 15);
    const path = writeSession(root, "/bench", contract.slice(0, n), 0);
    const bytes = readFileSync(path).length;
    const times = [];
    let msgs = 0;
    for (let r = 0; r < runs; r++) {
      const t = now();
      const sm = SessionManager.open(path, root);
      const ctx = sm.buildSessionContext();
      times.push(now() - t);
      msgs = ctx.messages.length;
    }
    console.log(JSON.stringify({ mode, messages: n, pi_messages: msgs, file_bytes: bytes, runs, median_ms: median(times), min_ms: Math.min(...times) }));
  } else if (mode === "fresh") {
    // Spawn to exit of a node process that opens and builds the session, as a new agent
    // process would: with pi's session-manager module alone ("lean"), and with the package's
    // entry point, which loads the rest of pi as "pi -c" does ("package").
    const n = Number(rest[0] ?? 2000), runs = Number(rest[1] ?? 7);
    const path = writeSession(root, "/bench", contract.slice(0, n), 0);
    const lean = new URL("./node_modules/@mariozechner/pi-coding-agent/dist/core/session-manager.js", import.meta.url).href;
    const script = (from) => `import { SessionManager } from ${JSON.stringify(from)};
      const sm = SessionManager.open(process.argv[1], process.argv[2]);
      if (sm.buildSessionContext().messages.length < 1) process.exit(1);`;
    const out = { mode, messages: n, runs };
    for (const [name, from] of [["lean", lean], ["package", "@mariozechner/pi-coding-agent"]]) {
      const times = [];
      for (let r = 0; r < runs; r++) {
        const t = now();
        const p = spawnSync(process.execPath, ["--input-type=module", "-e", script(from), path, root]);
        times.push(now() - t);
        if (p.status !== 0) throw new Error(`pi ${name}: ${p.stderr}`);
      }
      out[`${name}_median_ms`] = median(times);
      out[`${name}_min_ms`] = Math.min(...times);
    }
    const t = now();
    spawnSync(process.execPath, ["-e", "0"]);
    out.node_alone_ms = now() - t;
    console.log(JSON.stringify(out));
  } else if (mode === "list") {
    const sessions = Number(rest[0] ?? 1000), per = Number(rest[1] ?? 4), runs = Number(rest[2] ?? 9);
    const dir = join(root, "sessions");
    mkdirSync(dir);
    let bytes = 0, blocks = 0;
    for (let i = 0; i < sessions; i++) {
      const path = writeSession(dir, "/bench", contract.slice(i * per, (i + 1) * per), i);
      bytes += readFileSync(path).length;
      blocks += statSync(path).blocks * 512;
    }
    const times = [];
    let listed = 0;
    for (let r = 0; r < runs; r++) {
      const t = now();
      const l = await SessionManager.list("/bench", dir);
      times.push(now() - t);
      listed = l.length;
    }
    console.log(JSON.stringify({ mode, sessions, listed, per_session: per, total_bytes: bytes, du_bytes: blocks, runs, median_ms: median(times), min_ms: Math.min(...times) }));
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
