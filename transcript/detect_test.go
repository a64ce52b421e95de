package transcript

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          Format
	}{
		{"sessionmem", `{"type":"sessionmem_export","version":1,"session":{"id":"x"}}` + "\n", FormatSessionmem},
		{"old codex", `{"id":"abc","timestamp":"2025-05-01T00:00:00Z","instructions":null}` + "\n" + `{"type":"message","role":"user","content":[]}` + "\n", FormatCodex},
		{"text", "hello\nworld\n", FormatAuto},
		{"empty", "", FormatAuto},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".jsonl")
			if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := Detect(p)
			if got != tt.want {
				t.Errorf("Detect = %q, want %q", got, tt.want)
			}
			if tt.want == FormatAuto && !errors.Is(err, ErrUnknownFormat) {
				t.Errorf("err = %v, want ErrUnknownFormat", err)
			}
		})
	}
}
