package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is a regular expression compiled when Get is first called. Its callers' tests
// compile every pattern they declare, so a bad one fails a test rather than a user's call.
type Regexp struct {
	src string
	get func() *regexp.Regexp
}

// New returns src, to be compiled (regexp.MustCompile) on the first Get.
func New(src string) *Regexp {
	return &Regexp{src: src, get: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(src) })}
}

// Get compiles the expression the first time and returns the same *regexp.Regexp after.
func (r *Regexp) Get() *regexp.Regexp { return r.get() }

// String is the expression's source, as a compiled *regexp.Regexp prints; "<nil>" for a nil
// Regexp, as fmt prints a nil *regexp.Regexp.
func (r *Regexp) String() string {
	if r == nil {
		return "<nil>"
	}
	return r.src
}
