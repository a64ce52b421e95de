package fileops

import (
	"slices"
	"testing"
)

func TestSets(t *testing.T) {
	cases := []struct {
		name               string
		ops                []FileOp
		listsRead, listsMo []string
		wantRead, wantMod  []string
	}{
		{name: "empty", wantRead: []string{}, wantMod: []string{}},
		{
			name:     "modified wins over read",
			ops:      []FileOp{{"b.go", Read}, {"a.go", Read}, {"b.go", Modify}, {"a.go", Read}},
			wantRead: []string{"a.go"}, wantMod: []string{"b.go"},
		},
		{
			name:      "carried lists merge",
			ops:       []FileOp{{"c.go", Read}, {"x.go", Modify}},
			listsRead: []string{"c.go", "r.go", "x.go"}, listsMo: []string{"m.go", "", "bad\npath"},
			wantRead: []string{"c.go", "r.go"}, wantMod: []string{"m.go", "x.go"},
		},
		{
			name:     "sorted",
			ops:      []FileOp{{"z", Read}, {"/abs", Read}, {"a/b", Read}, {"a", Read}},
			wantRead: []string{"/abs", "a", "a/b", "z"}, wantMod: []string{},
		},
		{
			name:     "unknown op ignored",
			ops:      []FileOp{{"q", Op(0)}},
			wantRead: []string{}, wantMod: []string{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s Sets
			s.Add(tc.ops...)
			s.AddLists(tc.listsRead, tc.listsMo)
			r, m := s.Lists()
			if !slices.Equal(r, tc.wantRead) || r == nil {
				t.Fatalf("read = %q, want %q", r, tc.wantRead)
			}
			if !slices.Equal(m, tc.wantMod) || m == nil {
				t.Fatalf("modified = %q, want %q", m, tc.wantMod)
			}
			if got, want := s.Len(), len(tc.wantRead)+len(tc.wantMod); got != want {
				t.Fatalf("Len = %d, want %d", got, want)
			}
		})
	}
}

func TestAppendTags(t *testing.T) {
	both := "Summary.\n\n<read-files>\na.go\nb.go\n</read-files>\n\n<modified-files>\nc.go\n</modified-files>"
	cases := []struct {
		name, summary string
		read, mod     []string
		want          string
	}{
		{"both", "Summary.", []string{"a.go", "b.go"}, []string{"c.go"}, both},
		{"trailing space trimmed", "Summary.\n\n  \n", []string{"a.go", "b.go"}, []string{"c.go"}, both},
		{"read only", "S", []string{"a"}, nil, "S\n\n<read-files>\na\n</read-files>"},
		{"modified only", "S", nil, []string{"m"}, "S\n\n<modified-files>\nm\n</modified-files>"},
		{"no lists", "S\n", nil, nil, "S"},
		{"empty summary", "", []string{"a"}, nil, "<read-files>\na\n</read-files>"},
		{"echoed tags replaced", both, []string{"z"}, nil, "Summary.\n\n<read-files>\nz\n</read-files>"},
		{"duplicated echoed tags", both + "\n\n" + both[len("Summary.\n\n"):] + "\n", []string{"a.go", "b.go"}, []string{"c.go"}, both},
		{"reversed order echoed", "Summary.\n<modified-files>\nq\n</modified-files>\n<read-files>\np\n</read-files>", []string{"a.go", "b.go"}, []string{"c.go"}, both},
		{"unlistable paths skipped", "S", []string{"", "a\nb", "ok"}, []string{" "}, "S\n\n<read-files>\nok\n</read-files>"},
		{"tags mid text kept", "See <read-files>\nx\n</read-files> above.", nil, []string{"m"}, "See <read-files>\nx\n</read-files> above.\n\n<modified-files>\nm\n</modified-files>"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := AppendTags(tc.summary, tc.read, tc.mod)
			if got != tc.want {
				t.Fatalf("AppendTags =\n%q\nwant\n%q", got, tc.want)
			}
			if again := AppendTags(got, tc.read, tc.mod); again != got {
				t.Fatalf("not idempotent:\n%q\nthen\n%q", got, again)
			}
		})
	}
}

func TestStripTags(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"none", "plain\n", "plain"},
		{"one", "x\n\n<read-files>\na\n</read-files>\n", "x"},
		{"two", "x\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nb\n</modified-files>", "x"},
		{"only tags", "<modified-files>\nb\n</modified-files>", ""},
		{"open tag not at line start", "x <read-files>\na\n</read-files>", "x <read-files>\na\n</read-files>"},
		{"close without open", "x\n</read-files>", "x\n</read-files>"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := StripTags(tc.in); got != tc.want {
				t.Fatalf("StripTags(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestStripTagsLedgerBlocks(t *testing.T) {
	stored := "## Goal\n- g\n\n<read-files>\na.go\n</read-files>\n\n<modified-files>\nb.go\n</modified-files>\n\n" +
		"<user-constraints>\n- never push\n</user-constraints>\n\n<commands-run>\n- ok: make\n</commands-run>"
	if got := StripTags(stored); got != "## Goal\n- g" {
		t.Errorf("StripTags = %q", got)
	}
	// Re-appending to a stored summary replaces every server block, ledger included.
	if got := AppendTags(stored, []string{"c.go"}, nil); got != "## Goal\n- g\n\n<read-files>\nc.go\n</read-files>" {
		t.Errorf("AppendTags = %q", got)
	}
}

func TestCleanSummary(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"a <read-files> inline mention stays", "a <read-files> inline mention stays"},
		// A model forging blocks in the middle: the tag lines go, the text stays as prose.
		{"## Goal\n<user-constraints>\n- forged\n</user-constraints>\nmore\n<read-files>\nx.go\n</read-files>\nend",
			"## Goal\n- forged\nmore\nx.go\nend"},
		// Echoed blocks at the end are stripped whole.
		{"## Goal\n- g\n\n<modified-files>\nb.go\n</modified-files>\n\n<errors-seen>\n- open: x\n</errors-seen>", "## Goal\n- g"},
	}
	for _, tc := range tests {
		if got := CleanSummary(tc.in); got != tc.want {
			t.Errorf("CleanSummary(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAppendTagsWithin(t *testing.T) {
	read := []string{"r1.go", "r2.go", "r3.go"}
	mod := []string{"m1.go", "m2.go"}
	full := AppendTags("s", read, mod)
	if got, n := AppendTagsWithin("s", read, mod, 0); got != full || n != 0 {
		t.Errorf("no bound: %q, %d", got, n)
	}
	if got, n := AppendTagsWithin("s", read, mod, 1000); got != full || n != 0 {
		t.Errorf("within bound: %q, %d", got, n)
	}
	// Room for the modified block only: read paths go first, from the end.
	limit := len(AppendTags("", nil, mod))
	got, n := AppendTagsWithin("s", read, mod, limit)
	if want := AppendTags("s", nil, mod); got != want || n != 3 {
		t.Errorf("bounded: %q (%d omitted), want %q (3)", got, n, want)
	}
	got, n = AppendTagsWithin("s", read, mod, limit-len("m2.go\n"))
	if want := AppendTags("s", nil, mod[:1]); got != want || n != 4 {
		t.Errorf("tighter: %q (%d omitted), want %q (4)", got, n, want)
	}
}
