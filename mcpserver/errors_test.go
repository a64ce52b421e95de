package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sessionmem/sessionmem/memory"
)

// TestErrorTextNamesNoPath: no tool error names a file of the server's, whatever failed; the
// log has the details. A full disk and a store that may not be written are said plainly.
func TestErrorTextNamesNoPath(t *testing.T) {
	const file = "/srv/secret/store/sessions/01ab.tail.jsonl"
	write := func(errno error) error {
		return fmt.Errorf("append to session 01ab: %w", &fs.PathError{Op: "write", Path: file, Err: errno})
	}
	for _, tc := range []struct {
		err   error
		says  []string
		level string
	}{
		{write(syscall.ENOSPC), []string{"the disk holding the session store is full: nothing was saved", "free space on it and retry"}, "WARN"},
		{memory.StoreCondition(write(syscall.EDQUOT)), []string{"the disk holding the session store is full"}, "WARN"},
		{write(syscall.EROFS), []string{"the session store is read-only", "nothing was saved", "make the store writable"}, "WARN"},
		{write(syscall.EACCES), []string{"the session store is read-only"}, "WARN"},
		{write(syscall.EIO), []string{"session_save: internal error: append to session 01ab: write …: input/output error; retry"}, "ERROR"},
		{fmt.Errorf("open lock C:\\Users\\me\\store\\x.lock: denied"), []string{"internal error: open lock …: denied"}, "ERROR"},
	} {
		var log bytes.Buffer
		ctx := context.WithValue(context.Background(), loggerKey{}, slog.New(slog.NewTextHandler(&log, nil)))
		text := errorText(ctx, "session_save", tc.err)
		for _, want := range tc.says {
			if !strings.Contains(text, want) {
				t.Errorf("%v:\n%q\ndoes not say %q", tc.err, text, want)
			}
		}
		if strings.Contains(text, "secret") || strings.Contains(text, "Users") {
			t.Errorf("%q names the server's file", text)
		}
		if !strings.Contains(log.String(), "level="+tc.level) || !(strings.Contains(log.String(), file) || strings.Contains(log.String(), "Users")) {
			t.Errorf("%v: the log has not the details at %s: %s", tc.err, tc.level, log.String())
		}
	}
	if text := errorText(context.Background(), "x", errors.New("boom /a/b")); text != "x: internal error: boom …; retry, and report it if it persists (the server's log has the details)" {
		t.Errorf("without a logger: %q", text)
	}
}

func TestScrubPaths(t *testing.T) {
	for in, want := range map[string]string{
		"write /tmp/a/b.jsonl: no space left on device": "write …: no space left on device",
		`open "/x/y" failed`:                            `open "…" failed`,
		"a /b, c (/d/e) [/f] g=/h":                      "a …, c (…) […] g=…",
		"/at/start: x":                                  "…: x",
		"get http://host/a/b: 404":                      "get http://host/a/b: 404",
		"relative/path and a / alone":                   "relative/path and a / alone",
		`open C:\Users\x\y.lock: denied`:                "open …: denied",
		`share \\server\share\f`:                        "share …",
		"no path here":                                  "no path here",
	} {
		if got := scrubPaths(in); got != want {
			t.Errorf("scrubPaths(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestArgsDuplicateKeys: of a key sent twice the last counts, and an unknown key sent twice is
// named once (transport.TestSentArgumentsReadAsRaw: the fields are the same on every transport).
func TestArgsDuplicateKeys(t *testing.T) {
	var req mcp.CallToolRequest
	req.Params.RawArguments = json.RawMessage(`{"session_id":"a","session_id":"b","x":1,"x":2}`)
	a := newArgs(context.Background(), "t", req)
	if s, err := a.str("session_id", false, ""), a.done(); s != "b" || err == nil || err.Error() != `unknown argument(s) "x"; t accepts session_id` {
		t.Errorf("duplicates: %q, %v", s, err)
	}
}
