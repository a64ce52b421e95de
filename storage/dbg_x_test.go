package storage
import ("testing";"fmt";"context";"time")
func TestXDbg(t *testing.T) {
	dir := memTempDir(t)
	s := mustOpen(t, dir, Options{})
	for i := range 300 {
		id := fmt.Sprintf("s%04d", i)
		s.Create(Header{ID: id, WorkingDir: "/w"}, Meta{Name: id})
		for k := range 3 {
			s.Update(context.Background(), id, func(w *Writer) error {
				_, err := w.Append([]Record{{Data: fmt.Appendf(nil, `{"k":%d}`, k)}}, Meta{Name: id, Messages: k + 1})
				return err
			})
		}
	}
	s.Close()
	for range 3 {
	t0 := time.Now()
	s2, _ := Open(dir, Options{})
	t1 := time.Now()
	s2.idx.mu.Lock()
	t.Log(s2.idx.lines, s2.idx.bad, s2.idx.badHd, len(s2.idx.ents), t1.Sub(t0))
	s2.idx.mu.Unlock()
	t2 := time.Now()
	s2.Close()
	t.Log(time.Since(t2))
	}
}
