// bridge.js: the viewer's data source inside an MCP host, as an MCP App (the
// io.modelcontextprotocol/ui extension). The app talks JSON-RPC 2.0 with the host over
// postMessage: it sends ui/initialize, receives the tool call's input and result as
// notifications, and calls the server's tools (session_list, session_resume,
// session_search) through the host with tools/call. It has no network access of its own.
"use strict";

(function () {
  const SM = window.SM;
  const PROTOCOL_VERSION = "2026-01-26";
  const host = window.parent;
  const pending = new Map();
  let nextID = 1;
  let toolInput = null;
  let preload = null; // a tool result the host sent, used for the first matching request
  const known = new Map(); // session id → metadata seen in a list
  let gotResult = false;

  function send(msg) {
    host.postMessage(Object.assign({ jsonrpc: "2.0" }, msg), "*");
  }
  function request(method, params) {
    const id = nextID++;
    send({ id, method, params });
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      setTimeout(() => pending.delete(id) && reject(new Error(method + ": the host did not answer")), 60000);
    });
  }
  const notify = (method, params) => send({ method, params: params || {} });

  window.addEventListener("message", (ev) => {
    if (ev.source !== host) return; // only the host that embeds the app speaks to it
    const m = ev.data;
    if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return;
    if (m.method) return handle(m);
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.error) p.reject(new Error(String(m.error.message || "the host refused the request")));
    else p.resolve(m.result);
  });

  function handle(m) {
    const reply = (result) => "id" in m && send({ id: m.id, result });
    switch (m.method) {
      case "ui/notifications/tool-input":
        toolInput = (m.params && m.params.arguments) || {};
        return;
      case "ui/notifications/tool-result":
        return showResult(m.params || {});
      case "ui/notifications/host-context-changed":
        return applyContext(m.params || {});
      case "ui/resource-teardown":
      case "ping":
        return reply({});
    }
    if ("id" in m) send({ id: m.id, error: { code: -32601, message: "method not found: " + String(m.method) } });
  }

  // applyContext follows the host's theme and, where given, its colours and fonts.
  function applyContext(c) {
    const root = document.documentElement;
    if (c.theme === "light" || c.theme === "dark") root.dataset.theme = c.theme;
    const vars = c.styles && c.styles.variables;
    for (const k in vars || {}) {
      const v = vars[k];
      if (/^--(color|font|border-radius)-[a-z0-9-]+$/.test(k) && typeof v === "string" && v.length < 200) root.style.setProperty(k, v);
    }
  }

  async function callTool(name, args) {
    for (const k in args) if (args[k] === "" || args[k] == null) delete args[k];
    const res = await request("tools/call", { name, arguments: args });
    const text = ((res && res.content) || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
    if (!res || res.isError) throw new Error(text || name + " failed");
    if (!res.structuredContent) throw new Error(name + " returned no structured content");
    return res.structuredContent;
  }

  function takePreload(kind, key) {
    if (preload && preload.kind === kind && preload.key === key) {
      const v = preload.value;
      preload = null;
      return v;
    }
    return null;
  }

  // resumePage turns a session_resume page into timeline entries: the summary of the latest
  // compaction as a boundary, then the pinned messages, then the messages.
  function resumePage(r, first) {
    const entries = [];
    if (first && r.summary) {
      entries.push({ kind: "compaction", entry_id: null, compaction: { summary: r.summary, read_files: r.read_files, modified_files: r.modified_files, facts: r.facts } });
    }
    for (const m of (first ? r.pinned || [] : []).concat(r.messages || [])) entries.push({ kind: "message", entry_id: m.entry_id, message: m });
    return { entries, before: null, after: r.next_cursor || null };
  }

  const searchKey = (p) => JSON.stringify(["query", "working_dir", "session_id", "role", "file", "since", "until"].map((k) => p[k] || ""));

  // Routes are the web viewer's paths, kept in memory: an app has no address bar.
  let path = "/";
  const history = [];
  function parse(p) {
    const u = new URL(p, "https://app.invalid"); // parsing only; nothing is fetched
    if (u.pathname.startsWith("/s/")) return { view: "session", id: decodeURIComponent(u.pathname.slice(3)), eid: u.hash.slice(1) };
    if (u.pathname === "/search") return { view: "search", params: Object.fromEntries(u.searchParams) };
    return { view: "list" };
  }

  const source = {
    // No prefetch on hover: in a host every load is a visible tool call.
    caps: { live: false, export: false, delete: false, openAtEnd: false, deferList: true, prefetch: false },
    route: () => parse(path),
    navigate(p, replace) {
      if (!replace) history.push(path);
      path = p;
    },
    async listSessions(p) {
      const res = takePreload("list", "") || (await callTool("session_list", { working_dir: p.working_dir, query: p.query, cursor: p.cursor, limit: 30 }));
      for (const s of res.sessions) known.set(s.session_id, s);
      return res;
    },
    async openSession(id) {
      const r = takePreload("resume", id) || (await callTool("session_resume", { session_id: id }));
      const page = resumePage(r, true);
      page.session = Object.assign({ session_id: id, working_dir: r.working_dir, context_tokens: r.context_tokens }, known.get(id) || {});
      return page;
    },
    async page(id, dir, cursor) {
      return resumePage(await callTool("session_resume", { session_id: id, cursor }), false);
    },
    entry: () => Promise.reject(new Error("not available in the app")),
    search(p) {
      const pre = !p.cursor && takePreload("search", searchKey(p));
      return pre ? Promise.resolve(pre) : callTool("session_search", Object.assign({ limit: 20 }, p));
    },
  };

  // showResult shows the result of the tool call the host rendered the app for.
  function showResult(res) {
    gotResult = true;
    const sc = res.structuredContent;
    if (!sc || res.isError || !Array.isArray(sc.sessions)) SM.loadList();
    if (!sc || res.isError) return;
    if (Array.isArray(sc.sessions)) {
      SM.showSessions(sc);
      for (const s of sc.sessions) known.set(s.session_id, s);
      SM.go("/");
    } else if (Array.isArray(sc.matches)) {
      const params = Object.assign({}, toolInput || {});
      delete params.cursor;
      delete params.limit;
      preload = { kind: "search", key: searchKey(params), value: sc };
      const q = new URLSearchParams();
      for (const k in params) if (params[k]) q.set(k, params[k]);
      SM.go("/search?" + q.toString());
    } else if (sc.session_id && Array.isArray(sc.messages) && !(toolInput && toolInput.cursor)) {
      preload = { kind: "resume", key: sc.session_id, value: sc };
      SM.go("/s/" + encodeURIComponent(sc.session_id));
    }
  }

  // connect does the handshake, then starts the viewer; the host sends the tool's input and
  // result once it has the initialized notification.
  async function connect() {
    document.documentElement.classList.add("in-host");
    let init = null;
    try {
      init = await request("ui/initialize", {
        protocolVersion: PROTOCOL_VERSION,
        appInfo: { name: "sessionmem-viewer", version: "1" },
        appCapabilities: {},
      });
    } catch (err) {
      document.body.dataset.bridgeError = String(err.message || err);
    }
    applyContext((init && init.hostContext) || {});
    SM.start(source);
    if (init) {
      notify("ui/notifications/initialized");
      notify("ui/notifications/size-changed", { height: 640 });
    }
    // A host that sends no tool result (or none soon) still gets the list.
    setTimeout(() => gotResult || SM.loadList(), init ? 1500 : 0);
  }
  connect();
})();
