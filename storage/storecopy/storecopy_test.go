package storecopy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/local"
	"github.com/sessionmem/sessionmem/storage/postgres"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
	"github.com/sessionmem/sessionmem/storage/storecopy"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

var memOpts = storecopy.Options{Key: memory.RecordKey, Barrier: memory.RecordBarrier}

type backend struct {
	name string
	open func(t *testing.T) storage.Store
}

func localBackend() backend {
	return backend{"local", func(t *testing.T) storage.Store {
		s, err := local.Open(t.TempDir(), local.Options{Summarize: memory.Summarize})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}}
}

func pgBackend() backend {
	return backend{"postgres", func(t *testing.T) storage.Store {
		s, err := postgres.Open(context.Background(), pgtest.Shared(t).NewSchema(t), postgres.Options{TailRecords: 8, MergeChunks: 3, ChunkRecords: 40, ChunkBytes: 16 << 10})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}}
}

// fill saves a few sessions through memory, one of them long and compacted.
func fill(t *testing.T, st storage.Store) {
	t.Helper()
	ctx := context.Background()
	svc := memory.New(st, memory.Options{})
	body := strings.Repeat("some words about the build ", 12)
	var long string
	for s := 0; s < 4; s++ {
		id := ""
		for turn := 0; turn < 5+s*20; turn++ {
			res, err := svc.Save(ctx, memory.SaveRequest{SessionID: id, WorkingDir: fmt.Sprintf("/w/%d", s%2), Name: fmt.Sprintf("s%d", s),
				Messages: []memory.Message{
					{ID: fmt.Sprintf("u%d", turn), Role: memory.RoleUser, Content: []memory.Block{{Type: "text", Text: fmt.Sprintf("question %d %s", turn, body)}}},
					{ID: fmt.Sprintf("a%d", turn), Role: memory.RoleAssistant, Content: []memory.Block{{Type: "text", Text: "answer " + body}}},
				}})
			if err != nil {
				t.Fatal(err)
			}
			id = res.SessionID
		}
		long = id
	}
	if _, err := svc.Compact(ctx, memory.CompactRequest{SessionID: long, Summarizer: "extractive", KeepRecentTokens: 500}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Save(ctx, memory.SaveRequest{SessionID: long, Messages: []memory.Message{
		{ID: "after", Role: memory.RoleUser, Content: []memory.Block{{Type: "text", Text: "after the compaction"}}}}}); err != nil {
		t.Fatal(err)
	}
}

// sameStores checks that every session of src is in dst with the same header, metadata and
// records, byte for byte.
func sameStores(t *testing.T, dst, src storage.Store) {
	t.Helper()
	ctx := context.Background()
	ids, err := src.IDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		sm, err1 := src.Get(ctx, id)
		dm, err2 := dst.Get(ctx, id)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", id, err1, err2)
		}
		if sm.Name != dm.Name || !sm.Updated.Equal(dm.Updated) || !sm.Created.Equal(dm.Created) || sm.Messages != dm.Messages ||
			sm.Leaf != dm.Leaf || sm.Checkpoint != dm.Checkpoint || sm.LastSeq != dm.LastSeq || sm.WorkingDir != dm.WorkingDir ||
			sm.Preview != dm.Preview || sm.ContextTokens != dm.ContextTokens || sm.Compactions != dm.Compactions {
			t.Fatalf("%s: meta\n src %+v\n dst %+v", id, sm, dm)
		}
		read := func(st storage.Store) (storage.Header, []string) {
			var h storage.Header
			var out []string
			err := st.View(ctx, id, func(r storage.Reader) error {
				h = r.Header()
				for rec, err := range r.Records(1) {
					if err != nil {
						return err
					}
					out = append(out, string(rec.Data))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return h, out
		}
		sh, srecs := read(src)
		dh, drecs := read(dst)
		if sh.Nonce != dh.Nonce || !sh.Created.Equal(dh.Created) || sh.WorkingDir != dh.WorkingDir || sh.ParentSession != dh.ParentSession {
			t.Fatalf("%s: header\n src %+v\n dst %+v", id, sh, dh)
		}
		if strings.Join(srecs, "\n") != strings.Join(drecs, "\n") {
			t.Fatalf("%s: records differ (%d vs %d)", id, len(srecs), len(drecs))
		}
	}
}

func TestCopyBetweenBackends(t *testing.T) {
	for _, pair := range [][2]backend{
		{localBackend(), pgBackend()},
		{pgBackend(), localBackend()},
		{localBackend(), localBackend()},
		{pgBackend(), pgBackend()},
	} {
		t.Run(pair[0].name+"-to-"+pair[1].name, func(t *testing.T) {
			src, dst := pair[0].open(t), pair[1].open(t)
			fill(t, src)
			res, err := storecopy.Copy(context.Background(), dst, src, memOpts)
			if err != nil || len(res.Failed) > 0 || res.Created != 4 || res.Completed != 4 {
				t.Fatalf("copy: %+v, %v", res, err)
			}
			sameStores(t, dst, src)
			// A second run copies nothing.
			res, err = storecopy.Copy(context.Background(), dst, src, memOpts)
			if err != nil || res.UpToDate != 4 || res.Records != 0 || res.Completed != 0 {
				t.Fatalf("second copy: %+v, %v", res, err)
			}
			// The copy works through memory like the original: resume and save.
			svc := memory.New(dst, memory.Options{})
			ids, _ := dst.IDs(context.Background())
			for _, id := range ids {
				if _, err := svc.Resume(context.Background(), memory.ResumeRequest{SessionID: id}); err != nil {
					t.Fatalf("resume %s: %v", id, err)
				}
				res, err := svc.Save(context.Background(), memory.SaveRequest{SessionID: id, Messages: []memory.Message{
					{ID: "u0", Role: memory.RoleUser, Content: []memory.Block{{Type: "text", Text: "replayed id"}}}}})
				if err != nil || res.Saved != 0 {
					t.Fatalf("replay into the copy of %s: %+v, %v", id, res, err)
				}
			}
		})
	}
}

// failingStore lets n Updates through, then fails: an interrupted copy.
type failingStore struct {
	storage.Store
	n int
}

var errInterrupted = errors.New("interrupted")

func (f *failingStore) Update(ctx context.Context, id string, fn func(storage.Writer) error) error {
	if f.n == 0 {
		return errInterrupted
	}
	f.n--
	return f.Store.Update(ctx, id, fn)
}

func TestResume(t *testing.T) {
	src, dst := localBackend().open(t), pgBackend().open(t)
	fill(t, src)
	opts := memOpts
	opts.BatchRecords = 17
	res, err := storecopy.Copy(context.Background(), &failingStore{Store: dst, n: 5}, src, opts)
	if err != nil || len(res.Failed) == 0 {
		t.Fatalf("interrupted copy: %+v, %v", res, err)
	}
	copied := res.Records
	res, err = storecopy.Copy(context.Background(), dst, src, opts)
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("resumed copy: %+v, %v", res, err)
	}
	var total int64
	ids, _ := src.IDs(context.Background())
	for _, id := range ids {
		m, _ := src.Get(context.Background(), id)
		total += int64(m.LastSeq)
	}
	if copied+res.Records != total {
		t.Fatalf("copied %d then %d records, the source has %d", copied, res.Records, total)
	}
	sameStores(t, dst, src)
}

func TestConflict(t *testing.T) {
	ctx := context.Background()
	src, dst := localBackend().open(t), pgBackend().open(t)
	fill(t, src)
	ids, _ := src.IDs(ctx)
	// Another session under the same id in the destination.
	if err := dst.Create(ctx, storage.Header{ID: ids[0], WorkingDir: "/elsewhere"}, storage.Meta{}); err != nil {
		t.Fatal(err)
	}
	res, err := storecopy.Copy(ctx, dst, src, memOpts)
	if err != nil || len(res.Failed) != 1 || res.Failed[0].ID != ids[0] || !errors.Is(res.Failed[0].Err, storecopy.ErrConflict) {
		t.Fatalf("copy: %+v, %v", res, err)
	}
	if m, _ := dst.Get(ctx, ids[0]); m.LastSeq != 0 || m.WorkingDir != "/elsewhere" {
		t.Fatalf("the conflicting session was changed: %+v", m)
	}
	// A destination whose records differ from the source's.
	if err := dst.Delete(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := storecopy.CopySession(ctx, dst, src, ids[0], memOpts); err != nil {
		t.Fatal(err)
	}
	err = dst.Update(ctx, ids[0], func(w storage.Writer) error {
		_, err := w.Append([]storage.Record{{Data: []byte(`{"type":"x","id":"zz"}`)}}, storage.Meta{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storecopy.CopySession(ctx, dst, src, ids[0], memOpts); !errors.Is(err, storecopy.ErrConflict) {
		t.Fatalf("copy onto a longer destination: %v", err)
	}
}

// TestRepeatedKeys: a source session that repeats a key (written before keys were enforced)
// still copies into a store that enforces them.
func TestRepeatedKeys(t *testing.T) {
	ctx := context.Background()
	src, dst := localBackend().open(t), pgBackend().open(t)
	if err := src.Create(ctx, storage.Header{ID: "a", WorkingDir: "/w"}, storage.Meta{}); err != nil {
		t.Fatal(err)
	}
	msg := `{"type":"message","id":"e%d","message":{"id":"same","role":"user","content":[]}}`
	for i := 0; i < 3; i++ {
		err := src.Update(ctx, "a", func(w storage.Writer) error {
			_, err := w.Append([]storage.Record{{Data: []byte(fmt.Sprintf(msg, i))}}, storage.Meta{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	opts := memOpts
	opts.BatchRecords = 1
	if res, err := storecopy.Copy(ctx, dst, src, opts); err != nil || len(res.Failed) > 0 || res.Records != 3 {
		t.Fatalf("copy: %+v, %v", res, err)
	}
	sameStores(t, dst, src)
}
