package ftsindex

// A query's filters (working directory, session, role, kind, time, file), resolved
// against a snapshot and checked per doc from the segments' attributes.

import (
	"fmt"
	"path"
	"slices"
)

// filter holds a query's filters, resolved against a snapshot.
type filter struct {
	sess         int64          // 0: any session
	dirs         map[int64]bool // sessions in the working directory; nil: any
	role         string
	kind         int // -1: any
	since, until int64
	hasSince     bool
	hasUntil     bool
	snap         int64
	files        []fileAlt // nil: no file filter
}

// fileAlt is one way to pass a file filter: holding term, in a session of dir ("": any).
type fileAlt struct{ term, dir string }

// newFilter resolves q's filters; ok is false when nothing can match.
func newFilter(q Query, sn *snapshot, snap int64) (*filter, bool) {
	f := &filter{role: q.Role, kind: -1, snap: snap}
	if q.SessionID != "" {
		id, ok := sn.bySid[q.SessionID]
		if !ok {
			return nil, false
		}
		f.sess = id
	}
	if q.WorkingDir != "" {
		wd := normDir(q.WorkingDir)
		f.dirs = map[int64]bool{}
		for id, r := range sn.live {
			if r.dir == wd {
				f.dirs[id] = true
			}
		}
	}
	if q.Kind != "" {
		f.kind = int(kindCode(q.Kind))
	}
	if !q.Since.IsZero() {
		f.since, f.hasSince = q.Since.UnixNano(), true
	}
	if !q.Until.IsZero() {
		f.until, f.hasUntil = q.Until.UnixNano(), true
	}
	if q.File == "" {
		return f, true
	}
	if path.IsAbs(q.File) {
		f.files = []fileAlt{{term: fileTerm(path.Clean(q.File))}}
		return f, true
	}
	// Relative: under each working directory it could be relative to.
	dirs := map[string]bool{}
	switch {
	case q.SessionID != "":
		dirs[sn.live[f.sess].dir] = true
	case q.WorkingDir != "":
		dirs[normDir(q.WorkingDir)] = true
	default:
		for _, r := range sn.live {
			dirs[r.dir] = true
		}
	}
	rel := path.Clean(q.File)
	for wd := range dirs {
		if path.IsAbs(wd) {
			f.files = append(f.files, fileAlt{term: fileTerm(path.Join(wd, rel)), dir: wd})
		}
	}
	return f, len(f.files) > 0
}

// ok reports whether doc o of s passes the filters other than the file.
func (f *filter) ok(sn *snapshot, s *segment, o int) bool {
	d := s.docs
	switch {
	case d.ids[o] > f.snap:
		return false
	case f.sess != 0 && d.sess[o] != f.sess:
		return false
	case f.dirs != nil && !f.dirs[d.sess[o]]:
		return false
	case f.kind >= 0 && int(d.kinds[o]) != f.kind:
		return false
	case f.role != "" && d.roleNames[d.roles[o]] != f.role:
		return false
	case f.hasSince && d.times[o] < f.since:
		return false
	case f.hasUntil && d.times[o] > f.until:
		return false
	}
	if s.allLive {
		return true
	}
	_, live := sn.live[d.sess[o]]
	return live
}

// markFiles sets fFile on the docs of segment i that pass the file filter.
func (e *evaluation) markFiles(i int, sc *scores) error {
	s := e.sn.segs[i]
	var terms []string
	for _, a := range e.f.files {
		if !slices.Contains(terms, a.term) {
			terms = append(terms, a.term)
		}
	}
	data, err := s.source(e.ctx, e.tx).get(terms)
	if err != nil {
		return err
	}
	for t, b := range data {
		list, err := decodePostings(b, s.docs.len())
		if err != nil {
			return fmt.Errorf("%w: segment %d: %w", ErrCorrupt, s.id, err)
		}
		for _, a := range e.f.files {
			if a.term != t {
				continue
			}
			if a.dir == "" {
				sc.mark(list, fFile)
				continue
			}
			for _, p := range list {
				if e.sn.live[s.docs.sess[p.ord]].dir == a.dir {
					sc.mark([]posting{p}, fFile)
				}
			}
		}
	}
	return nil
}

// byFile lists the docs touching the file, newest first.
func (e *evaluation) byFile(off, limit int) ([]cand, bool, error) {
	var all []cand
	for i, s := range e.sn.segs {
		sc := newScores(s.docs.len())
		if err := e.markFiles(i, sc); err != nil {
			return nil, false, err
		}
		for _, o := range sc.hits {
			if e.f.ok(e.sn, s, int(o)) {
				all = append(all, cand{seg: i, ord: o})
			}
		}
	}
	e.sortCands(all)
	return page(all, off, limit)
}

func page(all []cand, off, limit int) ([]cand, bool, error) {
	if off >= len(all) {
		return nil, false, nil
	}
	end := min(off+limit, len(all))
	return all[off:end], len(all) > end, nil
}
