package compaction

import (
	"regexp"
	"testing"
)

// TestLazyRegexpsCompile: every pattern the package compiles on first use compiles, as it
// did when they were compiled at init.
func TestLazyRegexpsCompile(t *testing.T) {
	if len(lazyPatterns) < 30 {
		t.Fatalf("%d lazy patterns registered; the package has over 30", len(lazyPatterns))
	}
	for _, p := range lazyPatterns {
		if _, err := regexp.Compile(p); err != nil {
			t.Errorf("pattern %q: %v", p, err)
		}
	}
}
