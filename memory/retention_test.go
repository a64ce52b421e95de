package memory

import (
	"fmt"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

func TestRetention(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestService(t, Options{Now: func() time.Time { return clock }})
	var ids []string
	for i := range 6 {
		clock = clock.Add(24 * time.Hour)
		ids = append(ids, mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("1", fmt.Sprint(i))}}).SessionID)
	}
	// ids[5] was updated "now"; ids[0] five days ago.
	cases := []struct {
		name    string
		p       RetentionPolicy
		deleted int
	}{
		{"disabled", RetentionPolicy{}, 0},
		{"dry run", RetentionPolicy{MaxSessions: 2, DryRun: true}, 4},
		{"max age", RetentionPolicy{MaxAge: 4*24*time.Hour + time.Minute}, 1},
		{"max sessions", RetentionPolicy{MaxSessions: 3}, 2},
		{"in use is kept", RetentionPolicy{MaxSessions: 1, Protect: 48 * time.Hour}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.ApplyRetention(t.Context(), tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Deleted) != tc.deleted {
				t.Fatalf("deleted %v, want %d", res.Deleted, tc.deleted)
			}
		})
	}
	left, _ := s.List(t.Context(), ListRequest{})
	if len(left.Sessions) != 2 || left.Sessions[0].ID != ids[5] || left.Sessions[1].ID != ids[4] {
		t.Fatalf("left = %+v", left.Sessions)
	}
}

func TestRetentionSkipsLockedSession(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newTestService(t, Options{Now: func() time.Time { return clock }})
	old := mustSave(t, s, SaveRequest{WorkingDir: wd, Messages: []Message{user("1", "old")}}).SessionID
	clock = clock.Add(30 * 24 * time.Hour)
	// Another writer holds the old session's lock while retention runs.
	held := make(chan struct{})
	release := make(chan struct{})
	go s.store.Update(t.Context(), old, func(w storage.Writer) error {
		close(held)
		<-release
		return nil
	})
	<-held
	res, err := s.ApplyRetention(t.Context(), RetentionPolicy{MaxAge: 24 * time.Hour})
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 0 || len(res.InUse) != 1 {
		t.Fatalf("res = %+v", res)
	}
}
