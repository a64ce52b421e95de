package memory

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/redact/redacttest"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/local"
)

// openLocal opens a local store on dir, closed when the test ends.
func openLocal(t *testing.T, dir string) *local.Store {
	t.Helper()
	store, err := local.Open(dir, local.Options{Summarize: Summarize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// sessionWith saves turnsWith(n, extra) through s and returns the session's id.
func sessionWith(t *testing.T, s *Service, n int, extra string) string {
	t.Helper()
	return mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: turnsWith(n, extra)}).SessionID
}

// turnsWith returns n turns of about 4,000 characters each, each user message ending with
// extra.
func turnsWith(n int, extra string) []Message {
	var msgs []Message
	for i := range n {
		for _, m := range turn(i, fmt.Sprintf("pkg/file%02d.go", i), 4000) {
			if m.Role == RoleUser {
				m.Content[0].Text += " " + extra
			}
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// TestResumePrefetchServesTheSamePages: a session read through page by page, each page's
// Ahead called as a transport calls it, gets every page after the first from those built ahead, each exactly what building it on request gives (a
// second Service over another store on the same directory, as another process).
func TestResumePrefetchServesTheSamePages(t *testing.T) {
	dir := t.TempDir()
	s := New(openLocal(t, dir), Options{})
	fresh := New(openLocal(t, dir), Options{})
	id := longSession(t, s, 12)
	for _, tc := range []struct {
		name       string
		raw, prune bool
	}{{"decoded", false, false}, {"raw", true, false}, {"pruned", false, true}, {"raw pruned", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.PagesServedAhead()
			req := ResumeRequest{SessionID: id, MaxTokens: 2000, Raw: tc.raw, Prune: tc.prune}
			pages := 0
			for {
				got, err := s.Resume(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				want, err := fresh.Resume(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				if (got.Ahead != nil) != (got.NextCursor != "") {
					t.Fatalf("page %d: Ahead set %v, next_cursor %q", pages+1, got.Ahead != nil, got.NextCursor)
				}
				if got.Ahead != nil {
					got.Ahead() // as the transport does once the page is written
				}
				got.Ahead, want.Ahead = nil, nil
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("page %d differs from one built on request:\n got %+v\nwant %+v", pages+1, got, want)
				}
				pages++
				if got.NextCursor == "" {
					break
				}
				req.Cursor = got.NextCursor
			}
			if pages < 4 {
				t.Fatalf("only %d pages", pages)
			}
			if n := s.PagesServedAhead() - before; n != pages-1 {
				t.Fatalf("%d of the %d pages after the first came from those built ahead", n, pages-1)
			}
		})
	}
}

// TestResumePrefetchAfterChange: when the session changes between two pages (a save here or
// in another process, a compaction, a rewrite by another process's redaction, a delete and a
// new session under the same id) the page built ahead is not served: the next page is what
// the changed session gives.
func TestResumePrefetchAfterChange(t *testing.T) {
	secret := redacttest.Plant(1)[0].Text
	for _, tc := range []struct {
		name    string
		change  func(t *testing.T, s, other *Service, id string)
		removes bool // the change takes the secret out of the stored messages
	}{
		{"save", func(t *testing.T, s, _ *Service, id string) {
			mustSave(t, s, SaveRequest{SessionID: id, Messages: []Message{user("n1", "one more")}})
		}, false},
		{"save by another process", func(t *testing.T, _, other *Service, id string) {
			mustSave(t, other, SaveRequest{SessionID: id, Messages: []Message{user("n1", "one more")}})
		}, false},
		{"compaction", func(t *testing.T, s, _ *Service, id string) {
			if _, err := s.Compact(t.Context(), CompactRequest{SessionID: id, Summarizer: SummarizerExtractive, KeepRecentTokens: 3000}); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"rewrite by another process", func(t *testing.T, _, other *Service, id string) {
			if changed, err := other.RedactStored(t.Context(), id, false); err != nil || !changed {
				t.Fatalf("redact: %v, %v", changed, err)
			}
		}, true},
		{"deleted and created again", func(t *testing.T, _, other *Service, id string) {
			// With the same messages: as many records as before.
			st := other.Store()
			h := storage.Header{}
			if err := st.View(t.Context(), id, func(r storage.Reader) error { h = r.Header(); return nil }); err != nil {
				t.Fatal(err)
			}
			if err := st.Delete(t.Context(), id); err != nil {
				t.Fatal(err)
			}
			h.Nonce, h.Created = "", h.Created.Add(1)
			if err := st.Create(t.Context(), h, storage.Meta{}); err != nil {
				t.Fatal(err)
			}
			mustSave(t, other, SaveRequest{SessionID: id, Messages: turnsWith(12, secret)})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := New(openLocal(t, dir), Options{})
			other := New(openLocal(t, dir), redactOpts(t))
			fresh := New(openLocal(t, dir), Options{})
			id := sessionWith(t, s, 12, secret)
			req := ResumeRequest{SessionID: id, MaxTokens: 2000, Raw: true}
			first, err := s.Resume(t.Context(), req)
			if err != nil || first.Ahead == nil {
				t.Fatalf("first page: %v (next %q)", err, first.NextCursor)
			}
			first.Ahead()
			// The second page is served from those built ahead; the third is built during it.
			req.Cursor = first.NextCursor
			second, err := s.Resume(t.Context(), req)
			if err != nil || second.Ahead == nil || s.PagesServedAhead() != 1 {
				t.Fatalf("second page: %v (next %q, %d built)", err, second.NextCursor, s.PagesServedAhead())
			}
			second.Ahead()
			before := s.PagesServedAhead()
			s.pre.mu.Lock()
			for _, f := range s.pre.pages {
				s.pre.mu.Unlock()
				<-f.done // built from the session as it was
				s.pre.mu.Lock()
			}
			s.pre.mu.Unlock()
			tc.change(t, s, other, id)
			req.Cursor = second.NextCursor
			got, gotErr := s.Resume(t.Context(), req)
			want, wantErr := fresh.Resume(t.Context(), req)
			got.Ahead, want.Ahead = nil, nil
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
				t.Fatalf("page after the change differs from one built on request (%d served ahead, %d before):\n got %.300v, %v\nwant %.300v, %v", s.PagesServedAhead(), before, got, gotErr, want, wantErr)
			}
			if s.PagesServedAhead() != before {
				t.Fatal("the page built before the change was served")
			}
			if tc.removes && bytes.Contains(got.RawPage, []byte(secret)) {
				t.Fatal("the page holds what the rewrite removed")
			}
		})
	}
}

// TestResumePrefetchBounds: at most prefetchMax pages are kept, none for pages larger than
// prefetchMaxTokens, and Close waits for those being built and builds no more.
func TestResumePrefetchBounds(t *testing.T) {
	s := New(openLocal(t, t.TempDir()), Options{})
	var ids []string
	for range prefetchMax + 2 {
		ids = append(ids, longSession(t, s, 4))
	}
	for _, id := range ids {
		page, err := s.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: 1000})
		if err != nil {
			t.Fatal(err)
		}
		page.Ahead()
	}
	s.pre.mu.Lock()
	kept := len(s.pre.pages)
	s.pre.mu.Unlock()
	if kept != prefetchMax {
		t.Fatalf("%d pages kept, want %d", kept, prefetchMax)
	}
	// A page of more than prefetchMaxTokens with a next one: a session of over 4 MB.
	big := longSession(t, s, 150)
	for i := range 2 {
		var msgs []Message
		for j := range 150 {
			msgs = append(msgs, turn(1000*(i+1)+j, "pkg/big.go", 4000)...)
		}
		mustSave(t, s, SaveRequest{SessionID: big, Messages: msgs})
	}
	page, err := s.Resume(t.Context(), ResumeRequest{SessionID: big, MaxTokens: prefetchMaxTokens + 1})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("big page: %v (next %q)", err, page.NextCursor)
	}
	if page.Ahead != nil {
		t.Error("a page over prefetchMaxTokens can be built ahead")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.pre.mu.Lock()
	defer s.pre.mu.Unlock()
	for _, f := range s.pre.pages {
		select {
		case <-f.done:
		default:
			t.Fatal("Close returned while a page was being built")
		}
	}
	n := len(s.pre.pages)
	s.pre.mu.Unlock()
	page, err = s.Resume(context.Background(), ResumeRequest{SessionID: ids[0], MaxTokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	page.Ahead()
	s.pre.mu.Lock()
	if len(s.pre.pages) != n {
		t.Fatal("a page was built ahead after Close")
	}
}

// TestResumePrefetchExpires: a page built ahead that nobody asks for is dropped after its
// time (prefetchTTL), and the call that comes later builds its page itself.
func TestResumePrefetchExpires(t *testing.T) {
	s := New(openLocal(t, t.TempDir()), Options{})
	s.pre.ttl = 50 * time.Millisecond
	id := longSession(t, s, 4)
	page, err := s.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: 1000})
	if err != nil || page.Ahead == nil {
		t.Fatalf("first page: %v (next %q)", err, page.NextCursor)
	}
	page.Ahead()
	kept := func() int {
		s.pre.mu.Lock()
		defer s.pre.mu.Unlock()
		return len(s.pre.pages)
	}
	if kept() != 1 {
		t.Fatalf("%d pages kept after Ahead", kept())
	}
	for deadline := time.Now().Add(10 * time.Second); kept() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the page built ahead was still kept 10 s after its time")
		}
	}
	if _, err := s.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: 1000, Cursor: page.NextCursor}); err != nil {
		t.Fatal(err)
	}
	if n := s.PagesServedAhead(); n != 0 {
		t.Fatalf("%d pages served from those built ahead after they expired", n)
	}
}

// TestResumePrefetchRacesSaves pages through a session while other goroutines save to it:
// every page is whole (no error but a stale cursor, which restarts the reading).
func TestResumePrefetchRacesSaves(t *testing.T) {
	s := New(openLocal(t, t.TempDir()), Options{})
	id := longSession(t, s, 8)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Save(context.Background(), SaveRequest{SessionID: id, Messages: []Message{user(fmt.Sprintf("r%d", i), "more")}}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	req := ResumeRequest{SessionID: id, MaxTokens: 2000, Raw: true}
	for range 200 {
		page, err := s.Resume(t.Context(), req)
		switch {
		case err != nil && strings.Contains(err.Error(), "cursor is stale"):
			req.Cursor = ""
			continue
		case err != nil:
			t.Fatal(err)
		case len(page.RawMessages) == 0:
			t.Fatal("an empty page")
		case page.Ahead != nil:
			page.Ahead()
		}
		req.Cursor = page.NextCursor
	}
	close(stop)
	wg.Wait()
}
