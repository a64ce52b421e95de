package ftsindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Stats describe the index on disk.
type Stats struct {
	// File is the database in use; Bytes its size with its -wal file.
	File  string
	Bytes int64
	// Sessions and Docs count what is indexed.
	Sessions, Docs int64
}

// Stats returns the index's size and counts.
func (ix *Index) Stats(ctx context.Context) (Stats, error) {
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return Stats{}, err
	}
	defer release()
	st := Stats{File: db.path}
	st.Bytes, err = db.size()
	if err != nil {
		return Stats{}, err
	}
	err = db.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM sessions), (SELECT v FROM counters WHERE k = 'docs')`).Scan(&st.Sessions, &st.Docs)
	return st, classify(err)
}

// Size returns the bytes the index takes on disk (database and -wal file).
func (ix *Index) Size(ctx context.Context) (int64, error) {
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	return db.size()
}

// size stats the files; it never opens them (closing a descriptor of the database would drop
// this process's SQLite locks on it).
func (db *database) size() (int64, error) {
	var n int64
	for _, p := range []string{db.path, db.path + "-wal"} {
		fi, err := os.Stat(p)
		switch {
		case err == nil:
			n += fi.Size()
		case !os.IsNotExist(err):
			return 0, err
		}
	}
	return n, nil
}

// Verify checks the whole database (SQLite's integrity_check, then that every segment and
// its postings decode, that the sessions' counts and the segments hold the same live docs, and the
// counters) and returns an error wrapping ErrCorrupt describing the first problems. It reads
// every page: seconds for a large index.
func (ix *Index) Verify(ctx context.Context) error {
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	var problems []string
	rows, err := db.r.QueryContext(ctx, `PRAGMA integrity_check(20)`)
	if err != nil {
		return classify(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return classify(err)
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return classify(err)
	}
	if len(problems) == 0 {
		p, err := db.verifySegments(ctx)
		if err != nil {
			return classify(err)
		}
		problems = p
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s: %s", ErrCorrupt, db.path, strings.Join(problems, "; "))
	}
	return nil
}

// verifySegments decodes every segment and postings row of one snapshot and compares what
// they hold with the sessions' counts and the counters.
func (db *database) verifySegments(ctx context.Context) ([]string, error) {
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var problems []string
	live, err := liveSessions(ctx, tx)
	if err != nil {
		return nil, err
	}
	segs, err := listSegments(ctx, tx)
	if err != nil {
		return nil, err
	}
	var liveDocs, liveTerms int64
	var prevHi int64
	for _, m := range segs {
		d, packed, err := readSegment(ctx, tx, m.id)
		if errors.Is(err, ErrCorrupt) {
			problems = append(problems, err.Error())
			continue
		}
		if err != nil {
			return nil, err
		}
		if d.len() != m.ndocs || d.len() == 0 || d.ids[0] != m.lo || d.ids[d.len()-1] != m.hi || m.lo <= prevHi {
			problems = append(problems, fmt.Sprintf("segment %d: its row says %d docs %d..%d, its docs are %d", m.id, m.ndocs, m.lo, m.hi, d.len()))
		}
		prevHi = m.hi
		for o := range d.len() {
			if _, ok := live[d.sess[o]]; ok {
				liveDocs++
				liveTerms += int64(d.lens[o])
			}
		}
		it, err := termSource{ctx: ctx, q: tx, seg: m.id, packed: packed}.iter("", "")
		if err != nil {
			return nil, err
		}
		for {
			ok, err := it.next()
			if err != nil {
				it.close()
				return nil, err
			}
			if !ok {
				break
			}
			if _, err := decodePostings(it.data(), d.len()); err != nil && len(problems) < 20 {
				problems = append(problems, fmt.Sprintf("segment %d term %q: %v", m.id, it.term(), err))
			}
		}
		it.close()
	}
	var docs, docsTerms, cDocs, cTerms int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(ndocs), 0), coalesce(sum(nterms), 0) FROM sessions`).Scan(&docs, &docsTerms); err != nil {
		return nil, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT v FROM counters WHERE k = 'docs'), (SELECT v FROM counters WHERE k = 'terms')`).Scan(&cDocs, &cTerms); err != nil {
		return nil, err
	}
	if docs != liveDocs || docsTerms != liveTerms {
		problems = append(problems, fmt.Sprintf("the sessions count %d docs (%d terms) but the segments hold %d live docs (%d terms)", docs, docsTerms, liveDocs, liveTerms))
	}
	if cDocs != docs || cTerms != docsTerms {
		problems = append(problems, fmt.Sprintf("the counters say %d docs (%d terms), the sessions %d (%d)", cDocs, cTerms, docs, docsTerms))
	}
	return problems, nil
}

// Optimize merges the segments into as few as the size cap allows (dropping deleted docs)
// and gives the freed pages back to the file system: smaller and faster to search. Worth
// running after a full rebuild; it rewrites the whole index, so not on every save.
func (ix *Index) Optimize(ctx context.Context) error {
	db, release, err := ix.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	for {
		done, err := db.mergeOnce(ctx, optimizeRun, 0)
		if err != nil {
			return classify(err)
		}
		if !done {
			break
		}
	}
	return db.vacuum(ctx)
}

// closePackLimit is the packLimit of the merge Close makes (closeRun), twice the usual one:
// the run it merges is the newest small segments, whose terms repeat from one to the next,
// and written as rows (one per term) their merge would take more room than they do. A store
// of 1,000 5-message sessions ends with packed segments of about 1,300 and 3,700 docs; one
// packed segment of 5,000 takes 60 KiB less (of 400). Searching processes keep it decoded as
// they do every packed segment, within packBudget; merging 5,000 docs made the stop of the
// server that saved them 15-30 ms longer (73 -> 86-106 ms).
const closePackLimit = 2 * packLimit

// closeMergeDocs bounds the docs Close merges: fewer than a packed segment of its merge holds.
const closeMergeDocs = closePackLimit - 1

// closeRun picks the newest run of two or more packed segments (not ones packedDue wrote as
// rows, which would only be packed and rewritten again), none final, that hold at most
// closeMergeDocs docs together, or nil. A store's newest segments are the small ones its
// last saves made; each repeats the terms it shares with the others, so the index of a
// small store (a thousand short sessions: eleven segments) takes less than half the space
// once they are one. The run need not end with the newest segment: when that one is too
// large to join the others, the ones before it are still worth merging.
func closeRun(segs []segMeta) []segMeta {
	for end := len(segs); end >= 2; end-- {
		i, n := end, 0
		for i > 0 && segs[i-1].level != finalLevel && segs[i-1].packed > 0 && n+segs[i-1].ndocs <= closeMergeDocs {
			i--
			n += segs[i].ndocs
		}
		if end-i >= 2 {
			return segs[i:end]
		}
	}
	return nil
}

// optimizeRun picks the first run of two or more consecutive segments that fit in capDocs
// together, or nil.
func optimizeRun(segs []segMeta) []segMeta {
	for i := 0; i < len(segs); i++ {
		n, j := 0, i
		for j < len(segs) && n+segs[j].ndocs <= capDocs {
			n += segs[j].ndocs
			j++
		}
		if j-i >= 2 {
			return segs[i:j]
		}
	}
	return nil
}

// vacuum returns free pages to the file system (incremental auto-vacuum) and truncates the
// WAL, so that the file's size is the index's.
func (db *database) vacuum(ctx context.Context) error {
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return classify(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA incremental_vacuum`); err != nil {
		return classify(err)
	}
	_, err = conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return classify(err)
}
