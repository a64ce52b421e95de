package memory

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// TestMapStoreErrKeepsCause: a store failure becomes a caller-facing *Error whose chain still
// reaches the store's error (what an operator's metrics classify), and a session written by a
// newer sessionmem names the version to upgrade to when the store recorded it.
func TestMapStoreErrKeepsCause(t *testing.T) {
	newer := &storage.NewerFormatError{What: "session s", Version: 9, Newest: 1, WrittenBy: "v9.1.0"}
	tests := []struct {
		name     string
		id       string
		err      error
		kind     error
		store    error  // also reached through the chain; nil: none
		wantHint string // in the hint
	}{
		{"unavailable", "s", fmt.Errorf("read: %w", storage.ErrUnavailable), ErrUnavailable, storage.ErrUnavailable, "retry"},
		{"corrupt", "s", fmt.Errorf("frame: %w", storage.ErrCorrupt), ErrUnavailable, storage.ErrCorrupt, "sessionmem verify"},
		{"newer session, version recorded", "s", newer, ErrUnavailable, storage.ErrNewerFormat, "upgrade sessionmem to v9.1.0 or later to read it"},
		{"newer session, no version", "s", &storage.NewerFormatError{What: "session s", Version: 9, Newest: 1}, ErrUnavailable, storage.ErrNewerFormat, "upgrade sessionmem to read it"},
		{"newer store", "", newer, ErrUnavailable, storage.ErrNewerFormat, "upgrade sessionmem"},
		{"not found has no store cause", "s", storage.ErrNotFound, ErrNotFound, nil, "session_list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mapStoreErr(tt.id, tt.err)
			var me *Error
			if !errors.As(err, &me) || !errors.Is(err, tt.kind) {
				t.Fatalf("got %v, want an *Error of kind %v", err, tt.kind)
			}
			if tt.store != nil && !errors.Is(err, tt.store) {
				t.Fatalf("%v does not reach %v", err, tt.store)
			}
			if tt.store == nil && me.Cause != nil {
				t.Fatalf("unexpected cause %v", me.Cause)
			}
			if !strings.Contains(me.Hint, tt.wantHint) {
				t.Fatalf("hint %q lacks %q", me.Hint, tt.wantHint)
			}
		})
	}
}
