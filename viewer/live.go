package viewer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sessionmem/sessionmem/memory"
)

// liveBatch is the most entries one live event carries; a burst larger than that arrives
// as several events.
const liveBatch = 200

// liveEntries is the data of an "entries" event: the session's metadata now and the entries
// that followed the page's last one.
type liveEntries struct {
	Session memory.Session `json:"session"`
	Entries []entryView    `json:"entries"`
}

// GET /api/sessions/{id}/events?after=<entry id>: Server-Sent Events while the page is open.
//
// Every PollInterval it asks memory.Service.Get for the session's metadata (one index look-up
// on a local store, one query on PostgreSQL), and only when that changed reads the entries
// after the last one sent (memory.Service.Timeline). That sees what any process wrote, on
// either store, without a notification channel between processes. Events:
//
//	entries  {session, entries}: new entries, oldest first (id: the last one's entry id)
//	session  {session}: metadata changed without new entries (a rename)
//	reset    the page's last entry left the current path (the session branched): reload
//	deleted  the session no longer exists
func (h *Handler) apiEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "streaming is not supported by this connection")
		return
	}
	id := r.PathValue("id")
	after := r.URL.Query().Get("after")
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		after = last // a reconnect continues where the stream stopped
	}
	ctx := r.Context()
	if _, err := h.svc.Get(ctx, id); err != nil {
		h.fail(w, r, err)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// Tell the browser how soon to reconnect after a dropped connection.
	fmt.Fprint(w, "retry: 1000\n\n")
	fl.Flush()

	send := func(event, eventID string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			h.log.Error("viewer live event", "err", err)
			return false
		}
		if eventID != "" {
			fmt.Fprintf(w, "id: %s\n", eventID)
		}
		_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		fl.Flush()
		return err == nil
	}
	tick := time.NewTicker(h.opts.PollInterval)
	defer tick.Stop()
	var seen memory.Session
	lastWrite := time.Now()
	for {
		s, err := h.svc.Get(ctx, id)
		switch {
		case errors.Is(err, memory.ErrNotFound):
			send("deleted", "", struct{}{})
			return
		case err != nil:
			// A store that is briefly unavailable: try again at the next tick. h.polls keeps
			// the log to a few lines however long it lasts and however many streams see it.
			if ctx.Err() == nil {
				h.polls.failed(id, err)
			}
		default:
			h.polls.ok()
			if changed(seen, s) {
				var ok bool
				if after, ok = h.sendNew(ctx, send, s, id, after); !ok {
					return
				}
				seen = s
				lastWrite = time.Now()
			}
		}
		if time.Since(lastWrite) >= h.opts.Heartbeat {
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			fl.Flush()
			lastWrite = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-h.opts.Done:
			return
		case <-tick.C:
		}
	}
}

// changed reports whether the session's metadata moved since the last poll.
func changed(a, b memory.Session) bool {
	return !a.UpdatedAt.Equal(b.UpdatedAt) || a.MessageCount != b.MessageCount || a.Compactions != b.Compactions ||
		a.Name != b.Name || a.ID == ""
}

// sendNew sends the entries after `after` (all of them, in batches) and returns the new last
// entry id; false ends the stream (the client went away, or the page must reload).
func (h *Handler) sendNew(ctx context.Context, send func(string, string, any) bool, s memory.Session, id, after string) (string, bool) {
	sent := false
	for {
		req := memory.TimelineRequest{SessionID: id, After: after, Limit: liveBatch}
		// after "" (the page showed an empty session): the newest page is new.
		tl, err := h.svc.Timeline(ctx, req)
		switch {
		case errors.Is(err, memory.ErrNotFound) && after != "":
			if _, gerr := h.svc.Get(ctx, id); errors.Is(gerr, memory.ErrNotFound) {
				send("deleted", "", struct{}{})
			} else {
				send("reset", "", struct{}{})
			}
			return after, false
		case err != nil:
			return after, ctx.Err() == nil
		}
		if len(tl.Entries) == 0 {
			if !sent {
				return after, send("session", "", liveEntries{Session: s, Entries: []entryView{}})
			}
			return after, true
		}
		after = tl.Entries[len(tl.Entries)-1].EntryID
		if !send("entries", after, liveEntries{Session: s, Entries: presentEntries(tl.Entries, false)}) {
			return after, false
		}
		sent = true
		if !tl.HasAfter {
			return after, true
		}
	}
}
