package lazyre

import (
	"fmt"
	"regexp"
	"testing"
)

// TestRegexp: Get compiles once and returns the same expression; String prints what a
// compiled expression prints, nil included (redact's Fingerprint hashes it).
func TestRegexp(t *testing.T) {
	r := New(`a(b+)c`)
	if got := r.String(); got != `a(b+)c` {
		t.Fatalf("String = %q", got)
	}
	first := r.Get()
	if first != r.Get() || !first.MatchString("xabbc") {
		t.Fatal("Get does not return one compiled expression")
	}
	var nilLazy *Regexp
	var nilRE *regexp.Regexp
	if got, want := fmt.Sprintf("%v", nilLazy), fmt.Sprintf("%v", nilRE); got != want {
		t.Fatalf("nil prints %q, a nil *regexp.Regexp %q", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a bad pattern did not panic on Get")
		}
	}()
	New(`a(`).Get()
}
