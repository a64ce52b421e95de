package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// plantedSecrets are secrets of the kinds the redactor knows, each unique to this test.
var plantedSecrets = []string{
	"sk-proj-Zq8VtW3nB7yK2mR9xL4pQ6sD1fH5jC0aE8gT3uI7oP2",
	"sk-ant-api03-Hk3Lm9Qp2Rt7Vw4Xy8Zb1Cd5Ef6Gh0Ij3Kl7Mn2Op9Qr4St8Uv1Wx5Yz6Ab0Cd",
	"ghp_R4nD0mT0k3nV4lu3F0rT3st1ngPurp0s3s12",
	"AKIAZ7QK3L5M9N2P4R6T",
	"xoxb-2710498712-9834710928347-Qz8Xk3Lm9Vb2Nc7Rt5Yw1Pa",
	"hunter2-correct-horse-battery",
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0LXVzZXItOTkifQ.Zk3Lm9Qp2Rt7Vw4Xy8Zb1Cd5Ef6Gh0Ij3Kl7Mn2Op9",
	"private-note-that-must-not-be-stored",
}

// A secret planted in any part of any message, through the MCP server or an import, never
// reaches the store's bytes: not the index, not the plain tail, not the compressed frames.
func TestPlantedSecretsNeverReachTheStore(t *testing.T) {
	store := t.TempDir()
	c := stdioClient(t, store)
	var saved struct {
		SessionID string `json:"session_id"`
	}
	s := plantedSecrets
	call(t, c, "session_save", obj{"working_dir": "/home/sec/proj", "name": "secrets", "messages": []any{
		obj{"id": "u1", "role": "user", "content": "my key is " + s[0] + " and AWS " + s[3]},
		obj{"id": "a1", "role": "assistant", "content": []any{
			obj{"type": "thinking", "thinking": "the anthropic key " + s[1] + " should not be echoed"},
			obj{"type": "tool_call", "id": "c1", "name": "bash", "arguments": obj{"command": "curl -H 'Authorization: Bearer " + s[6] + "' https://x"}},
		}},
		obj{"id": "t1", "role": "tool_result", "content": []any{obj{"type": "tool_result", "tool_call_id": "c1",
			"content": "GITHUB_TOKEN=" + s[2] + "\nSLACK=" + s[4]}}},
		obj{"id": "u2", "role": "user", "content": "db password=" + s[5] + " and <private>" + s[7] + "</private>"},
	}}, &saved)
	// The agent's own summary goes through redaction too.
	var step1 struct {
		CompactionID string `json:"compaction_id"`
		Status       string `json:"status"`
	}
	call(t, c, "session_compact", obj{"session_id": saved.SessionID, "summarizer": "agent", "keep_recent_tokens": 10}, &step1)
	if step1.Status == "needs_summary" {
		call(t, c, "session_compact", obj{"session_id": saved.SessionID, "compaction_id": step1.CompactionID,
			"summary": "## Goal\nUse key " + s[0]}, nil)
	}
	c.Close() // the server seals its tails on the way out

	// An imported transcript carries secrets as well.
	transcript := filepath.Join(t.TempDir(), "t.jsonl")
	line := fmt.Sprintf(`{"type":"user","uuid":"u-1","sessionId":"11111111-2222-3333-4444-555555555555","cwd":"/home/sec/proj","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"export OPENAI_API_KEY=%s"}}`, s[0])
	if err := os.WriteFile(transcript, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCLI(t, "", "import", "--store", store, "--file", transcript).must(t)

	all := storeBytes(t, store)
	// The text around the secrets is there, so the check reads what was stored.
	for _, around := range []string{"should not be echoed", "db password=", "export OPENAI_API_KEY="} {
		if !bytes.Contains(all, []byte(around)) {
			t.Fatalf("%q not found: the store was not read whole", around)
		}
	}
	if !bytes.Contains(all, []byte("REDACTED")) {
		t.Fatal("no redaction marker in the store: is redaction wired?")
	}
	for _, secret := range plantedSecrets {
		if bytes.Contains(all, []byte(secret)) {
			t.Errorf("secret %.12s… reached the store", secret)
		}
	}
}

// storeBytes returns every file of the store, with zstd files decompressed.
func storeBytes(t *testing.T, dir string) []byte {
	t.Helper()
	var all bytes.Buffer
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		all.Write(b)
		if strings.HasSuffix(p, ".zst") {
			d, err := zstd.NewReader(bytes.NewReader(b))
			if err != nil {
				return err
			}
			defer d.Close()
			if _, err := io.Copy(&all, d); err != nil {
				return fmt.Errorf("decompress %s: %w", p, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return all.Bytes()
}
