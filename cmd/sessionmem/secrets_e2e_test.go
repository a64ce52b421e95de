package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/redact/redacttest"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/local"
)

var storageValidID = storage.ValidID

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

// bin runs the built binary once and returns stdout, stderr and the exit code.
func bin(t *testing.T, stdin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir()), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// ask sends one request and returns its answer (the lines before it, such as sampling
// requests, are kept in all).
func (r *rawServer) ask(line string, all *[]string) string {
	r.t.Helper()
	r.send(line)
	want := gjson.Get(line, "id").Raw
	for {
		l, ok := r.next(60 * time.Second)
		if !ok {
			r.t.Fatalf("no answer to %.200s", line)
		}
		*all = append(*all, l)
		if gjson.Get(l, "id").Raw == want && !gjson.Get(l, "method").Exists() {
			return l
		}
	}
}

// TestEverySecretKindStaysOffDisk plants a secret of each of 31 kinds in every field that
// reaches disk, through MCP (every tool, resources, prompts, errors), imports of Claude Code
// and pi transcripts (titles, session names, models, cwd, tool calls, bash executions,
// summaries), hooks and compaction (agent-written and extractive), and then looks for them
// in the store's bytes (decompressed), the index, the import state, a debug-level log, every
// MCP answer and every command's output.
func TestEverySecretKindStaysOffDisk(t *testing.T) {
	store := t.TempDir()
	logFile := filepath.Join(t.TempDir(), "serve.log")
	secrets := redacttest.Plant(99)
	outputs := plantSecretsOverMCP(t, store, logFile, secrets)
	files := writeSecretTranscripts(t, t.TempDir(), secrets)
	outputs = append(outputs, runSecretCommands(t, store, files, secrets)...)
	checkNoSecrets(t, store, logFile, secrets, outputs)
}

// plantSecretsOverMCP saves each secret in every field of every tool's arguments through a
// server logging at debug level to logFile, and returns every answer.
func plantSecretsOverMCP(t *testing.T, store, logFile string, secrets []redacttest.Secret) []string {
	srv := startRaw(t, store, []string{"--log-file", logFile, "--log-level", "debug"})
	var all []string
	srv.ask(initializeLine, &all)
	srv.send(initializedLine)
	n := 0
	ask := func(method string, params any) string {
		n++
		return srv.ask(rpc(n, method, params), &all)
	}
	tool := func(name string, args any) gjson.Result {
		return gjson.Get(ask("tools/call", obj{"name": name, "arguments": args}), "result")
	}
	for i, sec := range secrets {
		text := "see " + sec.Text + " ok"
		one := strings.Join(strings.Fields(text), " ")
		idish := fmt.Sprintf("m%d", i)
		if storageValidID(sec.Text) {
			idish = sec.Text
		}
		messages := []any{
			obj{"id": idish, "role": "user", "content": text},
			obj{"id": idish + "-a", "role": "assistant", "content": []any{
				obj{"type": "thinking", "thinking": text},
				obj{"type": "text", "text": text},
				obj{"type": "tool_call", "id": text, "name": one, "arguments": obj{"command": text, one: 1}}}},
			obj{"id": idish + "-t", "role": "tool_result", "content": []any{obj{"type": "tool_result", "tool_call_id": text, "content": []any{
				obj{"type": "text", "text": text}, obj{"type": "image", "media_type": one, "data": text}}}}},
		}
		for j := range 6 { // history for the compactions
			messages = append(messages, obj{"id": fmt.Sprintf("%s-h%d", idish, j), "role": "user", "content": text + " " + strings.Repeat("more words ", 80)})
		}
		res := tool("session_save", obj{"working_dir": "/home/me/" + one, "name": one, "model": one, "provider": one, "messages": messages})
		sid := res.Get("structuredContent.session_id").String()
		if sid == "" {
			t.Fatalf("%s: save failed: %s", sec.Kind, res.Raw)
		}
		tool("session_save", obj{"session_id": sid, "name": "renamed " + one, "model": "m2 " + one, "messages": []any{obj{"id": idish + "-r", "role": "user", "content": text}}})
		fork := tool("session_fork", obj{"session_id": sid, "name": one}).Get("structuredContent.session_id").String()
		step := tool("session_compact", obj{"session_id": sid, "summarizer": "agent", "keep_recent_tokens": 100, "instructions": text})
		if cid := step.Get("structuredContent.compaction_id").String(); cid != "" {
			tool("session_compact", obj{"session_id": sid, "compaction_id": cid, "summary": "## Goal\n" + text})
		}
		tool("session_compact", obj{"session_id": fork, "summarizer": "extractive", "keep_recent_tokens": 100, "instructions": text})
		tool("session_resume", obj{"session_id": sid})
		tool("session_resume", obj{"working_dir": "/home/me/" + one})
		tool("session_list", obj{"query": one})
		tool("session_list", obj{"working_dir": "/home/me/" + one})
		tool("session_search", obj{"query": one})
		for _, u := range []string{"session://" + sid, "session://" + sid + "/summary", "session://" + sid + "/files"} {
			ask("resources/read", obj{"uri": u})
		}
		ask("prompts/get", obj{"name": "compact_summary", "arguments": map[string]string{"conversation": text, "instructions": text}})
		// Refusals quote what they refuse.
		tool("session_resume", obj{"session_id": one})
		tool("session_fork", obj{"session_id": sid, "from_id": idish})
		tool("session_list", obj{"working_dir": "relative/" + one})
		tool("session_compact", obj{"session_id": sid, "summarizer": one})
		ask("resources/read", obj{"uri": "session://" + idish + "/summary"})
	}
	srv.finish(60 * time.Second)
	return all
}

// writeSecretTranscripts writes a Claude Code and a pi transcript per secret into dir, the
// secret in every field an import stores, and returns their paths.
func writeSecretTranscripts(t *testing.T, dir string, secrets []redacttest.Secret) []string {
	for i, sec := range secrets {
		text, _ := json.Marshal("see " + sec.Text + " ok")
		one, _ := json.Marshal(strings.Join(strings.Fields("see "+sec.Text+" ok"), " "))
		cc := fmt.Sprintf(`{"type":"summary","summary":%[2]s,"leafUuid":"a1"}
{"type":"custom-title","customTitle":%[2]s}
{"type":"user","uuid":"u1","sessionId":"00000000-0000-4000-8000-%012[3]d","timestamp":"2026-01-01T00:00:00Z","cwd":"/home/cc/"+%[2]s,"message":{"role":"user","content":%[1]s}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"00000000-0000-4000-8000-%012[3]d","timestamp":"2026-01-01T00:00:01Z","cwd":"/home/cc","message":{"id":"msg_1","model":%[2]s,"role":"assistant","content":[{"type":"text","text":%[1]s},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":%[1]s}}]}}
{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"00000000-0000-4000-8000-%012[3]d","timestamp":"2026-01-01T00:00:02Z","cwd":"/home/cc","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":%[1]s,"is_error":false}]}}
{"type":"user","uuid":"u3","parentUuid":"u2","sessionId":"00000000-0000-4000-8000-%012[3]d","timestamp":"2026-01-01T00:00:03Z","cwd":"/home/cc","isCompactSummary":true,"message":{"role":"user","content":%[1]s}}
`, text, one, i)
		cc = strings.Replace(cc, `"/home/cc/"+`+string(one), `"/home/cc/`+strings.Trim(string(one), `"`)+`"`, 1)
		pi := fmt.Sprintf(`{"type":"session","version":3,"id":"0195a3b0-0000-7000-8000-%012[3]d","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/home/pi"}
{"type":"session_info","id":"i1","parentId":null,"timestamp":"2026-01-01T00:00:00.500Z","name":%[2]s}
{"type":"model_change","id":"c1","parentId":"i1","timestamp":"2026-01-01T00:00:00.600Z","provider":%[2]s,"modelId":%[2]s}
{"type":"message","id":"e1","parentId":"c1","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":%[1]s}],"timestamp":1}}
{"type":"message","id":"e2","parentId":"e1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":%[1]s},{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":%[1]s}}],"provider":"p","model":%[2]s,"timestamp":2}}
{"type":"message","id":"e3","parentId":"e2","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":[{"type":"text","text":%[1]s}],"isError":false,"timestamp":3}}
{"type":"message","id":"e4","parentId":"e3","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"bashExecution","command":%[1]s,"output":%[1]s,"timestamp":4}}
{"type":"compaction","id":"e5","parentId":"e4","timestamp":"2026-01-01T00:00:05.000Z","summary":%[1]s,"firstKeptEntryId":"e4","tokensBefore":10}
`, text, one, i)
		for name, body := range map[string]string{fmt.Sprintf("cc-%d.jsonl", i): cc, fmt.Sprintf("pi-%d.jsonl", i): pi} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	return files
}

// runSecretCommands imports the transcripts (a hook too) and runs every command that prints
// what is stored, returning what they printed.
func runSecretCommands(t *testing.T, store string, files []string, secrets []redacttest.Secret) []string {
	var outputs []string
	env := []string{"SESSIONMEM_STORE=" + store, "SESSIONMEM_LOG_LEVEL=debug"}
	out, errOut, code := bin(t, "", env, append([]string{"import", "--file"}, files...)...)
	if code != 0 {
		t.Fatalf("import: %s %s", out, errOut)
	}
	outputs = append(outputs, out, errOut)
	// A hook imports a live transcript too, and prints the context for the next session.
	hookIn, _ := json.Marshal(obj{"session_id": "00000000-0000-4000-8000-000000000000", "transcript_path": files[0], "cwd": "/home/cc",
		"hook_event_name": "SessionStart", "source": "resume"})
	o1, e1, _ := bin(t, string(hookIn), env, "hook", "claude-code")
	outputs = append(outputs, o1, e1)
	// Every command that prints what is stored.
	list, e2, _ := bin(t, "", env, "list", "--json", "--limit", "0")
	outputs = append(outputs, list, e2)
	for _, args := range [][]string{{"list", "--limit", "0"}, {"stats"}, {"verify"}, {"redact", "--dry-run"}, {"show", "no such " + secrets[0].Text}} {
		o, e, _ := bin(t, "", env, args...)
		outputs = append(outputs, o, e)
	}
	// In process (the same run() the binary calls, stderr redaction included) to keep this
	// fast; the command above that fails ran the binary, so main's error path is covered.
	t.Setenv("SESSIONMEM_STORE", store)
	for _, id := range gjson.Get(list, "#.session_id").Array() {
		for _, args := range [][]string{{"show", "--all", id.Str}, {"show", "--json", id.Str}, {"export", id.Str}} {
			r := runCLI(t, "", args...)
			outputs = append(outputs, r.stdout, r.stderr)
		}
	}
	if len(gjson.Get(list, "#.session_id").Array()) < 3*len(secrets) {
		t.Fatalf("only %d sessions stored", len(gjson.Get(list, "#.session_id").Array()))
	}

	return outputs
}

// checkNoSecrets looks for every secret in the store's bytes (decompressed, index and
// import state included), the log and outputs.
func checkNoSecrets(t *testing.T, store, logFile string, secrets []redacttest.Secret, outputs []string) {
	stored := storeBytes(t, store)
	logs, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(stored, []byte("REDACTED")) || len(logs) == 0 {
		t.Fatal("nothing redacted, or no log: is the test wired?")
	}
	imports, _ := filepath.Glob(filepath.Join(store, "imports", "*.json"))
	if len(imports) == 0 {
		t.Fatal("no import state written")
	}
	for where, b := range map[string][]byte{"the store (decompressed, index and import state included)": stored, "the log": logs,
		"MCP answers and command output": []byte(strings.Join(outputs, "\n"))} {
		if leaks := redacttest.Leaks(b, secrets); leaks != "" {
			for _, sec := range secrets {
				if i := bytes.Index(b, []byte(sec.Secret)); i >= 0 {
					t.Logf("first leak, %s: …%q…", sec.Kind, b[max(0, i-200):min(len(b), i+60)])
					break
				}
			}
			t.Errorf("secrets found in %s: %s", where, leaks)
		}
	}
}

// TestServeRedactsWhatOlderVersionsStored: a store written without redaction (as an older
// sessionmem left it, secrets in names, renames, working dirs and messages) is cleaned by the
// next serve in the background; the marker then keeps later starts from doing it again.
func TestServeRedactsWhatOlderVersionsStored(t *testing.T) {
	store := t.TempDir()
	secrets := redacttest.Plant(31)
	{
		st, err := local.Open(store, local.Options{Summarize: memory.Summarize})
		if err != nil {
			t.Fatal(err)
		}
		old := memory.New(st, memory.Options{}) // no redaction
		for i, sec := range secrets {
			one := strings.Join(strings.Fields("see "+sec.Text+" ok"), " ")
			r, err := old.Save(t.Context(), memory.SaveRequest{WorkingDir: "/home/me/" + one, Name: one,
				Messages: []memory.Message{userMsg("see " + sec.Text + " ok")}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := old.Save(t.Context(), memory.SaveRequest{SessionID: r.SessionID, Name: fmt.Sprintf("renamed %d %s", i, one),
				Messages: []memory.Message{userMsg("more")}}); err != nil {
				t.Fatal(err)
			}
		}
		st.Close()
	}
	if redacttest.Leaks(storeBytes(t, store), secrets) == "" {
		t.Fatal("the old store holds no secret")
	}
	logFile := filepath.Join(t.TempDir(), "serve.log")
	srv := startRaw(t, store, []string{"--log-file", logFile})
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(logFile)
		if bytes.Contains(b, []byte("redaction re-applied")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no redaction logged:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	srv.finish(30 * time.Second)
	if leaks := redacttest.Leaks(storeBytes(t, store), secrets); leaks != "" {
		t.Fatalf("after serve started, still on disk: %s", leaks)
	}
	// The next start finds the marker and rewrites nothing.
	before := snapshot(t, store)
	srv2 := startRaw(t, store, nil)
	srv2.send(initializeLine)
	srv2.next(30 * time.Second)
	srv2.finish(30 * time.Second)
	for p, b := range snapshot(t, store) {
		if !bytes.Equal(before[p], b) {
			t.Errorf("%s rewritten again", p)
		}
	}
}

// TestServeLogRedactedWhole: a log line is redacted whole, on stderr and in a --log-file
// alike, not only attribute by attribute: a rule that spans an attribute's key and value
// ("transport=stdio" in the start line) matches the line, never the value alone.
func TestServeLogRedactedWhole(t *testing.T) {
	for _, where := range []string{"stderr", "log file"} {
		t.Run(where, func(t *testing.T) {
			logFile := filepath.Join(t.TempDir(), "serve.log")
			var args []string
			if where == "log file" {
				args = []string{"--log-file", logFile}
			}
			srv := startRaw(t, t.TempDir(), args, envRedact+`=["transport=stdio"]`)
			srv.finish(30 * time.Second)
			log := srv.stderr.String()
			if where == "log file" {
				b, err := os.ReadFile(logFile)
				if err != nil {
					t.Fatal(err)
				}
				log = string(b)
			}
			if !strings.Contains(log, "sessionmem serving") {
				t.Fatalf("no start line in the log:\n%s", log)
			}
			if strings.Contains(log, "transport=stdio") {
				t.Errorf("a match across key and value was not redacted:\n%s", log)
			}
		})
	}
}
