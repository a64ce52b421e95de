// ui.js: the session viewer's application: the session list, a session's timeline, search,
// keyboard navigation and the actions. Its data comes from SM.source, which web.js (the HTTP
// API) or bridge.js (an MCP App host) provides before calling SM.start.
"use strict";

(function () {
  const SM = window.SM;
  const { h, clean, safeID, fmtNum, fmtTokens, fmtTime, plural, sessionTitle } = SM;

  let src; // the data source
  const ui = {}; // the shell's elements
  const st = { route: null, list: null, session: null, search: null, cur: -1 };

  // ---- shell ----

  function buildShell(root) {
    ui.q = h("input", { type: "search", id: "q", placeholder: "Search all sessions", "aria-label": "Search all sessions", autocomplete: "off" });
    ui.live = h("span", { class: "live", hidden: true, title: "This session updates live" }, "live");
    // No <form>: an MCP host's sandbox may forbid form submission, and with it the submit
    // event; Enter does the same everywhere.
    const form = h("div", { class: "search-box", role: "search" }, ui.q, h("kbd", { class: "hint" }, "/"));
    onEnter(ui.q, () => {
      const params = Object.assign({}, st.route && st.route.view === "search" ? st.route.params : {}, { query: ui.q.value.trim() });
      delete params.cursor;
      go(searchPath(params));
    });
    ui.dir = h("input", { type: "text", placeholder: "Project directory", "aria-label": "Filter by project directory", list: "dirs", autocomplete: "off" });
    ui.filter = h("input", { type: "search", placeholder: "Name or first prompt", "aria-label": "Filter by name or first prompt", autocomplete: "off" });
    ui.dirs = h("datalist", { id: "dirs" });
    ui.sessions = h("ol", { class: "sessions", "aria-label": "Sessions, newest first" });
    ui.more = h("button", { class: "more", type: "button", hidden: true }, "More sessions");
    ui.more.addEventListener("click", () => loadList(false));
    for (const ev of ["pointerover", "focusin"]) {
      ui.sessions.addEventListener(ev, (e) => {
        const row = e.target.closest && e.target.closest(".srow");
        if (row) prefetch(row.dataset.id);
      });
    }
    ui.listPane = h("nav", { class: "pane list-pane", "aria-label": "Sessions" },
      h("div", { class: "filters" }, ui.dir, ui.filter, ui.dirs), ui.sessions, ui.more);
    ui.main = h("main", { class: "pane main-pane", tabindex: "-1" });
    ui.dialog = h("dialog", { class: "confirm" });
    ui.toast = h("div", { class: "toast", role: "status", "aria-live": "polite" });
    root.append(
      h("header", { class: "top" }, h("a", { class: "brand", href: "/", "data-nav": "" }, "sessionmem"), form, ui.live),
      h("div", { class: "panes" }, ui.listPane, ui.main), ui.dialog, ui.toast);
    let timer;
    const refilter = () => {
      clearTimeout(timer);
      timer = setTimeout(() => loadList(true), 250);
    };
    ui.dir.addEventListener("input", refilter);
    ui.filter.addEventListener("input", refilter);
    observe(ui.more, () => loadList(false));
  }

  function onEnter(input, fn) {
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.isComposing) {
        ev.preventDefault();
        fn();
      }
    });
  }

  // observe calls fn whenever el scrolls into view (auto-loading the next page), and again
  // while el stays in view after fn loaded something (a short page leaves it there).
  function observe(el, fn) {
    const near = () => {
      const r = el.getBoundingClientRect();
      return !el.hidden && r.bottom > -200 && r.top < innerHeight + 200;
    };
    const run = async () => {
      if (el.hidden || el.disabled) return;
      // Only after a page that brought something: a failing load must not repeat at once.
      if ((await fn()) && el.isConnected && near()) setTimeout(run, 50);
    };
    new IntersectionObserver((es) => es.some((e) => e.isIntersecting) && run(), { rootMargin: "200px" }).observe(el);
  }

  function toast(msg) {
    ui.toast.textContent = msg;
    ui.toast.classList.add("show");
    clearTimeout(toast.t);
    toast.t = setTimeout(() => ui.toast.classList.remove("show"), 2500);
  }

  function errorBox(err) {
    return h("div", { class: "error-box", role: "alert" }, clean(err && err.message ? err.message : String(err)));
  }

  // ---- routing ----

  const sessionPath = (id, eid) => "/s/" + encodeURIComponent(id) + (eid ? "#" + eid : "");
  function searchPath(p) {
    const q = new URLSearchParams();
    for (const k of ["query", "working_dir", "role", "file", "since", "until"]) if (p[k]) q.set(k, p[k]);
    return "/search?" + q.toString();
  }

  function go(path, replace) {
    src.navigate(path, replace);
    route(src.route());
  }

  function route(r) {
    const prev = st.route;
    st.route = r;
    document.body.dataset.view = r.view;
    if (r.view === "session") {
      if (prev && prev.view === "session" && prev.id === r.id && st.session) {
        if (r.eid) reveal(r.eid);
        return;
      }
      openSession(r.id, r.eid);
    } else if (r.view === "search") {
      closeSession();
      runSearch(r.params);
    } else {
      closeSession();
      ui.main.replaceChildren(h("div", { class: "empty" }, h("p", null, "Pick a session, or search them all."),
        h("p", { class: "keys" }, "Keys: ", h("kbd", null, "j"), " ", h("kbd", null, "k"), " move · ", h("kbd", null, "Enter"), " open · ",
          h("kbd", null, "/"), " search · ", h("kbd", null, "Esc"), " back")));
      setCurrent(ui.sessions, activeRowIndex());
    }
    markActive();
  }

  // ---- session list ----

  async function loadList(reset) {
    if (!reset && (!st.list || !st.list.cursor || st.list.busy)) return;
    const filters = { working_dir: ui.dir.value.trim(), query: ui.filter.value.trim() };
    const seq = (loadList.seq = (loadList.seq || 0) + 1);
    if (reset) st.list = { cursor: "", items: [], busy: false, filters };
    st.list.busy = true;
    ui.more.disabled = true;
    try {
      const res = await src.listSessions(Object.assign({ cursor: st.list.cursor }, st.list.filters));
      if (seq !== loadList.seq) return; // a newer filter won
      if (reset) ui.sessions.replaceChildren();
      for (const s of res.sessions) {
        st.list.items.push(s);
        ui.sessions.append(SM.renderSessionRow(s, sessionPath(s.session_id)));
      }
      if (reset && !res.sessions.length) ui.sessions.append(h("li", { class: "none" }, "No sessions" + (filters.working_dir || filters.query ? " match these filters." : " yet.")));
      st.list.cursor = res.next_cursor;
      ui.more.hidden = !res.next_cursor;
      const dirs = new Set(st.list.items.map((s) => s.working_dir).filter(Boolean));
      ui.dirs.replaceChildren(...[...dirs].slice(0, 200).map((d) => h("option", { value: d })));
      markActive();
      return res.sessions.length > 0;
    } catch (err) {
      ui.sessions.replaceChildren(h("li", null, errorBox(err)));
    } finally {
      if (seq === loadList.seq) {
        st.list.busy = false;
        ui.more.disabled = false;
      }
    }
  }

  function markActive() {
    const id = st.route && st.route.view === "session" ? st.route.id : null;
    for (const li of ui.sessions.children) li.classList.toggle("active", li.dataset.id === id);
  }
  const activeRowIndex = () => [...ui.sessions.children].findIndex((li) => li.classList.contains("active"));

  // ---- a session ----

  function closeSession() {
    if (st.session && st.session.stop) st.session.stop();
    st.session = null;
    ui.live.hidden = true;
  }

  // A session row under the pointer or the keyboard's selection starts loading its newest
  // page, so the click finds it on its way; a prefetched page older than a few seconds is
  // not used (the live stream would bring what it missed, but a fresh one is as quick).
  let prefetched = null;
  function prefetch(id) {
    if (!src.caps.prefetch || !id || (prefetched && prefetched.id === id && performance.now() - prefetched.at < 3000)) return;
    const p = src.openSession(id, {});
    p.catch(() => {}); // a failure is reported by the click's own request
    prefetched = { id, at: performance.now(), p };
  }
  function takePrefetch(id, eid) {
    const pf = prefetched;
    prefetched = null;
    return pf && !eid && pf.id === id && performance.now() - pf.at < 3000 ? pf.p : null;
  }

  async function openSession(id, eid) {
    closeSession();
    const t0 = performance.now();
    const s = (st.session = { id, rendered: new Set(), toolNames: new Map(), before: null, after: null, meta: null });
    ui.main.replaceChildren(h("div", { class: "loading" }, "Loading…"));
    let page;
    try {
      page = await (takePrefetch(id, eid) || src.openSession(id, { around: eid }));
    } catch (err) {
      if (st.session === s) ui.main.replaceChildren(errorBox(err));
      return;
    }
    if (st.session !== s) return;
    s.meta = page.session;
    s.head = h("header", { class: "session-head" });
    s.top = h("button", { class: "older", type: "button" }, "Load older");
    s.bottom = h("button", { class: "newer", type: "button" }, "Load newer");
    s.timeline = h("div", { class: "timeline", role: "feed", "aria-label": "Messages" });
    s.pill = h("button", { class: "pill", type: "button", hidden: true }, "New messages ↓");
    s.pill.addEventListener("click", () => jumpToLatest(s));
    s.top.addEventListener("click", () => more(s, "before"));
    s.bottom.addEventListener("click", () => more(s, "after"));
    ui.main.replaceChildren(h("section", { class: "session" }, s.head, s.top, s.timeline, s.bottom, s.pill));
    renderHead(s);
    addEntries(s, page.entries, "after");
    setCursors(s, page);
    observe(s.top, () => more(s, "before"));
    observe(s.bottom, () => more(s, "after"));
    if (eid) reveal(eid, true);
    else if (src.caps.openAtEnd) ui.main.scrollTop = ui.main.scrollHeight;
    else ui.main.scrollTop = 0;
    // For the tests' first-screen measurement: when the frame with the page in it is drawn.
    requestAnimationFrame(() => {
      document.body.dataset.firstScreenAt = String(performance.now());
      document.body.dataset.firstScreenMs = (performance.now() - t0).toFixed(1);
    });
    document.body.dataset.session = id;
    st.cur = -1;
    if (src.caps.live) startLive(s);
  }

  function setCursors(s, page) {
    if ("before" in page) s.before = page.before;
    if ("after" in page) s.after = page.after;
    s.top.hidden = !s.before;
    s.bottom.hidden = !s.after;
  }

  // renderHead draws the session's header: its title and facts (headFacts), and the actions.
  function renderHead(s) {
    const actions = h("div", { class: "actions" });
    if (src.caps.export) actions.append(h("a", { class: "button", href: src.exportURL(s.id), download: s.id + ".jsonl" }, "Export JSONL"));
    actions.append(h("button", { type: "button", onclick: () => copy(resumeCommand(s.id), "Command copied") }, "Copy resume command"),
      h("button", { type: "button", onclick: () => copy(JSON.stringify({ name: "session_resume", arguments: { session_id: s.id } }), "Tool call copied") }, "Copy tool call"));
    if (src.caps.delete) actions.append(h("button", { type: "button", class: "danger", onclick: () => confirmDelete(s) }, "Delete…"));
    s.head.replaceChildren(h("button", { class: "back", type: "button", onclick: () => go("/") }, "← Sessions"), ...headFacts(s), actions);
  }

  // refreshHead redraws what the header derives from s.meta after a live update. Only the
  // title and facts are replaced: the actions stay, so a focused button keeps its focus.
  function refreshHead(s) {
    const [title, facts] = headFacts(s);
    s.head.querySelector(":scope > h1").replaceWith(title);
    s.head.querySelector(":scope > dl.meta").replaceWith(facts);
  }

  // headFacts returns the header's title and its list of facts, both from s.meta.
  function headFacts(s) {
    const m = s.meta || { session_id: s.id };
    const facts = [];
    if (m.message_count != null) facts.push(plural(m.message_count, "message", "messages"));
    if (m.compactions) facts.push(plural(m.compactions, "compaction", "compactions"));
    if (m.context_tokens) facts.push(fmtTokens(m.context_tokens) + " context tokens");
    const model = [m.model, m.provider].filter(Boolean).map(clean).join(" · ");
    const updated = SM.timeEl(m.updated_at, "updated");
    return [h("h1", null, sessionTitle(m)),
      h("dl", { class: "meta" },
        h("dt", null, "Session"), h("dd", null, h("code", null, clean(m.session_id || s.id))),
        m.working_dir ? [h("dt", null, "Directory"), h("dd", null, h("code", null, clean(m.working_dir)))] : null,
        model ? [h("dt", null, "Model"), h("dd", null, model)] : null,
        updated ? [h("dt", null, "Updated"), h("dd", null, updated, " (created ", SM.timeEl(m.created_at, "created"), ")")] : null,
        facts.length ? [h("dt", null, "Size"), h("dd", { class: "size" }, facts.join(" · "))] : null,
        m.parent_session_id ? [h("dt", null, "Fork of"), h("dd", null, h("a", { href: sessionPath(m.parent_session_id), "data-nav": "" }, clean(m.parent_session_id)))] : null)];
  }

  function resumeCommand(id) {
    let m = /^cc-([0-9a-f-]{36})$/.exec(id);
    if (m) return "claude --resume " + m[1];
    m = /^codex-([0-9a-f-]{36})$/.exec(id);
    if (m) return "codex resume " + m[1];
    return "sessionmem show " + id;
  }

  function copy(text, done) {
    const fallback = () => {
      const box = h("textarea", { readonly: true, rows: 3, "aria-label": "Text to copy" }, text);
      ui.dialog.replaceChildren(h("p", null, "Copy this:"), box,
        h("div", { class: "buttons" }, h("button", { type: "button", onclick: () => ui.dialog.close("ok") }, "Done")));
      ui.dialog.onclose = null;
      ui.dialog.showModal();
      box.select();
    };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(() => toast(done), fallback);
    else fallback();
  }

  function confirmDelete(s) {
    const m = s.meta || {};
    // Buttons, not a method=dialog form: an MCP host's sandbox may forbid form submission.
    ui.dialog.replaceChildren(
      h("h2", null, "Delete this session?"),
      h("p", null, "“" + sessionTitle(m.session_id ? m : { session_id: s.id }) + "”" + (m.message_count != null ? ", " + plural(m.message_count, "message", "messages") : "") + ". This cannot be undone; export it first to keep a copy."),
      h("div", { class: "buttons" },
        h("button", { type: "button", autofocus: true, onclick: () => ui.dialog.close("cancel") }, "Cancel"),
        h("button", { type: "button", class: "danger", onclick: () => ui.dialog.close("delete") }, "Delete")));
    ui.dialog.onclose = async () => {
      if (ui.dialog.returnValue !== "delete") return;
      try {
        await src.deleteSession(s.id);
        toast("Session deleted");
        const row = [...ui.sessions.children].find((li) => li.dataset.id === s.id);
        if (row) row.remove();
        go("/");
      } catch (err) {
        toast("Delete failed: " + clean(err.message || err));
      }
    };
    ui.dialog.returnValue = "";
    ui.dialog.showModal();
  }

  // addEntries renders entries at the end (where "after") or the start of the timeline,
  // skipping those already shown.
  function addEntries(s, entries, where) {
    const frag = document.createDocumentFragment();
    for (const e of entries) {
      if (e.entry_id && s.rendered.has(e.entry_id)) continue;
      if (e.entry_id) s.rendered.add(e.entry_id);
      frag.append(SM.renderEntry(e, { toolNames: s.toolNames, onAll: (en) => showWhole(s, en) }));
    }
    if (where === "after") s.timeline.append(frag);
    else s.timeline.prepend(frag);
  }

  async function showWhole(s, e) {
    try {
      const whole = await src.entry(s.id, e.entry_id);
      const old = document.getElementById(e.entry_id);
      if (old && st.session === s) {
        const n = SM.renderEntry(whole, { toolNames: s.toolNames, onAll: null });
        for (const d of n.querySelectorAll("details")) d.open = true;
        n.querySelectorAll(".show-all").forEach((b) => b.click());
        old.replaceWith(n);
      }
    } catch (err) {
      toast("Could not load the entry: " + clean(err.message || err));
    }
  }

  async function more(s, dir) {
    const cursor = s[dir];
    if (!cursor || s.busy || st.session !== s) return;
    s.busy = true;
    const btn = dir === "before" ? s.top : s.bottom;
    btn.disabled = true;
    try {
      const page = await src.page(s.id, dir, cursor);
      if (st.session !== s) return;
      if (dir === "before") {
        // Keep what is on screen where it is while older entries go in above it.
        const h0 = ui.main.scrollHeight, y0 = ui.main.scrollTop;
        addEntries(s, page.entries, "before");
        ui.main.scrollTop = y0 + (ui.main.scrollHeight - h0);
        setCursors(s, { before: page.before });
      } else {
        addEntries(s, page.entries, "after");
        setCursors(s, { after: page.after });
      }
      return page.entries.length > 0;
    } catch (err) {
      toast("Could not load more: " + clean(err.message || err));
    } finally {
      s.busy = false;
      btn.disabled = false;
    }
  }

  // reveal scrolls to an entry, loading the page around it when it is not shown (unless
  // that page was just loaded: in an MCP App a message folded into a summary is not there).
  function reveal(eid, loaded) {
    const s = st.session;
    const el = safeID(eid) && document.getElementById(eid);
    if (!el || !s || !s.timeline.contains(el)) {
      if (s && safeID(eid) && !loaded) openSession(s.id, eid);
      else if (loaded) toast("That message is not in this view (a compaction folded it into the summary).");
      return;
    }
    for (const t of s.timeline.querySelectorAll(".target")) t.classList.remove("target");
    el.classList.add("target");
    el.scrollIntoView({ block: "center" });
    const entries = [...s.timeline.children];
    st.cur = entries.indexOf(el);
  }

  function jumpToLatest(s) {
    s.pill.hidden = true;
    if (s.after) openSession(s.id);
    else ui.main.scrollTop = ui.main.scrollHeight;
  }

  function startLive(s) {
    ui.live.hidden = false;
    const last = s.after ? null : lastEntryID(s);
    s.stop = src.live(s.id, last, {
      entries(list, meta) {
        if (st.session !== s) return;
        if (meta) {
          s.meta = meta;
          refreshHead(s);
        }
        if (!list.length) return;
        if (s.after) {
          s.pill.hidden = false; // the newest entries are not loaded: offer to jump there
          return;
        }
        const near = ui.main.scrollHeight - ui.main.scrollTop - ui.main.clientHeight < 120;
        addEntries(s, list, "after");
        if (near) ui.main.scrollTop = ui.main.scrollHeight;
        else s.pill.hidden = false;
      },
      reset() {
        if (st.session === s) openSession(s.id);
      },
      deleted() {
        if (st.session !== s) return;
        ui.live.hidden = true;
        s.head.append(h("div", { class: "error-box", role: "alert" }, "This session was deleted."));
      },
    });
  }

  function lastEntryID(s) {
    const kids = s.timeline.children;
    for (let i = kids.length - 1; i >= 0; i--) if (kids[i].id) return kids[i].id;
    return "";
  }

  // ---- search ----

  async function runSearch(params) {
    ui.q.value = params.query || "";
    const form = searchForm(params);
    const results = h("ol", { class: "hits", "aria-label": "Search results" });
    const moreBtn = h("button", { class: "more", type: "button", hidden: true }, "More results");
    const status = h("p", { class: "status" });
    ui.main.replaceChildren(h("section", { class: "search" }, h("h1", null, "Search"), form, status, results, moreBtn));
    ui.main.scrollTop = 0;
    st.cur = -1;
    const srch = (st.search = { params, cursor: "" });
    if (!params.query && !params.file) {
      status.textContent = "Words in any order, \"exact phrases\", prefix*, -excluded; identifiers and paths are found whole and by segment.";
      return;
    }
    const load = async () => {
      moreBtn.disabled = true;
      try {
        const res = await src.search(Object.assign({}, params, { cursor: srch.cursor }));
        if (st.search !== srch) return;
        for (const m of res.matches) {
          const known = st.list && st.list.items.find((s) => s.session_id === m.session_id);
          results.append(SM.renderHit(m, sessionPath(m.session_id, safeID(m.entry_id)), params.query, known ? sessionTitle(known) : ""));
        }
        srch.cursor = res.next_cursor;
        moreBtn.hidden = !res.next_cursor;
        status.textContent = results.children.length ? plural(results.children.length, "match", "matches") + (res.next_cursor ? " so far" : "") : "No matches.";
        return res.matches.length > 0;
      } catch (err) {
        status.replaceChildren(errorBox(err));
      } finally {
        moreBtn.disabled = false;
      }
    };
    moreBtn.addEventListener("click", load);
    observe(moreBtn, load);
    await load();
  }

  function searchForm(p) {
    const field = (name, label, input) => h("label", null, h("span", null, label), input);
    const inputs = {
      working_dir: h("input", { type: "text", name: "working_dir", value: p.working_dir || "", list: "dirs", placeholder: "any" }),
      role: h("select", { name: "role" }, ["", "user", "assistant", "tool_result", "system"].map((r) =>
        h("option", { value: r, selected: r === (p.role || "") }, r ? r.replace("_", " ") : "any"))),
      file: h("input", { type: "text", name: "file", value: p.file || "", placeholder: "path/to/file.go" }),
      since: h("input", { type: "date", name: "since", value: (p.since || "").slice(0, 10) }),
      until: h("input", { type: "date", name: "until", value: (p.until || "").slice(0, 10) }),
    };
    const submit = () => {
      const np = { query: ui.q.value.trim() };
      for (const k in inputs) if (inputs[k].value) np[k] = inputs[k].value;
      // Dates are whole local days; the API takes RFC 3339 instants.
      if (np.since) np.since = new Date(np.since + "T00:00:00").toISOString();
      if (np.until) np.until = new Date(np.until + "T23:59:59.999").toISOString();
      go(searchPath(np));
    };
    const form = h("div", { class: "search-filters", role: "group", "aria-label": "Search filters" },
      field("working_dir", "Project", inputs.working_dir), field("role", "Role", inputs.role), field("file", "File", inputs.file),
      field("since", "Since", inputs.since), field("until", "Until", inputs.until), h("button", { type: "button", onclick: submit }, "Search"));
    for (const k in inputs) onEnter(inputs[k], submit);
    return form;
  }

  // ---- keyboard ----

  // navItems are what j and k move through: the open session's entries, the search hits,
  // or the session list.
  function navItems() {
    if (st.session && st.session.timeline) return st.session.timeline;
    const hits = ui.main.querySelector(".hits");
    return hits || ui.sessions;
  }

  function setCurrent(list, i) {
    const items = [...list.children].filter((n) => !n.classList.contains("none"));
    for (const n of document.querySelectorAll(".current")) n.classList.remove("current");
    if (!items.length || i < 0) {
      st.cur = -1;
      return;
    }
    st.cur = Math.max(0, Math.min(items.length - 1, i));
    const n = items[st.cur];
    n.classList.add("current");
    n.scrollIntoView({ block: "nearest" });
  }

  function onKey(ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const t = ev.target;
    const inField = t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
    if (ev.key === "Escape") {
      if (ui.dialog.open) return; // the dialog closes itself
      if (inField) return t.blur();
      if (st.route && st.route.view !== "list") {
        ev.preventDefault();
        // Back to the list, with the session just left selected.
        const left = st.route.view === "session" ? st.route.id : null;
        go("/");
        const i = [...ui.sessions.children].findIndex((li) => li.dataset.id === left);
        if (i >= 0) setCurrent(ui.sessions, i);
      }
      return;
    }
    if (inField || ui.dialog.open) return;
    if (ev.key === "/") {
      ev.preventDefault();
      ui.q.focus();
      ui.q.select();
    } else if (ev.key === "j" || ev.key === "k") {
      ev.preventDefault();
      const list = navItems();
      const cur = list.querySelector(":scope > .current");
      const items = [...list.children].filter((n) => !n.classList.contains("none"));
      const at = cur ? items.indexOf(cur) : ev.key === "j" ? -1 : items.length;
      setCurrent(list, at + (ev.key === "j" ? 1 : -1));
      const cur2 = list === ui.sessions && list.querySelector(":scope > .current");
      if (cur2) prefetch(cur2.dataset.id);
    } else if (ev.key === "Enter") {
      const cur = navItems().querySelector(":scope > .current");
      if (!cur) return;
      ev.preventDefault();
      const a = cur.querySelector("a[data-nav]");
      if (a && !cur.classList.contains("entry")) return go(a.getAttribute("href"));
      // On an entry: open or close its collapsed parts.
      const ds = cur.querySelectorAll("details");
      const open = [...ds].some((d) => !d.open);
      ds.forEach((d) => (d.open = open));
    }
  }

  // ---- start ----

  SM.start = function (source) {
    src = source;
    buildShell(document.getElementById("app"));
    document.addEventListener("keydown", onKey);
    document.addEventListener("click", (ev) => {
      const a = ev.target.closest && ev.target.closest("a[data-nav]");
      if (!a || ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.altKey) return;
      ev.preventDefault();
      go(a.getAttribute("href"));
    });
    src.onRoute = route;
    // An MCP App waits for its tool's result, which may already be the list.
    if (!src.caps.deferList) loadList(true);
    route(src.route());
  };
  SM.go = (p) => go(p);
  SM.loadList = () => loadList(true);
  SM.showSessions = (res) => {
    // A tool result that already is a session list (MCP App): show it without asking again.
    st.list = { cursor: res.next_cursor, items: res.sessions.slice(), busy: false, filters: {} };
    ui.sessions.replaceChildren(...res.sessions.map((s) => SM.renderSessionRow(s, sessionPath(s.session_id))));
    ui.more.hidden = !res.next_cursor;
  };
})();
