// Package local is sessionmem's local session store (a storage.Store): append-only JSONL logs
// compressed with zstd in one directory, a listing index, cross-process locks and crash
// recovery.
//
// # What it owns
//
// Everything under the store directory (dirs 0700, files 0600):
//
//	index.jsonl                   listing index: Meta lines (a compressed snapshot, then a log),
//	                              newest wins; rebuildable
//	index.lock                    flock serialising index appends and rewrites
//	sessions/<id>.zst             sealed history; a valid zstd stream (zstdcat prints the lines)
//	sessions/<id>.tail.jsonl      records not yet sealed, plain JSONL after a header line, then zeros;
//	                              absent in a session at rest (notail.go)
//	sessions/<id>.lock            per-session flock; absent in a session at rest (restLock)
//	sessions/<id>.state           state snapshot (storage.Snapshots; snapshot.go), a disposable cache
//	search/                       full-text index (package ftsindex), with Options.Docs only
//
// <id>.zst starts with a skippable frame (magic 0x184D2A50) holding the Header as JSON with
// "v" (the format version). Then come records, each a 32-byte skippable frame (magic
// 0x184D2A5E; little-endian payload u32 frame length, u32 record count, u64 first seq, u64
// xxh64 of those 16 bytes followed by the frame) and one standard zstd frame (Default level,
// content size and content checksum) holding that many JSONL lines. The checksum in the
// record header lets recovery check a record without decompressing it.
//
// <id>.tail.jsonl starts with {"v":2,"tail":"<id>"}; each following line is one record,
// `{"seq":N,` followed by the rest of the caller's object. An Append batch is one write and
// one sync; each of its lines but the last ends with a space before the newline (JSON
// allows it, and reads drop it), so that recovery keeps a batch only with its last line: a
// power loss can keep some pages of the write and lose others, and an Append is atomic. The tail is sealed (compressed into one record of <id>.zst, fsync, then truncated
// back to its header line, fsync: appends write over the old lines) when it reaches
// Options.SealRecords or SealBytes (1,024 records or 1 MiB: larger frames keep about 0.9 of
// the whole-stream compression ratio instead of 0.77 at 256 KiB, and seal a quarter as often),
// before a Barrier record (so a compaction starts a new frame and a resume decodes from there
// only), in the background once the tail has been idle for Options.IdleSeal (15 s; eight
// times that below 16 KiB) or while the tails this process wrote hold more than
// MaxPlainBytes (64 MiB), and on Close for the sessions this process wrote; these idle seals
// remove the emptied tail file instead (a missing tail reads as an empty one, and the next
// append writes it whole: a small session at rest takes one file and one disk block). Create
// writes no tail, and a new session's first append, up to 64 KiB, goes into the .zst as its
// first record, the file written whole (temp file, fsync, rename, directory fsync: as many
// fsyncs as writing the tail whole), so a session saved once never has a tail file. The background
// sealer only takes a session nobody holds (a non-blocking flock) and skips a tail another
// process appended to within the last few seconds, so no save waits behind it.
//
// index.jsonl starts with {"v":2,"index":"sessionmem","snapshot":N}, followed by N bytes: a
// zstd frame (content size and checksum) holding the lines the last rewrite kept, about a
// seventh of their size (a snapshot that does not decode makes the index damaged: Open
// rebuilds it). Each line, in the snapshot or after it, is
// {"id","files":{"zst","tail"},"meta":{...}} or a tombstone {"id","deleted":true}; version 1
// (earlier builds) has no snapshot, and is read as before until a rewrite makes it version 2.
// Every
// Create, Append, Seal and Delete adds one line before it returns, so every process lists a
// session as a read shows it as soon as the call returned. No index line is fsynced: on ext4
// an append of a few hundred bytes to another file adds nothing measurable to the tail's
// fsync (delayed allocation keeps the index's new block out of the journal commit; see
// docs/BENCHMARKS.md), and Open reconciles the index against the session files, so a line
// lost to a crash only costs a re-summary. A line never replaces one with a higher
// last_seq. When the log holds more than two lines per live session (and more than 256)
// it is rewritten atomically (a new snapshot of the live lines), and so it is in the background once this process has written
// nothing for IdleSeal and more than half its lines are superseded, and on Close (a store at
// rest keeps about one line per session). "files" records the .zst's size and where the tail's data
// ends (its size, unless it is padded): at Open a session whose files no longer end there
// (or that has no line, or whose index is missing or damaged) is summarised again through
// Options.Summarize.
//
// # Padded tails
//
// A version 2 tail is padded: zeros, written and fsynced ahead of the data, follow its last
// line to the end of the file, and an append writes its lines where the data ends, into the
// zeros, and syncs them with fdatasync. The file's size does not change, so on ext4 (and
// file systems like it) the sync writes the data and flushes the disk's cache without
// committing the journal, which an append that grows the file needs: 50–100 µs of a
// ~2 KB save on the machines measured (docs/BENCHMARKS.md). An append that does not fit
// writes its lines followed by new padding (about as much as the tail holds, 64 KiB to
// 1 MiB, to a 4 KiB boundary, no more than the tail takes before it is sealed) and fsyncs;
// when the disk has no room for the padding, it writes the lines alone.
// JSON never holds a NUL byte, so the data ends at the first NUL where a line would start.
// A seal truncates the tail to its header, padding and all; the background sealer trims the
// padding of a tail idle for IdleSeal that is too small to seal yet, so an idle session keeps
// no zeros on disk. The index records where a padded tail's data ends instead of its size
// (fileSizes.Tail), and Open's reconciliation finds a line stale when no NUL starts there.
//
// Why padding cannot hide lost data or bring back unacknowledged data: an append writes only
// at the data end, so after kill -9 what follows the data is a cut-short write (a torn line)
// and then zeros, which the next writer cuts like any torn end. A power loss can also leave a
// later page of an unacknowledged in-place write on disk without the page before it, so zeros
// can be followed by a stray piece of a record; a process reads every byte after the data end
// before it first writes to a padded tail (a writer with no view of it checked that way) and
// cuts the tail back to its data if any is not zero, so no later append can end where a stray
// line would seem to continue it. Version 1 tails (earlier builds) end where their data ends;
// they are read and appended to as before and replaced by an empty version 2 tail when a seal
// empties them. Builds that read only version 1 refuse a version 2 tail (ErrNewerFormat)
// rather than append after its padding.
//
// # Durability and recovery
//
// Every file operation goes through fileSystem (fs.go): the operating system's files in
// production (osFS, with the same calls the store made before it had the interface), a
// simulated disk that loses what was not synced in the power-loss tests.
//
// A write that returned nil survives kill -9 and power loss. New files are written to a temp
// file, fsynced, renamed and the directory fsynced. Every writer open (Update) walks the
// record headers and checks their checksums, cuts a torn or garbage end back to the last good
// record, drops a partial last tail line, and skips tail lines already sealed (a crash between
// seal and truncation). A damaged record followed by intact ones is not a crash shape, so it
// is reported as ErrCorrupt rather than cut. A last record that is complete, continues the
// sequence and fails its checksum is a torn seal if the tail still holds its records (a power
// loss can keep a record's length and lose one of its pages; a seal is fsynced before the
// tail is emptied), which writers cut and readers leave out; otherwise it was durable and
// damaged later, and cutting it would lose acknowledged records, so it is ErrCorrupt too. The
// valid tail is the run of lines continuing the sequence, up to the last one that ends a
// batch; a line that is invalid JSON or out of sequence ends it (a batch is written at once,
// so what follows was never acknowledged).
// Readers (View) ignore a torn end without repairing it. Data a decoder returned together with an error is never passed on: a frame
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
// TestCrashPoints (crash_test.go) holds the store to these promises on a simulated disk
// (crashfs_test.go) that keeps only what a sync made durable: at 2,000 points of a workload
// of saves, compactions, seals, idle trims, snapshots, rewrites, deletes and index rewrites it
// loses power (everything unsynced lost; or any subset of the unsynced pages, a prefix or any
// subset of the unsynced directory changes; or, as kill -9, nothing), reopens the store and
// checks every acknowledged record is there once and in order, nothing unacknowledged is
// visible except a whole Append in flight, Verify finds no damage, and List and Get agree
// with the records; at some points a restart's recovery runs too, and loses power itself.
// SESSIONMEM_CRASH_POINTS sets a longer run.
//
// # Format versions
//
// Every file carries its format version: FormatVersion in the header frame's "v",
// IndexFormatVersion in the index header line (2 since the index keeps a compressed snapshot),
// TailFormatVersion in the tail header line (2 since tails are padded).
// Beside it, "by" records the sessionmem version that wrote the file (storage.WriterVersion;
// absent in files of earlier builds, and ignored by them). This package reads files of any
// version up to those and refuses newer ones with a storage.NewerFormatError (ErrNewerFormat)
// that names the version that wrote them, so the user knows what to upgrade to. A session of a newer version is skipped by List and refused by View and
// Update; a newer index fails Open, because rewriting it would downgrade the store. A future
// version that changes the layout must keep reading older files and upgrade a file only by
// rewriting it whole (temp file, fsync, rename, directory fsync) under the session's exclusive
// lock, so that any reader sees either the old or the new file.
//
// # Concurrency
//
// A Store is safe for concurrent use by goroutines and by processes sharing the directory.
// Update holds the session's exclusive flock, View a shared one (on a descriptor open for
// reading when the lock file may not be opened for writing: a store that became read-only is
// still read, and its writers fail where they write, with EROFS or EACCES); each call re-checks the files
// (inode, size, mtime) under the lock and reads only what other processes appended, so
// LastSeq is always current. An append into a padded tail changes neither its size nor, within
// a timestamp's granularity, its mtime: a call reads the bytes where the data it knows ends
// (one small read when they are zeros) instead. Index appends happen under an exclusive flock on index.lock;
// List and Get fold only the index bytes appended since their last call. Delete removes the
// lock file while holding it, and so does every write that leaves the session without a tail;
// a read that does leaves the file to the background sealer, which removes it once the
// session has been idle for IdleSeal, if it can take the lock exclusively without waiting and
// there is still no tail (Close removes what is left; restlock.go): a session at rest has no
// lock file, the next call creates it; lockers re-check the inode after locking (restLock;
// not on Windows, where a file system without POSIX delete semantics keeps a removed file's
// name until its last handle closes and fails opens of it meanwhile).
// A reader of a store that may not be written, finding no lock file and unable to make one,
// reads without a lock.
//
// Every call opens the session's lock file, .zst and tail and closes them when it returns
// (about 20 µs of syscalls, a few percent of an fsynced append), so this process never keeps
// a session another process deleted alive on disk, and a flock always belongs to one call:
// Views of one session share it (LOCK_SH), an Update excludes everyone, in this process and
// others alike. A View may nest in a View of the same session; an Update or Delete inside a
// View of the same session deadlocks. A wait for a lock ends with ctx; the abandoned flock
// call then closes its descriptor when it returns. Between calls the store keeps only each
// session's view (frame table and tail line offsets, revalidated by inode, size and mtime
// under the lock) for up to Options.MaxCachedSessions sessions, and the last two decoded
// frames (at most 8 MiB), so the pages of a resume do not decode the frame they share twice.
//
// # Search
//
// With Options.Docs the store is a storage.Searcher over an index in search/ (ftsindex, in
// SQLite), derived from the session files and never on a save's fsync path (searchsync.go):
// after an Update returns its lock, the records it appended go to a background queue that
// indexes them about 100 ms later; a syncer goroutine looks every 400 ms for records other
// processes appended and did not index (a range still missing at the next look is indexed:
// a live writer's own queue always wins that race), and at open catches up on every session,
// most recently updated first, reading a chunk of records per shared lock, several sessions
// at once (searchfeed.go; their chunks reach the index in that order all the same), into
// ftsindex.IndexAll's segments (built in memory: up to 32 MiB for Reindex, 4 MiB for a
// server's catch-up). Delete tombstones
// the session in the index; a Rewrite (redaction) makes the syncer replace the whole index,
// which CompactMeta awaits, so that no byte of the old text survives in it. A missing,
// damaged or older-format index is replaced by an empty one and rebuilt; the file
// search/rebuild.lock exists while a rebuild is incomplete (its flock held by the process
// rebuilding, taken over when that process dies), and Search answers
// storage.ErrSearchUnavailable meanwhile (memory then scans the sessions).
//
// # Imports
//
// local imports storage (the interface it implements), storage/fts and storage/ftsindex (the
// search index), the standard library, klauspost/compress/zstd, cespare/xxhash and
// tidwall/gjson; nothing else of sessionmem (memory reaches it only through storage.Store and
// the DocsFunc it passes in Options; cmd opens it).
package local
