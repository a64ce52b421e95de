package transport

// Order is how ServeStdio orders a tool's calls with the requests around them (stdio.go): a
// call waits for every earlier request on the same scope when either of them writes. Each
// tool declares its own (StdioOptions.Orders).
type Order struct {
	Write bool // the call changes the store
	Scope Scope
	// Creates: a call without session_id makes a new session, which no earlier request can
	// be about: it waits only for writes on the whole store.
	Creates bool
}

// Scope is what a tool's calls are about.
type Scope int

// Scopes.
const (
	ScopeStore   Scope = iota // the whole store: every session
	ScopeSession              // the session named by session_id; the whole store without one
)
