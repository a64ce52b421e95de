package main

import (
	"bytes"
	"strings"
	"testing"
)

// benchHook runs one hook invocation per iteration against a store that already holds the
// fixture transcript.
func benchHook(b *testing.B, event, source string, wantOutput bool) {
	store := b.TempDir()
	path := copyFixture(b, "claude-code.jsonl", b.TempDir(), ccSession+".jsonl")
	in := `{"session_id":"` + ccSession + `","transcript_path":"` + path + `","cwd":"/work/proj","hook_event_name":"` +
		event + `","source":"` + source + `"}`
	for b.Loop() {
		var out, errb bytes.Buffer
		err := run(b.Context(), []string{"hook", "claude-code", "--store", store}, strings.NewReader(in), &out, &errb)
		if err != nil || (out.Len() > 0) != wantOutput || strings.Contains(errb.String(), "sessionmem hook:") {
			b.Fatalf("hook: %v, stdout %q, stderr %q", err, out.String(), errb.String())
		}
	}
}

// BenchmarkCLIHookStopNoop is what agents run after every turn when the transcript has not
// grown since the last hook: open the store, read the import checkpoint, close.
func BenchmarkCLIHookStopNoop(b *testing.B) { benchHook(b, "Stop", "", false) }

// BenchmarkCLIHookSessionStartResume adds building the resume context.
func BenchmarkCLIHookSessionStartResume(b *testing.B) { benchHook(b, "SessionStart", "resume", true) }
