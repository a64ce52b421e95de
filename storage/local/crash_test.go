package local

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"

	"github.com/tidwall/gjson"
)

// The power-loss test: a random but reproducible workload (saves of several records to many
// sessions, compactions, seals, idle seals (which remove the tail), idle trims, snapshots,
// redaction rewrites, deletes, index rewrites, a clean restart now and then) runs on a
// crashFS; at a sample of its disk
// operations the disk a power loss would leave is built (crashFS.image, in a mode drawn for
// the point), a store is opened on it and checked against what the workload was told
// (crashcheck_test.go). At some points a restart's recovery runs on it as well, and at some
// of those again, losing power at one of its own operations.
//
// SESSIONMEM_CRASH_POINTS sets how many crash points in all (default crashDefaultPoints, at
// most crashPointsPerSeed of each workload seed); SESSIONMEM_CRASH_SEED runs one workload
// seed, and with it SESSIONMEM_CRASH_POINT one crash point of it (a failure prints both).

const (
	crashDefaultPoints = 2000
	crashSeeds         = 4
	crashPointsPerSeed = 500
	crashStoreDir      = "/store"
)

func TestCrashPoints(t *testing.T) {
	total := crashEnvInt(t, "SESSIONMEM_CRASH_POINTS", crashDefaultPoints)
	// A workload has about 1,000 operations: a long run takes more workloads rather than
	// more points of each.
	var seeds []uint64
	for seed := range uint64(max(crashSeeds, (total+crashPointsPerSeed-1)/crashPointsPerSeed)) {
		seeds = append(seeds, seed+1)
	}
	if v := os.Getenv("SESSIONMEM_CRASH_SEED"); v != "" {
		seeds = []uint64{uint64(crashEnvInt(t, "SESSIONMEM_CRASH_SEED", 0))}
	}
	only := crashEnvInt(t, "SESSIONMEM_CRASH_POINT", 0)
	var mu sync.Mutex
	stats := map[string]int{}
	t.Run("seeds", func(t *testing.T) { // returns when every seed's parallel run has
		for i, seed := range seeds {
			per := total / len(seeds)
			if i < total%len(seeds) {
				per++
			}
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel() // each seed has its own disk and store
				st := runCrashSeed(t, seed, per, only)
				mu.Lock()
				for k, v := range st {
					stats[k] += v
				}
				mu.Unlock()
			})
		}
	})
	t.Logf("crash points checked: %d (%d nested in a recovery); images by mode: %v", stats["points"], stats["nested"],
		[]string{fmt.Sprint("kill=", stats["kill"]), fmt.Sprint("strict=", stats["strict"]),
			fmt.Sprint("torn-ordered=", stats["torn-ordered"]), fmt.Sprint("torn-any=", stats["torn-any"])})
	if len(seeds) > 1 && stats["points"] < total {
		t.Errorf("checked %d crash points, want %d", stats["points"], total)
	}
}

func crashEnvInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a number", name, v)
	}
	return n
}

// runCrashSeed runs seed's workload once to count its operations, then again checking the
// sampled crash points (points of them, or only the one given).
func runCrashSeed(t *testing.T, seed uint64, points, only int) map[string]int {
	ops := newCrashWork(t, seed).run(nil)
	sample := map[int]bool{}
	if only > 0 {
		sample[only] = true
	} else {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		for _, n := range rng.Perm(ops + 1)[:min(points, ops+1)] {
			sample[n+1] = true // ops+1: the disk after the last operation
		}
	}
	w := newCrashWork(t, seed)
	c := &crashChecker{t: t, seed: seed, opts: w.opts, stats: map[string]int{}, fails: map[string]int{}, memo: map[string]memoEntry{}}
	if got := w.run(func(n int, model crashModel) {
		if sample[n] {
			c.point(w.fs, n, model)
		}
	}); got != ops {
		t.Fatalf("seed %d: %d operations the second time, %d the first: the workload is not reproducible", seed, got, ops)
	}
	if sample[ops+1] {
		c.point(w.fs, ops+1, w.model.snapshot())
	}
	t.Logf("seed %d: %d operations, %d crash points checked; failures by kind: %v", seed, ops, c.stats["points"], c.fails)
	return c.stats
}

// crashClock is the workload's clock: it moves only when the workload says.
type crashClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *crashClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *crashClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// sessModel is what the workload was told about one session: the records acknowledged, and
// what an operation in progress may have changed.
type sessModel struct {
	creating  bool     // Create has not returned: the session may be missing
	deleting  bool     // Delete has not returned: the session may be missing
	acked     []string // the stored lines acknowledged, in order
	inflight  []string // an Append in progress: its lines (all of them or none, once it crashed)
	splitAt   int      // the index of its barrier record when not the first: it may keep inflight[:splitAt]
	rewriteTo []string // a Rewrite in progress: the lines it writes (all of them or the old ones)
}

// crashModel is every session's model and the sessions whose Delete returned.
type crashModel struct {
	sess map[string]*sessModel
	gone map[string]bool
}

func newCrashModel() crashModel {
	return crashModel{sess: map[string]*sessModel{}, gone: map[string]bool{}}
}

// snapshot copies the model; the slices are shared, as they are only replaced or appended to.
func (m crashModel) snapshot() crashModel {
	out := newCrashModel()
	for id, s := range m.sess {
		c := *s
		out.sess[id] = &c
	}
	for id := range m.gone {
		out.gone[id] = true
	}
	return out
}

// crashMeta is the listing metadata a session with these stored lines has: the workload
// passes it with every append, and crashSummarize computes it from the records, so the
// listing must show it whichever of the two wrote the index line.
func crashMeta(lines []string) storage.Meta {
	m := storage.Meta{Messages: len(lines)}
	if n := len(lines); n > 0 {
		m.Name = "n" + gjson.Get(lines[n-1], "n").Raw
		m.Preview = gjson.Get(lines[n-1], "text").Str
		m.Preview = m.Preview[:min(len(m.Preview), 24)]
	}
	return m
}

func crashSummarize(h storage.Header, recs iter.Seq2[storage.Record, error]) (storage.Meta, error) {
	var lines []string
	for rec, err := range recs {
		if err != nil {
			return storage.Meta{}, err
		}
		lines = append(lines, string(rec.Data))
	}
	return crashMeta(lines), nil
}

// crashWork is one seed's workload: one goroutine, no background sealer (its steps are the
// workload's own), so that the operations, and the crash points numbering them, are the same
// on every run.
type crashWork struct {
	t     testing.TB
	rng   *rand.Rand
	fs    *crashFS
	clock *crashClock
	opts  Options
	model crashModel
	s     *Store
	ids   int // sessions created so far
	n     int // records generated so far
}

func newCrashWork(t testing.TB, seed uint64) *crashWork {
	clock := &crashClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	w := &crashWork{t: t, rng: rand.New(rand.NewPCG(seed, 1)), clock: clock, model: newCrashModel()}
	w.fs = newCrashFS(clock.Now)
	w.opts = Options{IdleSeal: -1, MaxPlainBytes: -1, Summarize: crashSummarize, Now: clock.Now, fs: w.fs, closeSealers: 1}
	if seed%2 == 0 {
		// Small seal thresholds: appends seal inline.
		w.opts.SealRecords, w.opts.SealBytes = 12+int(seed%7), 24<<10
	}
	return w
}

// run runs the workload; at every operation that changes the disk, hook (if set) gets its
// number and the model as it is then. It returns how many operations there were.
func (w *crashWork) run(hook func(n int, m crashModel)) int {
	if hook != nil {
		w.fs.onOp = func(n int) { hook(n, w.model.snapshot()) }
	}
	w.reopen()
	for range 4 {
		w.create()
	}
	for range 260 {
		w.clock.advance(time.Second)
		w.step()
	}
	w.must(w.s.Close(), "close")
	w.fs.onOp = nil
	return w.fs.ops
}

func (w *crashWork) must(err error, what string) {
	if err != nil {
		w.t.Fatalf("workload: %s: %v", what, err)
	}
}

func (w *crashWork) reopen() {
	if w.s != nil {
		w.must(w.s.Close(), "close")
	}
	s, err := Open(crashStoreDir, w.opts)
	w.must(err, "open")
	w.s = s
}

// live returns the sessions, sorted, so that the same seed picks the same one.
func (w *crashWork) live() []string {
	ids := make([]string, 0, len(w.model.sess))
	for id := range w.model.sess {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (w *crashWork) pick() string {
	ids := w.live()
	return ids[w.rng.IntN(len(ids))]
}

func (w *crashWork) step() {
	ctx := context.Background()
	r := w.rng.IntN(100)
	switch {
	case r < 46:
		w.append(w.pick(), 1+w.rng.IntN(4), false)
	case r < 52:
		w.append(w.pick(), 1+w.rng.IntN(3), true) // a compaction record, what comes before and after it
	case r < 58:
		id := w.pick()
		w.must(w.s.updateW(ctx, id, func(wr *Writer) error { return wr.Seal() }), "seal "+id)
	case r < 62:
		w.s.sealer.trySeal(w.pick(), (*Writer).sealIdle) // the background seal of an idle tail, which removes it
	case r < 68:
		w.s.sealer.trySeal(w.pick(), (*Writer).trimPadding) // the idle trim of its padding
	case r < 76:
		w.snapshot(w.pick())
	case r < 80:
		w.rewrite(w.pick())
	case r < 83:
		if len(w.model.sess) > 3 {
			w.delete(w.pick())
		}
	case r < 88:
		if len(w.model.sess) < 10 {
			w.create()
		}
	case r < 92:
		w.must(w.s.CompactMeta(ctx), "compact meta")
	case r < 96:
		w.must(w.s.idx.compactIdle(), "compact index")
	case r < 98:
		w.reopen()
	default:
		id := w.pick()
		rep, err := w.s.Verify(ctx, id, true)
		w.must(err, "verify "+id)
		if rep.Damaged() != nil || rep.Torn() {
			w.t.Fatalf("workload: verify %s with no crash: %+v", id, rep)
		}
	}
}

func (w *crashWork) create() {
	w.ids++
	id := fmt.Sprintf("s%03d", w.ids)
	w.model.sess[id] = &sessModel{creating: true}
	w.must(w.s.Create(context.Background(), storage.Header{ID: id, WorkingDir: "/w/" + id}, storage.Meta{}), "create "+id)
	w.model.sess[id].creating = false
}

func (w *crashWork) delete(id string) {
	w.model.sess[id].deleting = true
	w.must(w.s.Delete(context.Background(), id), "delete "+id)
	delete(w.model.sess, id)
	w.model.gone[id] = true
}

// payload returns a new record's data: small, page-sized or spanning pages, sometimes with
// a "secret" that rewrite redacts.
func (w *crashWork) payload(kind string) []byte {
	w.n++
	var size int
	switch r := w.rng.IntN(100); {
	case r < 55:
		size = 40 + w.rng.IntN(600)
	case r < 88:
		size = 600 + w.rng.IntN(2500)
	default:
		size = 3000 + w.rng.IntN(6000)
	}
	var b strings.Builder
	for b.Len() < size {
		switch w.rng.IntN(40) {
		case 0:
			fmt.Fprintf(&b, "secret-%04d ", w.rng.IntN(10000))
		case 1:
			b.WriteString("quote \" back\\slash tab\t é ")
		default:
			b.WriteString([]string{"read ", "the ", "file ", "and ", "run ", "tests ", "again ", "ok "}[w.rng.IntN(8)])
		}
	}
	text, _ := json.Marshal(b.String())
	return fmt.Appendf(nil, `{"type":%q,"n":%d,"text":%s}`, kind, w.n, text)
}

// append saves k new records in one Append (one of them a compaction barrier if barrier:
// the first, or one after records that are then sealed before it).
func (w *crashWork) append(id string, k int, barrier bool) {
	m := w.model.sess[id]
	recs := make([]storage.Record, k)
	lines := make([]string, k)
	at := -1
	if barrier {
		at = w.rng.IntN(k)
	}
	for i := range recs {
		kind := "message"
		if i == at {
			kind = "compaction"
		}
		recs[i] = storage.Record{Data: w.payload(kind), Barrier: i == at}
		lines[i] = storedLine(uint64(len(m.acked)+i+1), recs[i].Data)
	}
	m.inflight, m.splitAt = lines, max(at, 0)
	meta := crashMeta(append(slices.Clip(m.acked), lines...))
	w.must(w.s.updateW(context.Background(), id, func(wr *Writer) error {
		_, err := wr.Append(recs, meta)
		return err
	}), "append to "+id)
	m.acked, m.inflight, m.splitAt = append(m.acked, lines...), nil, 0
}

// snapshot saves a state snapshot of id as memory does: read under a View, saved for the
// generation read.
func (w *crashWork) snapshot(id string) {
	ctx := context.Background()
	var gen string
	var data []byte
	w.must(w.s.View(ctx, id, func(r storage.Reader) error {
		gen = w.s.Generation(r)
		var lines []string
		for rec, err := range r.Records(1) {
			if err != nil {
				return err
			}
			lines = append(lines, string(rec.Data))
		}
		data = crashSnapshotData(lines)
		return nil
	}), "read for snapshot "+id)
	w.must(w.s.SaveSnapshot(ctx, id, gen, data), "snapshot "+id)
}

// crashSnapshotData is what a snapshot of a session with these lines holds: how many lines,
// and a digest of them, which a check compares with the lines it reads.
func crashSnapshotData(lines []string) []byte {
	return fmt.Appendf(nil, "%d %s", len(lines), crashDigest(lines))
}

func crashDigest(lines []string) string {
	var h uint64 = 14695981039346656037
	for _, l := range lines {
		for i := 0; i < len(l); i++ {
			h = (h ^ uint64(l[i])) * 1099511628211
		}
		h = (h ^ '\n') * 1099511628211
	}
	return strconv.FormatUint(h, 16)
}

// crashRedact is the workload's redaction: every "secret-NNNN" becomes "[redacted]".
func crashRedact(line string) string {
	for {
		i := strings.Index(line, "secret-")
		if i < 0 || i+11 > len(line) {
			return line
		}
		line = line[:i] + "[redacted]" + line[i+11:]
	}
}

func (w *crashWork) rewrite(id string) {
	m := w.model.sess[id]
	to := make([]string, len(m.acked))
	for i, l := range m.acked {
		to[i] = crashRedact(l)
	}
	if slices.Equal(to, m.acked) {
		return
	}
	m.rewriteTo = to
	_, err := w.s.Rewrite(context.Background(), id, func(h storage.Header, recs []storage.Record) (storage.Header, [][]byte, storage.Meta, error) {
		out := make([][]byte, len(recs))
		for i, rec := range recs {
			if red := crashRedact(string(rec.Data)); red != string(rec.Data) {
				// The stored line without its seq: what the record's Data was when appended.
				out[i] = []byte("{" + red[strings.IndexByte(red, ',')+1:])
			}
		}
		return h, out, crashMeta(to), nil
	})
	w.must(err, "rewrite "+id)
	m.acked, m.rewriteTo = to, nil
}
