package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// openSessionFiles counts this process's descriptors open on files under dir/sessions, and how
// many of them name deleted files. ok is false where /proc/self/fd does not exist.
func openSessionFiles(t *testing.T, dir string) (open, deleted int, ok bool) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil || runtime.GOOS == "windows" { // under Wine the path names Wine's own descriptors

		return 0, 0, false
	}
	prefix := filepath.Join(dir, "sessions") + "/"
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || !strings.HasPrefix(target, prefix) {
			continue
		}
		open++
		if strings.HasSuffix(target, " (deleted)") {
			deleted++
		}
	}
	return open, deleted, true
}

// tagsOf reads a session and checks that its seqs run 1..n; it returns the "tag" fields.
func tagsOf(ctx context.Context, r *Reader) ([]string, error) {
	var tags []string
	for rec, err := range r.Records(1) {
		if err != nil {
			return nil, err
		}
		if rec.Seq != uint64(len(tags))+1 {
			return nil, fmt.Errorf("seq %d at position %d", rec.Seq, len(tags)+1)
		}
		var v struct{ Tag string }
		if err := json.Unmarshal(rec.Data, &v); err != nil {
			return nil, err
		}
		tags = append(tags, v.Tag)
	}
	if r.LastSeq() != uint64(len(tags)) {
		return nil, fmt.Errorf("LastSeq %d, %d records", r.LastSeq(), len(tags))
	}
	return tags, ctx.Err()
}

// TestConcurrentCalls runs many goroutines doing Update and View on the same and different
// sessions, through one Store and through two on one directory (as two processes). Every call
// takes its own flock, so both check the flock exclusion. An Update's callback must never
// overlap any other callback on its session; every acknowledged record must be stored exactly
// once.
func TestConcurrentCalls(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stores int
	}{
		{"one store", 1},
		{"two stores", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := memTempDir(t)
			var stores []*Store
			for range tc.stores {
				stores = append(stores, mustOpen(t, dir, Options{SealRecords: 5, MaxCachedSessions: 2}))
			}
			ids := []string{"a", "b", "c"}
			for _, id := range ids {
				mustCreate(t, stores[0], id)
			}
			active := map[string]*atomic.Int64{}
			for _, id := range ids {
				active[id] = &atomic.Int64{}
			}
			const goroutines, rounds = 8, 24
			var mu sync.Mutex
			acked := map[string][]string{}
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					ctx := t.Context()
					s := stores[g%len(stores)]
					seen := map[string]int{}
					for i := range rounds {
						id := ids[(g+i)%len(ids)]
						tag := fmt.Sprintf("g%d-%d", g, i)
						err := s.updateW(ctx, id, func(w *Writer) error {
							if n := active[id].Add(1000); n != 1000 {
								return fmt.Errorf("update on %s overlaps other callbacks (%d)", id, n)
							}
							defer active[id].Add(-1000)
							_, err := w.Append([]storage.Record{{Kind: "message", Data: []byte(`{"tag":"` + tag + `"}`)}}, storage.Meta{})
							return err
						})
						if err != nil {
							t.Errorf("update %s: %v", id, err)
							return
						}
						mu.Lock()
						acked[id] = append(acked[id], tag)
						mu.Unlock()
						if err := viewOwnWrite(ctx, s, id, tag, active[id], seen, i%4 == 0); err != nil {
							t.Errorf("view %s: %v", id, err)
							return
						}
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			if total := checkAllAcked(t, stores, ids, acked); total != goroutines*rounds {
				t.Fatalf("%d records acknowledged, want %d", total, goroutines*rounds)
			}
		})
	}
}

// viewOwnWrite checks a View of id after an Update acknowledged tag: it overlaps no Update
// (active counts 1 per View, 1000 per Update), it sees tag and no fewer records than the
// last View of this goroutine (seen), and with nested a View inside it sees the same.
func viewOwnWrite(ctx context.Context, s *Store, id, tag string, active *atomic.Int64, seen map[string]int, nested bool) error {
	return s.viewR(ctx, id, func(r *Reader) error {
		if n := active.Add(1); n >= 1000 {
			return fmt.Errorf("view on %s overlaps an update", id)
		}
		defer active.Add(-1)
		tags, err := tagsOf(ctx, r)
		if err != nil {
			return err
		}
		if len(tags) < seen[id] || !contains(tags, tag) {
			return fmt.Errorf("view of %s: %d records after %d, own %s missing", id, len(tags), seen[id], tag)
		}
		seen[id] = len(tags)
		if !nested {
			return nil
		}
		// A View nested in a View of the same session shares the lock.
		return s.viewR(ctx, id, func(r2 *Reader) error {
			if r2.LastSeq() != r.LastSeq() {
				return fmt.Errorf("nested view of %s: LastSeq %d, outer %d", id, r2.LastSeq(), r.LastSeq())
			}
			return nil
		})
	})
}

// checkAllAcked checks that every store reads each session's acknowledged tags exactly, and
// returns how many there are.
func checkAllAcked(t *testing.T, stores []*Store, ids []string, acked map[string][]string) int {
	t.Helper()
	total := 0
	for _, id := range ids {
		for _, s := range stores {
			err := s.viewR(t.Context(), id, func(r *Reader) error {
				tags, err := tagsOf(t.Context(), r)
				if err != nil {
					return err
				}
				if len(tags) != len(acked[id]) {
					return fmt.Errorf("%d records, %d acknowledged", len(tags), len(acked[id]))
				}
				for _, tag := range acked[id] {
					if !contains(tags, tag) {
						return fmt.Errorf("acknowledged %s missing", tag)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("final view of %s: %v", id, err)
			}
		}
		total += len(acked[id])
	}
	return total
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestLockWaitHonoursContext: a call waiting for the lock gives up when its context ends,
// whether the holder is in this Store (in-process gate) or another (flock), and leaves the
// lock working for everyone afterwards.
func TestLockWaitHonoursContext(t *testing.T) {
	dir := memTempDir(t)
	s1 := mustOpen(t, dir, Options{})
	s2 := mustOpen(t, dir, Options{})
	mustCreate(t, s1, "a")
	for _, tc := range []struct {
		name      string
		waiter    *Store
		exclusive bool
	}{
		{"same store view", s1, false},
		{"same store update", s1, true},
		{"other store view", s2, false},
		{"other store update", s2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holding, release := make(chan struct{}), make(chan struct{})
			done := make(chan error, 1)
			go func() {
				done <- s1.updateW(t.Context(), "a", func(w *Writer) error {
					close(holding)
					<-release
					_, err := w.Append([]storage.Record{{Data: []byte(`{"tag":"holder"}`)}}, storage.Meta{})
					return err
				})
			}()
			<-holding
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			var err error
			if tc.exclusive {
				err = tc.waiter.updateW(ctx, "a", func(*Writer) error { return nil })
			} else {
				err = tc.waiter.viewR(ctx, "a", func(*Reader) error { return nil })
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("waiting call: err %v, want %v", err, context.DeadlineExceeded)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatalf("holder: %v", err)
			}
			// Both stores still exclude each other (a late flock or unlock from the abandoned
			// wait would break this).
			var inside atomic.Int32
			var wg sync.WaitGroup
			for _, s := range []*Store{s1, s2, s1, s2} {
				wg.Go(func() {
					err := s.updateW(t.Context(), "a", func(w *Writer) error {
						if inside.Add(1) != 1 {
							return errors.New("two updates at once")
						}
						defer inside.Add(-1)
						time.Sleep(2 * time.Millisecond)
						_, err := w.Append([]storage.Record{{Data: []byte(`{"tag":"after"}`)}}, storage.Meta{})
						return err
					})
					if err != nil {
						t.Errorf("update after cancel: %v", err)
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestDeleteRecreateWithCachedFiles deletes and recreates a session while another Store (a
// stand-in for another process: its own descriptors and locks) has a view of its files cached.
func TestDeleteRecreateWithCachedFiles(t *testing.T) {
	dir := memTempDir(t)
	r := &recreateRig{t: t, ctx: t.Context(), dir: dir,
		// firstInTail: the fourth life replaces the tail of a session saved once.
		s1: mustOpen(t, dir, Options{SealRecords: 2, firstInTail: true}), s2: mustOpen(t, dir, Options{SealRecords: 2, firstInTail: true})}
	r.firstLife()
	r.secondLife()
	r.thirdLife()
	r.fourthLife()
}

// recreateRig is TestDeleteRecreateWithCachedFiles' two Stores on one directory and its
// session "x".
type recreateRig struct {
	t      *testing.T
	ctx    context.Context
	dir    string
	s1, s2 *Store
}

// appendTag appends a record tagged tag to x through s and returns its seq.
func (r *recreateRig) appendTag(s *Store, tag string) (uint64, error) {
	var seq uint64
	err := s.updateW(r.ctx, "x", func(w *Writer) error {
		out, err := w.Append([]storage.Record{{Data: []byte(`{"tag":"` + tag + `"}`)}}, storage.Meta{})
		if err == nil {
			seq = out[0].Seq
		}
		return err
	})
	return seq, err
}

// view returns x's header and tags as s reads them.
func (r *recreateRig) view(s *Store) (storage.Header, []string, error) {
	var h storage.Header
	var tags []string
	err := s.viewR(r.ctx, "x", func(rd *Reader) error {
		h = rd.Header()
		var err error
		tags, err = tagsOf(r.ctx, rd)
		return err
	})
	return h, tags, err
}

// check checks that s reads x with working directory wantDir and the tags want.
func (r *recreateRig) check(step string, s *Store, wantDir string, want ...string) {
	t := r.t
	t.Helper()
	h, tags, err := r.view(s)
	if err != nil {
		t.Fatalf("%s: view: %v", step, err)
	}
	if h.WorkingDir != wantDir || strings.Join(tags, ",") != strings.Join(want, ",") {
		t.Fatalf("%s: header dir %q, records %v; want %q, %v", step, h.WorkingDir, tags, wantDir, want)
	}
}

// firstLife: x written by s1 and read by both; deleted by s2, s1's calls then find nothing
// and no descriptor stays open on its deleted files.
func (r *recreateRig) firstLife() {
	t := r.t
	if err := r.s1.Create(context.Background(), storage.Header{ID: "x", WorkingDir: "/one"}, storage.Meta{}); err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"a", "b", "c"} {
		if _, err := r.appendTag(r.s1, tag); err != nil {
			t.Fatal(err)
		}
	}
	r.check("first life, writer", r.s1, "/one", "a", "b", "c")
	r.check("first life, other store", r.s2, "/one", "a", "b", "c")

	if err := r.s2.Delete(r.ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.view(r.s1); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("view after delete elsewhere: %v, want storage.ErrNotFound", err)
	}
	if _, err := r.appendTag(r.s1, "lost"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("update after delete elsewhere: %v, want storage.ErrNotFound", err)
	}
	if _, deleted, ok := openSessionFiles(t, r.dir); ok && deleted != 0 {
		t.Fatalf("%d descriptors still open on deleted session files", deleted)
	}
}

// secondLife: x created again by s2, then read and written by s1, whose cached view is of
// the deleted files.
func (r *recreateRig) secondLife() {
	t := r.t
	if err := r.s2.Create(context.Background(), storage.Header{ID: "x", WorkingDir: "/two"}, storage.Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.appendTag(r.s2, "d"); err != nil {
		t.Fatal(err)
	}
	// s1's cached view is of the deleted files: it must lock the new lock file, so it waits
	// while s2 holds the session.
	holding, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- r.s2.updateW(r.ctx, "x", func(*Writer) error { close(holding); <-release; return nil })
	}()
	<-holding
	short, cancel := context.WithTimeout(r.ctx, 50*time.Millisecond)
	err := r.s1.viewR(short, "x", func(*Reader) error { return nil })
	cancel()
	close(release)
	if herr := <-held; herr != nil {
		t.Fatal(herr)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("view while the recreated session is held elsewhere: %v, want %v", err, context.DeadlineExceeded)
	}
	r.check("second life, seen by the old cache", r.s1, "/two", "d")
	if seq, err := r.appendTag(r.s1, "e"); err != nil || seq != 2 {
		t.Fatalf("append to the recreated session: seq %d, %v; want 2", seq, err)
	}
	r.check("second life, other store", r.s2, "/two", "d", "e")
}

// thirdLife: the other way round, plus a delete by the store that caches the files itself.
func (r *recreateRig) thirdLife() {
	t := r.t
	if err := r.s1.Delete(r.ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.view(r.s2); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("view after delete: %v, want storage.ErrNotFound", err)
	}
	if err := r.s1.Create(context.Background(), storage.Header{ID: "x", WorkingDir: "/three"}, storage.Meta{}); err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"f", "g", "h"} {
		if _, err := r.appendTag(r.s2, tag); err != nil {
			t.Fatal(err)
		}
	}
	r.check("third life, writer", r.s2, "/three", "f", "g", "h")
	r.check("third life, other store", r.s1, "/three", "f", "g", "h")
}

// fourthLife: a fourth x and its tail file replaced, under the other store's cached view.
func (r *recreateRig) fourthLife() {
	t := r.t
	// Deleted and created again elsewhere with no call of s1 in between, then the tail file
	// replaced (removed; the next writer makes a new one): s1 must drop every cached file.
	if err := r.s1.Delete(r.ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if err := r.s1.Create(context.Background(), storage.Header{ID: "x", WorkingDir: "/four"}, storage.Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.appendTag(r.s1, "i"); err != nil {
		t.Fatal(err)
	}
	r.check("fourth life, old cache", r.s2, "/four", "i")
	if err := os.Remove(filepath.Join(r.dir, "sessions", "x.tail.jsonl")); err != nil {
		t.Fatal(err)
	}
	r.check("tail removed", r.s2, "/four") // record i was only in the tail
	if _, err := r.appendTag(r.s1, "j"); err != nil {
		t.Fatal(err)
	}
	r.check("tail replaced", r.s2, "/four", "j")
	// The view that gave up waiting for s2's lock left its flock call running; it closes its
	// descriptor once that call returns (s2 released long ago, but under load the goroutine
	// may not have run yet).
	abandonedWaits.Wait()
	if _, deleted, ok := openSessionFiles(t, r.dir); ok && deleted != 0 {
		t.Fatalf("%d descriptors still open on deleted session files", deleted)
	}
}

// TestNoDescriptorsBetweenCalls: a call opens a session's files and closes them when it
// returns, so between calls (and after a sweep over many sessions, a nested one included) this
// process holds no descriptor on any session file, deleted or not.
func TestNoDescriptorsBetweenCalls(t *testing.T) {
	dir := memTempDir(t)
	if _, _, ok := openSessionFiles(t, dir); !ok {
		t.Skip("no /proc/self/fd")
	}
	s := mustOpen(t, dir, Options{MaxCachedSessions: 3})
	ids := make([]string, 12)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%02d", i)
		mustCreate(t, s, ids[i])
		appendBatches(t, s, ids[i], [][]storage.Record{{{Data: []byte(`{"tag":"` + ids[i] + `"}`)}}})
	}
	// A session saved once keeps its .zst alone (writeFirst); the outer View's has a tail too.
	appendBatches(t, s, ids[0], [][]storage.Record{{{Data: []byte(`{"tag":"more"}`)}}})
	ctx := t.Context()
	sweep := func() error {
		for _, id := range ids[1:] {
			err := s.viewR(ctx, id, func(r *Reader) error {
				if tags, err := tagsOf(ctx, r); err != nil || len(tags) != 1 || tags[0] != id {
					return fmt.Errorf("%s: records %v, %v", id, tags, err)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	err := s.viewR(ctx, ids[0], func(r *Reader) error {
		if err := sweep(); err != nil {
			return err
		}
		if n, _, _ := openSessionFiles(t, dir); n != 3 {
			return fmt.Errorf("%d session descriptors open inside one View, want 3 (lock, .zst, tail)", n)
		}
		_, err := tagsOf(ctx, r)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := openSessionFiles(t, dir); n != 0 {
		t.Fatalf("%d session descriptors open between calls", n)
	}
	if err := s.Delete(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := openSessionFiles(t, dir); n != 0 {
		t.Fatalf("%d session descriptors open after a delete", n)
	}
}

// TestMultiProcessBetweenCalls: this process keeps appending to and reading a session while a
// child process appends to it (and seals, truncating the tail) between this process's calls;
// the cached view must see every change.
func TestMultiProcessBetweenCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{SealRecords: 8})
	for _, id := range []string{"shared", "c0"} {
		mustCreate(t, s, id)
	}
	ctx := t.Context()
	cmd := helperCmd(ctx, t, "append", dir, "c0", 30)
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var acks []ack
	var last uint64
	for i := 0; ; i++ {
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("helper: %v\n%s", err, out.String())
			}
			for _, l := range strings.Split(out.String(), "\n") {
				if a, ok := parseAck(l); ok {
					acks = append(acks, a)
				}
			}
			checkAcked(t, s, "c0", acks)
			if n := checkAcked(t, s, "shared", acks); n != uint64(len(acks)-countID(acks, "c0")) {
				t.Fatalf("shared: %d records, %d acknowledged", n, len(acks)-countID(acks, "c0"))
			}
			return
		default:
		}
		tag := fmt.Sprintf("parent-%d", i)
		err := s.updateW(ctx, "shared", func(w *Writer) error {
			if w.LastSeq() < last {
				return fmt.Errorf("LastSeq went back from %d to %d", last, w.LastSeq())
			}
			o, err := w.Append([]storage.Record{{Kind: "message", Data: []byte(`{"tag":"` + tag + `"}`)}}, storage.Meta{Name: "shared", Messages: int(w.LastSeq()) + 1})
			if err == nil {
				acks = append(acks, ack{"shared", o[0].Seq, tag})
				last = o[0].Seq
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		err = s.viewR(ctx, "shared", func(r *Reader) error {
			tags, err := tagsOf(ctx, r)
			if err != nil {
				return err
			}
			if uint64(len(tags)) < last || tags[last-1] != tag {
				return fmt.Errorf("%d records, own %s at %d not seen", len(tags), tag, last)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func countID(acks []ack, id string) int {
	n := 0
	for _, a := range acks {
		if a.id == id {
			n++
		}
	}
	return n
}
