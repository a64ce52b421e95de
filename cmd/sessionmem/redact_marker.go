package main

// The redaction marker names the rules the whole store was last redacted with: the file
// <store>/redaction.json for a local store, the "redaction" setting (storage.Settings, a
// table row) for a store that keeps settings itself, as the PostgreSQL store does. serve
// re-applies redaction in the background when the rules changed (an upgrade, a new
// SESSIONMEM_REDACT_PATTERNS), so what older versions stored does not stay on disk;
// 'sessionmem redact' does the same on demand.

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/redact"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/transcript"
)

const redactionMarker = "redaction.json"

// redactionSetting is the marker's key in a store with storage.Settings.
const redactionSetting = "redaction"

type redactionState struct {
	Rules string    `json:"rules"`
	At    time.Time `json:"at"`
}

// redactedWith reports whether the store's marker names fp.
func redactedWith(ctx context.Context, store storage.Store, dir, fp string) bool {
	var b []byte
	if set, ok := store.(storage.Settings); ok {
		v, found, err := set.GetSetting(ctx, redactionSetting)
		if err != nil || !found {
			return false
		}
		b = []byte(v)
	} else {
		var err error
		if b, err = os.ReadFile(filepath.Join(dir, redactionMarker)); err != nil {
			return false
		}
	}
	var st redactionState
	return json.Unmarshal(b, &st) == nil && st.Rules == fp
}

// markRedacted records that everything in the store was redacted with fp (atomically).
func markRedacted(ctx context.Context, store storage.Store, dir, fp string) error {
	b, _ := json.Marshal(redactionState{Rules: fp, At: time.Now().UTC()})
	if set, ok := store.(storage.Settings); ok {
		return set.PutSetting(ctx, redactionSetting, string(b))
	}
	tmp, err := os.CreateTemp(dir, "."+redactionMarker+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, redactionMarker))
}

// redactStored applies the current rules to everything in the store (sessions, index, import
// checkpoints) and records the marker when nothing failed.
func redactStored(ctx context.Context, svc *memory.Service, dir string, red *redact.Redactor, dryRun bool,
	each func(string, bool, error)) (memory.RedactReport, int, error) {
	rep, err := svc.RedactStore(ctx, dryRun, each)
	if err != nil {
		return rep, 0, err
	}
	im := &transcript.Importer{Svc: svc, StateDir: importStateDir(dir, os.Getenv)}
	n, err := im.RedactState(dryRun)
	if err != nil {
		return rep, n, err
	}
	if !dryRun && len(rep.Failed) == 0 {
		err = markRedacted(ctx, svc.Store(), dir, red.Fingerprint())
	}
	return rep, n, err
}

// redactOnUpgrade runs redactStored in the background of serve when the store was last
// redacted with other rules (or never, as a store from before this version). A failure is
// logged and tried again at the next start.
func redactOnUpgrade(ctx context.Context, svc *memory.Service, dir string, red *redact.Redactor, logger *slog.Logger) {
	if redactedWith(ctx, svc.Store(), dir, red.Fingerprint()) {
		return
	}
	start := time.Now()
	rep, n, err := redactStored(ctx, svc, dir, red, false, nil)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		logger.Warn("re-applying redaction to the stored sessions failed; run 'sessionmem redact'", "err", err)
	case len(rep.Failed) > 0:
		logger.Warn("re-applying redaction: some sessions could not be rewritten; run 'sessionmem redact'", "failed", len(rep.Failed))
	default:
		logger.Info("redaction re-applied to the stored sessions", "sessions", rep.Sessions, "rewritten", len(rep.Changed),
			"import_checkpoints", n, "took", time.Since(start).Round(time.Millisecond))
	}
}
