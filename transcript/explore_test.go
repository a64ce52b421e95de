package transcript

import (
	"path/filepath"
	"testing"
)

func TestExploreCorpus(t *testing.T) {
	files, _ := filepath.Glob("/work/shared/corpus/*.jsonl")
	for _, f := range files {
		fm, err := Detect(f)
		if err != nil {
			t.Fatal(err)
		}
		req, st, err := ParseFile(f, fm)
		if err != nil {
			t.Fatal(err)
		}
		st.Next.HeadHash = ""
		t.Logf("%s %s sid=%s wd=%s model=%s prov=%s created=%v items=%d\n  %+v", filepath.Base(f), fm, req.SessionID, req.WorkingDir, req.Model, req.Provider, req.Created, len(req.Items), st)
	}
}
