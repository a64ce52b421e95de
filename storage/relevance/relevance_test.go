package relevance_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/relevance"
	"github.com/sessionmem/sessionmem/storage/storetest"
)

// fixture is read once per test binary: the tests only read it, and decoding it takes most of
// their time under the race detector.
var fixture = sync.OnceValues(func() ([]relevance.Session, error) {
	return relevance.LoadFixture(relevance.FixturePath())
})

func load(t *testing.T) ([]relevance.Session, []relevance.Question) {
	t.Helper()
	sessions, err := fixture()
	if err != nil {
		t.Fatal(err)
	}
	questions, err := relevance.LoadQuestions(relevance.QuestionsPath())
	if err != nil {
		t.Fatal(err)
	}
	return sessions, questions
}

// TestFixture checks the judged questions against the fixture: every relevant id is a
// message of the fixture, in the question's working directory, named once; every kind has
// enough questions; a cross-session question has evidence from two sessions.
func TestFixture(t *testing.T) {
	sessions, questions := load(t)
	type where struct{ session, workingDir string }
	msgs := map[string]where{}
	dirs := map[string]bool{}
	for _, s := range sessions {
		dirs[s.WorkingDir] = true
		if len(s.Messages) == 0 {
			t.Errorf("session %s has no messages", s.ID)
		}
		for _, m := range s.Messages {
			if _, dup := msgs[m.ID]; dup {
				t.Errorf("message id %s appears twice in the fixture", m.ID)
			}
			msgs[m.ID] = where{s.ID, s.WorkingDir}
		}
	}
	if len(sessions) != 4 {
		t.Errorf("fixture has %d sessions, want the 4 transcripts of the corpus", len(sessions))
	}

	ids := map[string]bool{}
	perKind := map[string]int{}
	for _, q := range questions {
		if ids[q.ID] {
			t.Errorf("question id %s repeats", q.ID)
		}
		ids[q.ID] = true
		if !slices.Contains(relevance.Kinds, q.Kind) {
			t.Errorf("%s: unknown kind %q", q.ID, q.Kind)
		}
		perKind[q.Kind]++
		if strings.TrimSpace(q.Question) == "" || strings.TrimSpace(q.Note) == "" {
			t.Errorf("%s: question and note must not be empty", q.ID)
		}
		if q.WorkingDir != "" && !dirs[q.WorkingDir] {
			t.Errorf("%s: working_dir %s is no session's", q.ID, q.WorkingDir)
		}
		if len(q.Relevant) == 0 {
			t.Errorf("%s: no relevant message", q.ID)
		}
		seen := map[string]bool{}
		from := map[string]bool{}
		for _, id := range q.Relevant {
			w, ok := msgs[id]
			switch {
			case seen[id]:
				t.Errorf("%s: relevant id %s listed twice", q.ID, id)
			case !ok:
				t.Errorf("%s: relevant id %s is not in the fixture", q.ID, id)
			case q.WorkingDir != "" && w.workingDir != q.WorkingDir:
				t.Errorf("%s: relevant id %s is in %s, not the question's working_dir %s", q.ID, id, w.workingDir, q.WorkingDir)
			}
			seen[id] = true
			from[w.session] = true
		}
		if q.Kind == "cross_session" && len(from) < 2 {
			t.Errorf("%s: a cross-session question needs evidence from two sessions, has %d", q.ID, len(from))
		}
	}
	if len(questions) < 170 {
		t.Errorf("%d questions, want at least 170", len(questions))
	}
	for _, k := range relevance.Kinds {
		if perKind[k] < 20 {
			t.Errorf("%d questions of kind %s, want at least 20", perKind[k], k)
		}
	}
	t.Logf("%d messages in %d sessions; %d questions: %v", len(msgs), len(sessions), len(questions), perKind)
}

// TestTextMatchesDocs checks that the baseline indexes exactly the text storetest.Docs (the
// contract suite's documents) extracts from the stored record of each message, and that the
// record's entry id is the message id.
func TestTextMatchesDocs(t *testing.T) {
	sessions, _ := load(t)
	for _, s := range sessions {
		h := storage.Header{ID: s.ID, WorkingDir: s.WorkingDir}
		for i, m := range s.Messages {
			docs := storetest.Docs(h, storage.Record{Seq: uint64(i + 1), Kind: "message", Data: m.Record()})
			if len(docs) != 1 {
				t.Fatalf("%s: Docs gave %d documents, want 1", m.ID, len(docs))
			}
			d := docs[0]
			if d.EntryID != m.ID || !d.Time.Equal(m.Time) || d.Role != m.Role {
				t.Errorf("%s: Docs read entry %q, time %v, role %q; want %q, %v, %q",
					m.ID, d.EntryID, d.Time, d.Role, m.ID, m.Time, m.Role)
			}
			if got := m.Text(); got != d.Text {
				t.Errorf("%s: Text differs from Docs' text (%d vs %d bytes)", m.ID, len(got), len(d.Text))
			}
		}
	}
}

// TestBaseline runs the BM25 baseline over every question, top 10 within the question's
// working directory, and prints its table (go test -v).
func TestBaseline(t *testing.T) {
	sessions, questions := load(t)
	bm := relevance.NewBM25(sessions)
	run := relevance.Run{}
	for _, q := range questions {
		run[q.ID] = bm.Search(q.Question, q.WorkingDir, 10)
	}
	r := relevance.Evaluate(questions, run)
	if r.Overall.N != len(questions) {
		t.Errorf("report scored %d questions, want %d", r.Overall.N, len(questions))
	}
	if r.Overall.RecallAt10 <= 0 || r.Overall.RecallAt10 < r.Overall.RecallAt5 || r.Overall.HitAt10 > 1 {
		t.Errorf("implausible baseline figures: %+v", r.Overall)
	}
	var b strings.Builder
	if err := relevance.WriteTable(&b, relevance.System{Name: "bm25-plain", Report: r}); err != nil {
		t.Fatal(err)
	}
	t.Logf("plain BM25 (k1 %.1f, b %.2f), top 10:\n%s", relevance.BM25K1, relevance.BM25B, b.String())
}
