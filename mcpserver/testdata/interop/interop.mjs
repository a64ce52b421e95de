// Interop check: the official TypeScript SDK client and the MCP inspector CLI call every
// sessionmem tool over stdio and streamable HTTP (plus an SSE connect). Exits non-zero on the
// first failure. Usage: node interop.mjs /path/to/sessionmem (with $INTEROP_STORE set, against
// that store, a directory or a postgres:// URL, instead of a temporary directory)
//
// The SDK client validates structuredContent against each tool's outputSchema, so this also
// checks that the schemas describe what the server really returns.

import { spawn, execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";

const bin = process.argv[2];
if (!bin) {
  console.error("usage: node interop.mjs /path/to/sessionmem");
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const inspectorBin = join(here, "node_modules", ".bin", "mcp-inspector");
const token = "interop-token";
const tmp = mkdtempSync(join(tmpdir(), "sessionmem-interop-"));
const children = [];
let failures = 0;

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (err) {
    failures++;
    console.log(`FAIL ${name}: ${err?.stack ?? err}`);
  }
}

function messages(prefix, n) {
  const body = "interop words ".repeat(40);
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push({ id: `${prefix}-u${i}`, role: "user", content: `question ${i} ${body}` });
    out.push({
      id: `${prefix}-a${i}`, role: "assistant", usage: { input_tokens: 100 + i, output_tokens: 20 },
      content: [
        { type: "thinking", thinking: "let me read it" },
        { type: "text", text: `answer ${i} ${body}` },
        { type: "tool_call", id: `${prefix}-c${i}`, name: "read", arguments: { path: "src/main.go" } },
      ],
    });
    out.push({
      id: `${prefix}-t${i}`, role: "tool_result",
      content: [{ type: "tool_result", tool_call_id: `${prefix}-c${i}`, content: "package main", is_error: false }],
    });
  }
  return out;
}

// exercise calls every tool through call(name, args) -> {isError, structuredContent}.
async function exercise(label, call) {
  const ok = async (name, args) => {
    const res = await call(name, args);
    check(!res.isError, `${name} succeeded: ${JSON.stringify(res.content)}`);
    check(res.structuredContent && typeof res.structuredContent === "object", `${name} has structuredContent`);
    check(res.content?.[0]?.type === "text" && res.content[0].text.length > 0, `${name} has a text block`);
    return res.structuredContent;
  };
  const dir = `/home/interop/${label}`;
  const msgs = messages("m", 20);
  const saved = await ok("session_save", { working_dir: dir, name: `interop ${label}`, model: "m", provider: "p", context_window: 200000, messages: msgs });
  check(saved.saved === 60 && saved.session_id, `save stored 60 messages: ${JSON.stringify(saved)}`);
  const id = saved.session_id;
  const replay = await ok("session_save", { session_id: id, messages: msgs.slice(0, 3) });
  check(replay.saved === 0, "replayed ids store nothing");
  const list = await ok("session_list", { working_dir: dir, limit: 5 });
  check(list.sessions.some((s) => s.session_id === id), "list shows the session");
  const resume = await ok("session_resume", { session_id: id, max_tokens: 5000 });
  check(resume.messages.length > 0 && resume.session_id === id, "resume returns messages");
  const search = await ok("session_search", { query: "INTEROP words", working_dir: dir });
  check(search.matches.length > 0, "search finds the text");
  const need = await ok("session_compact", { session_id: id, summarizer: "agent", keep_recent_tokens: 1000 });
  check(need.status === "needs_summary" && need.compaction_id, `compact asks for a summary: ${need.status}`);
  const done = await ok("session_compact", { session_id: id, compaction_id: need.compaction_id, summary: "## Goal\nInterop." });
  check(done.status === "compacted", `compact with summary: ${done.status}`);
  await ok("session_save", { session_id: id, messages: messages("n", 10) });
  const ex = await ok("session_compact", { session_id: id, summarizer: "extractive", keep_recent_tokens: 1000 });
  check(ex.status === "compacted" || ex.status === "nothing_to_compact", `extractive: ${ex.status}`);
  const after = await ok("session_resume", { session_id: id });
  check(after.summary.length > 0, "resume after compaction has a summary");
  const fork = await ok("session_fork", { session_id: id, name: "fork" });
  check(fork.parent_session_id === id && fork.session_id !== id, "fork makes a new session");
  const del = await ok("session_delete", { session_id: fork.session_id });
  check(del.deleted === true, "delete");
  const bad = await call("session_resume", { session_id: "../x" });
  check(bad.isError === true && /not a valid id/.test(bad.content[0].text), "bad id is a tool error");
  const missing = await call("session_fork", {});
  check(missing.isError === true, "missing argument is a tool error");
}

async function sdkClient(transport) {
  const client = new Client({ name: "sessionmem-interop", version: "1.0.0" });
  await client.connect(transport);
  const { tools } = await client.listTools();
  check(tools.length === 7, `7 tools listed, got ${tools.length}`);
  for (const t of tools) check(t.outputSchema && t.annotations, `${t.name} has outputSchema and annotations`);
  const templates = await client.listResourceTemplates();
  check(templates.resourceTemplates.length === 3, "3 resource templates");
  const prompts = await client.listPrompts();
  check(prompts.prompts.length === 3, "3 prompts");
  return client;
}

function startHTTP(store) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ["serve", "--store", store, "--http", "127.0.0.1:0"], {
      env: { ...process.env, SESSIONMEM_TOKEN: token },
      stdio: ["ignore", "ignore", "pipe"],
    });
    children.push(child);
    let buf = "";
    const timer = setTimeout(() => reject(new Error("HTTP server did not announce its address")), 10000);
    child.stderr.on("data", (d) => {
      buf += d;
      const m = buf.match(/serving MCP on (http:\/\/\S+)\/mcp/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.on("exit", (code) => reject(new Error(`server exited early (${code}): ${buf}`)));
  });
}

const execFileP = promisify(execFile);

// inspector runs the inspector CLI once and returns the tool result it prints.
async function inspector(target, name, args) {
  const argv = ["--cli", ...target, "--method", "tools/call", "--tool-name", name];
  for (const [k, v] of Object.entries(args)) argv.push("--tool-arg", `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
  try {
    const { stdout } = await execFileP(inspectorBin, argv, { maxBuffer: 64 << 20, timeout: 120000 });
    return JSON.parse(stdout);
  } catch (err) {
    throw new Error(`inspector ${name} failed (${err.killed ? "timed out" : `exit ${err.code}`}): ${err.stderr || err.message}`);
  }
}

try {
  const store = process.env.INTEROP_STORE || join(tmp, "store");

  await step("TS SDK over stdio: every tool", async () => {
    const client = await sdkClient(new StdioClientTransport({ command: bin, args: ["serve", "--store", store], stderr: "ignore" }));
    try {
      await exercise("sdk-stdio", (name, args) => client.callTool({ name, arguments: args }));
    } finally {
      await client.close();
    }
  });

  const base = await startHTTP(store);
  const headers = { Authorization: `Bearer ${token}` };

  await step("TS SDK over streamable HTTP: every tool", async () => {
    const client = await sdkClient(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } }));
    try {
      await exercise("sdk-http", (name, args) => client.callTool({ name, arguments: args }));
      await client.transport.terminateSession?.();
    } finally {
      await client.close();
    }
  });

  await step("TS SDK over legacy SSE: connect and list", async () => {
    const client = new Client({ name: "sessionmem-interop-sse", version: "1.0.0" });
    await client.connect(new SSEClientTransport(new URL(`${base}/sse`), {
      requestInit: { headers },
      eventSourceInit: { fetch: (url, init) => fetch(url, { ...init, headers: { ...init?.headers, ...headers } }) },
    }));
    const res = await client.callTool({ name: "session_list", arguments: {} });
    check(!res.isError && res.structuredContent.sessions.length > 0, "SSE session_list sees the sessions");
    await client.close();
  });

  await step("TS SDK over streamable HTTP without token is refused", async () => {
    const client = new Client({ name: "no-token", version: "1.0.0" });
    let refused = false;
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
    } catch (err) {
      refused = /401|Unauthorized/i.test(String(err));
    }
    check(refused, "connect without the bearer token fails with 401");
  });

  const stdioTarget = [bin, "serve", "--store", store];
  const httpTarget = [`${base}/mcp`, "--transport", "http", "--header", `Authorization: Bearer ${token}`];
  // Each inspector run starts two Node processes (about 1-2 s): run both transports at once.
  await Promise.all([["stdio", stdioTarget], ["streamable HTTP", httpTarget]].map(([label, target]) =>
    step(`inspector CLI over ${label}: every tool`, async () => {
      const call = (name, args) => inspector(target, name, args);
      const dir = `/home/interop/inspector-${label.replace(/\W/g, "")}`;
      const saved = await call("session_save", { working_dir: dir, messages: messages("i", 20) });
      check(!saved.isError, `session_save: ${JSON.stringify(saved.content)}`);
      const id = saved.structuredContent.session_id;
      const results = await Promise.all([
        call("session_list", { working_dir: dir }),
        call("session_resume", { session_id: id, max_tokens: 3000 }),
        call("session_search", { query: "interop", working_dir: dir, limit: 3 }),
        call("session_compact", { session_id: id, summarizer: "extractive", keep_recent_tokens: 1000 }),
        call("session_fork", { session_id: id }),
        call("session_delete", { session_id: "../x" }),
      ]);
      const bad = results.pop();
      check(bad.isError === true, "bad id is a tool error");
      for (const r of results) check(!r.isError && r.structuredContent, `inspector call: ${JSON.stringify(r.content)}`);
      const del = await call("session_delete", { session_id: results[4].structuredContent.session_id });
      check(!del.isError && del.structuredContent.deleted === true, "session_delete");
    })));
} catch (err) {
  failures++;
  console.log(`FAIL setup: ${err?.stack ?? err}`);
} finally {
  // Let the HTTP server shut down gracefully (it seals the store) before removing the store.
  await Promise.all(children.map((c) => new Promise((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve();
    const timer = setTimeout(() => { c.kill("SIGKILL"); resolve(); }, 15000);
    c.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) { failures++; console.log(`FAIL HTTP server exited with ${code ?? signal} after SIGTERM`); }
      resolve();
    });
    c.kill("SIGTERM");
  })));
  rmSync(tmp, { recursive: true, force: true });
}

console.log(failures === 0 ? "interop: all checks passed" : `interop: ${failures} failure(s)`);
process.exit(failures === 0 ? 0 : 1);
