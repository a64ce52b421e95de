package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/tidwall/gjson"
)

// A full disk, said plainly: on a real file system that is full, every call that writes gets
// a tool error saying the disk holding the store is full, nothing was saved, free space and
// retry, naming no file of the server's; reads keep working; nothing is lost or half written;
// once space is freed the same calls succeed without a restart, and retried ids store nothing
// twice.

// mountTmpfs mounts a tmpfs with options (size=… and more) on a new directory and returns it;
// it is unmounted when the test ends. It skips the test unless it runs as root (mount needs
// it).
func mountTmpfs(t *testing.T, options string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a small tmpfs")
	}
	// Right under the temporary directory, not in t.TempDir's (0700): PostgreSQL's server
	// user must reach it for a tablespace.
	dir, err := os.MkdirTemp("", "sessionmem-tmpfs-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", options, "tmpfs", dir).CombinedOutput(); err != nil {
		os.Remove(dir)
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
			return
		}
		os.Remove(dir)
	})
	return dir
}

// fill writes a file of zeros into dir until the file system has no room left.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill: %v", err)
			}
			break
		}
	}
	for n := 32 << 10; n > 0; n /= 2 { // the last blocks too
		for {
			if _, err := f.Write(chunk[:n]); err != nil {
				break
			}
		}
	}
	return path
}

// absPath finds an absolute path in a text.
var absPath = regexp.MustCompile(`(^|[\s"'(=:])/[^\s/]+/`)

// checkFullError checks a tool error says what the brief asks, and names no path.
func checkFullError(t *testing.T, what string, res gjson.Result, dir string) {
	t.Helper()
	text := res.Get("content.0.text").String()
	if !res.Get("isError").Bool() {
		t.Errorf("%s on a full disk: %.300s, want a tool error", what, text)
		return
	}
	for _, want := range []string{"the disk holding the session store is full", "nothing was saved", "free space", "retry"} {
		if !strings.Contains(text, want) {
			t.Errorf("%s: %q does not say %q", what, text, want)
		}
	}
	if strings.Contains(text, dir) || absPath.MatchString(text) || strings.Contains(text, "internal error") || strings.Contains(text, "pg_tblspc") {
		t.Errorf("%s: %q names a path or an internal error", what, text)
	}
}

func TestFullDisk(t *testing.T) {
	dir := mountTmpfs(t, "size=6m,mode=0755")
	store := filepath.Join(dir, "store")
	c := serveInProcess(t, store)
	msg := func(id, text string) string { return fmt.Sprintf(`{"id":%q,"role":"user","content":%q}`, id, text) }
	var saved []string
	for i := range 5 {
		saved = append(saved, msg(fmt.Sprintf("m%d", i), fmt.Sprintf("message %d zzfull", i)))
	}
	sid := c.ok("session_save", `{"working_dir":"/p","messages":[`+strings.Join(saved, ",")+`]}`).Get("session_id").String()
	filler := fill(t, dir)

	// Larger than any padding the tail keeps ahead of its data (at most 1 MiB): it needs room.
	big := msg("big", strings.Repeat("x", 1200<<10))
	checkFullError(t, "a save", c.tool("session_save", fmt.Sprintf(`{"session_id":%q,"messages":[%s]}`, sid, big)), dir)
	checkFullError(t, "a save that creates a session", c.tool("session_save", `{"working_dir":"/q","messages":[`+msg("n1", "new")+`]}`), dir)
	checkFullError(t, "a fork", c.tool("session_fork", fmt.Sprintf(`{"session_id":%q}`, sid)), dir)
	if res := c.tool("session_compact", fmt.Sprintf(`{"session_id":%q,"summarizer":"extractive","keep_recent_tokens":1}`, sid)); res.Get("isError").Bool() {
		checkFullError(t, "a compaction", res, dir) // or it fit in the tail's padding
	}

	// Reads keep working. stored lists the session's messages (the resource has them all,
	// compacted ones too).
	stored := func() string {
		var ids []string
		r := c.request("resources/read", fmt.Sprintf(`{"uri":"session://%s"}`, sid))
		for _, m := range gjson.Parse(r.Get("result.contents.0.text").String()).Get("messages").Array() {
			ids = append(ids, m.Get("id").String())
		}
		return strings.Join(ids, " ")
	}
	if got := stored(); got != "m0 m1 m2 m3 m4" {
		t.Errorf("the session on a full disk: %s", got)
	}
	c.ok("session_resume", fmt.Sprintf(`{"session_id":%q}`, sid))
	if list := c.ok("session_list", `{}`).Get("sessions.#").Int(); list != 1 {
		t.Errorf("list on a full disk: %d sessions, want 1", list)
	}
	c.ok("session_search", `{"query":"zzfull"}`)
	if log := c.stderr.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "no space left on device") || !strings.Contains(log, dir) {
		t.Errorf("the log does not have the details of the failed calls:\n%s", log)
	}

	// Room again: the same calls succeed, without a restart; retried ids store nothing twice.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for try, want := range []int64{1, 0} {
		if n := c.ok("session_save", fmt.Sprintf(`{"session_id":%q,"messages":[%s]}`, sid, big)).Get("saved").Int(); n != want {
			t.Errorf("save after freeing space (try %d): saved %d, want %d", try, n, want)
		}
	}
	c.ok("session_save", `{"working_dir":"/q","messages":[`+msg("n1", "new")+`]}`)
	c.ok("session_fork", fmt.Sprintf(`{"session_id":%q}`, sid))
	c.close()

	// Nothing lost or half written: a fresh server reads every acknowledged message once, and
	// verify finds nothing damaged.
	c = serveInProcess(t, store)
	if got := stored(); got != "m0 m1 m2 m3 m4 big" {
		t.Errorf("after a restart: %s", got)
	}
	c.close()
	if out := runCLI(t, "", "verify", "--store", store).must(t).stdout; !strings.Contains(out, " 0 damaged") {
		t.Errorf("verify: %s", out)
	}
}

// TestReadOnlyStore: when the store's files cannot be written any more (here its sessions
// directory becomes a read-only mount while the server runs: EROFS), every call that writes
// gets a tool error saying the store is read-only and what to do, naming no file; reads keep
// working; once the store is writable again, saves work without a restart.
func TestReadOnlyStore(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount the store's sessions directory read-only")
	}
	store := t.TempDir()
	c := serveInProcess(t, store)
	sid := c.ok("session_save", `{"working_dir":"/p","messages":[{"id":"m0","role":"user","content":"first zzro"},{"id":"m1","role":"user","content":"second"}]}`).Get("session_id").String()
	sessions := filepath.Join(store, "sessions")
	for _, args := range [][]string{{"--bind", sessions, sessions}, {"-o", "remount,bind,ro", sessions}} {
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Skipf("cannot mount %s read-only: %v: %s", sessions, err, out)
		}
	}
	mounted := true
	unmount := func() {
		if out, err := exec.Command("umount", sessions).CombinedOutput(); err != nil {
			t.Fatalf("umount: %v: %s", err, out)
		}
		mounted = false
	}
	t.Cleanup(func() {
		if mounted {
			unmount()
		}
	})

	for what, call := range map[string][2]string{
		"a save":                        {"session_save", fmt.Sprintf(`{"session_id":%q,"messages":[{"id":"m2","role":"user","content":"x"}]}`, sid)},
		"a save that creates a session": {"session_save", `{"working_dir":"/q","messages":[{"role":"user","content":"x"}]}`},
		"a fork":                        {"session_fork", fmt.Sprintf(`{"session_id":%q}`, sid)},
	} {
		res := c.tool(call[0], call[1])
		text := res.Get("content.0.text").String()
		if !res.Get("isError").Bool() || !strings.Contains(text, "the session store is read-only") || !strings.Contains(text, "nothing was saved") ||
			!strings.Contains(text, "make the store writable") || strings.Contains(text, store) || absPath.MatchString(text) {
			t.Errorf("%s on a read-only store: %q", what, text)
		}
	}
	if n := c.ok("session_resume", fmt.Sprintf(`{"session_id":%q}`, sid)).Get("messages.#").Int(); n != 2 {
		t.Errorf("resume on a read-only store: %d messages, want 2", n)
	}
	c.ok("session_list", `{}`)
	c.ok("session_search", `{"query":"zzro"}`)
	if r := c.request("resources/read", fmt.Sprintf(`{"uri":"session://%s"}`, sid)); !r.Get("result.contents.0").Exists() {
		t.Errorf("resource on a read-only store: %.300s", r.Raw)
	}
	if log := c.stderr.String(); !strings.Contains(log, "read-only file system") {
		t.Errorf("the log does not have the details of the failed calls:\n%s", log)
	}

	unmount()
	if n := c.ok("session_save", fmt.Sprintf(`{"session_id":%q,"messages":[{"id":"m2","role":"user","content":"x"}]}`, sid)).Get("saved").Int(); n != 1 {
		t.Errorf("a save once the store is writable again: saved %d", n)
	}
}

// TestReadOnlyStoreAtStart: a store that is read-only before the process starts (a read-only
// mount of the whole store directory) is still read by every command that only reads; a
// save says the store is read-only. Opening it used to fail at once (index.lock, then
// index.jsonl, were opened for writing).
func TestReadOnlyStoreAtStart(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount the store read-only")
	}
	store := seedStore(t)
	for _, args := range [][]string{{"--bind", store, store}, {"-o", "remount,bind,ro", store}} {
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Skipf("cannot mount %s read-only: %v: %s", store, err, out)
		}
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", store).CombinedOutput(); err != nil {
			t.Errorf("umount: %v: %s", err, out)
		}
	})
	for _, args := range [][]string{
		{"list", "--store", store},
		{"show", seedAlpha, "--store", store},
		{"export", seedAlpha, "--store", store},
		{"search", "build", "--store", store},
		{"stats", "--store", store},
	} {
		r := runCLI(t, "", args...)
		if r.code != 0 || r.stdout == "" {
			t.Fatalf("%v on a read-only store: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := runCLI(t, "", "list", "--store", store); !strings.Contains(r.stdout, seedAlpha) {
		t.Errorf("list on a read-only store: %q", r.stdout)
	}
	c := serveInProcess(t, store)
	defer c.close()
	if got := c.ok("session_resume", fmt.Sprintf(`{"session_id":%q}`, seedAlpha)).Get("messages.#").Int(); got == 0 {
		t.Error("resume on a read-only store: no messages")
	}
	res := c.tool("session_save", fmt.Sprintf(`{"session_id":%q,"messages":[{"id":"ro1","role":"user","content":"x"}]}`, seedAlpha))
	if text := res.Get("content.0.text").String(); !res.Get("isError").Bool() || !strings.Contains(text, "the session store is read-only") || strings.Contains(text, store) {
		t.Errorf("save to a read-only store: %s", res.Raw)
	}
}
