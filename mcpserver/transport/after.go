package transport

import (
	"context"
	"sync"
)

// afterAnswerKey carries the functions to run once a request's answer is written
// (AfterAnswer).
type afterAnswerKey struct{}

// afterAnswer holds what AfterAnswer left for after a request's answer.
type afterAnswer struct {
	mu  sync.Mutex
	fns []func()
	ran bool
}

// withAfterAnswer returns ctx carrying a place for AfterAnswer's functions, and that place;
// the transport runs it once it has written the request's answer.
func withAfterAnswer(ctx context.Context) (context.Context, *afterAnswer) {
	a := &afterAnswer{}
	return context.WithValue(ctx, afterAnswerKey{}, a), a
}

// AfterAnswer runs fn once the client has the answer to the request ctx serves: over stdio,
// after the answer's bytes are written and before its line's end, so that the client cannot
// have acted on the answer yet (a request it sends after reading the answer finds what fn
// started); at once where the transport cannot tell (HTTP, a call made in Go, an answer
// already written). A resume page starts building the next page this way: the client asks for
// it only after taking in this one, and building it while this one is still being written
// would compete with the write for the machine's cores. fn must return at once (start work,
// not do it): over stdio it runs while the connection's output is held.
func AfterAnswer(ctx context.Context, fn func()) {
	if a, ok := ctx.Value(afterAnswerKey{}).(*afterAnswer); ok {
		a.mu.Lock()
		if !a.ran {
			a.fns = append(a.fns, fn)
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
	}
	fn()
}

// run runs the functions left so far, and from then on AfterAnswer runs them at once.
func (a *afterAnswer) run() {
	a.mu.Lock()
	fns := a.fns
	a.fns, a.ran = nil, true
	a.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}
