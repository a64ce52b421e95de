package compaction

import (
	"regexp"

	"github.com/sessionmem/sessionmem/internal/lazyre"
)

// lazyRegexp returns a function that compiles pattern on its first call and then returns
// the same *regexp.Regexp. The package's thirty-odd patterns compiled at init took about 6 ms
// of every sessionmem process's start, and most processes never summarize: a server is
// started for each agent session, and answering its first request sooner is worth more than
// the microseconds a first summary spends compiling. TestLazyRegexpsCompile compiles them all,
// so a bad pattern still fails the tests rather than a user's first compaction.
func lazyRegexp(pattern string) func() *regexp.Regexp {
	lazyPatterns = append(lazyPatterns, pattern)
	return lazyre.New(pattern).Get
}

// lazyPatterns lists every pattern given to lazyRegexp, for TestLazyRegexpsCompile.
var lazyPatterns []string
