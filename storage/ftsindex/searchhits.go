package ftsindex

// Result assembly: the page's hits and the cursor that continues it.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
)

// hits makes the page's hits from the segments' attributes and the sessions' rows (for their
// current name and working directory); a session gone meanwhile is left out.
func (e *evaluation) hits(order []cand) ([]Hit, error) {
	out := []Hit{}
	if len(order) == 0 {
		return out, nil
	}
	var sess []any
	for _, c := range order {
		if id := e.sn.segs[c.seg].docs.sess[c.ord]; !slices.Contains(sess, any(id)) {
			sess = append(sess, id)
		}
	}
	rows, err := e.tx.QueryContext(e.ctx, `SELECT id, sid, name, working_dir FROM sessions WHERE id IN (?`+strings.Repeat(`, ?`, len(sess)-1)+`)`, sess...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type row struct{ sid, name, dir string }
	byID := map[int64]row{}
	for rows.Next() {
		var id int64
		var r row
		if err := rows.Scan(&id, &r.sid, &r.name, &r.dir); err != nil {
			return nil, err
		}
		byID[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, c := range order {
		d := e.sn.segs[c.seg].docs
		r, ok := byID[d.sess[c.ord]]
		if !ok {
			continue
		}
		h := Hit{SessionID: r.sid, SessionName: r.name, WorkingDir: r.dir, Seq: d.seqs[c.ord], EntryID: d.entry(int(c.ord)),
			Kind: kindName(d.kinds[c.ord]), Role: d.roleNames[d.roles[c.ord]], Time: unnanos(d.times[c.ord])}
		if e.q.Match != nil {
			h.Score = c.score
		}
		out = append(out, h)
	}
	return out, nil
}

// cursor is a page position: offset within the snapshot of doc ids floor..snap (floor 0: no
// ranking window), of the index file stamp, for the query with hash.
type cursor struct {
	stamp int64
	snap  int64
	floor int64
	off   int
	hash  uint64
}

func (c cursor) String() string {
	s := fmt.Sprintf("1.%d.%d.%d.%d.%x", c.stamp, c.snap, c.floor, c.off, c.hash)
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func parseCursor(s string) (cursor, error) {
	bad := fmt.Errorf("%w: cursor %.40q is not one this search returned; search again without cursor", ErrInvalid, s)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, bad
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 6 || parts[0] != "1" {
		return cursor{}, bad
	}
	var c cursor
	var e [5]error
	c.stamp, e[0] = strconv.ParseInt(parts[1], 10, 64)
	c.snap, e[1] = strconv.ParseInt(parts[2], 10, 64)
	c.floor, e[2] = strconv.ParseInt(parts[3], 10, 64)
	c.off, e[3] = strconv.Atoi(parts[4])
	c.hash, e[4] = strconv.ParseUint(parts[5], 16, 64)
	if errors.Join(e[:]...) != nil || c.off < 0 || c.off > 1_000_000 || c.floor < 0 {
		return cursor{}, bad
	}
	return c, nil
}

// fingerprint hashes what a cursor must not change between pages (not the limit).
func fingerprint(q Query) uint64 {
	h := fnv.New64a()
	match := ""
	if q.Match != nil {
		match = q.Match.String()
	}
	for _, s := range []string{match, q.SessionID, q.WorkingDir, q.Role, q.Kind, q.File,
		strconv.FormatInt(nanos(q.Since), 10), strconv.FormatInt(nanos(q.Until), 10)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}
