package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/redact"
	"github.com/sessionmem/sessionmem/redact/redacttest"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/postgres"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// TestRedactPostgres: 'sessionmem redact' rewrites a PostgreSQL store in place (storage.Rewriter)
// and records the rules in the database (storage.Settings), so a second run, and serve's check
// at start, find the store already redacted with them.
func TestRedactPostgres(t *testing.T) {
	u := pgtest.Shared(t).NewDatabase(t)
	secrets := redacttest.Plant(41)
	ctx := context.Background()
	st, err := postgres.Open(ctx, u, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	old := memory.New(st, memory.Options{}) // no redaction, as an older version stored it
	var ids []string
	for _, sec := range secrets {
		r, err := old.Save(ctx, memory.SaveRequest{WorkingDir: "/home/me", Name: "plain",
			Messages: []memory.Message{userMsg("see " + sec.Text + " ok")}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.SessionID)
	}
	dump := func() string {
		var b strings.Builder
		for _, id := range ids {
			_ = st.View(ctx, id, func(r storage.Reader) error {
				for rec, err := range r.Records(1) {
					if err != nil {
						return err
					}
					b.Write(rec.Data)
				}
				return nil
			})
		}
		return b.String()
	}
	if redacttest.Leaks([]byte(dump()), secrets) == "" {
		t.Fatal("nothing planted")
	}
	r := runCLI(t, "", "redact", "--json", "--store", u)
	if r.code != 0 {
		t.Fatalf("redact: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep redactReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Rewritten) != len(ids) || len(rep.Failed) != 0 {
		t.Fatalf("report %s (%v)", r.stdout, err)
	}
	if leaks := redacttest.Leaks([]byte(dump()), secrets); leaks != "" {
		t.Fatalf("after redact, still stored: %s", leaks)
	}
	v, ok, err := st.GetSetting(ctx, redactionSetting)
	if err != nil || !ok || !strings.Contains(v, `"rules"`) {
		t.Fatalf("marker setting %q %v %v", v, ok, err)
	}
	red, _ := redact.New(nil)
	if !redactedWith(ctx, st, u, red.Fingerprint()) {
		t.Fatal("serve's check does not see the marker")
	}
	r = runCLI(t, "", "redact", "--json", "--store", u)
	if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != 0 || err != nil || len(rep.Rewritten) != 0 {
		t.Fatalf("second redact: exit %d %s", r.code, r.stdout)
	}
	st.Close()
}
