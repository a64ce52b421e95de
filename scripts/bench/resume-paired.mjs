// resume-paired.mjs: issue 25's resume bar, paired. Each round starts a fresh server of every
// binary given (the TypeScript SDK client's connect and tools/list, as agents do), times its
// full resume of 2,000 messages (every page, max_tokens 100,000) as the first call, stops it,
// and then times pi's SessionManager opening and building the same messages in this process,
// so that every binary and pi see the same seconds of the machine's load. Prints per binary
// the median over the rounds and the median of the rounds' pi / sessionmem ratios, one JSON
// line each. Run from the directory scripts/bench-stdio.sh prepares (msgs.jsonl,
// node_modules with pi installed):
//   node resume-paired.mjs ROUNDS BIN [BIN...]
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { SessionManager } from "@mariozechner/pi-coding-agent";
import { writeSession } from "./pisession.mjs";

const [roundsArg, ...bins] = process.argv.slice(2);
const rounds = Number(roundsArg), n = 2000;
const msgs = readFileSync("msgs.jsonl", "utf8").trim().split("\n").slice(0, n).map((l) => JSON.parse(l));
const store = mkdtempSync(join(tmpdir(), "sessionmem-paired-"));
const piDir = mkdtempSync(join(tmpdir(), "sessionmem-paired-pi-"));
const now = () => Number(process.hrtime.bigint()) / 1e6;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function connect(bin) {
  const transport = new StdioClientTransport({ command: bin, args: ["serve", "--store", store], env: { ...process.env, HOME: store }, stderr: "ignore" });
  const client = new Client({ name: "sessionmem-bench", version: "1" });
  await client.connect(transport);
  await client.listTools();
  return client;
}
async function call(c, name, args) {
  const r = await c.callTool({ name, arguments: args }, undefined, { timeout: 600000 });
  if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content)}`);
  return r.structuredContent;
}

try {
  // One store for every binary: they share its format.
  let c = await connect(bins[0]), id;
  for (let i = 0; i < n; i += 500) {
    const batch = msgs.slice(i, i + 500).map((m, j) => ({ ...m, id: `m${i + j}` }));
    id = (await call(c, "session_save", id ? { session_id: id, messages: batch } : { working_dir: "/bench", messages: batch })).session_id;
  }
  await c.close();
  const piPath = writeSession(piDir, "/bench", msgs, 0);
  const times = Object.fromEntries([...bins, "pi"].map((b) => [b, []]));
  for (let r = 0; r < rounds; r++) {
    for (const bin of bins) {
      c = await connect(bin);
      const t = now();
      let got = 0, cursor = "";
      do {
        const res = await call(c, "session_resume", cursor ? { session_id: id, max_tokens: 100000, cursor } : { session_id: id, max_tokens: 100000 });
        got += res.messages.length;
        cursor = res.next_cursor;
      } while (cursor);
      times[bin].push(now() - t);
      if (got !== n) throw new Error(`${bin}: resumed ${got} of ${n}`);
      await c.close();
    }
    const t = now();
    const sm = SessionManager.open(piPath, piDir);
    if (sm.buildSessionContext().messages.length < n) throw new Error("pi built fewer messages");
    times.pi.push(now() - t);
  }
  for (const bin of bins) {
    const ratios = times[bin].map((x, i) => times.pi[i] / x);
    console.log(JSON.stringify({ bin, rounds, full_cold_median_ms: median(times[bin]), pi_median_ms: median(times.pi),
      pi_ratio_median: median(ratios), rounds_at_1_5: ratios.filter((x) => x >= 1.5).length }));
  }
} finally {
  rmSync(store, { recursive: true, force: true });
  rmSync(piDir, { recursive: true, force: true });
}
