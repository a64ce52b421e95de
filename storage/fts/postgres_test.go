package fts

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestTSVector(t *testing.T) {
	tests := []struct{ text, want string }{
		{"", ""},
		{"Hello hello world", "'hello':1,2 'world':3"},
		{"parseConfig(max_tokens) in internal/auth/login.go", "'auth':5 'go':7 'in':3 'internal':4 'login':6 'max_tokens':2 'parseconfig':1"},
		{"東京", "'京':2 '東':1"},
	}
	for _, tt := range tests {
		if got := TSVector(tt.text); got != tt.want {
			t.Errorf("TSVector(%q) = %s, want %s", tt.text, got, tt.want)
		}
	}
	// Limits: positions stop at PGMaxPosition, a term keeps PGMaxPositions of them.
	long := TSVector(strings.Repeat("w ", PGMaxPosition+10) + "last")
	if !strings.Contains(long, fmt.Sprintf("'last':%d", PGMaxPosition)) || strings.Count(long, ",") != PGMaxPositions-1 {
		t.Fatalf("limits not applied: %.80s … %s", long, long[len(long)-40:])
	}
}

func TestTSQuery(t *testing.T) {
	tests := []struct{ q, want string }{
		{"x y", "('x' | 'y')"},
		{"+x y", "'x'"},
		{"the x", "'x'"},
		{"the a", "('the' | 'a')"},
		{`"exact phrase"`, "('exact' <-> 'phrase')"},
		{"pars*", "('pars':* | 'par')"}, // pars (the word) is indexed as its stem par
		{"configuration*", "('configuration':* | 'configur')"},
		{"max_tok*", "'max_tok':*"},
		{"auth/log*", "('auth' <-> 'log':*)"},
		{`err -timeout -"conn reset"`, "'err' & !'timeout' & !('conn' <-> 'reset')"},
		{`err "conn reset" +x`, "('conn' <-> 'reset') & 'x'"},
		{"OR AND", "('or' | 'and')"},
	}
	for _, tt := range tests {
		q, err := Parse(tt.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.TSQuery(); got != tt.want {
			t.Errorf("TSQuery(%q) = %s, want %s", tt.q, got, tt.want)
		}
	}
}

// TestPostgresOracle checks, against a real PostgreSQL, that TSVector and TSQuery find
// exactly what Query.Matches finds. It runs psql with the URL in SESSIONMEM_TEST_POSTGRES
// (postgres://user@host:port/db) and is skipped without it.
func TestPostgresOracle(t *testing.T) {
	url := os.Getenv("SESSIONMEM_TEST_POSTGRES")
	if url == "" {
		t.Skip("SESSIONMEM_TEST_POSTGRES not set")
	}
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql not installed")
	}
	vocab := []string{"alpha", "beta", "gamma", "parseConfig", "max_tokens", "login.go", "auth/login.go",
		"internal/auth/login.go", "über", "東京", "x", "foo-bar", "alphabet", "betamax", "42", "v1.2", "O'Brien"}
	seps := []string{" ", "\n", ", ", "(", ") ", ": ", "/", ".", "'"}
	rng := rand.New(rand.NewPCG(8, 9))
	var texts []string
	var sql strings.Builder
	sql.WriteString("CREATE TEMP TABLE d (id int, v tsvector);\n")
	for i := 0; i < 200; i++ {
		var b strings.Builder
		for range 1 + rng.IntN(25) {
			b.WriteString(vocab[rng.IntN(len(vocab))])
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		texts = append(texts, b.String())
		fmt.Fprintf(&sql, "INSERT INTO d VALUES (%d, %s::tsvector);\n", i, sqlString(TSVector(b.String())))
	}
	forms := []func() string{
		func() string { return vocab[rng.IntN(len(vocab))] },
		func() string { return `"` + vocab[rng.IntN(len(vocab))] + " " + vocab[rng.IntN(len(vocab))] + `"` },
		func() string { return vocab[rng.IntN(3)][:3] + "*" },
		func() string { return "-" + vocab[rng.IntN(len(vocab))] },
	}
	var queries []*Query
	for len(queries) < 300 {
		var parts []string
		for range 1 + rng.IntN(3) {
			parts = append(parts, forms[rng.IntN(len(forms))]())
		}
		q, err := Parse(strings.Join(parts, " "))
		if err != nil {
			continue
		}
		fmt.Fprintf(&sql, "SELECT %d, id FROM d WHERE v @@ %s::tsquery;\n", len(queries), sqlString(q.TSQuery()))
		queries = append(queries, q)
	}
	cmd := exec.Command("psql", url, "-X", "-q", "-A", "-t", "-F", " ", "-v", "ON_ERROR_STOP=1", "-f", "-")
	cmd.Stdin = strings.NewReader(sql.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	got := make([][]int, len(queries))
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var qi, id int
		if _, err := fmt.Sscan(line, &qi, &id); err == nil {
			got[qi] = append(got[qi], id)
		}
	}
	for qi, q := range queries {
		var want []int
		for id, text := range texts {
			if q.Matches(text) {
				want = append(want, id)
			}
		}
		slices.Sort(got[qi])
		if !slices.Equal(got[qi], want) {
			t.Fatalf("%s (tsquery %s): PostgreSQL found %v, Matches %v", q, q.TSQuery(), got[qi], want)
		}
	}
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
