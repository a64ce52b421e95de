package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// RedactState passes every import checkpoint in StateDir through the store's redaction gate
// (memory.Service.Gate) and rewrites those it changes, so that what an older version kept
// there (a transcript's name, model, working directory, its path) holds no secret either.
// With dryRun it only counts them. It returns how many files changed (or would).
func (im *Importer) RedactState(dryRun bool) (int, error) {
	if im.Svc == nil || im.StateDir == "" {
		return 0, nil
	}
	files, err := filepath.Glob(filepath.Join(im.StateDir, "*.json"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), ".") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return n, fmt.Errorf("read import state: %w", err)
		}
		var sf stateFile
		if json.Unmarshal(b, &sf) != nil {
			continue // damaged: loadCheckpoint ignores it too (a full re-parse, never data)
		}
		if err := im.Svc.Gate(&sf); err != nil {
			return n, fmt.Errorf("import state %s: %w", filepath.Base(f), err)
		}
		out, err := json.Marshal(sf)
		if err != nil {
			return n, err
		}
		var was stateFile
		_ = json.Unmarshal(b, &was)
		old, _ := json.Marshal(was)
		if bytes.Equal(out, old) {
			continue
		}
		n++
		if dryRun {
			continue
		}
		if err := writeFileAtomic(f, out); err != nil {
			return n, fmt.Errorf("write import state: %w", err)
		}
	}
	return n, nil
}
