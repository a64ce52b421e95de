// render.js: DOM building for the session viewer, shared by the web page and the MCP App.
//
// Everything a session holds is untrusted (agents' transcripts carry HTML, scripts, markdown,
// ANSI escapes and javascript: links). It reaches the page only as text nodes and through
// attributes this file chooses: never innerHTML, never a URL taken from a message (the
// page's Content-Security-Policy enforces it with Trusted Types, so a slip throws instead of
// running anything).
"use strict";

(function () {
  const SM = (window.SM = window.SM || {});

  // h builds an element: props set attributes ("text" sets textContent, "on…" adds
  // listeners), children are nodes or strings (appended as text).
  function h(tag, props, ...kids) {
    const n = document.createElement(tag);
    for (const k in props || {}) {
      const v = props[k];
      if (v == null || v === false) continue;
      if (k === "class") n.className = v;
      else if (k === "text") n.textContent = v;
      else if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
      else if (k === "href") n.setAttribute("href", internalHref(v));
      else n.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of kids.flat(2)) {
      if (c == null || c === false) continue;
      n.append(c instanceof Node ? c : String(c));
    }
    return n;
  }

  // internalHref keeps links inside the viewer: a path or a fragment, nothing with a scheme.
  function internalHref(v) {
    v = String(v);
    return /^[/#?]/.test(v) && !/^\/\//.test(v) ? v : "#";
  }

  const ids = /^[A-Za-z0-9_.-]{1,128}$/;
  const safeID = (s) => (typeof s === "string" && ids.test(s) ? s : null);

  // clean removes terminal escape sequences and the control and bidirectional-override
  // characters that would make text display other than it reads.
  const ansi = /\x1b\[[0-?]*[ -\/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]/g;
  const controls = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function clean(s) {
    if (s == null) return "";
    return String(s).replace(ansi, "").replace(/\r\n?/g, "\n").replace(controls, "");
  }

  const numFmt = new Intl.NumberFormat();
  const fmtNum = (n) => numFmt.format(n || 0);
  function fmtTokens(n) {
    if (!n) return "0";
    if (n < 1000) return String(n);
    if (n < 100000) return (n / 1000).toFixed(1).replace(/\.0$/, "") + "k";
    return Math.round(n / 1000) + "k";
  }
  const dateFmt = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  function validDate(t) {
    const d = t ? new Date(t) : null;
    return d && !isNaN(d) && d.getFullYear() > 1971 ? d : null;
  }
  function fmtTime(t) {
    const d = validDate(t);
    return d ? dateFmt.format(d) : "";
  }
  function ago(t) {
    const d = validDate(t);
    if (!d) return "";
    const s = (Date.now() - d.getTime()) / 1000;
    if (s < 45) return "just now";
    const steps = [[60, "min"], [24, "h"], [30, "d"], [12, "mo"]];
    let v = s / 60;
    for (const [n, unit] of steps) {
      if (v < n) return Math.max(1, Math.round(v)) + " " + unit + " ago";
      v /= n;
    }
    return Math.round(v) + " y ago";
  }
  const plural = (n, one, many) => fmtNum(n) + " " + (n === 1 ? one : many);

  function timeEl(t, cls) {
    const d = validDate(t);
    return d ? h("time", { class: cls, datetime: d.toISOString(), title: d.toISOString() }, fmtTime(t)) : null;
  }

  // sessionTitle is what names a session: its name, else its first prompt, else its id.
  function sessionTitle(s) {
    return clean(s.name || s.preview || s.session_id).split("\n")[0].slice(0, 200);
  }

  function renderSessionRow(s, link) {
    const stats = [plural(s.message_count, "message", "messages")];
    if (s.compactions) stats.push(plural(s.compactions, "compaction", "compactions"));
    if (s.context_tokens) stats.push(fmtTokens(s.context_tokens) + " tokens");
    const sub = s.name && s.preview ? clean(s.preview).split("\n")[0].slice(0, 200) : "";
    return h("li", { class: "srow", "data-id": safeID(s.session_id) },
      h("a", { href: link, "data-nav": "" },
        h("span", { class: "title" }, sessionTitle(s)),
        sub ? h("span", { class: "sub" }, sub) : null,
        h("span", { class: "dir" }, clean(s.working_dir)),
        h("span", { class: "stats" }, stats.join(" · "),
          h("span", { class: "ago", title: fmtTime(s.updated_at) }, ago(s.updated_at))),
        s.parent_session_id ? h("span", { class: "badge" }, "fork") : null));
  }

  const roleNames = { user: "User", assistant: "Assistant", tool_result: "Tool result", system: "System" };
  const roleClass = (r) => (roleNames[r] ? "role-" + r : "role-other");

  // Long texts show their beginning; "show all" shows the rest (fetching the entry whole
  // when the server cut it from the page).
  const previewChars = 3000;
  const toolPreviewChars = 1500;

  // markdown draws a little Markdown (headings, fenced code, **bold** and `code`) with
  // elements whose content is text; anything else, links and HTML included, stays text.
  function markdown(text) {
    const out = document.createDocumentFragment();
    const lines = text.split("\n");
    let para = [];
    const flush = () => {
      if (para.length) out.append(h("div", { class: "md-p" }, inline(para.join("\n"))));
      para = [];
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      const fence = /^\s*(```|~~~)/.exec(line);
      if (fence) {
        flush();
        const code = [];
        for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) code.push(lines[i]);
        out.append(h("div", { class: "code" }, code.join("\n")));
        continue;
      }
      const head = /^(#{1,6})\s+(.*)$/.exec(line);
      if (head) {
        flush();
        out.append(h("div", { class: "md-h md-h" + head[1].length }, inline(head[2])));
        continue;
      }
      para.push(line);
    }
    flush();
    return out;
  }
  function inline(s) {
    const parts = [];
    const re = /(\*\*[^*\n]+\*\*|`[^`\n]+`)/g;
    let at = 0;
    for (let m = re.exec(s); m; m = re.exec(s)) {
      parts.push(s.slice(at, m.index));
      const t = m[0];
      parts.push(t[0] === "`" ? h("code", null, t.slice(1, -1)) : h("strong", null, t.slice(2, -2)));
      at = m.index + t.length;
    }
    parts.push(s.slice(at));
    return parts;
  }

  function fill(box, text, md) {
    if (md) box.replaceChildren(markdown(text));
    else box.textContent = text;
  }

  function longText(text, limit, cutChars, onAll, cls, md) {
    text = clean(text);
    const box = h("div", { class: cls || "text" });
    if (text.length <= limit && !cutChars) {
      fill(box, text, md);
      return box;
    }
    const more = text.length - Math.min(limit, text.length) + (cutChars || 0);
    fill(box, text.slice(0, limit), md);
    const btn = h("button", { class: "show-all", type: "button" }, "Show all (" + fmtNum(more) + " more characters)");
    btn.addEventListener("click", (ev) => {
      ev.preventDefault();
      if (cutChars && onAll) {
        btn.disabled = true;
        btn.textContent = "Loading…";
        onAll();
        return;
      }
      fill(box, text, md);
      btn.remove();
    });
    return h("div", { class: "long" }, box, btn);
  }

  function prettyArgs(args) {
    if (args == null) return "";
    if (typeof args === "string") return args;
    try {
      return JSON.stringify(args, null, 2);
    } catch (e) {
      return String(args);
    }
  }
  function argsPreview(args) {
    if (args == null || typeof args !== "object") return clean(args == null ? "" : args).slice(0, 120);
    const parts = [];
    for (const k of Object.keys(args).slice(0, 3)) {
      let v = args[k];
      v = typeof v === "string" ? v : JSON.stringify(v);
      parts.push(clean(k + "=" + v).replace(/\s+/g, " ").slice(0, 100));
    }
    return parts.join(" ");
  }

  const imageTypes = /^image\/(png|jpeg|gif|webp)$/;
  function renderImage(b) {
    if (!imageTypes.test(b.media_type || "") || !b.data || /[^A-Za-z0-9+/=\s]/.test(b.data)) {
      const why = b.cut ? "image not loaded (" + fmtNum(b.cut) + " bytes); show the entry whole to see it" : "image (" + clean(b.media_type || "unknown type") + ")";
      return h("div", { class: "image-missing" }, why);
    }
    return h("img", { class: "image", alt: "image (" + b.media_type + ")", src: "data:" + b.media_type + ";base64," + b.data, loading: "lazy" });
  }

  function blockText(content) {
    if (typeof content === "string") return content;
    return (content || []).filter((c) => c.type === "text").map((c) => c.text || "").join("\n");
  }

  // renderBlock draws one content block. ctx: {toolNames: Map(call id → name), onAll}.
  function renderBlock(b, ctx) {
    switch (b.type) {
      case "text":
        return longText(b.text, previewChars, b.cut, ctx.onAll, "text", ctx.markdown);
      case "thinking":
        return h("details", { class: "thinking" }, h("summary", null, "Thinking"),
          longText(b.thinking, previewChars, b.cut, ctx.onAll));
      case "tool_call": {
        if (b.id) ctx.toolNames.set(b.id, b.name);
        return h("details", { class: "tool-call" },
          h("summary", null, h("span", { class: "tool-name" }, clean(b.name) || "tool"), " ",
            h("span", { class: "args-preview" }, argsPreview(b.arguments))),
          longText(prettyArgs(b.arguments), toolPreviewChars, b.cut, ctx.onAll, "code"));
      }
      case "tool_result": {
        const name = ctx.toolNames.get(b.tool_call_id);
        const text = blockText(b.content);
        const lines = text ? text.split("\n").length : 0;
        const label = (b.is_error ? "Error from " : "Result of ") + (name ? clean(name) : "tool call") + " · " + plural(lines, "line", "lines");
        const cut = (b.content || []).reduce((n, c) => n + (c.cut || 0), 0);
        const images = (b.content || []).filter((c) => c.type === "image").map(renderImage);
        return h("details", { class: "tool-result" + (b.is_error ? " error" : "") }, h("summary", null, label),
          longText(text, toolPreviewChars, cut, ctx.onAll, "code"), images);
      }
      case "image":
        return renderImage(b);
    }
    return h("div", { class: "code" }, clean(JSON.stringify(b)));
  }

  // renderMessage draws a message entry. ctx: {sessionID, link(entryID), toolNames, onAll(entry)}.
  function renderMessage(e, ctx) {
    const m = e.message || {};
    const id = safeID(e.entry_id);
    const head = h("header", null,
      m.role === "tool_result" ? null : h("span", { class: "role" }, roleNames[m.role] || clean(m.role)),
      m.pinned ? h("span", { class: "badge pinned", title: "Pinned: standing context no compaction folds away" }, "pinned") : null,
      m.usage ? h("span", { class: "usage" }, fmtTokens(m.usage.input_tokens) + " in · " + fmtTokens(m.usage.output_tokens) + " out") : null,
      id ? h("a", { class: "anchor", href: "#" + id, title: "Link to this message" }, timeEl(e.time) || "#") : timeEl(e.time));
    const bctx = { toolNames: ctx.toolNames, onAll: ctx.onAll ? () => ctx.onAll(e) : null, markdown: m.role === "assistant" };
    const body = h("div", { class: "body" }, (m.content || []).map((b) => renderBlock(b, bctx)));
    return h("article", { class: "entry msg " + roleClass(m.role) + (m.pinned ? " is-pinned" : ""), id, tabindex: "-1" }, head, body);
  }

  // The tagged blocks a stored summary ends with; the page shows them as lists instead.
  // Only the blocks at its end are cut: the prose may name a tag too.
  const lastBlock = /(?:^|\n)<(read-files|modified-files|user-constraints|user-values|commands-run|errors-seen|facts-dropped)>\n[\s\S]*?\n<\/\1>\s*$/;
  function summaryText(s) {
    s = clean(s);
    for (let t = s.replace(lastBlock, ""); t !== s; t = s.replace(lastBlock, "")) s = t;
    return s.trim();
  }

  function factList(title, items, line) {
    if (!items || !items.length) return null;
    return h("div", { class: "facts-group" }, h("h4", null, title + " (" + items.length + ")"),
      h("ul", null, items.map((it) => h("li", null, line(it)))));
  }

  function renderFacts(f) {
    if (!f) return null;
    const groups = [
      factList("User constraints", f.constraints, (n) => clean(n.text)),
      factList("Values", f.values, (n) => [clean(n.text), n.superseded ? h("span", { class: "badge" }, "superseded") : null]),
      factList("Commands run", f.commands, (c) => [h("span", { class: "badge " + (c.status === "ok" ? "ok" : "bad") }, clean(c.status)),
        " ", h("code", null, clean(c.command)), c.runs > 1 ? " (" + c.runs + " runs)" : ""]),
      factList("Errors seen", f.errors, (x) => [h("span", { class: "badge " + (x.status === "open" ? "bad" : "ok") }, clean(x.status)),
        " ", x.source ? clean(x.source) + ": " : "", h("code", null, clean(x.error))]),
    ].filter(Boolean);
    if (!groups.length) return null;
    const n = ["constraints", "values", "commands", "errors"].reduce((a, k) => a + ((f[k] || []).length), 0);
    return h("details", { class: "facts" }, h("summary", null, "Durable facts (" + n + ")"), groups);
  }

  function fileList(title, files) {
    if (!files || !files.length) return null;
    return h("div", { class: "files-group" }, h("h4", null, title + " (" + files.length + ")"),
      h("ul", { class: "files" }, files.map((f) => h("li", null, h("code", null, clean(f))))));
  }

  // renderCompaction draws a compaction as a boundary with its summary, durable facts and
  // the cumulative files read and modified.
  function renderCompaction(e) {
    const c = e.compaction || {};
    const id = safeID(e.entry_id);
    const bits = ["Compacted"];
    if (c.tokens_before) bits.push(fmtNum(c.tokens_before) + " → " + fmtNum(c.tokens_after) + " tokens");
    if (c.summarizer) bits.push("by " + clean(c.summarizer));
    const read = c.read_files || [], mod = c.modified_files || [];
    const files = read.length || mod.length ? h("details", { class: "files-box" },
      h("summary", null, "Files: " + read.length + " read · " + mod.length + " modified"),
      fileList("Modified", mod), fileList("Read", read)) : null;
    return h("section", { class: "entry compaction", id, tabindex: "-1" },
      h("header", { class: "boundary" }, h("span", null, bits.join(" · ")),
        id ? h("a", { class: "anchor", href: "#" + id, title: "Link to this compaction" }, timeEl(e.time) || "#") : null),
      h("details", { class: "summary", open: true }, h("summary", null, "Summary"),
        longText(summaryText(c.summary), previewChars, 0, null, "text", true)),
      renderFacts(c.facts), files);
  }

  function renderBranchSummary(e) {
    const b = e.branch_summary || {};
    return h("section", { class: "entry branch", id: safeID(e.entry_id), tabindex: "-1" },
      h("header", { class: "boundary" }, "The conversation went back to an earlier point; the branch that was left:"),
      longText(b.summary, previewChars, 0, null));
  }

  function renderEntry(e, ctx) {
    if (e.kind === "compaction") return renderCompaction(e);
    if (e.kind === "branch_summary") return renderBranchSummary(e);
    return renderMessage(e, ctx);
  }

  // renderSnippet marks the highlighted UTF-16 ranges of a search snippet, or, without
  // ranges, the query's plain words wherever they occur (the MCP App's tool results carry no
  // ranges).
  function renderSnippet(text, spans, query) {
    text = clean(text);
    if (!spans || !spans.length) spans = guessSpans(text, query);
    const out = h("div", { class: "snippet" });
    let at = 0;
    for (const [a, b] of spans) {
      if (a < at || b > text.length || a >= b) continue;
      out.append(text.slice(at, a), h("mark", null, text.slice(a, b)));
      at = b;
    }
    out.append(text.slice(at));
    return out;
  }
  function guessSpans(text, query) {
    const words = String(query || "").replace(/"/g, " ").split(/\s+/)
      .filter((w) => w && !w.startsWith("-")).map((w) => w.replace(/^\+|\*$/g, "").toLowerCase()).filter((w) => w.length > 1);
    const lower = text.toLowerCase();
    const spans = [];
    for (const w of words) {
      for (let i = lower.indexOf(w); i >= 0; i = lower.indexOf(w, i + w.length)) spans.push([i, i + w.length]);
    }
    return spans.sort((x, y) => x[0] - y[0]);
  }

  // renderHit draws a search match; title names its session when the match has no name.
  function renderHit(m, link, query, title) {
    const kind = m.kind === "summary" ? "summary" : roleNames[m.role] || clean(m.role);
    return h("li", { class: "hit" },
      h("a", { href: link, "data-nav": "" },
        h("span", { class: "hit-head" },
          h("span", { class: "title" }, clean(m.session_name) || title || clean(m.session_id)),
          h("span", { class: "badge" }, kind), timeEl(m.time)),
        renderSnippet(m.snippet, m.highlights, query)));
  }

  Object.assign(SM, { h, clean, safeID, fmtNum, fmtTokens, fmtTime, timeEl, ago, plural, sessionTitle, renderSessionRow, renderEntry, renderHit, renderSnippet });
})();
