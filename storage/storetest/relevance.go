package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/fts"
	"github.com/sessionmem/sessionmem/storage/relevance"
)

// RelevanceBar is how much better than the plain BM25 baseline (storage/relevance) a
// store's search must find the judged answers, in recall@10: the recall issue's bar.
const RelevanceBar = 1.1

// testSearchRelevance saves the judged fixture (testdata/relevance: four real coding
// sessions) into the store, asks every judged question as an agent would (its words
// verbatim, its working directory, limit 10), and holds recall@10 to RelevanceBar times the
// baseline's on the same questions. No question sharing a content word with the store may
// come back empty. The figures are logged (go test -v) beside the baseline's.
func testSearchRelevance(t *testing.T, b Backend) {
	sessions, err := relevance.LoadFixture(relevance.FixturePath())
	if err != nil {
		t.Fatal(err)
	}
	questions, err := relevance.LoadQuestions(relevance.QuestionsPath())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := open(t, b)
	total := 0
	for _, sess := range sessions {
		create(t, s, sess.ID, sess.WorkingDir, t0)
		for start := 0; start < len(sess.Messages); start += 200 {
			var objs []string
			for _, m := range sess.Messages[start:min(start+200, len(sess.Messages))] {
				objs = append(objs, string(m.Record()))
			}
			appendJSON(t, s, sess.ID, storage.Meta{Name: "n-" + sess.ID}, objs...)
		}
		total += len(sess.Messages)
	}
	// Every message indexed (freshness allows a second per save).
	waitIndexed(t, s, total)
	run := relevance.Run{}
	for _, q := range questions {
		res := search(t, s, q.Question, storage.SearchQuery{WorkingDir: q.WorkingDir, Limit: 10})
		ids := []string{}
		for _, h := range res.Hits {
			ids = append(ids, h.EntryID)
		}
		run[q.ID] = ids
	}
	base := relevance.NewBM25(sessions)
	baseRun := relevance.Run{}
	for _, q := range questions {
		baseRun[q.ID] = base.Search(q.Question, q.WorkingDir, 10)
	}
	got, want := relevance.Evaluate(questions, run), relevance.Evaluate(questions, baseRun)
	var table strings.Builder
	if err := relevance.WriteTable(&table, relevance.System{Name: "plain BM25 (baseline)", Report: want},
		relevance.System{Name: "this store", Report: got}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d judged questions, %d messages\n%s", len(questions), total, table.String())
	if got.Overall.RecallAt10 < RelevanceBar*want.Overall.RecallAt10 {
		t.Errorf("recall@10 %.3f is below %.1f x the baseline's %.3f", got.Overall.RecallAt10, RelevanceBar, want.Overall.RecallAt10)
	}
	if got.Overall.Empty > 0 {
		for _, q := range questions {
			if len(run[q.ID]) == 0 && len(baseRun[q.ID]) > 0 {
				t.Errorf("question %s (%q) shares words with the store but found nothing", q.ID, q.Question)
			}
		}
	}
}

// waitIndexed waits until the index holds what was saved: until the hits of a word most
// messages hold stop changing (a Store has no count of indexed entries).
func waitIndexed(t *testing.T, s storage.Store, total int) {
	t.Helper()
	m, _ := fts.Parse("the")
	deadline := time.Now().Add(searchRebuild + 5*searchFresh)
	last, stable := -1, 0
	for time.Now().Before(deadline) {
		n := 0
		cur := ""
		for {
			res, err := s.(storage.Searcher).Search(context.Background(), storage.SearchQuery{Match: m, Limit: 100, Cursor: cur})
			if errors.Is(err, storage.ErrSearchUnavailable) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n += len(res.Hits)
			if cur = res.NextCursor; cur == "" {
				break
			}
		}
		if n == last {
			if stable++; stable >= 3 {
				return
			}
		} else {
			last, stable = n, 0
		}
		time.Sleep(searchFresh / 4)
	}
}
