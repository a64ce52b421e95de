package ftsindex

// A generator of realistic stores for benchmarks and scale tests: message JSON of about
// 2 KB per message, cut from the text of the real transcripts in /work/shared/corpus (prose,
// code, tool output, paths), in the contract's message shape.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/storage/fts"
)

const corpusDir = "/work/shared/corpus"

// textKeys are the JSON keys whose string values hold searchable text in the transcripts.
var textKeys = map[string]bool{"text": true, "thinking": true, "content": true, "command": true,
	"file_path": true, "path": true, "pattern": true, "old_string": true, "new_string": true,
	"stdout": true, "stderr": true, "output": true, "description": true, "prompt": true,
	"summary": true, "errorMessage": true}

type corpus struct {
	text  string   // all text values, joined by newlines
	paths []string // absolute file paths seen in tool calls
}

var (
	corpusOnce sync.Once
	corpusData *corpus
)

// loadCorpus reads the corpus, or skips the test when it is absent.
func loadCorpus(tb testing.TB) *corpus {
	tb.Helper()
	corpusOnce.Do(func() {
		files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl"))
		var b strings.Builder
		seen := map[string]bool{}
		var paths []string
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, line := range bytes.Split(data, []byte("\n")) {
				var walk func(key string, v gjson.Result)
				walk = func(key string, v gjson.Result) {
					switch {
					case v.IsObject() || v.IsArray():
						v.ForEach(func(k, x gjson.Result) bool {
							walk(k.String(), x)
							return true
						})
					case v.Type == gjson.String && textKeys[key] && len(v.Str) >= 8:
						b.WriteString(v.Str)
						b.WriteByte('\n')
						if (key == "file_path" || key == "path") && strings.HasPrefix(v.Str, "/") && !seen[v.Str] {
							seen[v.Str] = true
							paths = append(paths, v.Str)
						}
					}
				}
				walk("", gjson.ParseBytes(line))
			}
		}
		if b.Len() > 0 {
			corpusData = &corpus{text: b.String(), paths: paths}
		}
	})
	if corpusData == nil {
		tb.Skip("corpus not found in " + corpusDir)
	}
	return corpusData
}

// genSession is one generated session: its metadata and its messages' JSON.
type genSession struct {
	Session
	messages [][]byte
}

// generate makes sessions of about perSession messages until the message JSON reaches
// totalBytes. Deterministic for a seed.
func generate(c *corpus, totalBytes int64, perSession int, seed uint64) []genSession {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []genSession
	var total int64
	when := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for n := 0; total < totalBytes; n++ {
		s := genSession{Session: Session{
			ID:         fmt.Sprintf("s%05d-%08x", n, rng.Uint32()),
			Created:    when,
			WorkingDir: fmt.Sprintf("/home/dev/project%02d", n%20),
			Name:       fmt.Sprintf("session %d", n),
		}}
		for i := 0; i < perSession && total < totalBytes; i++ {
			m := genMessage(c, rng, i, s.WorkingDir)
			s.messages = append(s.messages, m)
			total += int64(len(m))
		}
		when = when.Add(time.Hour)
		out = append(out, s)
	}
	return out
}

// window returns about n bytes of corpus text from a random place, cut at rune boundaries.
func window(c *corpus, rng *rand.Rand, n int) string {
	if n >= len(c.text) {
		return c.text
	}
	i := rng.IntN(len(c.text) - n)
	for i > 0 && !utf8.RuneStart(c.text[i]) {
		i--
	}
	j := i + n
	for j < len(c.text) && !utf8.RuneStart(c.text[j]) {
		j++
	}
	return c.text[i:j]
}

// genMessage makes the i-th message of a session: user prompt, assistant text with a tool
// call on a file, tool result, assistant answer, in turn. Text sizes vary from 0.5 to 3.5 KB
// (about 2 KB of JSON on average); one message in eight carries a unique ticket number, as
// real sessions carry ids and hashes.
func genMessage(c *corpus, rng *rand.Rand, i int, wd string) []byte {
	size := 500 + rng.IntN(3000)
	text := window(c, rng, size)
	if rng.IntN(8) == 0 {
		text += fmt.Sprintf(" ticket-%d", rng.Uint64())
	}
	var msg map[string]any
	switch i % 4 {
	case 0:
		msg = map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}}
	case 1:
		p := c.paths[rng.IntN(len(c.paths))]
		if rng.IntN(2) == 0 { // half the files live in the session's own tree
			p = wd + "/" + strings.TrimPrefix(filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p), "/")
		}
		msg = map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": text[:len(text)/4]},
			map[string]any{"type": "tool_call", "id": fmt.Sprintf("call_%d", i), "name": "read", "arguments": map[string]any{"path": p}},
		}}
	case 2:
		msg = map[string]any{"role": "tool_result", "content": []any{map[string]any{"type": "tool_result",
			"tool_call_id": fmt.Sprintf("call_%d", i-1), "content": []any{map[string]any{"type": "text", "text": text}}}}}
	default:
		msg = map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}}
	}
	return mustJSON(msg)
}

// docFromJSON is what memory's Doc hook will do for a message: join the text of its blocks
// (text, thinking, tool-call names and argument strings, tool output) and collect the paths
// tool calls name.
func docFromJSON(sessionID string, seq uint64, t time.Time, msg []byte) fts.Doc {
	r := gjson.ParseBytes(msg)
	var b strings.Builder
	var files []string
	var blocks func(v gjson.Result)
	blocks = func(v gjson.Result) {
		v.ForEach(func(_, blk gjson.Result) bool {
			switch blk.Get("type").Str {
			case "text":
				b.WriteString(blk.Get("text").Str)
				b.WriteByte('\n')
			case "thinking":
				b.WriteString(blk.Get("thinking").Str)
				b.WriteByte('\n')
			case "tool_call":
				b.WriteString(blk.Get("name").Str)
				b.WriteByte('\n')
				blk.Get("arguments").ForEach(func(_, a gjson.Result) bool {
					if a.Type == gjson.String {
						b.WriteString(a.Str)
						b.WriteByte('\n')
					}
					return true
				})
				if p := blk.Get("arguments.path").Str; p != "" {
					files = append(files, p)
				}
			case "tool_result":
				blocks(blk.Get("content"))
			}
			return true
		})
	}
	blocks(r.Get("content"))
	return fts.Doc{SessionID: sessionID, Seq: seq, EntryID: fmt.Sprintf("e%d", seq), Kind: fts.KindMessage,
		Role: r.Get("role").Str, Time: t, Text: b.String(), Files: files}
}

// batches turns generated sessions into index batches of at most per docs.
func batches(sessions []genSession, per int) [][]Batch {
	var out [][]Batch
	var cur []Batch
	n := 0
	for _, s := range sessions {
		for start := 0; start < len(s.messages); start += per {
			end := min(start+per, len(s.messages))
			b := Batch{Session: s.Session, From: uint64(start + 1), Through: uint64(end)}
			for i := start; i < end; i++ {
				b.Docs = append(b.Docs, docFromJSON(s.ID, uint64(i+1), s.Created.Add(time.Duration(i)*time.Second), s.messages[i]))
			}
			cur = append(cur, b)
			n += len(b.Docs)
			if n >= per {
				out = append(out, cur)
				cur, n = nil, 0
			}
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
