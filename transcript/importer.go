package transcript

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sessionmem/sessionmem/memory"
)

// Importer imports transcript files into a memory.Service incrementally.
type Importer struct {
	// Svc receives the imports.
	Svc *memory.Service
	// StateDir holds one small JSON file per imported source with the checkpoint of the last
	// import, so the next import of a grown file parses only the new part. The CLI uses
	// "<store>/imports". Empty keeps checkpoints in this Importer's memory only; imports stay
	// correct (message ids make them idempotent) but each process starts by parsing whole files.
	StateDir string
	// IncludeSidechains imports Claude Code sidechain (Task agent) lines too.
	IncludeSidechains bool

	mu    sync.Mutex
	locks map[string]*sync.Mutex
	mem   map[string]Checkpoint
}

// ImportResult says what importing one file did.
type ImportResult struct {
	Path      string
	Format    Format
	SessionID string
	// Created is true when the import created the session.
	Created bool
	// Added counts the items (messages and compactions) stored by this import.
	Added int
	// Pinned counts the imported messages stored pinned (standing context such as Codex's
	// AGENTS.md instructions); Unpinned those stored unpinned because the session's pinned
	// messages would have exceeded memory.MaxPinnedTokens.
	Pinned, Unpinned int
	// Stats describes the part of the file this import parsed.
	Stats Stats
}

// ImportFile imports what path holds beyond the last import of it (all of it the first time).
// FormatAuto detects the format. Re-importing an unchanged file adds nothing. A file given as
// a format that holds none of its lines fails with a *FormatMismatchError and stores nothing.
func (im *Importer) ImportFile(ctx context.Context, path string, format Format) (ImportResult, error) {
	return im.importFile(ctx, path, format, false)
}

func (im *Importer) importFile(ctx context.Context, path string, format Format, hold bool) (ImportResult, error) {
	res := ImportResult{Path: path, Format: format}
	if im.Svc == nil {
		return res, errors.New("import: Importer.Svc is nil")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return res, fmt.Errorf("import %s: %w", path, err)
	}
	res.Path = abs
	given := format != FormatAuto
	if format == FormatAuto {
		if format, err = Detect(abs); err != nil {
			return res, fmt.Errorf("import: %w", err)
		}
		res.Format = format
	}
	unlock, err := im.lock(abs)
	if err != nil {
		return res, err
	}
	defer unlock()

	start, err := im.loadCheckpoint(abs)
	if err != nil {
		return res, err
	}
	if im.deletedSince(ctx, abs, start) {
		// The session was deleted after the last import and its agent has gone on with it:
		// import the whole transcript again rather than make a session of the new part.
		start = Checkpoint{}
	}
	req, st, err := ParseFileWith(abs, format, ParseOptions{Start: start, HoldOpenTail: hold, IncludeSidechains: im.IncludeSidechains, Path: abs})
	res.Stats, res.SessionID = st, req.SessionID
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	if given && (start.Offset == 0 || st.Restarted) && mismatched(st) {
		// Read from the start and nothing in it is of the format: another agent's transcript.
		// Nothing is stored and no checkpoint kept, so the right importer reads it whole.
		res.SessionID = ""
		return res, mismatch(abs, format)
	}
	if len(req.Items) > 0 {
		out, err := im.Svc.Import(ctx, req)
		if err != nil {
			return res, fmt.Errorf("import %s into session %s: %w", abs, req.SessionID, err)
		}
		res.Created, res.Added, res.Unpinned = out.Created, out.Added, out.Unpinned
		for _, it := range req.Items {
			if it.Message != nil && it.Message.Pinned {
				res.Pinned++
			}
		}
		res.Pinned = max(res.Pinned-res.Unpinned, 0)
	}
	if st.Next != start {
		if err := im.saveCheckpoint(abs, st.Next); err != nil {
			return res, err
		}
	}
	return res, nil
}

// deletedSince reports whether start is the checkpoint of a session deleted from the store
// since (sessionmem delete, prune) whose file has grown beyond it. A file unchanged since is
// left alone, so that what retention or the user deleted stays deleted; one that grew would
// otherwise come back as a session of its new lines only.
func (im *Importer) deletedSince(ctx context.Context, abs string, start Checkpoint) bool {
	if start.Offset == 0 || start.SessionID == "" {
		return false
	}
	fi, err := os.Stat(abs)
	if err != nil || fi.Size() <= start.Offset {
		return false
	}
	_, err = im.Svc.Get(ctx, start.SessionID)
	return errors.Is(err, memory.ErrNotFound)
}

// lock serializes imports of one source within the process and, where supported, across
// processes sharing StateDir.
func (im *Importer) lock(abs string) (func(), error) {
	im.mu.Lock()
	if im.locks == nil {
		im.locks = map[string]*sync.Mutex{}
	}
	m := im.locks[abs]
	if m == nil {
		m = &sync.Mutex{}
		im.locks[abs] = m
	}
	im.mu.Unlock()
	m.Lock()
	if im.StateDir == "" {
		return m.Unlock, nil
	}
	if err := os.MkdirAll(im.StateDir, 0o700); err != nil {
		m.Unlock()
		return nil, fmt.Errorf("import state dir: %w", err)
	}
	release, err := lockFile(im.statePath(abs) + ".lock")
	if err != nil {
		m.Unlock()
		return nil, fmt.Errorf("lock import state of %s: %w", abs, err)
	}
	return func() { release(); m.Unlock() }, nil
}

// stateFile is what StateDir keeps per source.
type stateFile struct {
	Path       string     `json:"path"`
	Checkpoint Checkpoint `json:"checkpoint"`
}

func (im *Importer) statePath(abs string) string {
	return filepath.Join(im.StateDir, hashHex([]byte(abs))[:32]+".json")
}

func (im *Importer) loadCheckpoint(abs string) (Checkpoint, error) {
	if im.StateDir == "" {
		im.mu.Lock()
		defer im.mu.Unlock()
		return im.mem[abs], nil
	}
	b, err := os.ReadFile(im.statePath(abs))
	if errors.Is(err, fs.ErrNotExist) {
		return Checkpoint{}, nil
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("read import state of %s: %w", abs, err)
	}
	var sf stateFile
	if err := json.Unmarshal(b, &sf); err != nil || sf.Path != im.Svc.RedactText(abs) {
		// A damaged state file costs a full re-parse, never data: ids make it idempotent.
		return Checkpoint{}, nil
	}
	return sf.Checkpoint, nil
}

func (im *Importer) saveCheckpoint(abs string, cp Checkpoint) error {
	if im.StateDir == "" {
		im.mu.Lock()
		defer im.mu.Unlock()
		if im.mem == nil {
			im.mem = map[string]Checkpoint{}
		}
		im.mem[abs] = cp
		return nil
	}
	// The state passes the store's redaction gate too: it keeps the transcript's path, name,
	// model and working directory, which may hold what the store refuses to keep.
	sf := stateFile{Path: abs, Checkpoint: cp}
	if err := im.Svc.Gate(&sf); err != nil {
		return fmt.Errorf("import state of %s: %w", abs, err)
	}
	b, err := json.Marshal(sf)
	if err != nil {
		return fmt.Errorf("encode import state of %s: %w", abs, err)
	}
	if err := writeFileAtomic(im.statePath(abs), b); err != nil {
		return fmt.Errorf("write import state of %s: %w", abs, err)
	}
	return nil
}

// writeFileAtomic replaces path with data: temp file in the same directory, fsync, rename,
// fsync the directory; the temp file is removed on error.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // best effort: not every platform can sync a directory
		d.Close()
	}
	return nil
}

// DefaultRoot is where an agent keeps its transcripts on this machine, honouring the agents'
// own environment overrides (CLAUDE_CONFIG_DIR, CODEX_HOME, PI_CODING_AGENT_SESSION_DIR,
// PI_CODING_AGENT_DIR).
func DefaultRoot(kind Format) (string, error) {
	home := func() (string, error) {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("default %s root: %w", kind, err)
		}
		return h, nil
	}
	switch kind {
	case FormatClaudeCode:
		if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
			return filepath.Join(d, "projects"), nil
		}
		h, err := home()
		return filepath.Join(h, ".claude", "projects"), err
	case FormatCodex:
		if d := os.Getenv("CODEX_HOME"); d != "" {
			return filepath.Join(d, "sessions"), nil
		}
		h, err := home()
		return filepath.Join(h, ".codex", "sessions"), err
	case FormatPi:
		if d := os.Getenv("PI_CODING_AGENT_SESSION_DIR"); d != "" {
			return d, nil
		}
		if d := os.Getenv("PI_CODING_AGENT_DIR"); d != "" {
			return filepath.Join(d, "sessions"), nil
		}
		h, err := home()
		return filepath.Join(h, ".pi", "agent", "sessions"), err
	}
	return "", fmt.Errorf("default root of format %q: %w", kind, ErrUnknownFormat)
}

// Discover lists the transcript files of one agent under root (DefaultRoot(kind) when root is
// empty), sorted by path. Claude Code sidechain files (agent-*.jsonl, subagents/) are left
// out: their lines belong to the parent session and are skipped by default anyway. A missing
// root is an error wrapping fs.ErrNotExist.
func Discover(kind Format, root string) ([]string, error) {
	if root == "" {
		r, err := DefaultRoot(kind)
		if err != nil {
			return nil, err
		}
		root = r
	}
	if _, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("discover %s transcripts: %w", kind, err)
	}
	match := func(rel string, name string) bool { return strings.HasSuffix(name, ".jsonl") }
	switch kind {
	case FormatClaudeCode:
		match = func(rel, name string) bool {
			return strings.HasSuffix(name, ".jsonl") && !strings.HasPrefix(name, "agent-") &&
				strings.Count(filepath.ToSlash(rel), "/") <= 1
		}
	case FormatCodex:
		match = func(rel, name string) bool {
			return strings.HasPrefix(name, "rollout-") && strings.HasSuffix(name, ".jsonl")
		}
	case FormatPi:
		match = func(rel, name string) bool {
			return strings.HasSuffix(name, ".jsonl") && strings.Count(filepath.ToSlash(rel), "/") <= 1
		}
	case FormatSessionmem, FormatAuto:
	default:
		return nil, fmt.Errorf("discover format %q: %w", kind, ErrUnknownFormat)
	}
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			return nil // an unreadable subdirectory must not hide the rest
		}
		if d.IsDir() {
			if kind == FormatClaudeCode && (d.Name() == "subagents" || d.Name() == "tool-results" || d.Name() == "memory") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if d.Type().IsRegular() && match(rel, d.Name()) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("discover %s transcripts under %s: %w", kind, root, err)
	}
	sort.Strings(out)
	return out, nil
}

// Watch polls paths every interval and imports what was appended to them, until ctx ends
// (it then returns nil). A path may be a transcript file or a directory, whose *.jsonl files
// (found again on every poll, so new sessions are picked up) are imported when their format
// is recognized. While a file is still changing, a Claude Code assistant message that may get
// more blocks is held back until the file has been quiet for two intervals.
//
// onImport (may be nil) is called after every import that added something or failed; a
// failure does not stop the watch.
func (im *Importer) Watch(ctx context.Context, paths []string, interval time.Duration, onImport func(ImportResult, error)) error {
	if interval <= 0 {
		interval = 2 * time.Second
	}
	quiet := 2 * interval
	type seen struct {
		size    int64
		mod     time.Time
		held    bool
		format  Format
		skipped bool // not (yet) recognized as a transcript
	}
	files := map[string]*seen{}
	report := func(r ImportResult, err error) {
		if onImport != nil && (err != nil || r.Added > 0) {
			onImport(r, err)
		}
	}
	poll := func() {
		var list []string
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil {
				if _, known := files[p]; !known {
					files[p] = &seen{}
					report(ImportResult{Path: p}, fmt.Errorf("watch %s: %w", p, err))
				}
				continue
			}
			if !fi.IsDir() {
				list = append(list, p)
				continue
			}
			found, _ := Discover(FormatAuto, p)
			list = append(list, found...)
		}
		for _, f := range list {
			if ctx.Err() != nil {
				return
			}
			fi, err := os.Stat(f)
			if err != nil {
				continue
			}
			s := files[f]
			if s == nil {
				s = &seen{size: -1}
				files[f] = s
			}
			if s.format == FormatAuto {
				// A new file may still be empty or hold a torn first line: try again
				// whenever it changes.
				if s.skipped && fi.Size() == s.size && fi.ModTime().Equal(s.mod) {
					continue
				}
				fm, err := Detect(f)
				if err != nil {
					if !s.skipped && explicit(paths, f) && fi.Size() > 0 {
						report(ImportResult{Path: f}, err)
					}
					s.skipped, s.size, s.mod = true, fi.Size(), fi.ModTime()
					continue
				}
				s.format, s.skipped, s.size = fm, false, -1
			}
			changed := fi.Size() != s.size || !fi.ModTime().Equal(s.mod)
			if !changed && !s.held {
				continue
			}
			hold := time.Since(fi.ModTime()) < quiet
			r, err := im.importFile(ctx, f, s.format, hold)
			report(r, err)
			if err == nil {
				s.size, s.mod, s.held = fi.Size(), fi.ModTime(), r.Stats.HeldBack
			}
		}
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		poll()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func explicit(paths []string, f string) bool {
	for _, p := range paths {
		if p == f {
			return true
		}
	}
	return false
}
