package mcpserver

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sessionmem/sessionmem/mcpserver/transport"
	"github.com/sessionmem/sessionmem/memory"
)

// TestEncodeSaveAnswer: the stdio transport writes a save's answer byte for byte as
// json.Marshal (what mcp-go writes) does, on one line (transport.TestEncodeMessageMatchesMarshal
// holds the other answers).
func TestEncodeSaveAnswer(t *testing.T) {
	msg := mcp.NewJSONRPCResultResponse(mcp.NewRequestId(float64(12)),
		saveAnswer(memory.SaveResult{SessionID: "s-<1>", Saved: 2, MessageCount: 9, LeafID: "e9", ShouldCompact: true}, 3))
	parts, err := transport.EncodeMessage(msg)
	if err != nil {
		t.Fatal(err)
	}
	got := bytes.Join(parts, nil)
	want, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if want = transport.FixResponse(want); !bytes.Equal(got, want) {
		t.Fatalf("not the bytes of json.Marshal:\n got %s\nwant %s", got, want)
	}
	if bytes.ContainsAny(got, "\n\r") {
		t.Fatalf("a line break in the answer: %s", got)
	}
}

// BenchmarkEncodeSaveAnswer: encoding a session_save's answer.
func BenchmarkEncodeSaveAnswer(b *testing.B) {
	resp := mcp.NewJSONRPCResultResponse(mcp.NewRequestId(float64(1234)),
		saveAnswer(memory.SaveResult{SessionID: "s-bench", Saved: 1, MessageCount: 1001, LeafID: "e-1001", ContextTokens: 123456}, 1))
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("EncodeMessage", func(b *testing.B) {
		for b.Loop() {
			if _, err := transport.EncodeMessage(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
}
