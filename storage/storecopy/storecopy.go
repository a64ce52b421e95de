// Package storecopy copies sessions from one storage.Store to another, whatever their
// backends: header (id, created, nonce, working directory, parent), records byte for byte with
// their sequence numbers, and listing metadata. A copy is idempotent and resumable: a session
// already complete in the destination is left alone, one half copied (an interrupted run) is
// completed from its last record, and a session that differs (another session under the same
// id, or a destination that has records the source lacks) is reported as a conflict and left
// untouched.
//
// storecopy imports only storage; cmd (sessionmem migrate) passes memory's key and barrier
// rules in Options.
package storecopy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// ErrConflict marks a session that exists in both stores but is not the same session, or not
// a prefix of the source's: it is not copied.
var ErrConflict = errors.New("the destination holds a different session under this id")

// Options tune a copy. The zero value copies without keys or barriers.
type Options struct {
	// Key returns the record's idempotency key (storage.Record.Key) in the destination.
	Key func(storage.Record) string
	// Barrier reports whether the destination starts a new chunk at the record.
	Barrier func(storage.Record) bool
	// BatchRecords and BatchBytes bound one destination Update (one transaction on
	// PostgreSQL), so a huge session is copied in steps that each survive an interruption
	// (defaults 5,000 records and 32 MiB).
	BatchRecords int
	BatchBytes   int
	// Progress is called before each session with the number of sessions done and the total.
	Progress func(done, total int, id string)
}

// Result says what a copy did.
type Result struct {
	Sessions  int   // sessions in the source
	Created   int   // sessions created in the destination
	Completed int   // sessions that received records or metadata (created ones included)
	UpToDate  int   // sessions already complete in the destination
	Records   int64 // records copied
	// Failed lists the sessions not copied (conflicts, damaged sources), with why.
	Failed []Failure
}

// Failure is one session a copy left alone.
type Failure struct {
	ID  string
	Err error
}

// Copy copies every session of src into dst. It returns an error only when it cannot go on
// (a store unreachable, ctx done); sessions it skipped are in Result.Failed.
func Copy(ctx context.Context, dst, src storage.Store, opts Options) (Result, error) {
	ids, err := src.IDs(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("list source sessions: %w", err)
	}
	res := Result{Sessions: len(ids)}
	for i, id := range ids {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if opts.Progress != nil {
			opts.Progress(i, len(ids), id)
		}
		r, err := CopySession(ctx, dst, src, id, opts)
		res.Records += r.Records
		switch {
		case err == nil && r.UpToDate:
			res.UpToDate++
		case err == nil:
			res.Completed++
			if r.Created {
				res.Created++
			}
		case errors.Is(err, storage.ErrNotFound) && r.SourceGone:
			// Deleted from the source meanwhile.
			res.Sessions--
		case errors.Is(err, storage.ErrUnavailable) || ctx.Err() != nil || errors.Is(err, storage.ErrClosed):
			return res, err
		default:
			res.Failed = append(res.Failed, Failure{ID: id, Err: err})
		}
	}
	if opts.Progress != nil {
		opts.Progress(len(ids), len(ids), "")
	}
	return res, nil
}

// SessionResult says what CopySession did.
type SessionResult struct {
	Created    bool  // the session was created in the destination
	UpToDate   bool  // it was already complete there
	Records    int64 // records copied
	SourceGone bool  // the source session does not exist (any more)
}

// CopySession copies one session, or completes a partial copy.
func CopySession(ctx context.Context, dst, src storage.Store, id string, opts Options) (SessionResult, error) {
	var res SessionResult
	if opts.BatchRecords <= 0 {
		opts.BatchRecords = 5000
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = 32 << 20
	}
	meta, err := src.Get(ctx, id)
	if err != nil {
		res.SourceGone = errors.Is(err, storage.ErrNotFound)
		return res, fmt.Errorf("read source session %s: %w", id, err)
	}
	var hdr storage.Header
	var last uint64
	err = src.View(ctx, id, func(r storage.Reader) error {
		hdr, last = r.Header(), r.LastSeq()
		return nil
	})
	if err != nil {
		res.SourceGone = errors.Is(err, storage.ErrNotFound)
		return res, fmt.Errorf("read source session %s: %w", id, err)
	}
	// The listing metadata the source had when it had `last` records; a newer one (the
	// source grew meanwhile) is copied by the next run.
	if meta.LastSeq != last {
		return res, fmt.Errorf("source session %s changed while being read; run the copy again", id)
	}
	h := hdr
	h.Version = 0 // the destination's own format
	start := storage.Meta{Name: meta.Name, Model: meta.Model, Provider: meta.Provider, Updated: hdr.Created}
	switch err := dst.Create(ctx, h, start); {
	case err == nil:
		res.Created = true
	case errors.Is(err, storage.ErrExists):
	default:
		return res, fmt.Errorf("create session %s: %w", id, err)
	}
	seen := map[string]bool{}
	for {
		dm, err := dst.Get(ctx, id)
		if err != nil {
			return res, fmt.Errorf("read session %s: %w", id, err)
		}
		done := false
		var n int64
		err = dst.Update(ctx, id, func(w storage.Writer) error {
			dh := w.Header()
			if dh.Nonce != hdr.Nonce || !dh.Created.Equal(hdr.Created) || dh.WorkingDir != hdr.WorkingDir {
				return fmt.Errorf("session %s was created at %s in %s there, at %s in %s here: %w", id,
					dh.Created.Format(time.RFC3339Nano), dh.WorkingDir, hdr.Created.Format(time.RFC3339Nano), hdr.WorkingDir, ErrConflict)
			}
			have := w.LastSeq()
			if have > last {
				return fmt.Errorf("session %s has %d records there, %d here: %w", id, have, last, ErrConflict)
			}
			if have > 0 {
				if err := sameRecord(ctx, w, src, id, have); err != nil {
					return err
				}
			}
			recs, err := sourceBatch(ctx, src, id, have+1, last, opts)
			if err != nil {
				return err
			}
			done = have+uint64(len(recs)) == last
			if len(recs) == 0 && sameMeta(dm, meta) {
				return nil
			}
			if err := dedupeKeys(w, recs, seen, opts.Key, have); err != nil {
				return err
			}
			if _, err := w.Append(recs, meta); err != nil {
				return err
			}
			n = int64(len(recs))
			return nil
		})
		if err != nil {
			return res, err
		}
		res.Records += n
		if done {
			res.UpToDate = n == 0 && res.Records == 0 && !res.Created && sameMeta(dm, meta)
			return res, nil
		}
	}
}

// dedupeKeys clears the key of each record in recs that seen (the keys copied so far) already
// holds, so a key the source repeats is stored once, with its first record.
func dedupeKeys(w storage.Writer, recs []storage.Record, seen map[string]bool, key func(storage.Record) string, have uint64) error {
	if key != nil && have > 0 && len(seen) == 0 {
		// A resumed copy: learn the keys already copied, so a key the source repeats
		// is stored once, with its first record, as an uninterrupted copy stores it.
		for rec, err := range w.Records(1) {
			if err != nil {
				return err
			}
			if k := key(rec); k != "" {
				seen[k] = true
			}
		}
	}
	for i := range recs {
		if k := recs[i].Key; k != "" {
			if seen[k] {
				recs[i].Key = ""
			}
			seen[k] = true
		}
	}
	return nil
}

// sameRecord checks that record seq is the same in the destination (w) and the source.
func sameRecord(ctx context.Context, w storage.Writer, src storage.Store, id string, seq uint64) error {
	var mine []byte
	for rec, err := range w.Records(seq) {
		if err != nil {
			return err
		}
		mine = append([]byte(nil), rec.Data...)
		break
	}
	same := false
	err := src.View(ctx, id, func(r storage.Reader) error {
		for rec, err := range r.Records(seq) {
			if err != nil {
				return err
			}
			same = rec.Seq == seq && string(rec.Data) == string(mine)
			break
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read source session %s: %w", id, err)
	}
	if !same {
		return fmt.Errorf("session %s: record %d differs between the stores: %w", id, seq, ErrConflict)
	}
	return nil
}

// sourceBatch reads records from..last (within the batch bounds) from src, as the Data to
// append again.
func sourceBatch(ctx context.Context, src storage.Store, id string, from, last uint64, opts Options) ([]storage.Record, error) {
	var recs []storage.Record
	if from > last {
		return nil, nil
	}
	size := 0
	err := src.View(ctx, id, func(r storage.Reader) error {
		for rec, err := range r.Records(from) {
			if err != nil {
				return err
			}
			if rec.Seq > last || len(recs) >= opts.BatchRecords || size >= opts.BatchBytes {
				break
			}
			data, ok := storage.StripSeq(rec.Data)
			if !ok || rec.Seq != from+uint64(len(recs)) {
				return fmt.Errorf("source session %s: record %d is not a stored record: %w", id, rec.Seq, storage.ErrCorrupt)
			}
			out := storage.Record{Kind: rec.Kind, Data: data}
			if opts.Key != nil {
				out.Key = opts.Key(rec)
			}
			if opts.Barrier != nil {
				out.Barrier = opts.Barrier(rec)
			}
			recs = append(recs, out)
			size += len(data)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read source session %s: %w", id, err)
	}
	return recs, nil
}

// sameMeta reports whether the destination's listing metadata already equals the source's.
func sameMeta(a, b storage.Meta) bool {
	return a.Name == b.Name && a.Model == b.Model && a.Provider == b.Provider && a.Updated.Equal(b.Updated) &&
		a.Messages == b.Messages && a.Compactions == b.Compactions && a.ContextTokens == b.ContextTokens &&
		a.Preview == b.Preview && a.Leaf == b.Leaf && a.Checkpoint == b.Checkpoint && a.LastSeq == b.LastSeq
}
