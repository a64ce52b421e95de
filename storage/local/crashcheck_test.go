package local

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// crashChecker checks the disks a power loss leaves (crash_test.go): a store opened on one
// holds every acknowledged record once and in order, no record that was not written whole,
// verifies clean (torn ends aside, which repair cuts), lists what it holds, and takes saves
// again after a restart's recovery, even one that itself lost power.
type crashChecker struct {
	t     testing.TB
	seed  uint64
	opts  Options
	stats map[string]int
	fails map[string]int // by kind of failure
	cur   int            // the crash point being checked
	memo  map[string]memoEntry
}

// memoEntry is what a session read at a point observe checked, by its files and model. It
// keeps the model's slices alive: sessModel.key names them by address.
type memoEntry struct {
	lines []string
	model sessModel
}

// key names what the model allows by the slices it holds, which are never changed in place
// (only appended to, or replaced).
func (sm *sessModel) key() string {
	first := func(s []string) *string {
		if len(s) == 0 {
			return nil
		}
		return &s[0]
	}
	return fmt.Sprintf("%p.%d/%p.%d/%p.%d/%v/%v", first(sm.acked), len(sm.acked), first(sm.inflight), len(sm.inflight),
		first(sm.rewriteTo), len(sm.rewriteTo), sm.creating, sm.deleting)
}

// recoverEvery: a restart's recovery runs at one crash point in recoverEvery (it costs more
// than the rest of a point's check, most of all under the race detector).
var recoverEvery = map[bool]int{false: 4, true: 8}[raceEnabled]

// point checks the disk crash point n of the workload on fsys (whose model is m) would leave.
// At one point in recoverEvery a restart's recovery runs on it too, and at half of those the
// same recovery again, losing power at one of its operations.
func (c *crashChecker) point(fsys *crashFS, n int, m crashModel) {
	c.cur = n
	rng := rand.New(rand.NewPCG(c.seed, uint64(n)))
	mode := crashMode(rng.IntN(int(numCrashModes)))
	img := fsys.image(rng, mode)
	c.stats["points"]++
	c.stats[mode.String()]++
	where := fmt.Sprintf("seed %d, crash point %d (%s)", c.seed, n, mode)
	observed, ok := c.observe(img.clone(), m, where)
	if !ok || rng.IntN(recoverEvery) != 0 {
		return
	}
	rec := img.clone()
	after := observedModel(observed)
	recSeed := rng.Uint64()
	if !c.recover(rec, &after, recSeed, where) {
		return
	}
	recOps := rec.ops
	if _, ok := c.observe(rec, after, where+", after a restart's recovery"); !ok || rng.IntN(2) != 0 || recOps == 0 {
		return
	}
	k := 1 + rng.IntN(recOps)
	nest := img.clone()
	nested := observedModel(observed)
	nest.onOp = func(op int) {
		if op != k {
			return
		}
		nmode := crashMode(rng.IntN(int(numCrashModes)))
		c.stats["nested"]++
		c.stats[nmode.String()]++
		snap := nest.image(rng, nmode)
		nwhere := fmt.Sprintf("%s, then at operation %d of a restart's recovery (%s)", where, k, nmode)
		if obs, ok := c.observe(snap.clone(), nested.snapshot(), nwhere); ok {
			again := observedModel(obs)
			c.recover(snap, &again, recSeed, nwhere+", recovered again")
		}
	}
	c.recover(nest, &nested, recSeed, where+", recovery losing power")
}

// clone is the disk as it is (everything kept), to open a store on without changing c.
func (c *crashFS) clone() *crashFS { return c.image(nil, crashKill) }

// observedModel is the model of a disk whose sessions hold these lines, all durable.
func observedModel(observed map[string][]string) crashModel {
	m := newCrashModel()
	for id, lines := range observed {
		m.sess[id] = &sessModel{acked: slices.Clip(lines)}
	}
	return m
}

func (c *crashChecker) fail(kind, where, format string, args ...any) {
	c.t.Helper()
	c.fails[kind]++
	if c.fails[kind] <= 3 {
		race := "" // the race detector's run draws other points for recovery (recoverEvery)
		if raceEnabled {
			race = " -race"
		}
		c.t.Errorf("%s: %s: %s\n(reproduce: SESSIONMEM_CRASH_SEED=%d SESSIONMEM_CRASH_POINT=%d go test%s -run TestCrashPoints ./storage/local/)",
			where, kind, fmt.Sprintf(format, args...), c.seed, c.cur, race)
	}
}

// observe opens a store on fsys and checks it against m; it returns what each session holds.
func (c *crashChecker) observe(fsys *crashFS, m crashModel, where string) (map[string][]string, bool) {
	c.t.Helper()
	ctx := context.Background()
	opts := c.opts
	opts.fs = fsys
	s, err := Open(crashStoreDir, opts)
	if err != nil {
		c.fail("open fails", where, "%v\n%s", err, fsys.files("/"))
		return nil, false
	}
	defer s.Close()
	ids, err := s.IDs(ctx)
	if err != nil {
		c.fail("IDs fails", where, "%v", err)
		return nil, false
	}
	ok := true
	observed := map[string][]string{}
	for _, id := range ids {
		sm := m.sess[id]
		if sm == nil {
			if m.gone[id] {
				c.fail("deleted session back", where, "session %s was deleted\n%s", id, fsys.files("/"))
			} else {
				c.fail("unknown session", where, "session %s was never created", id)
			}
			ok = false
			continue
		}
		// A session whose files and model are the same as at a point checked before (most
		// are: one session changes at a time) would check the same.
		key := fmt.Sprintf("%s|%x|%x|%x|%s", id, fsys.fileKey(s.zstPath(id)), fsys.fileKey(s.tailPath(id)),
			fsys.fileKey(s.statePath(id)), sm.key())
		if seen, hit := c.memo[key]; hit {
			observed[id] = seen.lines
			continue
		}
		rep, err := s.Verify(ctx, id, false)
		if err != nil || rep.Damaged() != nil || rep.NewerFormat() != nil {
			c.fail("verify finds damage", where, "session %s: %v %+v\n%s", id, err, rep, fsys.files("/"))
			ok = false
			continue
		}
		lines, err := crashRead(s, id)
		if err != nil {
			c.fail("read fails", where, "session %s: %v", id, err)
			ok = false
			continue
		}
		if kind, why := sm.check(lines); kind != "" {
			c.fail(kind, where, "session %s: %s\n%s", id, why, fsys.files("/"))
			ok = false
		}
		if why := crashCheckSnapshot(s, id, lines); why != "" {
			c.fail("stale snapshot", where, "session %s: %s", id, why)
			ok = false
		} else if ok {
			c.memo[key] = memoEntry{lines: lines, model: *sm}
		}
		observed[id] = lines
	}
	for id, sm := range m.sess {
		if _, there := observed[id]; !there && !slices.Contains(ids, id) && !sm.creating && !sm.deleting {
			c.fail("acknowledged session lost", where, "session %s (%d records)\n%s", id, len(sm.acked), fsys.files("/"))
			ok = false
		}
	}
	return observed, c.checkListing(s, observed, where) && ok
}

// check says how lines differ from what the model allows ("" if they do not).
func (sm *sessModel) check(lines []string) (kind, why string) {
	if slices.Equal(lines, sm.acked) ||
		(sm.inflight != nil && slices.Equal(lines, append(slices.Clip(sm.acked), sm.inflight...))) ||
		(sm.rewriteTo != nil && slices.Equal(lines, sm.rewriteTo)) ||
		(sm.splitAt > 0 && slices.Equal(lines, append(slices.Clip(sm.acked), sm.inflight[:sm.splitAt]...))) {
		return "", ""
	}
	for k := 1; k < len(sm.inflight); k++ {
		if slices.Equal(lines, append(slices.Clip(sm.acked), sm.inflight[:k]...)) {
			return "part of a batch", fmt.Sprintf("%d of the %d records of an Append that did not return", k, len(sm.inflight))
		}
	}
	n := 0
	for n < len(lines) && n < len(sm.acked) && lines[n] == sm.acked[n] {
		n++
	}
	if n < len(sm.acked) {
		got := "nothing"
		if n < len(lines) {
			got = fmt.Sprintf("%.120q", lines[n])
		}
		return "acknowledged record lost", fmt.Sprintf("%d records, %d acknowledged (in flight: %d, rewrite: %v); record %d is %s, want %.120q",
			len(lines), len(sm.acked), len(sm.inflight), sm.rewriteTo != nil, n+1, got, sm.acked[n])
	}
	for k := 0; n < len(lines) && k < len(sm.inflight) && lines[n] == sm.inflight[k]; k++ {
		n++ // the records in flight that are there whole
	}
	why = fmt.Sprintf("%d records, %d acknowledged (in flight: %d); record %d is %.160q", len(lines), len(sm.acked), len(sm.inflight), n+1, lines[n])
	if k := n - len(sm.acked); k < len(sm.inflight) {
		why += "; it differs from the record in flight " + diffAt(lines[n], sm.inflight[k])
	}
	return "record never acknowledged", why
}

// diffAt shows where a and b first differ.
func diffAt(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(i-40, 0)
	return fmt.Sprintf("at byte %d of %d/%d: %q vs %q", i, len(a), len(b), a[lo:min(i+40, len(a))], b[lo:min(i+40, len(b))])
}

func crashRead(s *Store, id string) ([]string, error) {
	var lines []string
	err := s.View(context.Background(), id, func(r storage.Reader) error {
		for rec, err := range r.Records(1) {
			if err != nil {
				return err
			}
			lines = append(lines, string(rec.Data))
		}
		if n := uint64(len(lines)); n != r.LastSeq() {
			return fmt.Errorf("LastSeq %d with %d records", r.LastSeq(), n)
		}
		return nil
	})
	return lines, err
}

// crashCheckSnapshot says what is wrong with id's snapshot, if it has one: it must describe
// a prefix of the records as they are (a snapshot of records a rewrite replaced is stale).
func crashCheckSnapshot(s *Store, id string, lines []string) string {
	var why string
	err := s.View(context.Background(), id, func(r storage.Reader) error {
		data := s.LoadSnapshot(r)
		if data == nil {
			return nil
		}
		var n int
		var digest string
		if _, err := fmt.Sscanf(string(data), "%d %s", &n, &digest); err != nil || n > len(lines) || crashDigest(lines[:n]) != digest {
			why = fmt.Sprintf("snapshot %q does not describe the records", data)
		}
		return nil
	})
	if err != nil {
		return err.Error()
	}
	return why
}

// checkListing checks that List and Get show every session the disk holds, with the metadata
// its records give.
func (c *crashChecker) checkListing(s *Store, observed map[string][]string, where string) bool {
	ctx := context.Background()
	metas, err := s.List(ctx, storage.ListQuery{})
	if err != nil {
		c.fail("list fails", where, "%v", err)
		return false
	}
	ok := true
	listed := map[string]bool{}
	for _, m := range metas {
		listed[m.ID] = true
		lines, there := observed[m.ID]
		if !there {
			c.fail("listed but not stored", where, "session %s", m.ID)
			ok = false
			continue
		}
		want := crashMeta(lines)
		if m.LastSeq != uint64(len(lines)) || m.Name != want.Name || m.Messages != want.Messages ||
			m.Preview != want.Preview || m.WorkingDir != "/w/"+m.ID {
			c.fail("listing differs from records", where, "session %s: listed %+v, records give %d records, %+v", m.ID, m, len(lines), want)
			ok = false
		}
		if g, err := s.Get(ctx, m.ID); err != nil || g != m {
			c.fail("get differs from list", where, "session %s: %+v, %v", m.ID, g, err)
			ok = false
		}
	}
	for id := range observed {
		if !listed[id] {
			c.fail("stored but not listed", where, "session %s", id)
			ok = false
		}
	}
	return ok
}

// recover does what a process starting on the disk does: open, repair what the crash tore
// (Verify with repair), save one record to two sessions (seed picks them), close. m is the
// model as it goes.
func (c *crashChecker) recover(fsys *crashFS, m *crashModel, seed uint64, where string) bool {
	c.t.Helper()
	ctx := context.Background()
	opts := c.opts
	opts.fs = fsys
	s, err := Open(crashStoreDir, opts)
	if err != nil {
		c.fail("open fails", where, "%v", err)
		return false
	}
	ids := make([]string, 0, len(m.sess))
	for id := range m.sess {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ok := true
	for _, id := range ids {
		rep, err := s.Verify(ctx, id, true)
		if err == nil && rep.Damaged() == nil {
			rep, err = s.Verify(ctx, id, false) // what is left after the repair
		}
		if err != nil || rep.Damaged() != nil || rep.Torn() {
			c.fail("repair fails", where, "session %s: %v %+v", id, err, rep)
			ok = false
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, i := range rng.Perm(len(ids))[:min(2, len(ids))] {
		id := ids[i]
		sm := m.sess[id]
		line := fmt.Sprintf(`{"type":"message","n":%d,"text":"after the crash"}`, 1000000+i)
		lines := []string{storedLine(uint64(len(sm.acked)+1), []byte(line))}
		sm.inflight = lines
		err := s.Update(ctx, id, func(w storage.Writer) error {
			_, err := w.Append([]storage.Record{{Data: []byte(line)}}, crashMeta(append(slices.Clip(sm.acked), lines...)))
			return err
		})
		if err != nil {
			c.fail("save after recovery fails", where, "session %s: %v", id, err)
			ok = false
			continue
		}
		sm.acked, sm.inflight = append(sm.acked, lines...), nil
	}
	if err := s.Close(); err != nil {
		c.fail("close fails", where, "%v", err)
		ok = false
	}
	return ok
}
