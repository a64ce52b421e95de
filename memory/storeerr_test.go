package memory

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
)

// misconfigured is how a store reports a refusal to fix (postgres: wrong password, no such
// database): ErrMisconfigured and ErrUnavailable at once.
type misconfigured struct{}

func (misconfigured) Error() string {
	return `the database refused the connection: password authentication failed for user "sm"; check the password`
}
func (misconfigured) Unwrap() []error {
	return []error{storage.ErrMisconfigured, storage.ErrUnavailable}
}

// TestStoreErrorHints: only a save is told that retrying it stores nothing twice, and only
// when a retry can help; a misconfigured store is never called unreachable nor retried.
func TestStoreErrorHints(t *testing.T) {
	down := fmt.Errorf("lock session x: %w", errors.Join(errors.New("the database is unreachable: dial tcp: connection refused"), storage.ErrUnavailable))
	full := fmt.Errorf("append: %w", storage.ErrDiskFull)
	for _, tc := range []struct {
		name      string
		save      bool
		err       error
		want, not []string
	}{
		{"list, unreachable", false, down, []string{"the database is unreachable", "retry in a few seconds"}, []string{"session_save"}},
		{"save, unreachable", true, down, []string{"the database is unreachable", "retry in a few seconds", "stores nothing twice"}, nil},
		{"list, disk full", false, full, []string{"disk", "free space"}, []string{"session_save"}},
		{"save, disk full", true, full, []string{"disk", "stores nothing twice"}, nil},
		{"list, misconfigured", false, misconfigured{}, []string{"authentication failed", "check the password"}, []string{"unreachable", "retry in a few seconds", "session_save"}},
		{"save, misconfigured", true, misconfigured{}, []string{"authentication failed", "retrying fails the same way"}, []string{"unreachable", "retry in a few seconds", "session_save"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.save {
				err = mapSaveErr("x", tc.err)
			} else {
				err = mapStoreErr("", tc.err)
			}
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("%v: not ErrUnavailable", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q: want %q", err, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("%q: must not say %q", err, n)
				}
			}
		})
	}
}
