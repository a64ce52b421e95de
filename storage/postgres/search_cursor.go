package postgres

import (
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"

	"github.com/sessionmem/sessionmem/storage"
)

// universe is what a ranked search's pages rank: the documents floor < doc <= snap that match
// the query and come from its first rounds (search_rank.go), scored with the statistics of
// the first page (N, the average length and each ranked term's df, so that a document's
// score, hence its place, is the same on every page whatever is saved meanwhile).
type universe struct {
	snap, floor int64
	st          corpusStats
	dfs         []int64
	// rounds is how many rounds of the ranker the universe holds; -1: every match, fetched
	// at once (the newest window, floor > 0, or a query predicted to pass the budget that
	// did not).
	rounds   int
	windowed bool
	// tier is how many of the best documents by own score are ranked with their context
	// (search_context.go); bound is the tier-th of them (doc 0: every match is in the tier).
	tier  int
	bound key
}

// searchCursor is a page position: after the hit last, in phase 1 (the tier, ordered by
// score with context), 2 (the rest, by own score) or 0 (a search by file only, newest
// first: last.time and last.doc), for the query with hash.
type searchCursor struct {
	hash  uint64
	u     universe
	phase int
	last  key
}

func (c searchCursor) String() string {
	dfs := make([]string, len(c.u.dfs))
	for i, d := range c.u.dfs {
		dfs[i] = strconv.FormatInt(d, 10)
	}
	win := 0
	if c.u.windowed {
		win = 1
	}
	s := fmt.Sprintf("p2.%x.%d.%d.%d.%x.%d.%d.%d.%x.%d.%d.%d.%x.%d.%d.%s",
		c.hash, c.u.snap, c.u.floor, c.u.st.n, math.Float64bits(c.u.st.avgdl), c.u.rounds, win,
		c.u.tier, math.Float64bits(c.u.bound.score), c.u.bound.time, c.u.bound.doc,
		c.phase, math.Float64bits(c.last.score), c.last.time, c.last.doc, strings.Join(dfs, "-"))
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

// parseSearchCursor reads a cursor; ranked is the number of ranked terms of the query (0 for
// a search by file only). Anything that is not a cursor this query's pages could have
// returned is an error wrapping fts.ErrBadQuery.
func parseSearchCursor(s string, ranked int) (searchCursor, error) {
	bad := badQuery("cursor %.40q is not one this search returned; search again without cursor", s)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return searchCursor{}, bad
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 17 || parts[0] != "p2" {
		return searchCursor{}, bad
	}
	var c searchCursor
	var e []error
	hex := func(i int) uint64 {
		v, err := strconv.ParseUint(parts[i], 16, 64)
		e = append(e, err)
		return v
	}
	dec := func(i int) int64 {
		v, err := strconv.ParseInt(parts[i], 10, 64)
		e = append(e, err)
		return v
	}
	c.hash = hex(1)
	c.u.snap, c.u.floor, c.u.st.n = dec(2), dec(3), dec(4)
	c.u.st.avgdl = math.Float64frombits(hex(5))
	rounds, win, tier := dec(6), dec(7), dec(8)
	c.u.bound = key{math.Float64frombits(hex(9)), dec(10), dec(11)}
	phase := dec(12)
	c.last = key{math.Float64frombits(hex(13)), dec(14), dec(15)}
	if parts[16] != "" {
		for _, d := range strings.Split(parts[16], "-") {
			v, err := strconv.ParseInt(d, 10, 64)
			e = append(e, err)
			c.u.dfs = append(c.u.dfs, v)
		}
	}
	if errors.Join(e...) != nil {
		return searchCursor{}, bad
	}
	c.u.rounds, c.u.windowed, c.u.tier, c.phase = int(rounds), win == 1, int(tier), int(phase)
	finite := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
	ok := c.last.doc > 0 && c.u.floor >= 0 && c.u.snap >= c.u.floor && (win == 0 || win == 1) &&
		finite(c.last.score) && finite(c.u.bound.score) && finite(c.u.st.avgdl) && c.u.bound.doc >= 0
	if ranked == 0 {
		ok = ok && c.phase == 0 && len(c.u.dfs) == 0
	} else {
		ok = ok && (c.phase == 1 || c.phase == 2) && len(c.u.dfs) == ranked && c.u.st.n >= 0 && c.u.st.avgdl > 0 &&
			rounds >= -1 && rounds <= int64(ranked)+1 && tier >= 1 && tier <= 100*MaxSearchLimit &&
			(c.phase == 1 || c.u.bound.doc > 0)
		for _, d := range c.u.dfs {
			ok = ok && d >= 0
		}
	}
	if !ok {
		return searchCursor{}, bad
	}
	return c, nil
}

// searchFingerprint hashes what a cursor must not change between pages (not the limit).
func searchFingerprint(q storage.SearchQuery) uint64 {
	h := fnv.New64a()
	match := ""
	if q.Match != nil {
		match = q.Match.String()
	}
	for _, s := range []string{match, q.SessionID, q.WorkingDir, q.Role, q.Kind, q.File,
		strconv.FormatInt(clampNanos(q.Since), 10), strconv.FormatInt(clampNanos(q.Until), 10)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}
