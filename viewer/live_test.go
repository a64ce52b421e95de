package viewer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/memory"
)

// sseEvent is one Server-Sent Event and when it arrived.
type sseEvent struct {
	name, id, data string
	at             time.Time
}

// openEvents opens a session's live stream; events arrive on the channel until the test ends.
func openEvents(t *testing.T, url string) <-chan sseEvent {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := make(chan sseEvent, 100)
	go func() {
		defer resp.Body.Close()
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<24)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					ev.at = time.Now()
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
	}()
	return ch
}

func nextEvent(t *testing.T, ch <-chan sseEvent, within time.Duration) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(within):
		t.Fatalf("no event within %v", within)
	}
	return sseEvent{}
}

// A message saved by another process reaches an open stream within a second, on both stores.
func TestLiveFromAnotherProcess(t *testing.T) {
	for _, sk := range storeKinds {
		t.Run(sk.name, func(t *testing.T) {
			loc := sk.loc(t)
			svc := newService(t, loc)
			r := save(t, svc, memory.SaveRequest{Messages: []memory.Message{text("0", "start")}})
			srv, _ := serve(t, svc, Options{})
			events := openEvents(t, srv.URL+"/api/sessions/"+r.SessionID+"/events?after="+r.LeafID)
			if ev := nextEvent(t, events, 5*time.Second); ev.name != "session" {
				t.Fatalf("first event %+v", ev)
			}
			const n = 10
			sv := startSaver(t, loc, r.SessionID, "p", n, -1)
			var lat []time.Duration
			for range n {
				i, saved := sv.next(t)
				ev := nextEvent(t, events, 5*time.Second)
				var d liveEntries
				if ev.name != "entries" || json.Unmarshal([]byte(ev.data), &d) != nil || len(d.Entries) != 1 {
					t.Fatalf("event %+v", ev)
				}
				want := fmt.Sprintf("live-p-%d", i)
				if got := d.Entries[0].Message.Content[0].Text; got != want || ev.id != d.Entries[0].EntryID || d.Session.MessageCount != i+2 {
					t.Fatalf("entry %q (id %s, %d messages), want %q", got, ev.id, d.Session.MessageCount, want)
				}
				lat = append(lat, ev.at.Sub(saved))
			}
			slices.Sort(lat)
			t.Logf("%s: save acknowledged → event received: median %v, max %v (poll every %v)", sk.name, lat[n/2], lat[n-1], DefaultPollInterval)
			// The bar is a second; the race detector and a machine busier than its cores
			// stretch it (see loadFactor).
			if limit := time.Duration(float64(time.Second) * raceFactor * loadFactor()); lat[n-1] > limit {
				t.Fatalf("a save took %v to appear", lat[n-1])
			}
		})
	}
}

// A stream reports a branch that abandons the page's last entry (reset), and a deletion.
func TestLiveResetAndDeleted(t *testing.T) {
	svc := newService(t, t.TempDir())
	first := save(t, svc, memory.SaveRequest{Messages: []memory.Message{text("0", "a")}})
	second := save(t, svc, memory.SaveRequest{SessionID: first.SessionID, Messages: []memory.Message{text("1", "b")}})
	srv, _ := serve(t, svc, Options{PollInterval: 20 * time.Millisecond})
	url := srv.URL + "/api/sessions/" + first.SessionID + "/events?after=" + second.LeafID
	events := openEvents(t, url)
	nextEvent(t, events, 5*time.Second) // session
	save(t, svc, memory.SaveRequest{SessionID: first.SessionID, ParentID: first.LeafID, Messages: []memory.Message{text("2", "c")}})
	if ev := nextEvent(t, events, 5*time.Second); ev.name != "reset" {
		t.Fatalf("after a branch: %+v", ev)
	}
	events = openEvents(t, srv.URL+"/api/sessions/"+first.SessionID+"/events")
	if ev := nextEvent(t, events, 5*time.Second); ev.name != "entries" || !strings.Contains(ev.data, `"c"`) {
		t.Fatalf("from an empty page: %+v", ev)
	}
	if _, err := svc.Delete(t.Context(), first.SessionID); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events, 5*time.Second); ev.name != "deleted" {
		t.Fatalf("after delete: %+v", ev)
	}
	if code := getJSON(t, srv, "/api/sessions/"+first.SessionID+"/events", nil); code != 404 {
		t.Fatalf("events of a deleted session: %d", code)
	}
}
