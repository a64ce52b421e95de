package ftsindex

// Pending returns how many docs wait in the queue (for a batch built on flush, one per record
// it covers); a flush under way no longer counts its own. What a metrics scrape reports as
// queued.
func (q *Queue) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.docs
}
