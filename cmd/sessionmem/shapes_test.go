package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// Accepted means readable everywhere: every message a session_save accepts, of any extreme
// shape the generator makes (shapes_gen_test.go), comes back exactly from every path that
// reads stored data: resume (one page, and paged), the session resource, fork, search (both
// its words and the strings deepest in its arguments), compaction by the agent and by the
// extractive summarizer (resume afterwards), `show`, export, import of the export (and a
// second export, byte for byte), and migrate to PostgreSQL and back (TestExtremeShapes). What
// the door refuses (too deep, not UTF-8) stores nothing.

// canon returns a message as read (JSON) in the form shapeMsg.want has: message, block and
// usage keys sorted, entry_id taken out (and returned), arguments as they are.
func canon(t *testing.T, raw string) (jv, string) {
	t.Helper()
	v, err := parseJV([]byte(raw))
	if err != nil {
		t.Fatalf("read back a message that is not JSON: %v: %.300s", err, raw)
	}
	m, _ := v.(jobj)
	entryID, _ := m.get("entry_id")
	out := jobj{}
	for _, f := range m {
		switch f.k {
		case "entry_id":
			continue
		case "content":
			blocks := []jv{}
			for _, b := range f.v.([]jv) {
				blocks = append(blocks, canonBlock(b.(jobj)))
			}
			f.v = blocks
		case "usage":
			f.v = f.v.(jobj).sorted()
		}
		out = append(out, f)
	}
	id, _ := entryID.(string)
	return out.sorted(), id
}

func canonBlock(b jobj) jobj {
	out := jobj{}
	for _, f := range b {
		if f.k == "content" {
			if nested, ok := f.v.([]jv); ok {
				blocks := []jv{}
				for _, x := range nested {
					blocks = append(blocks, canonBlock(x.(jobj)))
				}
				f.v = blocks
			}
		}
		out = append(out, f)
	}
	return out.sorted()
}

// sameMessages compares messages read back (raw JSON) with want, and returns their entry ids.
func sameMessages(t *testing.T, what string, want []shapeMsg, got []string) []string {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d messages, saved %d", what, len(got), len(want))
	}
	var ids []string
	for i, raw := range got {
		m, id := canon(t, raw)
		ids = append(ids, id)
		if i < len(want) && !reflect.DeepEqual(m, want[i].want) {
			t.Errorf("%s: message %d differs\nsaved %.600s\ngot   %.600s", what, i, encodeJV(rand.New(rand.NewPCG(0, 0)), want[i].want), raw)
		}
	}
	return ids
}

// resumeAll pages through session_resume and returns the raw messages and pinned messages of
// every page, and the summary.
func resumeAll(c *mcpConn, id string, maxTokens int) (msgs, pinned []string, summary string) {
	c.t.Helper()
	cursor := ""
	for page := 0; ; page++ {
		args := fmt.Sprintf(`{"session_id":%q`, id)
		if maxTokens > 0 {
			args += fmt.Sprintf(`,"max_tokens":%d`, maxTokens)
		}
		if cursor != "" {
			args += fmt.Sprintf(`,"cursor":%q`, cursor)
		}
		res := c.ok("session_resume", args+"}")
		if page == 0 {
			summary = res.Get("summary").String()
		}
		for _, m := range res.Get("messages").Array() {
			msgs = append(msgs, m.Raw)
		}
		for _, m := range res.Get("pinned").Array() {
			pinned = append(pinned, m.Raw)
		}
		if cursor = res.Get("next_cursor").String(); cursor == "" {
			return msgs, pinned, summary
		}
		if page > 100000 {
			c.t.Fatal("resume does not end")
		}
	}
}

// wholeResume is one page large enough for any session the generator makes.
const wholeResume = 1 << 30

// saveSession saves msgs as a new session in batches and returns its id.
func saveSession(c *mcpConn, dir string, msgs []shapeMsg) string {
	c.t.Helper()
	id := ""
	for i := 0; i < len(msgs); {
		var parts []string
		size := 0
		for ; i < len(msgs) && len(parts) < 50 && (size == 0 || size+len(msgs[i].json) < 16<<20); i++ {
			parts = append(parts, msgs[i].json)
			size += len(msgs[i].json)
		}
		args := fmt.Sprintf(`{"working_dir":%q,"messages":[%s]}`, dir, strings.Join(parts, ","))
		if id != "" {
			args = fmt.Sprintf(`{"session_id":%q,"messages":[%s]}`, id, strings.Join(parts, ","))
		}
		res := c.ok("session_save", args)
		id = res.Get("session_id").String()
		if n := res.Get("saved").Int(); n != int64(len(parts)) {
			c.t.Fatalf("saved %d of %d messages", n, len(parts))
		}
	}
	return id
}

// refusals are messages the door refuses, each with what the tool error must say.
func refusals(rng *rand.Rand) []struct{ json, says string } {
	deep := deepArgs(rng, memory.MaxArgumentsDepth+1, "x")
	return []struct{ json, says string }{
		{"{\"role\":\"user\",\"content\":\"bad \xff byte\"}", "messages[0].content is not valid UTF-8"},
		{`{"role":"assistant","content":[{"type":"thinking","thinking":"lone \ud800 surrogate"}]}`, "messages[0].content[0].thinking is not valid UTF-8"},
		{"{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_call\",\"id\":\"c\",\"name\":\"x\",\"arguments\":{\"k\xc3\x28\":1}}]}", "is not valid UTF-8"},
		{`{"role":"assistant","content":[{"type":"tool_call","id":"c","name":"x","arguments":` + encodeJV(rng, deep) + `}]}`,
			"nests deeper than 512 levels of JSON, the limit for one message"},
	}
}

// checkSession saves msgs through c and reads them back through every path the server
// offers; it returns the session id.
func checkSession(t *testing.T, c *mcpConn, rng *rand.Rand, name string, msgs []shapeMsg) string {
	id := saveSession(c, "/shapes/"+name, msgs)
	got, _, _ := resumeAll(c, id, wholeResume)
	entryIDs := sameMessages(t, "resume", msgs, got)

	for _, r := range refusals(rng) {
		res := c.tool("session_save", fmt.Sprintf(`{"session_id":%q,"messages":[%s]}`, id, r.json))
		if text := res.Get("content.0.text").String(); !res.Get("isError").Bool() || !strings.Contains(text, r.says) {
			t.Errorf("a refused message: %.300s, want a tool error saying %q", text, r.says)
		}
	}
	got, _, _ = resumeAll(c, id, wholeResume)
	sameMessages(t, "resume after the refused saves", msgs, got)

	// Paged at the default max_tokens: a message larger than a page comes cut, but every
	// message comes, once, in order.
	paged, _, _ := resumeAll(c, id, 0)
	var pagedIDs []string
	for _, m := range paged {
		pagedIDs = append(pagedIDs, gjson.Get(m, "entry_id").String())
	}
	if !reflect.DeepEqual(pagedIDs, entryIDs) {
		t.Errorf("paged resume: entries %v, want %v", pagedIDs, entryIDs)
	}

	res := c.request("resources/read", fmt.Sprintf(`{"uri":"session://%s"}`, id))
	var fromResource []string
	for _, m := range gjson.Parse(res.Get("result.contents.0.text").String()).Get("messages").Array() {
		fromResource = append(fromResource, m.Raw)
	}
	sameMessages(t, "resource", msgs, fromResource)
	for _, sub := range []string{"summary", "files"} {
		if r := c.request("resources/read", fmt.Sprintf(`{"uri":"session://%s/%s"}`, id, sub)); !r.Get("result.contents.0").Exists() {
			t.Errorf("resource %s: %.300s", sub, r.Raw)
		}
	}

	checkSearch(t, c, id, msgs, entryIDs)

	fork := c.ok("session_fork", fmt.Sprintf(`{"session_id":%q}`, id)).Get("session_id").String()
	got, _, _ = resumeAll(c, fork, wholeResume)
	sameMessages(t, "fork", msgs, got)

	// The agent writes the fork's summary; the extractive summarizer the session's.
	summary := "## Goal\n" + allPlanes(rng) + " " + text(rng, 200)
	need := c.ok("session_compact", fmt.Sprintf(`{"session_id":%q,"summarizer":"agent","keep_recent_tokens":1}`, fork))
	if need.Get("status").String() == memory.StatusNeedsSummary {
		done := c.ok("session_compact", fmt.Sprintf(`{"session_id":%q,"compaction_id":%q,"summary":%s}`, fork,
			need.Get("compaction_id").String(), jsonString(summary)))
		checkCompacted(t, c, "agent", fork, msgs, done)
		// The stored summary is the text as written, without its trailing white space (any
		// Unicode space: U+2029 too), followed by the file lists and the facts ledger.
		if _, _, s := resumeAll(c, fork, wholeResume); !strings.HasPrefix(s, strings.TrimRightFunc(summary, unicode.IsSpace)) {
			t.Errorf("agent: the summary came back as %.300q, want it to start with %.300q", s, summary)
		}
	} else if len(msgs) > 2 {
		t.Errorf("agent: %s, want needs_summary", need.Raw)
	}
	done := c.ok("session_compact", fmt.Sprintf(`{"session_id":%q,"summarizer":"extractive","keep_recent_tokens":1}`, id))
	checkCompacted(t, c, "extractive", id, msgs, done)
	return id
}

// jsonString returns s as a JSON string (strconv.Quote writes escapes JSON does not have).
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// checkCompacted checks a compaction's answer and that resume returns the pinned messages it
// folded and the kept messages, exactly.
func checkCompacted(t *testing.T, c *mcpConn, who, id string, msgs []shapeMsg, done gjson.Result) {
	t.Helper()
	if st := done.Get("status").String(); st != memory.StatusCompacted {
		if st != memory.StatusNothingToCompact || len(msgs) > 2 {
			t.Errorf("%s compaction: %.500s", who, done.Raw)
		}
		return
	}
	got, pinned, _ := resumeAll(c, id, wholeResume)
	first := done.Get("first_kept_id").String()
	k := len(msgs) - len(got)
	if k < 0 || len(got) == 0 || gjson.Get(got[0], "entry_id").String() != first {
		t.Fatalf("%s compaction: resume starts at %v, want the first kept entry %s", who, len(got), first)
	}
	sameMessages(t, who+": kept messages", msgs[k:], got)
	var want []shapeMsg
	for _, m := range msgs[:k] {
		if m.pinned {
			want = append(want, m)
		}
	}
	sameMessages(t, who+": pinned messages", want, pinned)
}

// checkSearch finds every message by the word in its text and by the word deepest in its
// arguments, within the freshness bound (and then some, for a loaded machine).
func checkSearch(t *testing.T, c *mcpConn, id string, msgs []shapeMsg, entryIDs []string) {
	t.Helper()
	for i, m := range msgs {
		for _, w := range []string{m.marker, m.deep} {
			if w == "" || i >= len(entryIDs) {
				continue
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				res := c.ok("session_search", fmt.Sprintf(`{"query":%q,"session_id":%q}`, w, id))
				found := false
				for _, h := range res.Get("matches").Array() {
					found = found || h.Get("entry_id").String() == entryIDs[i]
				}
				if found {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("search %q: message %d (%s) not found: %.300s", w, i, entryIDs[i], res.Raw)
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
}

// checkFiles runs the commands that read the store's files (show, export, import of the
// export, export again) on session id of store and returns the export.
func checkFiles(t *testing.T, store, id string, msgs []shapeMsg) string {
	t.Helper()
	if r := runCLI(t, "", "show", "--store", store, "--all", id); r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Errorf("show: exit %d: %.300s %.300s", r.code, r.stdout, r.stderr)
	}
	export := runCLI(t, "", "export", "--store", store, id).must(t).stdout
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(export))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		l := gjson.Parse(sc.Text())
		if !l.Get("role").Exists() {
			continue
		}
		// An export gives each message its time, and a message saved without an id its entry
		// id as id.
		m := sc.Text()
		v, _ := parseJV([]byte(m))
		o := jobj{}
		for _, f := range v.(jobj) {
			if f.k == "ts" || (f.k == "id" && f.v == l.Get("entry_id").String()) {
				continue
			}
			o = append(o, f)
		}
		lines = append(lines, encodeJV(rand.New(rand.NewPCG(0, 0)), o))
	}
	sameMessages(t, "export", msgs, lines)

	file := filepath.Join(t.TempDir(), "export.jsonl")
	if err := os.WriteFile(file, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := t.TempDir()
	runCLI(t, "", "import", "--store", fresh, "--file", file).must(t)
	if again := runCLI(t, "", "export", "--store", fresh, id).must(t).stdout; again != export {
		t.Errorf("export, import and export again: %d bytes, first export %d bytes; they differ", len(again), len(export))
	}
	return export
}

// shapeSeed is the generator's seed: SESSIONMEM_SHAPES_SEED when set (to replay a failure),
// else a fixed one.
func shapeSeed(t *testing.T) uint64 {
	if s := os.Getenv("SESSIONMEM_SHAPES_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return 20261127
}

// TestExtremeShapes saves a session of every kind of extreme shape, reads each back through
// every path, then migrates the store to PostgreSQL and back, and checks that the exports of
// both copies are the same bytes and that a server on the database resumes and finds them.
func TestExtremeShapes(t *testing.T) {
	seed := shapeSeed(t)
	t.Logf("seed %d (SESSIONMEM_SHAPES_SEED replays it)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	g := &shapeGen{rng: rng}
	if raceEnabled {
		g.small = 4 // strings up to 384 KiB, 1,250 keys: the race detector makes the full sizes take minutes
	}
	store := t.TempDir()
	c := serveInProcess(t, store)
	sessions := map[string][]shapeMsg{}
	ids := map[string]string{}
	for kind := range numShapes {
		name := shapeNames[kind]
		msgs := g.session(kind)
		t.Run(name, func(t *testing.T) {
			c.t = t
			ids[name] = checkSession(t, c, rng, name, msgs)
			sessions[name] = msgs
		})
	}
	c.t = t
	c.close()
	exports := map[string]string{}
	for name, id := range ids {
		exports[name] = checkFiles(t, store, id, sessions[name])
	}

	if testing.Short() {
		return
	}
	if _, err := pgtest.BinDir(); err != nil {
		t.Log("PostgreSQL is not installed: the migration is not checked")
		return
	}
	pg := pgtest.Shared(t).NewDatabase(t)
	runCLI(t, "", "migrate", "--from", store, "--to", pg).must(t)
	back := t.TempDir()
	runCLI(t, "", "migrate", "--from", pg, "--to", back).must(t)
	for name, id := range ids {
		for where, s := range map[string]string{"PostgreSQL": pg, "the directory migrated back": back} {
			if got := runCLI(t, "", "export", "--store", s, id).must(t).stdout; got != exports[name] {
				t.Errorf("%s: the export from %s differs from the original's", name, where)
			}
		}
	}
	c = serveInProcess(t, pg)
	for name, id := range ids {
		got, _, _ := resumeAll(c, id, wholeResume)
		msgs := sessions[name]
		sameMessages(t, name+" on PostgreSQL: resume", msgs[max(len(msgs)-len(got), 0):], got)
		checkSearch(t, c, id, msgs, exportedEntryIDs(exports[name]))
	}
}

// exportedEntryIDs returns the entry ids of an export's messages, in order.
func exportedEntryIDs(export string) []string {
	var ids []string
	for _, l := range strings.Split(export, "\n") {
		if gjson.Get(l, "role").Exists() {
			ids = append(ids, gjson.Get(l, "entry_id").String())
		}
	}
	return ids
}

// FuzzExtremeShapes is the same without PostgreSQL, one session per input: the seed and the
// kind of session to draw.
func FuzzExtremeShapes(f *testing.F) {
	for kind := range numShapes {
		f.Add(uint64(kind)*7919+1, uint8(kind))
	}
	f.Fuzz(func(t *testing.T, seed uint64, kind uint8) {
		rng := rand.New(rand.NewPCG(seed, 2))
		g := &shapeGen{rng: rng, small: 16}
		if raceEnabled {
			g.small = 64
		}
		store := t.TempDir()
		msgs := g.session(int(kind) % numShapes)
		c := serveInProcess(t, store)
		id := checkSession(t, c, rng, "fuzz", msgs)
		c.close()
		checkFiles(t, store, id, msgs)
	})
}
