package memory

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/local"
)

// derived lists what apply derives, for comparing states: everything but the lock, the
// caches built on demand (path, comps), the per-process window and the snapshot bookkeeping.
func derived(st *state) map[string]any {
	return map[string]any{
		"header": st.header, "lastSeq": st.lastSeq, "nodes": st.nodes, "ids": st.ids, "client": st.client,
		"leaf": st.leaf, "leafIdx": st.leafIdx, "linear": st.linear, "messages": st.messages,
		"compactions": st.compactions, "preview": st.preview, "name": st.name, "model": st.model,
		"provider": st.provider, "checkpoint": st.checkpoint, "updated": st.updated.String(), "pinnedCost": st.pinnedCost,
		"logBytes": st.logBytes,
	}
}

// TestDerivedCoversState keeps derived (and adopt) in step with the fields of state.
func TestDerivedCoversState(t *testing.T) {
	notDerived := map[string]bool{"mu": true, "path": true, "comps": true, "window": true, "gen": true, "snapSeq": true}
	have := derived(newState(storage.Header{}))
	for f := range reflect.TypeFor[state]().Fields() {
		if _, ok := have[f.Name]; !ok && !notDerived[f.Name] {
			t.Errorf("state.%s is neither compared by derived nor listed as not derived: add it to both, to adopt, and to the snapshot encoding", f.Name)
		}
	}
}

// pinnedSession saves a session with pinned messages, a rename and a model among plain turns.
func pinnedSession(t *testing.T, s *Service, turns int) string {
	t.Helper()
	p := user("p0", "Always run the tests with -race. 日本語 <tag> & more")
	p.Pinned = true
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, Name: "pinned", Model: "m1", Messages: []Message{p}})
	for i := range turns {
		req := SaveRequest{SessionID: res.SessionID, Messages: turn(i, fmt.Sprintf("f%d.go", i%7), 20000)}
		if i == turns/2 {
			q := user(fmt.Sprintf("pin%d", i), "and keep the changelog current")
			q.Pinned = true
			req.Messages = append(req.Messages, q)
			req.Name, req.Provider = "renamed", "prov"
		}
		mustSave(t, s, req)
	}
	return res.SessionID
}

// TestSnapshotRoundTrip: a state restored from a snapshot taken after any record, then
// caught up with the records after it, equals the state built from the whole log; and it
// encodes to the same bytes.
func TestSnapshotRoundTrip(t *testing.T) {
	seeds, steps := 4, 60
	if raceEnabled {
		seeds, steps = 2, 30
	}
	check := func(t *testing.T, s *Service, id string) {
		var recs []storage.Record
		for rec, err := range recordsOf(t, s, id) {
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rec)
		}
		h := s.cached(t, id).header
		full := newState(h)
		for _, rec := range recs {
			if err := full.apply(rec); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range []int{0, 1, 2, len(recs) / 3, len(recs) / 2, len(recs) - 1, len(recs)} {
			prefix := newState(h)
			for _, rec := range recs[:k] {
				if err := prefix.apply(rec); err != nil {
					t.Fatal(err)
				}
			}
			enc := prefix.encodeSnapshot()
			snap, err := decodeSnapshot(h, enc)
			if err != nil {
				t.Fatalf("after %d records: %v", k, err)
			}
			if again := snap.encodeSnapshot(); !bytes.Equal(again, enc) {
				t.Fatalf("after %d records: the decoded snapshot encodes differently", k)
			}
			st := newState(h)
			st.adopt(snap)
			if !reflect.DeepEqual(derived(st), derived(prefix)) {
				t.Fatalf("after %d records: restored state differs:\n%+v\nwant\n%+v", k, derived(st), derived(prefix))
			}
			for _, rec := range recs[k:] {
				if err := st.apply(rec); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(derived(st), derived(full)) {
				t.Fatalf("snapshot after %d records, caught up: state differs from the full build", k)
			}
		}
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("random", seed), func(t *testing.T) {
			s := newTestService(t, Options{})
			id := randomSession(t, s, rand.New(rand.NewPCG(uint64(seed), 11)), steps, func(string, int) {})
			check(t, s, id)
		})
	}
	t.Run("pinned", func(t *testing.T) {
		s := newTestService(t, Options{})
		check(t, s, pinnedSession(t, s, 20))
	})
}

// TestSnapshotDamaged: a cut or altered snapshot is refused or decodes to something
// consistent; it never panics. Snapshots of another session or incarnation are refused.
func TestSnapshotDamaged(t *testing.T) {
	s := newTestService(t, Options{})
	id := randomSession(t, s, rand.New(rand.NewPCG(3, 5)), 30, func(string, int) {})
	st := s.cached(t, id)
	enc := st.encodeSnapshot()
	for n := range len(enc) {
		if _, err := decodeSnapshot(st.header, enc[:n]); err == nil {
			t.Fatalf("a snapshot cut to %d of %d bytes was accepted", n, len(enc))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		bad := bytes.Clone(enc)
		bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
		decodeSnapshot(st.header, bad) // must not panic
	}
	for _, h := range []storage.Header{{ID: "other", Nonce: st.header.Nonce}, {ID: st.header.ID, Nonce: "other"}} {
		if _, err := decodeSnapshot(h, enc); err == nil {
			t.Fatalf("a snapshot of %s/%s was accepted for %s/%s", st.header.ID, st.header.Nonce, h.ID, h.Nonce)
		}
	}
	if _, err := decodeSnapshot(st.header, nil); err == nil {
		t.Fatal("no snapshot was accepted")
	}
}

// TestColdStartReadsSnapshot: Close writes the snapshot; a new Service (a server started
// again) restores the state from it, applies only the records after it, and answers exactly
// what the first one did.
func TestColdStartReadsSnapshot(t *testing.T) {
	dir, store := openSnapshotStore(t)
	s := New(store, Options{})
	id := pinnedSession(t, s, 60) // 60 turns of 4 messages, 2 more records
	want := resumeAllPages(t, s, id)
	s.Close()
	if _, err := os.Stat(statePath(dir, id)); err != nil {
		t.Fatalf("Close wrote no snapshot: %v", err)
	}

	s2 := New(store, Options{})
	got := resumeAllPages(t, s2, id)
	if !reflect.DeepEqual(got, want) {
		t.Fatal("resume after a cold start from the snapshot differs")
	}
	st := s2.cached(t, id)
	st.mu.Lock()
	snapSeq, lastSeq, worth := st.snapSeq, st.lastSeq, worthSnapshot(st)
	st.mu.Unlock()
	if snapSeq != lastSeq || !worth {
		t.Fatalf("the state was not restored from the snapshot: snapSeq %d, lastSeq %d", snapSeq, lastSeq)
	}
	// More records, written by a process that keeps no snapshots: the next cold start
	// restores the old snapshot and applies them (its log says how many).
	sw := New(store, Options{NoSnapshots: true})
	for i := range 5 {
		mustSave(t, sw, SaveRequest{SessionID: id, Messages: turn(100+i, "g.go", 50)})
	}
	want = resumeAllPages(t, sw, id)
	var logs lockedBuffer
	s3 := New(store, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if got := resumeAllPages(t, s3, id); !reflect.DeepEqual(got, want) {
		t.Fatal("resume from an older snapshot plus the records after it differs")
	}
	if !strings.Contains(logs.String(), "state restored from its snapshot") || !strings.Contains(logs.String(), " newer=30") {
		t.Fatalf("want the state restored from the older snapshot and 30 newer records applied; log:\n%s", logs.String())
	}
	s2.Close()
	s3.Close()

	// NoSnapshots reads none.
	s4 := New(store, Options{NoSnapshots: true})
	if got := resumeAllPages(t, s4, id); !reflect.DeepEqual(got, want) {
		t.Fatal("resume without snapshots differs")
	}
	if st := s4.cached(t, id); snapSeqOf(st) != 0 {
		t.Fatal("NoSnapshots read a snapshot")
	}
}

// TestNoSnapshotForSmallSessions: a session whose log is built within a few milliseconds
// gets no snapshot (it would only cost disk).
func TestNoSnapshotForSmallSessions(t *testing.T) {
	dir, store := openSnapshotStore(t)
	s := New(store, Options{})
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: turn(0, "a.go", 100)})
	for i := 1; i < 60; i++ { // 360 records, about 80 KB
		mustSave(t, s, SaveRequest{SessionID: res.SessionID, Messages: turn(i, "a.go", 100)})
	}
	s.Close()
	if _, err := os.Stat(statePath(dir, res.SessionID)); err == nil {
		t.Fatal("a small session got a snapshot")
	}
}

// TestSnapshotWrittenWhenIdle: a session that went idle gets its snapshot without Close (a
// server killed later still leaves one).
func TestSnapshotWrittenWhenIdle(t *testing.T) {
	dir, store := openSnapshotStore(t)
	s := New(store, Options{})
	t.Cleanup(func() { s.Close() })
	id := pinnedSession(t, s, 60)
	path := statePath(dir, id)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no snapshot 20 s after the last save")
		}
		time.Sleep(50 * time.Millisecond)
	}
	s2 := New(store, Options{})
	if st := s2.cached(t, id); snapSeqOf(st) == 0 {
		t.Fatal("the idle snapshot was not used")
	}
}

func resumeAllPages(t *testing.T, s *Service, id string) []ResumeResult {
	t.Helper()
	var out []ResumeResult
	cursor := ""
	for {
		res, err := s.Resume(t.Context(), ResumeRequest{SessionID: id, MaxTokens: 4000, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		res.Ahead = nil // a func: compared only with nil
		out = append(out, res)
		if cursor = res.NextCursor; cursor == "" {
			return out
		}
	}
}

// TestSnapshotAfterRewrite: a redaction rewrite removes the snapshot (it holds the preview and
// ids of the old records), a process that cached the old state rebuilds it from the new log,
// and a snapshot of the old state is never written again.
func TestSnapshotAfterRewrite(t *testing.T) {
	dir, store := openSnapshotStore(t)
	const secret = "sk-live-SNAPSHOTSECRET42"
	s := New(store, Options{})
	res := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("first", "deploy with "+secret)}})
	id := res.SessionID
	for i := range 60 {
		mustSave(t, s, SaveRequest{SessionID: id, Messages: turn(i, "a.go", 20000)})
	}
	old := s.cached(t, id)
	if !strings.Contains(old.preview, secret) {
		t.Fatalf("preview %q: the test needs the secret in it", old.preview)
	}
	s.Close()
	path := statePath(dir, id)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}

	red := New(store, Options{Redact: func(x string) string { return strings.ReplaceAll(x, secret, "[REDACTED]") }})
	changed, err := red.RedactStored(t.Context(), id, false)
	if err != nil || !changed {
		t.Fatalf("RedactStored: %v, %v", changed, err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("the rewrite left the old snapshot")
	}
	// The old state, still cached by a process that missed the rewrite, is not written.
	s2 := New(store, Options{})
	s2.remember(id, old)
	s2.snaps.write(id, old)
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a snapshot of the state before the rewrite was written")
	}
	// Its next call sees another generation and rebuilds the state from the redacted log.
	st := s2.cached(t, id)
	if st == old || strings.Contains(st.preview, secret) {
		t.Fatalf("the stale state was kept (preview %q)", st.preview)
	}
	s2.Close()
	if ss, ok := any(store).(storage.Snapshots); ok {
		err := store.View(t.Context(), id, func(r storage.Reader) error {
			if data := ss.LoadSnapshot(r); data == nil || bytes.Contains(data, []byte(secret)) {
				return fmt.Errorf("snapshot after the rewrite: %d bytes, secret inside: %v", len(data), bytes.Contains(data, []byte(secret)))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil || bytes.Contains(b, []byte(secret)) {
		t.Fatalf("snapshot file: %v, secret inside: %v", err, bytes.Contains(b, []byte(secret)))
	}
}

// TestResumeEmptySession: a session created without records yet (a crash between the create
// and the first append, or another process's save in between on PostgreSQL) resumes as an
// empty page and warms without a panic.
func TestResumeEmptySession(t *testing.T) {
	s := newTestService(t, Options{})
	const id = "01a20000-0000-7000-8000-000000000001"
	if err := s.store.Create(t.Context(), storage.Header{ID: id, WorkingDir: wd}, storage.Meta{WorkingDir: wd}); err != nil {
		t.Fatal(err)
	}
	for _, prune := range []bool{false, true} {
		res, err := s.Resume(t.Context(), ResumeRequest{SessionID: id, Prune: prune, Raw: true})
		if err != nil || len(res.RawMessages) != 0 || res.NextCursor != "" {
			t.Fatalf("resume of an empty session: %+v, %v", res, err)
		}
	}
	if err := s.Warm(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
}

// snapSeqOf reads st.snapSeq under its lock (a snapshot writer may be updating it).
func snapSeqOf(st *state) uint64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.snapSeq
}

// lockedBuffer is a bytes.Buffer safe for a logger written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// openSnapshotStore opens a local store (one that keeps snapshots) in a temp dir, closed at the
// end of the test, and returns its directory so the test can look at the .state files.
func openSnapshotStore(t *testing.T) (string, *local.Store) {
	t.Helper()
	dir := t.TempDir()
	store, err := local.Open(dir, local.Options{Summarize: Summarize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return dir, store
}

// statePath is where the local store keeps session id's snapshot.
func statePath(dir, id string) string { return filepath.Join(dir, "sessions", id+".state") }
