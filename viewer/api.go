package viewer

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/transcript"
)

// The JSON API. Every handler is one or two calls into memory.Service (or transcript.Export,
// which reads through it); its answers keep memory's field names, so the page's scripts
// read the same shapes from the API as from the MCP tools.

// intParam reads an optional integer query parameter.
func intParam(w http.ResponseWriter, r *http.Request, name string) (int, bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, true
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%s %q is not a number", name, s))
		return 0, false
	}
	return n, true
}

// GET /api/sessions?working_dir=&query=&cursor=&limit=: memory.List.
func (h *Handler) apiList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := intParam(w, r, "limit")
	if !ok {
		return
	}
	res, err := h.svc.List(r.Context(), memory.ListRequest{WorkingDir: q.Get("working_dir"), Query: q.Get("query"),
		Cursor: q.Get("cursor"), Limit: limit})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// GET /api/sessions/{id}: memory.Get.
func (h *Handler) apiSession(w http.ResponseWriter, r *http.Request) {
	s, err := h.svc.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

// timelinePage is a timeline page with the session's metadata, so opening a session is one
// request.
type timelinePage struct {
	Session   memory.Session `json:"session"`
	Entries   []entryView    `json:"entries"`
	HasBefore bool           `json:"has_before"`
	HasAfter  bool           `json:"has_after"`
	Length    int            `json:"length"`
	Leaf      string         `json:"leaf"`
}

// GET /api/sessions/{id}/timeline?before=&after=&around=&limit=: memory.Get and
// memory.Timeline.
func (h *Handler) apiTimeline(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := intParam(w, r, "limit")
	if !ok {
		return
	}
	id := r.PathValue("id")
	s, err := h.svc.Get(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	tl, err := h.svc.Timeline(r.Context(), memory.TimelineRequest{SessionID: id, Before: q.Get("before"),
		After: q.Get("after"), Around: q.Get("around"), Limit: limit})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, timelinePage{Session: s, Entries: presentEntries(tl.Entries, false),
		HasBefore: tl.HasBefore, HasAfter: tl.HasAfter, Length: tl.Length, Leaf: tl.Leaf})
}

// GET /api/sessions/{id}/entries/{eid}: one entry whole (a page's "show all").
func (h *Handler) apiEntry(w http.ResponseWriter, r *http.Request) {
	tl, err := h.svc.Timeline(r.Context(), memory.TimelineRequest{SessionID: r.PathValue("id"), Around: r.PathValue("eid"),
		Limit: 1})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if len(tl.Entries) != 1 {
		writeError(w, http.StatusNotFound, "entry "+r.PathValue("eid")+" is not on the session's current path")
		return
	}
	writeJSON(w, http.StatusOK, presentEntries(tl.Entries, true)[0])
}

// searchMatch is a memory.SearchMatch with the UTF-16 ranges of its snippet that the query's
// words matched.
type searchMatch struct {
	memory.SearchMatch
	Highlights [][2]int `json:"highlights"`
}

// GET /api/search?query=&working_dir=&session_id=&role=&file=&since=&until=&cursor=&limit=:
// memory.Search and memory.Highlights.
func (h *Handler) apiSearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := intParam(w, r, "limit")
	if !ok {
		return
	}
	req := memory.SearchRequest{Query: q.Get("query"), WorkingDir: q.Get("working_dir"), SessionID: q.Get("session_id"),
		Role: q.Get("role"), File: q.Get("file"), Since: q.Get("since"), Until: q.Get("until"), Cursor: q.Get("cursor"), Limit: limit}
	res, err := h.svc.Search(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := struct {
		Matches    []searchMatch `json:"matches"`
		NextCursor string        `json:"next_cursor"`
	}{Matches: make([]searchMatch, 0, len(res.Matches)), NextCursor: res.NextCursor}
	for _, m := range res.Matches {
		out.Matches = append(out.Matches, searchMatch{SearchMatch: m,
			Highlights: utf16Spans(m.Snippet, memory.Highlights(req.Query, m.Snippet))})
	}
	writeJSON(w, http.StatusOK, out)
}

// GET /api/sessions/{id}/export: the session as sessionmem's export JSONL, as a download.
func (h *Handler) apiExport(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := h.svc.Get(r.Context(), id); err != nil {
		h.fail(w, r, err)
		return
	}
	tw := &trackWriter{w: w, start: func() {
		w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+id+`.jsonl"`)
		w.Header().Set("Cache-Control", "no-store")
	}}
	if err := transcript.Export(r.Context(), h.svc, id, tw); err != nil {
		if !tw.started {
			h.fail(w, r, err)
			return
		}
		// Half a download: the connection is cut, so the browser reports a failed download
		// instead of saving a truncated file as complete.
		h.log.Error("viewer export failed midway", "session", id, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// trackWriter calls start before the first byte, so the headers of a download are set only
// once there is one to send.
type trackWriter struct {
	w       http.ResponseWriter
	start   func()
	started bool
}

func (t *trackWriter) Write(p []byte) (int, error) {
	if !t.started {
		t.started = true
		t.start()
	}
	return t.w.Write(p)
}

// DELETE /api/sessions/{id}: memory.Delete (the CSRF header was checked in allowed).
func (h *Handler) apiDelete(w http.ResponseWriter, r *http.Request) {
	res, err := h.svc.Delete(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.log.Info("viewer deleted a session", "session", r.PathValue("id"))
	writeJSON(w, http.StatusOK, res)
}
