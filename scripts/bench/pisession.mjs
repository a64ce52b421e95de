// pisession.mjs: writes contract messages as a pi session file (pi's format v3), for the
// comparisons with pi's SessionManager (pi.mjs, resume-paired.mjs).
import { writeFileSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";

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
export function writeSession(dir, cwd, msgs, i) {
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
