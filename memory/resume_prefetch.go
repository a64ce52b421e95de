package memory

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// A client reading a session through asks for the next resume page as soon as it has taken
// in this one. The page's Ahead builds that next page in the background meanwhile (on another
// core, while the client parses the page it got: half a millisecond of a 400 KB page's 3 ms
// round trip, docs/BENCHMARKS.md), and the next call serves it if the session is exactly as it
// was: the same records (LastSeq; records are never changed in place), the same header (a
// session deleted and created again has a new nonce) and the same file (storage.Snapshots'
// generation, which a rewrite changes). A store that does not report a generation
// (PostgreSQL) has no Ahead.
//
// What is kept is bounded: prefetchMax pages in all, each dropped after prefetchTTL if nobody
// asks for it, and only pages of at most prefetchMaxTokens. A caller that reads only the
// first page (most agents at the start of a conversation) leaves one page built for nothing:
// a fraction of a millisecond of CPU, and memory for ten seconds.
const (
	prefetchMax       = 4
	prefetchTTL       = 10 * time.Second
	prefetchMaxTokens = 250_000
)

// pageKey is what a page depends on besides the session's content: the request.
type pageKey struct {
	id, cursor string
	maxTokens  int
	prune, raw bool
}

// pageVersion says which content of a session a page was built from.
type pageVersion struct {
	lastSeq uint64
	nonce   string
	created int64 // the header's Created, in nanoseconds (a time.Time compares its clock readings too)
	gen     string
}

// prefetched is a page being built, or built, in the background.
type prefetched struct {
	key  pageKey
	done chan struct{} // closed once ver, res and err are set
	ver  pageVersion
	res  ResumeResult
	err  error
}

// prefetcher holds the pages built ahead.
type prefetcher struct {
	gens storage.Snapshots // nil when the store cannot tell a rewrite: nothing is built ahead

	mu     sync.Mutex
	pages  []*prefetched // oldest first
	closed bool          // Service.Close ran: nothing more is started
	ttl    time.Duration // how long a page is kept: prefetchTTL, shorter in tests
	wg     sync.WaitGroup
	built  int // pages served from here (PagesServedAhead)
}

// PagesServedAhead returns how many resume pages this Service served from those it built
// ahead (ResumeResult.Ahead).
func (s *Service) PagesServedAhead() int {
	s.pre.mu.Lock()
	defer s.pre.mu.Unlock()
	return s.pre.built
}

// close waits for the pages being built and starts no more.
func (p *prefetcher) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
}

// version returns the content version of the session r reads; ok is false when the store
// cannot tell a rewrite.
func (p *prefetcher) version(r storage.Reader) (pageVersion, bool) {
	if p.gens == nil {
		return pageVersion{}, false
	}
	h := r.Header()
	v := pageVersion{lastSeq: r.LastSeq(), nonce: h.Nonce, created: h.Created.UnixNano(), gen: p.gens.Generation(r)}
	return v, v.gen != ""
}

// take removes and returns the page built ahead for key, waiting for it if it is still being
// built; nil if there is none (or ctx ended first).
func (p *prefetcher) take(ctx context.Context, key pageKey) *prefetched {
	p.mu.Lock()
	f := p.remove(func(x *prefetched) bool { return x.key == key })
	p.mu.Unlock()
	if f == nil {
		return nil
	}
	select {
	case <-f.done:
		return f
	case <-ctx.Done():
		return nil
	}
}

// remove takes the first page match selects out of p.pages. The caller holds p.mu.
func (p *prefetcher) remove(match func(*prefetched) bool) *prefetched {
	for i, x := range p.pages {
		if match(x) {
			p.pages = append(p.pages[:i], p.pages[i+1:]...)
			return x
		}
	}
	return nil
}

// builtAhead returns f's page when it is what a page built now from r would be.
func (s *Service) builtAhead(r storage.Reader, f *prefetched) (ResumeResult, bool) {
	if f == nil || f.err != nil {
		return ResumeResult{}, false
	}
	if v, ok := s.pre.version(r); !ok || v != f.ver {
		return ResumeResult{}, false
	}
	s.pre.mu.Lock()
	s.pre.built++
	s.pre.mu.Unlock()
	return f.res, true
}

// errNoVersion stops a page built ahead on a store that cannot tell a rewrite.
var errNoVersion = errors.New("the store does not report a content version")

// prefetch starts building the page key asks for in the background (the page after one just
// served: ResumeResult.Ahead).
func (s *Service) prefetch(key pageKey) {
	p := &s.pre
	var cur resumeCursor
	if decodeToken("r1.", key.cursor, &cur) != nil {
		return
	}
	f := &prefetched{key: key, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.remove(func(x *prefetched) bool { return x.key == key })
	if len(p.pages) >= prefetchMax {
		p.pages = p.pages[1:]
	}
	p.pages = append(p.pages, f)
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		defer close(f.done)
		f.err = s.store.View(context.Background(), key.id, func(r storage.Reader) error {
			var ok bool
			if f.ver, ok = p.version(r); !ok {
				return errNoVersion
			}
			var err error
			f.res, err = s.resumePage(r, key.id, &cur, key.maxTokens, key.prune, key.raw)
			return err
		})
		ttl := p.ttl
		if ttl == 0 {
			ttl = prefetchTTL
		}
		time.AfterFunc(ttl, func() {
			p.mu.Lock()
			p.remove(func(x *prefetched) bool { return x == f })
			p.mu.Unlock()
		})
	}()
}
