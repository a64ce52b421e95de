// Package local is sessionmem's local session store (a storage.Store): append-only JSONL logs
// compressed with zstd in one directory, a listing index, cross-process locks and crash
// recovery.
//
// # What it owns
//
// Everything under the store directory (dirs 0700, files 0600):
//
//	index.jsonl                   listing index: a log of Meta lines, newest wins; rebuildable
//	index.lock                    flock serialising index appends and rewrites
//	sessions/<id>.zst             sealed history; a valid zstd stream (zstdcat prints the lines)
//	sessions/<id>.tail.jsonl      records not yet sealed, plain JSONL after a header line
//	sessions/<id>.lock            per-session flock
//
// <id>.zst starts with a skippable frame (magic 0x184D2A50) holding the Header as JSON with
// "v" (the format version). Then come records, each a 32-byte skippable frame (magic
// 0x184D2A5E; little-endian payload u32 frame length, u32 record count, u64 first seq, u64
// xxh64 of those 16 bytes followed by the frame) and one standard zstd frame (Default level,
// content size and content checksum) holding that many JSONL lines. The checksum in the
// record header lets recovery check a record without decompressing it.
//
// <id>.tail.jsonl starts with {"v":1,"tail":"<id>"}; each following line is one record,
// `{"seq":N,` followed by the rest of the caller's object. An Append batch is one write and
// one fsync. The tail is sealed (compressed into one record of <id>.zst, fsync, then truncated
// back to its header line, made durable by the next append's fsync) when it reaches
// Options.SealRecords or SealBytes (1,024 records or 1 MiB: larger frames keep about 0.9 of
// the whole-stream compression ratio instead of 0.77 at 256 KiB, and seal a quarter as often),
// before a Barrier record (so a compaction starts a new frame and a resume decodes from there
// only), and on Close for the sessions this process wrote.
//
// index.jsonl starts with {"v":1,"index":"sessionmem"}; each further line is
// {"id","files":{"zst","tail"},"meta":{...}} or a tombstone {"id","deleted":true}. Every
// Create, Seal and Delete adds one line, and so does an Append, except that an append which
// only moves counters (messages, tokens, leaf, times) within a second of this process's last
// line for that session is held back and written with the next line, by a timer within a
// second, or at Close: a line per append would add a data block to every tail fsync (about
// 1.5x the append cost on ext4). The writing process sees held-back lines at once; other
// processes' listings lag by at most a second. A line never replaces one with a higher
// last_seq, so a late held-back line cannot undo a newer one. No index line is fsynced: Open
// reconciles the index against the session files, so a lost line only costs a re-summary.
// When the log holds more than four
// lines per live session it is rewritten atomically. "files" records the session files' sizes:
// at Open a session whose sizes differ (or that has no line, or whose index is missing or
// damaged) is summarised again through Options.Summarize.
//
// # Durability and recovery
//
// A write that returned nil survives kill -9 and power loss. New files are written to a temp
// file, fsynced, renamed and the directory fsynced. Every writer open (Update) walks the
// record headers and checks their checksums, cuts a torn or garbage end back to the last good
// record, drops a partial last tail line, and skips tail lines already sealed (a crash between
// seal and truncation). A damaged record followed by intact ones is not a crash shape, so it
// is reported as ErrCorrupt rather than cut; so is a last record that is complete, continues
// the sequence and fails its checksum (a crash leaves a record cut short; a whole one was
// durable and damaged later, and cutting it would lose acknowledged records). The valid tail is the run of lines continuing the
// sequence; a line that is invalid JSON or out of sequence ends it (a batch is written at once,
// so what follows was never acknowledged). Readers (View) ignore a torn end without
// repairing it. Data a decoder returned together with an error is never passed on: a frame
// is checked completely (checksums, size, seq of every line) before any of its lines is
// yielded.
//
// Store.Verify checks one session completely (every checksum, every line) under its shared
// lock and reports torn ends and damage without writing; with repair it takes the exclusive
// lock and lets the writer recovery above cut the torn ends. It is stricter than that recovery
// in one respect: a torn last record whose header is intact while the tail does not hold its
// records cannot be a crash (a seal is fsynced before the tail is emptied), so Verify reports
// it as damage and does not cut it.
//
// # Format versions
//
// Every file carries FormatVersion (header frame "v", tail header line, index header line).
// This package reads files of any version up to FormatVersion and refuses newer ones with
// ErrNewerFormat. A session of a newer version is skipped by List and refused by View and
// Update; a newer index fails Open, because rewriting it would downgrade the store. A future
// version that changes the layout must keep reading older files and upgrade a file only by
// rewriting it whole (temp file, fsync, rename, directory fsync) under the session's exclusive
// lock, so that any reader sees either the old or the new file.
//
// # Concurrency
//
// A Store is safe for concurrent use by goroutines and by processes sharing the directory.
// Update holds the session's exclusive flock, View a shared one; each call re-checks the files
// (inode, size, mtime) under the lock and reads only what other processes appended, so
// LastSeq is always current. Index appends happen under an exclusive flock on index.lock;
// List and Get fold only the index bytes appended since their last call. Delete removes the
// lock file while holding it; lockers re-check the inode after locking.
//
// A session's descriptors (lock, .zst, tail) stay open between calls, so a call costs two
// flock calls and three stats instead of about 25 syscalls (a no-op Update: 7 µs instead of
// 25). Under the lock each cached descriptor is checked against a stat of its path; an open
// descriptor pins its inode, so an equal inode number proves it is still the file (another
// process's Delete, Create or tail rewrite shows as a different inode or a missing path, and
// the file is opened afresh). A flock belongs to the open file description, so this process's
// callers share one lock descriptor per session through an in-process gate: an Update has the
// session to itself and takes LOCK_EX; concurrent Views share one LOCK_SH, taken by the first
// and dropped by the last (a View may nest in a View of the same session; an Update or Delete
// inside a View of the same session deadlocks, as it always has). Waits for the gate and for
// the flock end with ctx. Data files are reference-counted, so a file replaced or evicted
// while a View reads it is closed only when that View returns. At most
// Options.MaxOpenSessions idle sessions keep descriptors (up to three each), least recently
// used closed first; Delete and Close close a session's descriptors, and a call that finds a
// session gone drops them, so deleted files are not kept alive (except, until then, those of
// a session another process deleted since this one last used it).
//
// # Imports
//
// local imports storage (the interface it implements), the standard library,
// klauspost/compress/zstd, cespare/xxhash and tidwall/gjson; nothing else of sessionmem (memory
// reaches it only through storage.Store; cmd opens it).
package local
