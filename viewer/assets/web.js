// web.js: the viewer's data source in a browser tab: the viewer's own JSON API (same origin),
// live updates over Server-Sent Events, and the address bar as the route.
"use strict";

(function () {
  const SM = window.SM;
  const meta = document.querySelector('meta[name="csrf-token"]');
  const csrf = meta ? meta.getAttribute("content") : "";
  const enc = encodeURIComponent;

  async function api(path, opts) {
    const r = await fetch(path, Object.assign({ credentials: "same-origin", headers: { Accept: "application/json" } }, opts));
    let body = null;
    try {
      body = await r.json();
    } catch (e) {
      // not JSON: the status says enough
    }
    if (!r.ok) throw new Error((body && body.error) || r.status + " " + r.statusText);
    return body;
  }

  function qs(p) {
    const q = new URLSearchParams();
    for (const k in p) if (p[k]) q.set(k, p[k]);
    const s = q.toString();
    return s ? "?" + s : "";
  }

  // page turns a timeline answer into the cursors ui.js pages with: the first entry's id to
  // load older ones, the last one's to load newer ones.
  function page(res) {
    const es = res.entries;
    return {
      session: res.session,
      entries: es,
      before: res.has_before && es.length ? es[0].entry_id : null,
      after: res.has_after && es.length ? es[es.length - 1].entry_id : null,
    };
  }

  const timeline = (id) => "/api/sessions/" + enc(id) + "/timeline";

  const source = {
    caps: { live: true, export: true, delete: true, openAtEnd: true, prefetch: true },
    route() {
      const p = location.pathname;
      if (p.startsWith("/s/")) {
        let id = p.slice(3);
        try {
          id = decodeURIComponent(id);
        } catch (e) {
          // leave it as it is; the API will say it is not a session
        }
        return { view: "session", id, eid: location.hash.slice(1) || "" };
      }
      if (p === "/search") return { view: "search", params: Object.fromEntries(new URLSearchParams(location.search)) };
      return { view: "list" };
    },
    navigate(path, replace) {
      if (replace) history.replaceState(null, "", path);
      else history.pushState(null, "", path);
    },
    listSessions: (p) => api("/api/sessions" + qs(p)),
    // The first page is small (a screen and a half), so it draws at once; the rest come in
    // pages of 50 as the reader scrolls.
    openSession: async (id, o) => page(await api(timeline(id) + qs({ around: o.around, limit: 30 }))),
    page: async (id, dir, cursor) => {
      const p = page(await api(timeline(id) + qs({ [dir]: cursor })));
      return dir === "before" ? { entries: p.entries, before: p.before } : { entries: p.entries, after: p.after };
    },
    entry: (id, eid) => api("/api/sessions/" + enc(id) + "/entries/" + enc(eid)),
    search: (p) => api("/api/search" + qs(p)),
    live(id, after, on) {
      const es = new EventSource("/api/sessions/" + enc(id) + "/events" + qs({ after }));
      const data = (ev) => JSON.parse(ev.data);
      es.addEventListener("entries", (ev) => {
        const d = data(ev);
        on.entries(d.entries, d.session);
      });
      es.addEventListener("session", (ev) => on.entries([], data(ev).session));
      es.addEventListener("reset", () => {
        es.close();
        on.reset();
      });
      es.addEventListener("deleted", () => {
        es.close();
        on.deleted();
      });
      return () => es.close();
    },
    exportURL: (id) => "/api/sessions/" + enc(id) + "/export",
    deleteSession: (id) => api("/api/sessions/" + enc(id), { method: "DELETE", headers: { Accept: "application/json", "X-Sessionmem-Csrf": csrf } }),
  };

  window.addEventListener("popstate", () => source.onRoute(source.route()));
  window.addEventListener("hashchange", () => source.onRoute(source.route()));
  SM.start(source);
})();
