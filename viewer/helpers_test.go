package viewer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessionmem/sessionmem/memory"
	"github.com/sessionmem/sessionmem/storage"
	"github.com/sessionmem/sessionmem/storage/local"
	"github.com/sessionmem/sessionmem/storage/postgres"
	"github.com/sessionmem/sessionmem/storage/postgres/pgtest"
)

// The tests use real stores (a directory, and a throwaway PostgreSQL cluster), real HTTP
// servers, real OS processes (the test binary re-executed as a saver, see child) and, in
// browser_test.go, a real Chromium.

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// storeKind names a backend the tests run against; loc is the directory or URL.
type storeKind struct {
	name string
	loc  func(t *testing.T) string
}

var storeKinds = []storeKind{
	{"local", func(t *testing.T) string { return t.TempDir() }},
	{"postgres", func(t *testing.T) string { return pgtest.Shared(t).NewDatabase(t) }},
}

// openStore opens the store at loc as a server process would (with the search index).
func openStore(ctx context.Context, loc string) (storage.Store, error) {
	if strings.HasPrefix(loc, "postgres") {
		return postgres.Open(ctx, loc, postgres.Options{Docs: memory.Docs})
	}
	return local.Open(loc, local.Options{Summarize: memory.Summarize, Docs: memory.Docs})
}

// newService opens a memory.Service on loc, closed when the test ends.
func newService(t *testing.T, loc string) *memory.Service {
	t.Helper()
	st, err := openStore(t.Context(), loc)
	if err != nil {
		t.Fatal(err)
	}
	svc := memory.New(st, memory.Options{})
	t.Cleanup(func() {
		svc.Close()
		st.Close()
	})
	return svc
}

// serve runs a viewer over svc on a loopback port; it returns the server's origin.
func serve(t *testing.T, svc *memory.Service, opts Options) (*httptest.Server, *Handler) {
	t.Helper()
	done := make(chan struct{})
	opts.Done = done
	h := New(svc, opts)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		close(done) // ends the live streams, so Close need not wait for them
		srv.Close()
	})
	return srv, h
}

func text(id, s string) memory.Message {
	return memory.Message{ID: id, Role: memory.RoleUser, Content: []memory.Block{{Type: memory.BlockText, Text: s}}}
}

func save(t *testing.T, svc *memory.Service, req memory.SaveRequest) memory.SaveResult {
	t.Helper()
	if req.WorkingDir == "" && req.SessionID == "" {
		req.WorkingDir = "/home/dev/proj"
	}
	res, err := svc.Save(t.Context(), req)
	if err != nil {
		t.Fatalf("save: %v", err)
	}
	return res
}

// getJSON fetches path from srv and decodes the answer into v, returning the status.
func getJSON(t *testing.T, srv *httptest.Server, path string, v any) int {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %d, decode: %v", path, resp.StatusCode, err)
		}
	}
	return resp.StatusCode
}

func do(t *testing.T, srv *httptest.Server, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// The child process: it opens the store at $SESSIONMEM_VIEWER_LOC, saves $N messages to
// session $SESSIONMEM_VIEWER_SESSION one call at a time, $INTERVAL apart, the i-th with the
// text "live-<prefix>-<i>", and prints "<i> <unix microseconds>" once each save returned.
const childEnv = "SESSIONMEM_VIEWER_CHILD"

func child() int {
	ctx := context.Background()
	st, err := openStore(ctx, os.Getenv("SESSIONMEM_VIEWER_LOC"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	svc := memory.New(st, memory.Options{})
	defer svc.Close()
	n, _ := strconv.Atoi(os.Getenv("SESSIONMEM_VIEWER_N"))
	interval, _ := time.ParseDuration(os.Getenv("SESSIONMEM_VIEWER_INTERVAL"))
	prefix := os.Getenv("SESSIONMEM_VIEWER_PREFIX")
	in := bufio.NewScanner(os.Stdin)
	for i := range n {
		if interval < 0 && !in.Scan() { // negative interval: save when the parent says so
			return 0
		}
		time.Sleep(max(interval, 0))
		req := memory.SaveRequest{SessionID: os.Getenv("SESSIONMEM_VIEWER_SESSION"),
			Messages: []memory.Message{text(fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("live-%s-%d", prefix, i))}}
		if _, err := svc.Save(ctx, req); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("%d %d\n", i, time.Now().UnixMicro())
	}
	return 0
}

// saver is a child process saving into a session.
type saver struct {
	cmd   *exec.Cmd
	out   *bufio.Scanner
	stdin interface{ Write([]byte) (int, error) }
}

// startSaver starts a child that saves n messages to session, interval apart (a negative
// interval: one each time next is called).
func startSaver(t *testing.T, loc, session, prefix string, n int, interval time.Duration) *saver {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "SESSIONMEM_VIEWER_LOC="+loc, "SESSIONMEM_VIEWER_SESSION="+session,
		"SESSIONMEM_VIEWER_PREFIX="+prefix, fmt.Sprintf("SESSIONMEM_VIEWER_N=%d", n), "SESSIONMEM_VIEWER_INTERVAL="+interval.String())
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return &saver{cmd: cmd, out: bufio.NewScanner(out), stdin: in}
}

// next asks a stepping saver for one save and returns when it was acknowledged.
func (s *saver) next(t *testing.T) (int, time.Time) {
	t.Helper()
	if _, err := s.stdin.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	return s.ack(t)
}

// ack reads the next acknowledged save: its index and when it returned.
func (s *saver) ack(t *testing.T) (int, time.Time) {
	t.Helper()
	if !s.out.Scan() {
		t.Fatalf("saver ended: %v", s.out.Err())
	}
	var i int
	var us int64
	if _, err := fmt.Sscan(s.out.Text(), &i, &us); err != nil {
		t.Fatalf("saver said %q", s.out.Text())
	}
	return i, time.UnixMicro(us)
}
