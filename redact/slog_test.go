package redact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/sessionmem/sessionmem/redact/redacttest"
)

type stringer string

func (s stringer) String() string { return string(s) }

// TestHandler: a secret of every kind, logged at every level as the message, a string, an
// error, a Stringer, a struct, a group member, a WithAttrs attribute or a group name, reaches
// neither a text nor a JSON log.
func TestHandler(t *testing.T) {
	r := mustNew(t)
	secrets := redacttest.Plant(7)
	for _, mk := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler {
			return slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})
		},
		func(b *bytes.Buffer) slog.Handler {
			return slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})
		},
	} {
		var buf bytes.Buffer
		log := slog.New(NewHandler(mk(&buf), r))
		for _, s := range secrets {
			text := s.Text
			for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
				log.Log(context.Background(), l, "saving "+text,
					"arg", text, "err", errors.New("failed: "+text), "str", stringer(text),
					"any", struct{ Name string }{text}, slog.Group("g", "inner", text),
					text, 1)
				log.With("with", text).WithGroup("grp "+text).Log(context.Background(), l, "x", "k", text)
			}
		}
		if leaks := redacttest.Leaks(buf.Bytes(), secrets); leaks != "" {
			t.Fatalf("secrets reached the log: %s", leaks)
		}
		if !strings.Contains(buf.String(), Marker) {
			t.Fatal("no redaction marker in the log")
		}
	}
	// Clean values keep their type.
	var buf bytes.Buffer
	slog.New(NewHandler(slog.NewJSONHandler(&buf, nil), r)).Info("ok", "n", 3, "list", []int{1, 2})
	if !strings.Contains(buf.String(), `"n":3`) || !strings.Contains(buf.String(), `"list":[1,2]`) {
		t.Fatalf("clean values changed: %s", buf.String())
	}
	_ = fmt.Sprint()
}
