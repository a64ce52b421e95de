// pi.mjs: times pi's SessionManager (npm @mariozechner/pi-coding-agent) on the same corpus
// messages sessionmem's benchmarks use, for the comparisons in docs/BENCHMARKS.md. Run by
// scripts/bench-stdio.sh --pi; it converts each contract message to pi's session format (v3).
//   node pi.mjs resume msgs.jsonl 2000 RUNS
//   node pi.mjs fresh msgs.jsonl 2000 RUNS    (open and build, each in a new node process)
//   node pi.mjs list msgs.jsonl 1000 4 RUNS
import { readFileSync, writeFileSync, mkdtempSync, mkdirSync, rmSync, utimesSync, statSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { randomUUID } from "node:crypto";
import { spawnSync } from "node:child_process";
import { SessionManager } from "@mariozechner/pi-coding-agent";

const [mode, file, ...rest] = process.argv.slice(2);
const contract = readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));

// toPi converts one contract message to pi's message shape (one or more messages).
function toPi(m, ts) {
  const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
  const simple = (bs) => bs.map((b) => b.type === "image" ? { type: "image", data: b.data, mimeType: b.media_type } : { type: "text", text: b.text ?? "" });
  if (m.role === "assistant") {
    const content = blocks.map((b) => {
      if (b.type === "tool_call") return { type: "toolCall", id: b.id, name: b.name, arguments: b.arguments ?? {} };
      if (b.type === "thinking") return { type: "thinking", thinking: b.thinking };
      return { type: "text", text: b.text ?? "" };
    });
    const input = m.usage?.input_tokens ?? 0, output = m.usage?.output_tokens ?? 0;
    return [{ role: "assistant", content, api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5",
      usage: { input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
      stopReason: content.some((c) => c.type === "toolCall") ? "toolUse" : "stop", timestamp: ts }];
  }
  const results = blocks.filter((b) => b.type === "tool_result");
  if (results.length > 0) {
    return results.map((b) => ({ role: "toolResult", toolCallId: b.tool_call_id, toolName: "tool",
      content: simple(typeof b.content === "string" ? [{ type: "text", text: b.content }] : (b.content ?? [])), isError: !!b.is_error, timestamp: ts }));
  }
  return [{ role: "user", content: simple(blocks), timestamp: ts }];
}

// writeSession writes a pi session file (format v3) holding msgs and returns its path.
function writeSession(dir, cwd, msgs, i) {
  const t0 = Date.UTC(2026, 10, 1) + i * 1000;
  const id = randomUUID();
  const lines = [JSON.stringify({ type: "session", version: 3, id, timestamp: new Date(t0).toISOString(), cwd })];
  let parent = null, n = 0;
  for (const m of msgs) {
    for (const pm of toPi(m, t0 + n)) {
      const eid = (n++).toString(16).padStart(8, "0");
      lines.push(JSON.stringify({ type: "message", id: eid, parentId: parent, timestamp: new Date(t0 + n).toISOString(), message: pm }));
      parent = eid;
    }
  }
  const path = join(dir, `${new Date(t0).toISOString().replace(/[:.]/g, "-")}_${id}.jsonl`);
  writeFileSync(path, lines.join("\n") + "\n");
  utimesSync(path, new Date(t0), new Date(t0));
  return path;
}

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
